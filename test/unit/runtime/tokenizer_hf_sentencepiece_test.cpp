// SentencePiece-style BPE inside tokenizer.json (Llama-2 / Mistral /
// TinyLlama): the stories260K tok512 vocabulary, converted to tokenizer.json
// the way transformers' LlamaConverter converts a SentencePiece model, must
// encode every text to the ids hyc's llama2.c tokenizer (checked against
// published stories output elsewhere) gives for the same vocabulary, and
// decode back to the text.
#include "hyrt/text/tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const std::string kShared = HYC_SHARED_DIR;
const std::string kTok512 = kShared + "/models/stories260K/tok512.bin";
const std::string kStories =
    kShared + "/models/tinystories-valid-text/tinystories_val.txt";
const std::string kMeta = "\xE2\x96\x81"; // U+2581, SentencePiece's space

hyrt::TokenizerData readTok512() {
  hyrt::TokenizerData d;
  hyrt::Status s = hyrt::read_llama2c_tokenizer(kTok512, 512, &d);
  EXPECT_TRUE(s.ok()) << s.message();
  return d;
}

std::string toMeta(std::string piece) {
  for (size_t pos = 0; (pos = piece.find(' ', pos)) != std::string::npos;)
    piece.replace(pos, 1, kMeta);
  return piece;
}

/// Byte offsets of the UTF-8 character boundaries inside `s` (not 0, not
/// s.size()): where a piece can be split into two.
std::vector<size_t> innerBoundaries(const std::string &s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80)
      out.push_back(i);
  return out;
}

/// tok512 as a Llama-2 tokenizer.json. Vocabulary: the pieces with " " as
/// "▁" and <unk> <s> </s> (llama2.c writes BOS/EOS as "\n<s>\n") as special
/// added tokens. Merges as LlamaConverter builds them: every split of a
/// piece into two vocabulary pieces, ordered by the merged piece's score
/// (highest first), ties by piece order and then by the halves' ids.
/// `pipeline` supplies normalizer, pre_tokenizer and decoder.
ojson llamaTokenizerJson(const hyrt::TokenizerData &d, const ojson &pipeline) {
  std::vector<std::string> pieces(d.tokens.size());
  const std::vector<std::string> specials = {"<unk>", "<s>", "</s>"};
  ojson vocab = ojson::object();
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    pieces[i] = i < specials.size() ? specials[i] : toMeta(d.tokens[i]);
    vocab[pieces[i]] = i;
  }
  EXPECT_EQ(vocab.size(), d.tokens.size()) << "converted pieces collide";
  std::vector<std::tuple<float, size_t, int64_t, int64_t>> order;
  for (size_t i = specials.size(); i < pieces.size(); ++i)
    for (size_t cut : innerBoundaries(pieces[i])) {
      const std::string l = pieces[i].substr(0, cut), r = pieces[i].substr(cut);
      if (vocab.contains(l) && vocab.contains(r))
        order.emplace_back(-d.scores[i], i, vocab[l].get<int64_t>(),
                           vocab[r].get<int64_t>());
    }
  std::sort(order.begin(), order.end());
  ojson merges = ojson::array();
  for (const auto &[neg_score, piece, l, r] : order)
    merges.push_back({pieces[size_t(l)], pieces[size_t(r)]});
  ojson added = ojson::array();
  for (size_t i = 0; i < specials.size(); ++i)
    added.push_back({{"id", i},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  ojson tok = {{"version", "1.0"}, {"added_tokens", added}};
  tok["normalizer"] = pipeline.value("normalizer", ojson());
  tok["pre_tokenizer"] = pipeline.value("pre_tokenizer", ojson());
  tok["post_processor"] = ojson();
  tok["decoder"] = pipeline.value("decoder", ojson());
  tok["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", "<unk>"},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", true},
                  {"byte_fallback", true},
                  {"ignore_merges", false},
                  {"vocab", vocab},
                  {"merges", merges}};
  return tok;
}

