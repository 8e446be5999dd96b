// tokenizer.json on a tiny synthetic vocabulary: the pipeline pieces in
// isolation, and errors for malformed files and unsupported components.
#include "hyrt/cli/cli.h"
#include "hyrt/text/tokenizer.h"

#include "runtime/text/tokenizer/util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// A byte-level BPE over the 256 byte symbols (ids 0..255 in byte order),
/// one merge "a"+"b" -> id 256, and a special token "<|x|>" at id 300.
json tinyTokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b)
    vocab[hyrt::detail::utf8_encode(hyrt::detail::gpt2_byte_to_codepoint(
        static_cast<unsigned char>(b)))] = b;
  vocab["ab"] = 256;
  return {{"added_tokens",
           {{{"id", 300}, {"content", "<|x|>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"use_regex", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}}};
}

std::string writeDir(const std::string &name, const std::string &tokenizer,
                     const std::string &config = "") {
  const fs::path dir = fs::path(::testing::TempDir()) / ("hf_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << tokenizer;
  if (!config.empty())
    std::ofstream(dir / "tokenizer_config.json") << config;
  return dir.string();
}

hyrt::Status load(const std::string &dir, hyrt::Tokenizer *tok) {
  hyrt::TokenizerData data;
  if (hyrt::Status s = hyrt::read_hf_tokenizer(dir, &data); !s.ok())
    return s;
  return tok->init(std::move(data));
}

std::string loadError(const std::string &name, const json &tokenizer) {
  hyrt::Tokenizer tok;
  hyrt::Status s = load(writeDir(name, tokenizer.dump()), &tok);
  return s.ok() ? "ok" : s.message();
}

TEST(HfTokenizer, TinyVocabularyMergesAndSpecialTokens) {
  hyrt::Tokenizer tok;
  hyrt::Status s = load(writeDir("tiny", tinyTokenizer().dump(),
                                 R"({"add_bos_token": true, "bos_token": "<|x|>"})"),
                        &tok);
  ASSERT_TRUE(s.ok()) << s.message();
  // "ab" merges; the special token is matched in the text; " a" keeps the
  // space as its own byte symbol (no merge for it).
  EXPECT_EQ(tok.encode("ab<|x|> a", false),
            (std::vector<int32_t>{256, 300, 32, 'a'}));
  EXPECT_EQ(tok.encode("b", true), (std::vector<int32_t>{300, 'b'}));
  EXPECT_EQ(tok.decode_text({256, 300, 32, 'a'}, false), "ab<|x|> a");
  EXPECT_EQ(tok.decode_text({256, 300, 32, 'a'}, true), "ab a");
  // A lone continuation byte decodes to U+FFFD, as HF's lossy decode does.
  EXPECT_EQ(tok.decode_text({0x80}, false), "\xEF\xBF\xBD");
}

TEST(HfTokenizer, MalformedFilesAreRejected) {
  hyrt::Tokenizer tok;
  hyrt::Status s = load(writeDir("broken", "{\"model\": "), &tok);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("malformed JSON"), std::string::npos)
      << s.message();
  s = load((fs::path(::testing::TempDir()) / "hf_absent").string(), &tok);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tokenizer.json"), std::string::npos);

  json no_vocab = tinyTokenizer();
  no_vocab["model"].erase("vocab");
  EXPECT_NE(loadError("novocab", no_vocab).find("model.vocab"),
            std::string::npos);
  json bad_merge = tinyTokenizer();
  bad_merge["model"]["merges"] = {"a zz"};
  EXPECT_NE(loadError("badmerge", bad_merge).find("merge 0 'a zz'"),
            std::string::npos);
  // Found by fuzz_tokenizer_json: a negative added-token id indexed the
  // token table before it (UB), a non-boolean flag made nlohmann throw.
  json negative = tinyTokenizer();
  negative["added_tokens"][0]["id"] = -3;
  EXPECT_NE(loadError("negid", negative).find("integer 'id' in [0, 16777215]"),
            std::string::npos);
  json flag = tinyTokenizer();
  flag["added_tokens"][0]["special"] = "yes";
  EXPECT_NE(loadError("flag", flag).find("expects 'special' to be a boolean"),
            std::string::npos);
}

TEST(HfTokenizer, UnsupportedComponentsAreNamed) {
  json t = tinyTokenizer();
  t["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_NE(
      loadError("whitespace", t).find("pre_tokenizer of type 'Whitespace'"),
      std::string::npos);
  t = tinyTokenizer();
  t["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_NE(loadError("lowercase", t).find("normalizer of type 'Lowercase'"),
            std::string::npos);
  t = tinyTokenizer();
  t["model"]["type"] = "WordPiece";
  EXPECT_NE(loadError("wordpiece_model", t).find("model of type 'WordPiece'"),
            std::string::npos);
  t = tinyTokenizer();
  t["decoder"] = {{"type", "WordPiece"}};
  EXPECT_NE(loadError("wordpiece", t).find("decoder of type 'WordPiece'"),
            std::string::npos);
  t = tinyTokenizer();
  t["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", "[unclosed"}}},
                        {"behavior", "Isolated"}};
  EXPECT_NE(loadError("badregex", t).find("does not compile"),
            std::string::npos);
}

TEST(HfTokenizer, CliTokenizeRoundTripsAndRejectsBadInput) {
  const std::string dir = writeDir("cli", tinyTokenizer().dump());
  std::ostringstream out, err;
  std::istringstream text("ab<|x|>\n");
  ASSERT_EQ(hyrt::cli_tokenize({dir}, text, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "256,300,10\n");
  std::ostringstream dec;
  std::istringstream ids("256, 300,10\n");
  ASSERT_EQ(hyrt::cli_tokenize({dir, "--decode"}, ids, dec, err), 0);
  EXPECT_EQ(dec.str(), "ab<|x|>\n");
  std::ostringstream o2, e2;
  std::istringstream bad_ids("1,99999");
  EXPECT_EQ(hyrt::cli_tokenize({dir, "--decode"}, bad_ids, o2, e2), 1);
  EXPECT_NE(e2.str().find("'99999'"), std::string::npos) << e2.str();
  std::ostringstream o3, e3;
  std::istringstream bad_utf8("a\xFF");
  EXPECT_EQ(hyrt::cli_tokenize({dir}, bad_utf8, o3, e3), 1);
  EXPECT_NE(e3.str().find("not valid UTF-8"), std::string::npos);
  const std::string chat = dir + "/chat.json";
  std::ofstream(chat) << R"([{"role": "user", "content": "hi"}])";
  std::ostringstream o4, e4;
  std::istringstream none("");
  EXPECT_EQ(hyrt::cli_tokenize({dir, "--chat", chat}, none, o4, e4), 1);
  EXPECT_NE(e4.str().find("no chat_template"), std::string::npos) << e4.str();
}

} // namespace

namespace {

TEST(HfTokenizer, SaveLoadKeepsPipelineAndTemplate) {
  const std::string dir = writeDir("save", tinyTokenizer().dump(),
                                   R"({"chat_template": "{{ messages }}"})");
  hyrt::Tokenizer tok, back;
  ASSERT_TRUE(load(dir, &tok).ok());
  const std::string path = dir + "/tokenizer.hytk";
  ASSERT_TRUE(tok.save(path).ok());
  hyrt::Status s = hyrt::Tokenizer::load(path, &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(back.kind(), hyrt::TokenizerKind::kHfByteLevel);
  EXPECT_EQ(back.data().chat_template, "{{ messages }}");
  EXPECT_EQ(back.encode("ab<|x|>", false), tok.encode("ab<|x|>", false));
}

} // namespace

namespace {

// tokenizer.json is untrusted: ids near INT64_MAX used to overflow the
// vocabulary size (then a huge allocation aborted the process), a field of
// an unforeseen type threw out of the reader (abort), and a backtracking
// pre-tokenizer regex pinned a thread for hours.
TEST(HfTokenizerHostile, IdsOutsideInt32AreRefusedByName) {
  json t = tinyTokenizer();
  t["model"]["vocab"]["zz"] = 9223372036854775807LL;
  EXPECT_NE(loadError("vocab_id_max", t).find("expects an integer id in [0, 16777215], found 9223372036854775807"),
            std::string::npos) << loadError("vocab_id_max", t);
  t = tinyTokenizer();
  t["added_tokens"].push_back({{"id", 9223372036854775806LL}, {"content", "<|y|>"}});
  EXPECT_NE(loadError("added_id_max", t).find("'id' in [0, 16777215]"), std::string::npos)
      << loadError("added_id_max", t);
}

TEST(HfTokenizerHostile, AFieldOfAnUnforeseenTypeIsAnError) {
  json t = tinyTokenizer();
  t["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", 7}}, {{"Sequence", {{"id", "A"}}}}}}};
  const std::string e = loadError("special_token_type", t);
  EXPECT_NE(e.find("malformed tokenizer files"), std::string::npos) << e;
}

