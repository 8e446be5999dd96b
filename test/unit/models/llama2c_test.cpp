// Tests for the llama2.c readers: real stories260K fp32 and Q8 files against
// each other and the GGUF conversion, tokenizer.bin, and malformed files.
#include "models/io/gguf.h"
#include "models/io/llama2c.h"

#include "test/common/compare.h"
#include "test_util.h"

#include <cmath>
#include <unistd.h>

namespace hyc::io {
namespace {

using test::Bytes;
using test::TempDir;

const char *kBin = "models/stories260K/stories260K.bin";
const char *kQ80 = "models/stories260K/stories260K_q80.bin";
const char *kGguf = "models/stories260K/stories260K-f32.gguf";
const char *kTok = "models/stories260K/tok512.bin";

std::vector<float> readOrDie(const Llama2cModel &m, const std::string &name) {
  auto v = m.read_f32(name);
  EXPECT_TRUE(v.ok()) << v.error();
  return v.ok() ? *v : std::vector<float>();
}

TEST(Llama2cTest, LegacyStories260K) {
  HYC_REQUIRE_SHARED(path, kBin);
  auto m = Llama2cModel::open(path);
  ASSERT_TRUE(m.ok()) << m.error();
  const Llama2cConfig &c = m->config();
  EXPECT_EQ(c.version, 0);
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.shared_classifier);
  EXPECT_EQ(c.kv_dim(), 32);
  EXPECT_EQ(m->tensors().size(), 2u + 9 * 5);
  EXPECT_EQ(m->find("lm_head.weight"), nullptr);
  auto wk = m->tensor("model.layers.4.self_attn.k_proj.weight");
  ASSERT_TRUE(wk.ok()) << wk.error();
  EXPECT_EQ(wk->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(wk->dtype, DType::F32);
  auto missing = m->tensor("model.layers.5.self_attn.k_proj.weight");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("no tensor named"), std::string::npos);
}

TEST(Llama2cTest, MatchesGgufConversionBitForBit) {
  HYC_REQUIRE_SHARED(bin, kBin);
  HYC_REQUIRE_SHARED(gguf, kGguf);
  auto m = Llama2cModel::open(bin);
  auto g = GgufFile::open(gguf);
  ASSERT_TRUE(m.ok()) << m.error();
  ASSERT_TRUE(g.ok()) << g.error();
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.embed_tokens.weight", "output.weight"},
      {"model.norm.weight", "output_norm.weight"}};
  const char *perLayer[][2] = {{"input_layernorm", "attn_norm"},
                               {"self_attn.q_proj", "attn_q"},
                               {"self_attn.k_proj", "attn_k"},
                               {"self_attn.v_proj", "attn_v"},
                               {"self_attn.o_proj", "attn_output"},
                               {"post_attention_layernorm", "ffn_norm"},
                               {"mlp.gate_proj", "ffn_gate"},
                               {"mlp.down_proj", "ffn_down"},
                               {"mlp.up_proj", "ffn_up"}};
  for (int i = 0; i < 5; ++i)
    for (auto &p : perLayer)
      pairs.emplace_back("model.layers." + std::to_string(i) + "." + p[0] +
                             ".weight",
                         "blk." + std::to_string(i) + "." + p[1] + ".weight");
  for (const auto &[ours, theirs] : pairs) {
    auto a = m->tensor(ours);
    auto b = g->tensor(theirs);
    ASSERT_TRUE(a.ok()) << a.error();
    ASSERT_TRUE(b.ok()) << b.error();
    EXPECT_EQ(a->shape, b->shape) << ours;
    ASSERT_EQ(a->nbytes, b->nbytes) << ours;
    // README: the GGUF conversion applied no q/k permutation.
    EXPECT_EQ(std::memcmp(a->data, b->data, a->nbytes), 0) << ours;
  }
}

TEST(Llama2cTest, Q80DequantizesCloseToFp32) {
  HYC_REQUIRE_SHARED(bin, kBin);
  HYC_REQUIRE_SHARED(q80, kQ80);
  auto f = Llama2cModel::open(bin);
  auto q = Llama2cModel::open(q80);
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_EQ(q->config().version, 2);
  EXPECT_EQ(q->config().group_size, 32);
  EXPECT_TRUE(q->config().shared_classifier);
  ASSERT_EQ(q->tensors().size(), f->tensors().size());
  float maxErr = 0;
  for (const TensorView &fv : f->tensors()) {
    const TensorView *qv = q->find(fv.name);
    ASSERT_NE(qv, nullptr) << fv.name;
    EXPECT_EQ(qv->shape, fv.shape) << fv.name;
    std::vector<float> ref = readOrDie(*f, fv.name);
    std::vector<float> deq = readOrDie(*q, fv.name);
    ASSERT_EQ(ref.size(), deq.size());
    if (qv->dtype == DType::F32) { // norms are stored unquantized
      EXPECT_EQ(ref, deq) << fv.name;
      continue;
    }
    ASSERT_EQ(qv->dtype, DType::Q8_GROUPED) << fv.name;
    // Symmetric int8 rounding: |error| <= scale / 2, scale = max|w| / 127.
    maxErr = std::max(maxErr, hyc::test::maxAbsDiff(ref, deq));
    for (size_t g = 0; g < ref.size() / 32; ++g) {
      const float halfStep = hyc::test::maxAbs(&ref[g * 32], 32) / 127.0f / 2.0f;
      for (size_t j = 0; j < 32; ++j)
        ASSERT_LE(std::fabs(ref[g * 32 + j] - deq[g * 32 + j]), halfStep * 1.001f + 1e-7f)
            << fv.name << " element " << g * 32 + j;
    }
  }
  EXPECT_GT(maxErr, 0.0f);
  EXPECT_LT(maxErr, 0.0071f); // README: 0.0070 max abs error
}

