// Tests for the llama2.c and SentencePiece tokenizers (synthetic vocabularies
// and the real stories260K tok512 vocabulary), decoding and save/load.
#include "hyrt/text/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

using hyrt::Tokenizer;
using hyrt::TokenizerData;
using hyrt::TokenizerKind;

namespace {

const std::string kShared = HYC_SHARED_DIR;
const std::string kTok512 = kShared + "/models/stories260K/tok512.bin";
const std::string kSpace = "\xE2\x96\x81"; // U+2581

bool exists(const std::string &path) { return std::ifstream(path).good(); }

/// A llama2.c-style vocabulary: unk, bos, eos, 256 byte tokens, then pieces.
TokenizerData tiny_llama2c(const std::vector<std::pair<std::string, float>> &pieces) {
  TokenizerData d;
  d.kind = TokenizerKind::kLlama2c;
  d.tokens = {"<unk>", "\n<s>\n", "\n</s>\n"};
  d.scores = {0, 0, 0};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    d.tokens.push_back(buf);
    d.scores.push_back(0);
  }
  for (const auto &[piece, score] : pieces) {
    d.tokens.push_back(piece);
    d.scores.push_back(score);
  }
  d.unk_id = 0;
  d.bos_id = 1;
  d.eos_id = 2;
  return d;
}

/// The same vocabulary in SentencePiece form: "▁" for spaces, explicit types.
TokenizerData as_sentencepiece(TokenizerData d) {
  d.kind = TokenizerKind::kSentencePiece;
  d.types.assign(d.tokens.size(), hyrt::kTokenNormal);
  d.types[0] = hyrt::kTokenUnknown;
  d.types[1] = d.types[2] = hyrt::kTokenControl;
  d.tokens[1] = "<s>";
  d.tokens[2] = "</s>";
  for (size_t i = 3; i < 259 && i < d.tokens.size(); ++i)
    d.types[i] = hyrt::kTokenByte;
  for (size_t i = 259; i < d.tokens.size(); ++i) {
    std::string s;
    for (char c : d.tokens[i])
      s += c == ' ' ? kSpace : std::string(1, c);
    d.tokens[i] = s;
  }
  return d;
}

int32_t id_of(const Tokenizer &t, const std::string &piece) {
  for (int64_t i = 0; i < t.vocab_size(); ++i)
    if (t.data().tokens[i] == piece)
      return int32_t(i);
  return -1;
}

std::vector<std::string> story_lines(size_t max_lines) {
  std::ifstream f(kShared + "/models/tinystories-valid-text/tinystories_val.txt");
  std::vector<std::string> lines;
  std::string line;
  while (lines.size() < max_lines && std::getline(f, line))
    if (!line.empty())
      lines.push_back(line);
  return lines;
}

} // namespace

TEST(TokenizerLlama2c, MergesByHighestScoreLeftmostOnTies) {
  // Pieces: " " and letters, then merges. " a" (score 5) beats "ab" (4).
  Tokenizer t;
  ASSERT_TRUE(t.init(tiny_llama2c({{" ", 0},
                                   {"a", 0},
                                   {"b", 0},
                                   {" a", 5},
                                   {"ab", 4},
                                   {" ab", 6},
                                   {"bb", 1}}))
                  .ok());
  const int32_t sp_a = id_of(t, " a"), b = id_of(t, "b"), sp_ab = id_of(t, " ab");
  EXPECT_EQ(t.encode("a", false), (std::vector<int32_t>{sp_a}));
  // " a" first (score 5), then " ab" (6); the last "b" stays alone.
  EXPECT_EQ(t.encode("abb", true), (std::vector<int32_t>{1, sp_ab, b}));
  // Tie: "bbbb" -> leftmost "bb" pairs first: [" ", bb, bb].
  const int32_t bb = id_of(t, "bb"), space = id_of(t, " ");
  EXPECT_EQ(t.encode("bbbb", false), (std::vector<int32_t>{space, bb, bb}));
  EXPECT_EQ(t.encode("", true), (std::vector<int32_t>{1}));
  EXPECT_TRUE(t.encode("", false).empty());
}