/// Writes tokenizer.json (+ a config adding BOS, as Llama-2's does) under a
/// fresh directory and loads it.
hyrt::Tokenizer loadHf(const std::string &name, const ojson &tok) {
  const fs::path dir = fs::path(testing::TempDir()) / ("hyc_sp_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"add_bos_token": true, "add_eos_token": false,
            "bos_token": "<s>", "eos_token": "</s>"})";
  hyrt::TokenizerData data;
  hyrt::Status s = hyrt::read_hf_tokenizer(dir.string(), &data);
  EXPECT_TRUE(s.ok()) << s.message();
  hyrt::Tokenizer t;
  s = t.init(std::move(data));
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

ojson replace(const std::string &from, const std::string &to) {
  return {
      {"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

/// Llama-2's tokenizer.json (transformers "legacy" conversion): the prefix
/// and spaces come from the normalizer, no pre-tokenizer.
ojson legacyPipeline() {
  return {
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", kMeta}}, replace(" ", kMeta)}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {replace(kMeta, " "),
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}}};
}

/// The newer conversion (Mistral, TinyLlama re-exports): Metaspace
/// pre-tokenizer and decoder.
ojson metaspacePipeline(const std::string &scheme, bool split) {
  return {{"pre_tokenizer",
           {{"type", "Metaspace"},
            {"replacement", kMeta},
            {"prepend_scheme", scheme},
            {"split", split}}},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Metaspace"},
               {"replacement", kMeta},
               {"prepend_scheme", scheme},
               {"split", split}}}}}}};
}

/// Texts to compare on: TinyStories lines (story text, punctuation, quotes,
/// non-ASCII typography), a multi-line chunk, and edge cases.
std::vector<std::string> sampleTexts() {
  std::vector<std::string> texts = {
      "",
      "a",
      " ",
      "  ",
      "hello world",
      " leading space",
      "  two leading spaces",
      "trailing space ",
      "trailing spaces   ",
      "multiple   inner    spaces",
      "line one\nline two\n",
      "\n\nnewlines first",
      "tab\tseparated\twords",
      "caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x9Cquoted\xE2\x80\x9D",
      "emoji \xF0\x9F\x98\x80 and \xF0\x9F\x90\xB1!",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", // 日本語: bytes only
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82", // Привет
      "a \xE2\x96\x81 literal U+2581",
      "digits 0123456789 and $%^&*()",
  };
  std::ifstream f(kStories);
  std::string line;
  for (int n = 0; n < 400 && std::getline(f, line); ++n)
    if (!line.empty())
      texts.push_back(line);
  std::ifstream g(kStories);
  std::string chunk(6000, '\0');
  g.read(chunk.data(), std::streamsize(chunk.size()));
  chunk.resize(size_t(g.gcount()));
  while (!chunk.empty() && (static_cast<unsigned char>(chunk.back()) & 0xC0) ==
                               0x80) // keep the chunk valid UTF-8
    chunk.pop_back();
  if (!chunk.empty())
    chunk.pop_back();
  texts.push_back(chunk);
  return texts;
}

/// `text` as llama2.c sees what tokenizer.json sees: a "▁" typed in the
/// text is a space to SentencePiece (and so to HF's conversion) but an
/// unknown character, hence three byte tokens, to llama2.c's " " pieces.
std::string asSpaces(std::string text) {
  for (size_t pos = 0; (pos = text.find(kMeta, pos)) != std::string::npos;)
    text.replace(pos, kMeta.size(), " ");
  return text;
}

std::string streamDecode(const hyrt::Tokenizer &t,
                         const std::vector<int32_t> &ids) {
  return t.decode_all(ids);
}

class SentencePieceTokenizerJson : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fs::exists(kTok512) || !fs::exists(kStories))
      GTEST_SKIP() << "../shared/models/stories260K or tinystories-valid-text "
                      "not present";
    data_ = readTok512();
    ASSERT_TRUE(llama2c_.init(data_).ok());
  }
  hyrt::TokenizerData data_;
  hyrt::Tokenizer llama2c_;
};