TEST(HfTokenizerHostile, BacktrackingRegexIsAnErrorWithinItsBudget) {
  json t = tinyTokenizer();
  // Llama-3's shape: a Split regex, then ByteLevel without its own regex.
  t["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", "(a+)+b"}}},
         {"behavior", "Isolated"}, {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  hyrt::Tokenizer tok;
  const hyrt::Status loaded = load(writeDir("backtracking", t.dump()), &tok);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  std::vector<int32_t> ids;
  EXPECT_TRUE(tok.encode("aaaa b", false, &ids).ok()); // honest text passes
  const auto start = std::chrono::steady_clock::now();
  const hyrt::Status s = tok.encode(std::string(64, 'a') + "!", false, &ids);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pre-tokenizer regex"), std::string::npos) << s.message();
  // (a+)+b on 64 a's and no b takes ~2^64 steps unbounded; the budget
  // is 1 s of wall clock plus ICU's limit on the match in flight.
  EXPECT_LT(seconds, 3.0);
}

} // namespace

namespace {

// The regex budget must not refuse honest text: the largest prompt a
// server accepts by default (1 MiB + 64 bytes a position) in the two real
// pre-tokenizer patterns, as prose and as one 1 MiB word (pasted base64).
TEST(HfTokenizerHostile, HonestMegabytesFitTheRegexBudget) {
  for (const char *name : {"qwen3", "deepseek_v3"}) {
    const std::string dir = std::string(HYC_SHARED_DIR) + "/tokenizers/" + name;
    if (!fs::exists(dir + "/tokenizer.json"))
      GTEST_SKIP() << "no " << dir;
    hyrt::Tokenizer tok;
    ASSERT_TRUE(load(dir, &tok).ok());
    std::string prose;  // 3 MiB: the default body limit's text and then some
    while (prose.size() < (size_t(3) << 20))
      prose += "Once upon a time, in 1999, Lily's dog ran 42 km!\n  ";
    const std::string word(size_t(1) << 20, 'Q');
    for (const std::string *text : std::vector<const std::string *>{&prose, &word}) {
      std::vector<int32_t> ids;
      const hyrt::Status s = tok.encode(*text, false, &ids);
      EXPECT_TRUE(s.ok()) << name << ": " << s.message();
      EXPECT_GT(ids.size(), text->size() / 1000) << name;
    }
  }
}

} // namespace