TEST(TokenizerLlama2c, ByteFallbackAndDecode) {
  Tokenizer t;
  ASSERT_TRUE(t.init(tiny_llama2c({{" ", 0}, {"a", 0}, {" a", 1}})).ok());
  // "é" (C3 A9) and "z" are unknown: bytes at id byte + 3.
  const std::vector<int32_t> ids = t.encode("z\xC3\xA9", true);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, id_of(t, " "), 'z' + 3, 0xC3 + 3,
                                       0xA9 + 3}));
  EXPECT_EQ(t.decode_all(ids), "z\xC3\xA9"); // space dropped after BOS
  // Leading space dropped only right after BOS.
  const int32_t sp_a = id_of(t, " a");
  EXPECT_EQ(t.decode(1, sp_a), "a");
  EXPECT_EQ(t.decode(sp_a, sp_a), " a");
  EXPECT_EQ(t.decode(sp_a), " a");
  EXPECT_EQ(t.decode(0x41 + 3), "A");
  EXPECT_EQ(t.decode(1), ""); // control tokens print nothing
  EXPECT_EQ(t.decode(9999), "");
  EXPECT_EQ(t.decode_all(t.encode("a a", true)), "a a");
}

TEST(TokenizerSentencePiece, SpacesBecomeMetaAndBytesFallBack) {
  Tokenizer t;
  ASSERT_TRUE(t.init(as_sentencepiece(tiny_llama2c(
                         {{" ", 0}, {"a", 0}, {"b", 0}, {" a", 5}, {"ab", 4}})))
                  .ok());
  const int32_t meta_a = id_of(t, kSpace + "a"), b = id_of(t, "b");
  EXPECT_EQ(t.encode("ab a", true),
            (std::vector<int32_t>{1, meta_a, b, meta_a}));
  EXPECT_EQ(t.decode_all(t.encode("ab a", true)), "ab a");
  // Unknown character via <0xXX> byte tokens.
  EXPECT_EQ(t.encode("~", false),
            (std::vector<int32_t>{id_of(t, kSpace), '~' + 3}));
  EXPECT_EQ(t.decode(1), "");
  EXPECT_EQ(t.decode(1, meta_a), "a");
}

TEST(TokenizerSentencePiece, MissingByteTokensUseUnk) {
  TokenizerData d;
  d.kind = TokenizerKind::kSentencePiece;
  d.tokens = {"<unk>", "<s>", "</s>", kSpace, "a"};
  d.scores = {0, 0, 0, 0, 0};
  d.types = {2, 3, 3, 1, 1};
  d.unk_id = 0;
  d.bos_id = 1;
  d.eos_id = 2;
  Tokenizer t;
  ASSERT_TRUE(t.init(d).ok());
  EXPECT_EQ(t.encode("a?", false), (std::vector<int32_t>{3, 4, 0}));
}

TEST(Tokenizer, InitReportsMismatchedSizes) {
  TokenizerData d = tiny_llama2c({});
  d.scores.pop_back();
  Tokenizer t;
  hyrt::Status s = t.init(d);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected 259 scores"), std::string::npos)
      << s.message();
  d = tiny_llama2c({});
  d.bos_id = 500;
  EXPECT_FALSE(t.init(d).ok());
}

TEST(Tokenizer, SaveLoadRoundTrip) {
  Tokenizer t;
  ASSERT_TRUE(t.init(as_sentencepiece(tiny_llama2c(
                         {{" ", 0}, {"a", 0}, {" a", 1}, {"aa", 2}})))
                  .ok());
  const std::string path = std::string(HYC_BINARY_DIR) + "/tok_roundtrip.hytk";
  ASSERT_TRUE(t.save(path).ok());
  Tokenizer u;
  hyrt::Status s = Tokenizer::load(path, &u);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(u.kind(), TokenizerKind::kSentencePiece);
  EXPECT_EQ(u.data().tokens, t.data().tokens);
  EXPECT_EQ(u.data().scores, t.data().scores);
  EXPECT_EQ(u.data().types, t.data().types);
  EXPECT_EQ(u.bos_id(), 1);
  EXPECT_EQ(u.encode("aaa a", true), t.encode("aaa a", true));
  // A truncated file is an error, not a crash.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  s = Tokenizer::load(path, &u);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
  std::remove(path.c_str());
  EXPECT_FALSE(Tokenizer::load(path, &u).ok());
}