TEST_F(SentencePieceTokenizerJson, LegacyLlamaMatchesLlama2cIdsAndRoundTrips) {
  const hyrt::Tokenizer hf =
      loadHf("legacy", llamaTokenizerJson(data_, legacyPipeline()));
  ASSERT_EQ(hf.bos_id(), 1);
  int byte_fallback_texts = 0;
  const std::vector<std::string> texts = sampleTexts();
  ASSERT_GE(texts.size(), 150u);
  for (const std::string &text : texts) {
    SCOPED_TRACE(testing::PrintToString(text));
    // Both put BOS first and a "▁" before non-empty text (llama2.c as a
    // separate " " piece that then merges like any other), so the ids of
    // the same vocabulary must agree exactly.
    const std::vector<int32_t> ids = hf.encode(text, true);
    ASSERT_EQ(ids, llama2c_.encode(asSpaces(text), true));
    byte_fallback_texts += std::any_of(
        ids.begin(), ids.end(), [](int32_t id) { return id >= 3 && id < 259; });
    EXPECT_EQ(hf.decode_text(ids, true), asSpaces(text));
    // Streaming decode drops the prefix space after BOS as llama2.c does.
    EXPECT_EQ(streamDecode(hf, ids), streamDecode(llama2c_, ids));
  }
  EXPECT_GE(byte_fallback_texts, 5) << "the edge cases exercise byte fallback";
}

TEST_F(SentencePieceTokenizerJson, SaveAndLoadKeepThePipeline) {
  // hyrt's own tokenizer file (what a compiled artifact carries) must keep
  // the SentencePiece pipeline, not fall back to byte-level.
  const hyrt::Tokenizer hf = loadHf(
      "save", llamaTokenizerJson(data_, metaspacePipeline("first", true)));
  const std::string path =
      (fs::path(testing::TempDir()) / "hyc_sp_saved.tok").string();
  ASSERT_TRUE(hf.save(path).ok());
  hyrt::Tokenizer loaded;
  hyrt::Status s = hyrt::Tokenizer::load(path, &loaded);
  ASSERT_TRUE(s.ok()) << s.message();
  for (const std::string &text : sampleTexts()) {
    SCOPED_TRACE(testing::PrintToString(text));
    const std::vector<int32_t> ids = loaded.encode(text, true);
    ASSERT_EQ(ids, hf.encode(text, true));
    EXPECT_EQ(loaded.decode_text(ids, true), hf.decode_text(ids, true));
  }
}

TEST_F(SentencePieceTokenizerJson, MetaspaceMatchesLlama2cIds) {
  for (bool split : {false, true}) {
    SCOPED_TRACE(split ? "split" : "no split");
    const hyrt::Tokenizer hf =
        loadHf(split ? "meta_split" : "meta",
               llamaTokenizerJson(data_, metaspacePipeline("first", split)));
    for (const std::string &text : sampleTexts()) {
      SCOPED_TRACE(testing::PrintToString(text));
      // Metaspace prepends "▁" only to text not starting with one, so a
      // leading space is the prefix itself: " x" encodes as llama2.c's "x"
      // and decodes back without it (HF behaves the same). split=true
      // cannot change ids here: no tok512 piece has "▁" past its start.
      const bool leading = !asSpaces(text).empty() && asSpaces(text)[0] == ' ';
      const std::string same = asSpaces(text).substr(leading ? 1 : 0);
      const std::vector<int32_t> ids = hf.encode(text, true);
      if (same.empty() && leading) // " ": "▁" alone
        ASSERT_EQ(ids,
                  (std::vector<int32_t>{1, llama2c_.encode(" ", false)[0]}));
      else
        ASSERT_EQ(ids, llama2c_.encode(same, true));
      EXPECT_EQ(hf.decode_text(ids, true), same);
    }
  }
}