TEST(Llama2cTest, Tokenizer) {
  HYC_REQUIRE_SHARED(tok, kTok);
  auto t = read_llama2c_tokenizer(tok, 512);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->max_token_length, 7);
  ASSERT_EQ(t->pieces.size(), 512u);
  ASSERT_EQ(t->scores.size(), 512u);
  EXPECT_EQ(t->pieces[0], "<unk>");
  EXPECT_EQ(t->pieces[1], "\n<s>\n");
  EXPECT_EQ(t->pieces[2], "\n</s>\n");
  EXPECT_EQ(t->pieces[3], "<0x00>");
  EXPECT_EQ(t->pieces[258], "<0xFF>");

  std::string gguf = test::sharedFile(kGguf);
  if (gguf.empty())
    return;
  auto g = GgufFile::open(gguf);
  ASSERT_TRUE(g.ok()) << g.error();
  auto tokens = g->get_string_array("tokenizer.ggml.tokens");
  auto scores = g->get_f32_array("tokenizer.ggml.scores");
  ASSERT_TRUE(tokens.ok() && scores.ok());
  EXPECT_EQ(*scores, t->scores);
  for (size_t i = 3; i < 512; ++i) {
    std::string piece = (*tokens)[i];
    for (size_t p; (p = piece.find("\xE2\x96\x81")) != std::string::npos;)
      piece.replace(p, 3, " ");
    EXPECT_EQ(piece, t->pieces[i]) << i;
  }
}

TEST(Llama2cTest, TokenizerTruncationAndWrongVocab) {
  HYC_REQUIRE_SHARED(tok, kTok);
  TempDir dir;
  std::string p = dir.file("tok.bin");
  std::filesystem::copy_file(tok, p);
  const size_t size = std::filesystem::file_size(tok);
  for (size_t cut = (size - 1) / 7 * 7 + 7; cut >= 7;) {
    cut -= 7; // every 7th byte, longest first so one copy suffices
    ASSERT_EQ(::truncate(p.c_str(), static_cast<off_t>(cut)), 0);
    auto t = read_llama2c_tokenizer(p, 512);
    ASSERT_FALSE(t.ok()) << "cut at " << cut;
    ASSERT_NE(t.error().find(p), std::string::npos) << t.error();
    ASSERT_NE(t.error().find("truncated"), std::string::npos) << t.error();
  }
  auto fewer = read_llama2c_tokenizer(tok, 500);
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(fewer.error().find("bytes left after the last of 500 tokens"),
            std::string::npos)
      << fewer.error();
  auto more = read_llama2c_tokenizer(tok, 513);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.error().find("token 512 of 513"), std::string::npos)
      << more.error();
}