// Found by fuzz_tokenizer_artifact: a token or merge count the file cannot
// hold sized the tables first (4G tokens: 136 GB, an abort).
TEST(Tokenizer, LoadRefusesCountsTheFileCannotHold) {
  const std::string path = std::string(HYC_BINARY_DIR) + "/tok_counts.hytk";
  auto write = [&](uint32_t tokens, uint32_t merges) {
    std::ofstream f(path, std::ios::binary);
    const int32_t header[] = {1, int32_t(TokenizerKind::kLlama2c), 1, 2, 0};
    f.write("HYTK", 4);
    f.write(reinterpret_cast<const char *>(header), sizeof(header));
    f.write(reinterpret_cast<const char *>(&tokens), 4);
    f.write(reinterpret_cast<const char *>(&merges), 4);
  };
  Tokenizer t;
  write(0xffffffffu, 0);
  hyrt::Status s = Tokenizer::load(path, &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("4294967295 tokens announced, but only 4 bytes "
                             "follow"),
            std::string::npos)
      << s.message();
  write(0, 0xfffffff0u);
  s = Tokenizer::load(path, &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("4294967280 merges announced, but only 0 bytes"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

// Found by fuzz_tokenizer_artifact: a pipeline field of the wrong type in
// an artifact's tokenizer.hytk ("add_bos": {}) made nlohmann throw through
// Tokenizer::load (an abort); it is an error naming the field.
TEST(Tokenizer, LoadRefusesPipelineFieldsOfTheWrongType) {
  const std::string path = std::string(HYC_BINARY_DIR) + "/tok_pipeline.hytk";
  auto write = [&](const std::string &pipeline) {
    std::ofstream f(path, std::ios::binary);
    const int32_t header[] = {2, int32_t(TokenizerKind::kHfByteLevel), -1, -1, 0};
    const uint32_t tokens = 256, merges = 0, type = 1;
    const float score = 0;
    f.write("HYTK", 4);
    f.write(reinterpret_cast<const char *>(header), sizeof(header));
    f.write(reinterpret_cast<const char *>(&tokens), 4);
    // The 256 byte tokens of byte-level BPE (GPT-2's printable stand-ins:
    // printable Latin-1 bytes stand for themselves, the others for U+0100
    // onwards in byte order), as UTF-8.
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      const uint32_t cp = printable ? b : next++;
      std::string u8;
      if (cp < 0x80)
        u8 = std::string(1, char(cp));
      else
        u8 = {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
      const uint32_t len = uint32_t(u8.size());
      f.write(reinterpret_cast<const char *>(&len), 4);
      f.write(u8.data(), len);
      f.write(reinterpret_cast<const char *>(&score), 4);
      f.write(reinterpret_cast<const char *>(&type), 4);
    }
    f.write(reinterpret_cast<const char *>(&merges), 4);
    const uint32_t len = uint32_t(pipeline.size()), none = 0;
    f.write(reinterpret_cast<const char *>(&len), 4);
    f.write(pipeline.data(), len);
    f.write(reinterpret_cast<const char *>(&none), 4); // no chat template
  };
  const std::string base =
      R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE"})";
  const std::pair<std::string, std::string> cases[] = {
      {R"(, "add_bos": {}})", "pipeline.add_bos is object, expected a boolean"},
      {R"(, "add_eos": "yes"})", "pipeline.add_eos is string, expected a boolean"},
      {R"(, "model": {"type": "BPE", "ignore_merges": 1}})",
       "model.ignore_merges is number, expected a boolean"},
  };
  Tokenizer t;
  write(base + "}");
  hyrt::Status ok = Tokenizer::load(path, &t);
  EXPECT_TRUE(ok.ok()) << ok.message(); // the well-typed pipeline loads
  for (const auto &[tail, message] : cases) {
    write(base + tail);
    hyrt::Status s = Tokenizer::load(path, &t);
    ASSERT_FALSE(s.ok()) << tail;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
  }
  std::remove(path.c_str());
}

TEST(TokenizerTok512, ReadsLlama2cFile) {
  if (!exists(kTok512))
    GTEST_SKIP() << "shared models not found at " << kTok512;
  TokenizerData d;
  hyrt::Status s = hyrt::read_llama2c_tokenizer(kTok512, 512, &d);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(d.tokens.size(), 512u);
  EXPECT_EQ(d.tokens[1], "\n<s>\n");
  EXPECT_EQ(d.tokens[2], "\n</s>\n");
  EXPECT_EQ(d.tokens[3], "<0x00>");
  EXPECT_EQ(d.tokens[258], "<0xFF>");
  TokenizerData until_eof;
  ASSERT_TRUE(hyrt::read_llama2c_tokenizer(kTok512, -1, &until_eof).ok());
  EXPECT_EQ(until_eof.tokens, d.tokens);
  s = hyrt::read_llama2c_tokenizer(kTok512, 513, &d);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected 513 tokens, found 512"),
            std::string::npos)
      << s.message();
}

TEST(TokenizerTok512, RoundTripAndSentencePieceAgree) {
  if (!exists(kTok512))
    GTEST_SKIP() << "shared models not found at " << kTok512;
  TokenizerData d;
  ASSERT_TRUE(hyrt::read_llama2c_tokenizer(kTok512, 512, &d).ok());
  Tokenizer a, b;
  ASSERT_TRUE(a.init(d).ok());
  ASSERT_TRUE(b.init(as_sentencepiece(d)).ok());
  const std::vector<std::string> lines = story_lines(60);
  if (lines.empty())
    GTEST_SKIP() << "tinystories_val.txt not found under " << kShared;
  size_t chars = 0, tokens = 0;
  for (const std::string &line : lines) {
    const std::vector<int32_t> ids = a.encode(line, true);
    ASSERT_EQ(ids[0], 1);
    EXPECT_EQ(a.decode_all(ids), line);
    EXPECT_EQ(b.encode(line, true), ids) << line;
    EXPECT_EQ(b.decode_all(ids), line);
    chars += line.size();
    tokens += ids.size();
  }
  // Merging happened: far fewer tokens than characters.
  EXPECT_LT(tokens * 2, chars);
}

TEST(TokenizerTok512, KnownEncoding) {
  if (!exists(kTok512))
    GTEST_SKIP() << "shared models not found at " << kTok512;
  TokenizerData d;
  ASSERT_TRUE(hyrt::read_llama2c_tokenizer(kTok512, 512, &d).ok());
  Tokenizer t;
  ASSERT_TRUE(t.init(d).ok());
  // Every piece of the result is a vocabulary piece and they concatenate to
  // the dummy-prefixed text; no adjacent pair can still be merged.
  const std::string text = "Once upon a time, there was a little girl.";
  const std::vector<int32_t> ids = t.encode(text, false);
  std::string joined;
  for (int32_t id : ids)
    joined += d.tokens[id];
  EXPECT_EQ(joined, " " + text);
  for (size_t i = 0; i + 1 < ids.size(); ++i)
    EXPECT_EQ(id_of(t, d.tokens[ids[i]] + d.tokens[ids[i + 1]]), -1)
        << "unmerged pair at " << i;
  // Regression pin: " Once"=403 " upon"=407 " a"=261 ... " g" "ir" "l" ".".
  EXPECT_EQ(ids, (std::vector<int32_t>{403, 407, 261, 378, 432, 383, 286, 261,
                                       376, 298, 315, 421, 426}));
}

TEST(TokenizerTok512, GreedySampleTextRoundTrips) {
  const std::string path =
      kShared + "/models/stories260K/expected-greedy-256.txt";
  if (!exists(kTok512) || !exists(path))
    GTEST_SKIP() << "shared models not found under " << kShared;
  TokenizerData d;
  ASSERT_TRUE(hyrt::read_llama2c_tokenizer(kTok512, 512, &d).ok());
  Tokenizer t;
  ASSERT_TRUE(t.init(d).ok());
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  EXPECT_EQ(t.decode_all(t.encode(text, true)), text);
}