TEST_F(SentencePieceTokenizerJson, PrependFirstSkipsTextAfterAddedToken) {
  const hyrt::Tokenizer first =
      loadHf("meta_first",
             llamaTokenizerJson(data_, metaspacePipeline("first", false)));
  const hyrt::Tokenizer always =
      loadHf("meta_always",
             llamaTokenizerJson(data_, metaspacePipeline("always", false)));
  const hyrt::Tokenizer never =
      loadHf("meta_never",
             llamaTokenizerJson(data_, metaspacePipeline("never", false)));
  // "</s>" is an added token: the text after it is a segment of its own,
  // prefixed under "always" only.
  const std::vector<int32_t> once = first.encode("Once", false);
  const std::vector<int32_t> bare = never.encode("Once", false);
  ASSERT_EQ(once, llama2c_.encode("Once", false));
  ASSERT_EQ(always.encode("Once", false), once);
  ASSERT_NE(bare, once);
  EXPECT_EQ(never.data().tokens[size_t(bare[0])].rfind(kMeta, 0),
            std::string::npos)
      << "unprefixed text starts with a piece without \"▁\"";
  EXPECT_EQ(never.decode_text(bare, false), "Once");
  auto cat = [](std::vector<int32_t> a, const std::vector<int32_t> &b) {
    a.push_back(2);
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  EXPECT_EQ(first.encode("Once</s>Once", false), cat(once, bare));
  EXPECT_EQ(always.encode("Once</s>Once", false), cat(once, once));
  EXPECT_EQ(never.encode("Once</s>Once", false), cat(bare, bare));
  EXPECT_EQ(never.decode_text(cat(bare, bare), false), "Once</s>Once");
}

TEST_F(SentencePieceTokenizerJson, ByteFallbackAndUnknownTokens) {
  const hyrt::Tokenizer hf =
      loadHf("bytes", llamaTokenizerJson(data_, legacyPipeline()));
  // "日" (E6 97 A5) is not a piece: its three bytes are <0xE6> <0x97> <0xA5>,
  // ids byte + 3 as in llama2.c.
  const std::vector<int32_t> ids = hf.encode("\xE6\x97\xA5", false);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end()),
            (std::vector<int32_t>{0xE6 + 3, 0x97 + 3, 0xA5 + 3}));
  // A byte run that is not UTF-8 decodes to one U+FFFD per byte token.
  const auto a_piece = std::find(data_.tokens.begin(), data_.tokens.end(), "a");
  ASSERT_NE(a_piece, data_.tokens.end());
  const int32_t a_id = int32_t(a_piece - data_.tokens.begin());
  EXPECT_EQ(hf.decode_text({0xE6 + 3, 0x97 + 3, a_id}, false),
            "\xEF\xBF\xBD\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(hf.decode_text({0xE6 + 3, 0x97 + 3, 0xA5 + 3, a_id}, false),
            "\xE6\x97\xA5"
            "a");
  // Without byte_fallback, unknown characters are <unk>, adjacent ones
  // fused into one (fuse_unk).
  ojson tok = llamaTokenizerJson(data_, legacyPipeline());
  tok["model"]["byte_fallback"] = false;
  const hyrt::Tokenizer unk = loadHf("unk", tok);
  const std::vector<int32_t> u = unk.encode("\xE6\x97\xA5\xE6\x9C\xAC", false);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[1], 0);
  tok["model"]["fuse_unk"] = false;
  EXPECT_EQ(
      loadHf("unk2", tok).encode("\xE6\x97\xA5\xE6\x9C\xAC", false).size(), 3u);
}

