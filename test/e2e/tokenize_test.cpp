// `hyc tokenize` through the real binary on the shared Hugging Face
// tokenizers: stdin taken byte for byte, ids printed as the reference
// implementation gives them, --decode and --chat.
#include "test/e2e/e2e_util.h"

#include "runtime/text/tokenizer/util.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

using ojson = nlohmann::ordered_json;

std::string joinIds(const ojson &ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(ids[i].get<int64_t>());
  return s;
}

class TokenizeCli : public ::testing::TestWithParam<std::string> {
protected:
  std::string dir() const { return sharedDir() + "/tokenizers/" + GetParam(); }
  ojson cases() const {
    std::ifstream f(dir() + "/cases.json");
    return ojson::parse(f);
  }
  void SetUp() override {
    struct stat st;
    if (stat((dir() + "/tokenizer.json").c_str(), &st) != 0)
      GTEST_SKIP() << "../shared/tokenizers/" << GetParam() << " not present";
  }
};

TEST_P(TokenizeCli, EncodesAndDecodesStdinByteForByte) {
  // Cases whose text has a trailing newline, a NUL, or special-token text:
  // what a tool that strips or re-encodes its input would get wrong.
  for (const ojson &c : cases()["cases"]) {
    const std::string id = c["id"];
    const std::string text = c["text"];
    if (text.find('\0') == std::string::npos && text.find('\n') == std::string::npos &&
        id.rfind("sp-", 0) != 0)
      continue;
    SCOPED_TRACE(id);
    CommandResult r = runHyc({"tokenize", dir()}, text);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, joinIds(c["ids"]) + "\n");
    r = runHyc({"tokenize", dir(), "--add-special"}, text);
    EXPECT_EQ(r.out, joinIds(c["ids_with_special"]) + "\n");
    r = runHyc({"tokenize", dir(), "--decode"}, joinIds(c["ids"]));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, c["decoded"].get<std::string>());
    break; // one such case per tokenizer keeps the test fast
  }
}

TEST_P(TokenizeCli, RendersChatWithTheCheckpointTemplate) {
  const ojson chat = cases()["chats"][0];
  const std::string file = tempDir() + "/" + GetParam() + "_chat.json";
  ojson request = chat["template_kwargs"];
  request["messages"] = chat["messages"];
  std::ofstream(file) << request.dump();
  CommandResult r = runHyc({"tokenize", dir(), "--chat", file, "--text"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, chat["rendered"].get<std::string>());
  r = runHyc({"tokenize", dir(), "--chat", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, joinIds(chat["ids"]) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Shared, TokenizeCli,
                         ::testing::Values("qwen3", "deepseek_v3"));

TEST(TokenizeCliErrors, MissingTokenizerAndBadUsage) {
  CommandResult r = runHyc({"tokenize", tempDir()}, "hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("expected tokenizer.json"), std::string::npos) << r.err;
  r = runHyc({"tokenize"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: hyc tokenize"), std::string::npos);
}

} // namespace
} // namespace hyc::e2e

namespace hyc::e2e {
namespace {

/// A byte-level BPE over the 256 byte symbols (ids in byte order, GPT-2's
/// byte-to-character map), one merge "a b" -> 256 and a special token
/// "<|x|>" at `specialId`, with a chat template that wraps each message.
void writeTinyHfTokenizer(const std::string &dir, int specialId) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[hyrt::detail::utf8_encode(
        hyrt::detail::gpt2_byte_to_codepoint(static_cast<unsigned char>(b)))] = b;
  vocab["ab"] = 256;
  const nlohmann::json tok = {
      {"added_tokens", {{{"id", specialId}, {"content", "<|x|>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump();
  std::ofstream(dir + "/tokenizer_config.json")
      << R"({"chat_template": "{% for m in messages %}<|x|>{{ m.content }}{% endfor %}"})";
}

// A Hugging Face checkpoint with tokenizer.json (and no tokenizer.bin)
// compiles to an artifact that carries it: `hyc tokenize` on the artifact
// gives the ids it gives on the checkpoint, and `hyc run` takes text. A
// tokenizer with ids past the model's vocabulary is not carried, with a
// warning saying why.
TEST(TokenizerInArtifact, HfCheckpointCarriesItsTokenizerJson) {
  const std::string dir = tempDir() + "/hf-tok-ckpt";
  CommandResult s = runHyc({"synth", "--arch", "qwen3", "--seed", "2", "-o", dir});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::remove((dir + "/tokenizer.bin").c_str());
  writeTinyHfTokenizer(dir, 300);
  const std::string art = tempDir() + "/hf-tok.hyc";
  CommandResult c = runHyc({"compile", dir, "-o", art, "--target", "reference",
                            "--max-seq-len", "64"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(readFile(art + "/manifest.json").find("\"tokenizer\": \"tokenizer.hytk\""),
            std::string::npos);
  const std::string text = "abc ab<|x|>ab";
  CommandResult fromCkpt = runHyc({"tokenize", dir}, text);
  CommandResult fromArt = runHyc({"tokenize", art}, text);
  ASSERT_EQ(fromCkpt.exit_code, 0) << fromCkpt.err;
  ASSERT_EQ(fromArt.exit_code, 0) << fromArt.err;
  // "abc" -> ab, c; " ab" -> space, ab; the special token; "ab".
  EXPECT_EQ(fromCkpt.out, "256,99,32,256,300,256\n");
  EXPECT_EQ(fromArt.out, fromCkpt.out);
  CommandResult run = runHyc({"run", art, "--prompt", "ab ab", "-n", "4", "--temperature", "0"});
  EXPECT_EQ(run.exit_code, 0) << run.err;

  const std::string big = tempDir() + "/hf-tok-ckpt-big";
  ASSERT_EQ(runHyc({"synth", "--arch", "qwen3", "--seed", "2", "-o", big}).exit_code, 0);
  std::remove((big + "/tokenizer.bin").c_str());
  writeTinyHfTokenizer(big, 700); // the tiny model's vocabulary is 512
  const std::string art2 = tempDir() + "/hf-tok-big.hyc";
  c = runHyc({"compile", big, "-o", art2, "--target", "reference", "--max-seq-len", "64"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("tokenizer.json has 701 tokens, the model's vocab_size is 512"),
            std::string::npos)
      << c.err;
  EXPECT_EQ(readFile(art2 + "/manifest.json").find("\"tokenizer\""), std::string::npos);
}

} // namespace
} // namespace hyc::e2e