TEST(Llama2cTest, WrongSizesNameTheHeader) {
  HYC_REQUIRE_SHARED(bin, kBin);
  HYC_REQUIRE_SHARED(q80, kQ80);
  TempDir dir;
  for (const std::string &src : {bin, q80}) {
    std::string copy = dir.file("m.bin");
    std::filesystem::remove(copy);
    std::filesystem::copy_file(src, copy);
    const uint64_t size = std::filesystem::file_size(src);
    std::vector<uint64_t> cuts;
    for (uint64_t c = 0; c < 300; ++c)
      cuts.push_back(c);
    for (uint64_t c = 300; c < size; c += 997)
      cuts.push_back(c);
    cuts.push_back(size - 1);
    for (auto it = cuts.rbegin(); it != cuts.rend(); ++it) {
      ASSERT_EQ(::truncate(copy.c_str(), static_cast<off_t>(*it)), 0);
      auto m = Llama2cModel::open(copy);
      ASSERT_FALSE(m.ok()) << "cut at " << *it;
      ASSERT_NE(m.error().find(copy), std::string::npos) << m.error();
      if (*it >= 256)
        ASSERT_NE(m.error().find("expected " + std::to_string(size) +
                                 " bytes for dim=64, hidden_dim=172"),
                  std::string::npos)
            << m.error();
    }
  }
  std::vector<uint8_t> longer = test::readBytes(bin);
  longer.push_back(0);
  test::writeBytes(dir.file("long.bin"), longer);
  auto m = Llama2cModel::open(dir.file("long.bin"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("expected 1056540 bytes for dim=64"),
            std::string::npos)
      << m.error();
  EXPECT_NE(m.error().find("found 1056541"), std::string::npos) << m.error();
}

TEST(Llama2cTest, BadHeaders) {
  TempDir dir;
  auto open = [&](const Bytes &b) {
    test::writeBytes(dir.file("h.bin"), b.data);
    return Llama2cModel::open(dir.file("h.bin"));
  };
  Bytes zeroHeads;
  for (int32_t v : {64, 172, 5, 0, 4, 512, 512})
    zeroHeads.put<int32_t>(v);
  auto a = open(zeroHeads);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("n_heads = 0"), std::string::npos) << a.error();
  Bytes uneven;
  for (int32_t v : {64, 172, 5, 6, 3, 512, 512})
    uneven.put<int32_t>(v);
  auto b = open(uneven);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("dim=64 is not a multiple of n_heads=6"),
            std::string::npos)
      << b.error();
  // Found by fuzz_llama2c (UBSan): the legacy "negative vocab = unshared
  // classifier" flag negated INT32_MIN.
  Bytes minVocab;
  for (int32_t v : {64, 172, 5, 8, 4, INT32_MIN, 512})
    minVocab.put<int32_t>(v);
  auto m = open(minVocab);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("vocab_size = -2147483648"), std::string::npos)
      << m.error();
  Bytes version;
  version.put<uint32_t>(0x616b3432).put<int32_t>(7);
  auto c = open(version);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("unsupported llama2.c version 7"), std::string::npos)
      << c.error();
}

// Writes a small version-1 (fp32, "ak42") model with an unshared classifier
// whose every value is its own flat index in the file's weight stream.
TEST(Llama2cTest, Version1LayoutAndUnsharedClassifier) {
  TempDir dir;
  const int dim = 8, hidden = 12, layers = 2, heads = 2, kvHeads = 1, vocab = 5,
            seq = 4, kv = dim / heads * kvHeads;
  Bytes b;
  b.put<uint32_t>(0x616b3432).put<int32_t>(1);
  for (int32_t v : {dim, hidden, layers, heads, kvHeads, vocab, seq})
    b.put<int32_t>(v);
  b.put<uint8_t>(0).pad(256);
  const int64_t numel =
      2 * layers * dim + dim + vocab * dim +
      layers * (2 * dim * dim + 2 * kv * dim + 3 * hidden * dim) + vocab * dim;
  for (int64_t i = 0; i < numel; ++i)
    b.put<float>(static_cast<float>(i));
  test::writeBytes(dir.file("v1.bin"), b.data);
  auto m = Llama2cModel::open(dir.file("v1.bin"));
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->config().shared_classifier);
  // Norms first: rms_att[0], rms_att[1], rms_ffn[0], ...
  EXPECT_EQ(readOrDie(*m, "model.layers.1.input_layernorm.weight")[0], 8.0f);
  EXPECT_EQ(readOrDie(*m, "model.layers.0.post_attention_layernorm.weight")[0],
            16.0f);
  EXPECT_EQ(readOrDie(*m, "model.norm.weight")[0], 32.0f);
  EXPECT_EQ(readOrDie(*m, "model.embed_tokens.weight")[0], 40.0f);
  EXPECT_EQ(readOrDie(*m, "model.layers.0.self_attn.q_proj.weight")[0], 80.0f);
  auto head = readOrDie(*m, "lm_head.weight");
  ASSERT_EQ(head.size(), static_cast<size_t>(vocab * dim));
  EXPECT_EQ(head.back(), static_cast<float>(numel - 1));
}

// A legacy file with a negative vocab size carries wcls after freq_cis.
TEST(Llama2cTest, LegacyUnsharedClassifier) {
  TempDir dir;
  const int dim = 4, hidden = 6, layers = 1, heads = 2, kvHeads = 2, vocab = 3,
            seq = 2;
  Bytes b;
  for (int32_t v : {dim, hidden, layers, heads, kvHeads, -vocab, seq})
    b.put<int32_t>(v);
  const int64_t weights =
      vocab * dim + 2 * dim + 4 * dim * dim + 3 * hidden * dim + dim;
  const int64_t freq = 2 * seq * (dim / heads / 2);
  for (int64_t i = 0; i < weights + freq + vocab * dim; ++i)
    b.put<float>(static_cast<float>(i));
  test::writeBytes(dir.file("l.bin"), b.data);
  auto m = Llama2cModel::open(dir.file("l.bin"));
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(m->config().shared_classifier);
  EXPECT_EQ(m->config().vocab_size, 3);
  EXPECT_EQ(readOrDie(*m, "lm_head.weight")[0],
            static_cast<float>(weights + freq));
}

} // namespace
} // namespace hyc::io