TEST_F(SentencePieceTokenizerJson, UnsupportedComponentsAreRefusedByName) {
  auto initError = [&](const std::string &name, const ojson &tok) {
    const fs::path dir = fs::path(testing::TempDir()) / ("hyc_sp_bad_" + name);
    fs::create_directories(dir);
    std::ofstream(dir / "tokenizer.json") << tok.dump();
    hyrt::TokenizerData data;
    hyrt::Status s = hyrt::read_hf_tokenizer(dir.string(), &data);
    if (s.ok()) {
      hyrt::Tokenizer t;
      s = t.init(std::move(data));
    }
    return s.ok() ? std::string("ok") : s.message();
  };
  ojson tok = llamaTokenizerJson(data_, legacyPipeline());
  tok["decoder"]["decoders"].push_back({{"type", "CTC"}});
  EXPECT_NE(initError("ctc", tok).find("decoder of type 'CTC'"),
            std::string::npos);
  tok = llamaTokenizerJson(data_, legacyPipeline());
  tok["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", " +"}};
  EXPECT_NE(initError("regex", tok).find("Replace with a Regex pattern"),
            std::string::npos);
  tok = llamaTokenizerJson(data_, legacyPipeline());
  tok["model"]["type"] = "WordPiece";
  EXPECT_NE(initError("wordpiece", tok).find("model of type 'WordPiece'"),
            std::string::npos);
  tok = llamaTokenizerJson(data_, legacyPipeline());
  tok["model"]["continuing_subword_prefix"] = "##";
  EXPECT_NE(initError("prefix", tok).find("continuing_subword_prefix"),
            std::string::npos);
  tok = llamaTokenizerJson(data_, metaspacePipeline("sometimes", false));
  EXPECT_NE(initError("scheme", tok).find("prepend_scheme 'sometimes'"),
            std::string::npos);
}

/// A Unigram tokenizer.json small enough to work its Viterbi out by hand.
ojson unigramTokenizerJson(bool byte_fallback) {
  ojson vocab = ojson::array();
  for (const auto &[piece, score] :
       std::vector<std::pair<std::string, float>>{{"<unk>", 0},
                                                  {"<s>", 0},
                                                  {"</s>", 0},
                                                  {kMeta, -2},
                                                  {"a", -3},
                                                  {"b", -3},
                                                  {kMeta + "a", -1.5},
                                                  {kMeta + "ab", -5},
                                                  {"ab", -2},
                                                  {"<0xC3>", 0},
                                                  {"<0xA9>", 0}})
    vocab.push_back({piece, score});
  ojson tok =
      llamaTokenizerJson(readTok512(), metaspacePipeline("always", true));
  tok["model"] = {{"type", "Unigram"},
                  {"unk_id", 0},
                  {"vocab", vocab},
                  {"byte_fallback", byte_fallback}};
  return tok;
}

TEST_F(SentencePieceTokenizerJson, UnigramTakesTheBestScoringSegmentation) {
  const hyrt::Tokenizer uni = loadHf("unigram", unigramTokenizerJson(true));
  // "▁ab": [▁ab] -5, [▁a b] -4.5, [▁ ab] -4, [▁ a b] -8: the best path is
  // neither the longest first piece nor the most probable first piece.
  EXPECT_EQ(uni.encode("ab", false), (std::vector<int32_t>{3, 8}));
  EXPECT_EQ(uni.encode("ab ab", true), (std::vector<int32_t>{1, 3, 8, 3, 8}));
  EXPECT_EQ(uni.encode("a", false), (std::vector<int32_t>{6}));
  EXPECT_EQ(uni.encode("\xC3\xA9", false), (std::vector<int32_t>{3, 9, 10}));
  EXPECT_EQ(uni.encode("\xC3\xA9"
                       "a",
                       false),
            (std::vector<int32_t>{3, 9, 10, 4}));
  // "é" has no piece: an unknown run, spelled in byte tokens.
  EXPECT_EQ(uni.encode("\xC3\xA9\xC3\xA9"
                       "a",
                       false),
            (std::vector<int32_t>{3, 9, 10, 9, 10, 4}));
  EXPECT_EQ(uni.decode_text({3, 8, 3, 9, 10, 4}, false), "ab \xC3\xA9"
                                                         "a");
  // Without byte_fallback the run is one (fused) unk.
  const hyrt::Tokenizer unk =
      loadHf("unigram_unk", unigramTokenizerJson(false));
  EXPECT_EQ(unk.encode("\xC3\xA9\xC3\xA9"
                       "a",
                       false),
            (std::vector<int32_t>{3, 0, 4}));
}

} // namespace
