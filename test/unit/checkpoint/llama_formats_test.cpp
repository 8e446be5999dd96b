// Llama from all three formats: stories260K as GGUF, llama2.c fp32 and
// llama2.c Q8 must agree; tokenizer discovery beside a .bin; the golden HF
// llama-tiny / llama3-tiny directories (GQA, tied, Llama-3 rope scaling).
#include "checkpoint_test_util.h"

#include "models/io/safetensors.h"

#include <algorithm>
#include <cmath>

namespace hyc::models::test {
namespace {

constexpr const char *kStories = "models/stories260K";

TEST(CheckpointLlamaGguf, Stories260KSpecAndTokenizer) {
  HYC_CKPT_REQUIRE_SHARED(path,
                          std::string(kStories) + "/stories260K-f32.gguf");
  HYC_CKPT_LOAD(ckpt, path);
  const ModelSpec &s = ckpt.spec;
  EXPECT_EQ(ckpt.format, "gguf");
  EXPECT_EQ(s.arch, "llama");
  EXPECT_EQ(s.vocab_size, 512);
  EXPECT_EQ(s.hidden_size, 64);
  EXPECT_EQ(s.intermediate_size, 172);
  EXPECT_EQ(s.num_layers, 5);
  EXPECT_EQ(s.num_heads, 8);
  EXPECT_EQ(s.num_kv_heads, 4);
  EXPECT_EQ(s.head_dim, 8);
  // The file stores float32 1e-5; the loader recovers the decimal exactly.
  EXPECT_EQ(s.rms_norm_eps, 1e-5);
  EXPECT_EQ(s.rope.theta, 10000.0);
  EXPECT_EQ(s.rope.rotary_dim, 8);
  EXPECT_FALSE(s.rope.neox);
  EXPECT_EQ(s.rope.scaling, "none");
  EXPECT_EQ(s.max_position_embeddings, 2048); // converter default
  // output.weight is stored (a copy of the embedding), so not tied.
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_EQ(s.bos_token_id, 1);
  EXPECT_EQ(s.eos_token_id, 2);

  const WeightInfo *q =
      ckpt.weights->find("model.layers.4.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(q->source_dtype, "F32");
  EXPECT_NE(ckpt.weights->find("lm_head.weight"), nullptr);

  ASSERT_TRUE(ckpt.tokenizer.has_value());
  const TokenizerSpec &t = *ckpt.tokenizer;
  EXPECT_EQ(t.kind, "sentencepiece");
  ASSERT_EQ(t.tokens.size(), 512u);
  EXPECT_EQ(t.scores.size(), 512u);
  EXPECT_EQ(t.types.size(), 512u);
  EXPECT_EQ(t.tokens[1], "<s>");
  EXPECT_EQ(t.tokens[3], "<0x00>");
  EXPECT_EQ(t.types[3], 6); // byte
  EXPECT_EQ(t.bos_id, 1);
  EXPECT_EQ(t.eos_id, 2);
  EXPECT_EQ(t.unk_id, 0);
}

TEST(CheckpointLlamaLlama2c, Stories260KSpecAndTokenizerBeside) {
  HYC_CKPT_REQUIRE_SHARED(path, std::string(kStories) + "/stories260K.bin");
  HYC_CKPT_LOAD(ckpt, path);
  const ModelSpec &s = ckpt.spec;
  EXPECT_EQ(ckpt.format, "llama2c");
  EXPECT_EQ(s.arch, "llama");
  EXPECT_EQ(s.max_position_embeddings, 512);
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(ckpt.weights->find("lm_head.weight"), nullptr);
  EXPECT_EQ(s.rms_norm_eps, 1e-5);
  EXPECT_EQ(s.rope.theta, 10000.0);
  EXPECT_FALSE(s.rope.neox);
  ASSERT_TRUE(ckpt.tokenizer.has_value()) << "tok512.bin beside the .bin";
  EXPECT_EQ(ckpt.tokenizer->kind, "llama2c");
  ASSERT_EQ(ckpt.tokenizer->tokens.size(), 512u);
  EXPECT_EQ(ckpt.tokenizer->tokens[1], "\n<s>\n");
  EXPECT_EQ(ckpt.tokenizer->bos_id, 1);
  EXPECT_EQ(ckpt.tokenizer->eos_id, 2);
}

TEST(CheckpointLlamaFormats, GgufAndLlama2cAgreeOnSpecAndWeights) {
  HYC_CKPT_REQUIRE_SHARED(gguf_path,
                          std::string(kStories) + "/stories260K-f32.gguf");
  HYC_CKPT_REQUIRE_SHARED(bin_path, std::string(kStories) + "/stories260K.bin");
  HYC_CKPT_LOAD(gguf, gguf_path);
  HYC_CKPT_LOAD(bin, bin_path);
  // The two differ only where the files do: the GGUF converter wrote
  // context_length 2048 and a separate output.weight.
  ModelSpec a = gguf.spec, b = bin.spec;
  a.max_position_embeddings = b.max_position_embeddings;
  a.tie_word_embeddings = b.tie_word_embeddings;
  EXPECT_EQ(to_string(a), to_string(b));

  // Both store q/k in the adjacent-pair layout: no permutation between them,
  // so every weight is bit-identical.
  for (const WeightInfo &w : required_weights(bin.spec)) {
    std::vector<float> x = readWeight(gguf, w.name);
    std::vector<float> y = readWeight(bin, w.name);
    ASSERT_EQ(x.size(), y.size()) << w.name;
    EXPECT_TRUE(x == y) << w.name << " differs between GGUF and llama2.c";
  }
  EXPECT_TRUE(readWeight(gguf, "lm_head.weight") ==
              readWeight(bin, "model.embed_tokens.weight"));

  // The embedded tokenizer is tok512 with U+2581 for spaces.
  ASSERT_TRUE(gguf.tokenizer && bin.tokenizer);
  EXPECT_EQ(gguf.tokenizer->scores, bin.tokenizer->scores);
  for (size_t i = 259; i < 512; ++i) {
    std::string piece = gguf.tokenizer->tokens[i];
    for (size_t at; (at = piece.find("\xE2\x96\x81")) != std::string::npos;)
      piece.replace(at, 3, " ");
    EXPECT_EQ(piece, bin.tokenizer->tokens[i]) << "token " << i;
  }
}

TEST(CheckpointLlamaFormats, Q80WithinInt8RoundingOfFp32) {
  HYC_CKPT_REQUIRE_SHARED(q8_path,
                          std::string(kStories) + "/stories260K_q80.bin");
  HYC_CKPT_REQUIRE_SHARED(bin_path, std::string(kStories) + "/stories260K.bin");
  HYC_CKPT_LOAD(q8, q8_path);
  HYC_CKPT_LOAD(bin, bin_path);
  EXPECT_EQ(to_string(q8.spec), to_string(bin.spec));
  ASSERT_TRUE(q8.tokenizer.has_value());

  int quantized = 0;
  for (const WeightInfo &w : required_weights(bin.spec)) {
    std::vector<float> q = readWeight(q8, w.name);
    std::vector<float> f = readWeight(bin, w.name);
    ASSERT_EQ(q.size(), f.size()) << w.name;
    const WeightInfo *info = q8.weights->find(w.name);
    if (info->source_dtype != "Q8_GROUPED") {
      EXPECT_TRUE(q == f) << w.name << " is stored fp32 in both";
      continue;
    }
    ++quantized;
    // Groups of 32 over the flattened tensor, scale = max|w| / 127: the
    // error is at most half a step.
    constexpr size_t kGroup = 32;
    for (size_t g = 0; g < f.size(); g += kGroup) {
      float amax = 0.0f;
      for (size_t i = g; i < std::min(g + kGroup, f.size()); ++i)
        amax = std::max(amax, std::fabs(f[i]));
      const float bound = amax / 127.0f * 0.5f * 1.001f + 1e-7f;
      for (size_t i = g; i < std::min(g + kGroup, f.size()); ++i)
        ASSERT_LE(std::fabs(q[i] - f[i]), bound) << w.name << " element " << i;
    }
  }
  EXPECT_EQ(quantized, 1 + 5 * 7); // embedding + 7 matrices per layer
}

TEST(CheckpointLlamaLlama2c, TokenizerSearchOrderAndOverride) {
  HYC_CKPT_REQUIRE_SHARED(bin_path, std::string(kStories) + "/stories260K.bin");
  HYC_CKPT_REQUIRE_SHARED(tok_path, std::string(kStories) + "/tok512.bin");
  TempDir dir;
  fs::copy_file(bin_path, dir.file("model.bin"));
  {
    HYC_CKPT_LOAD(ckpt, dir.file("model.bin"));
    EXPECT_FALSE(ckpt.tokenizer.has_value()) << "nothing beside the file";
  }
  {
    LoadOptions options;
    options.tokenizer_path = tok_path;
    HYC_CKPT_LOAD(ckpt, dir.file("model.bin"), options);
    ASSERT_TRUE(ckpt.tokenizer.has_value());
    EXPECT_EQ(ckpt.tokenizer->tokens.size(), 512u);
  }
  {
    // A tokenizer.bin for another vocabulary is skipped (with a warning) in
    // favour of tok512.bin.
    writeText(dir.file("tokenizer.bin"), std::string("\x07\0\0\0", 4));
    fs::copy_file(tok_path, dir.file("tok512.bin"));
    HYC_CKPT_LOAD(ckpt, dir.file("model.bin"));
    ASSERT_TRUE(ckpt.tokenizer.has_value());
    EXPECT_EQ(ckpt.tokenizer->tokens.size(), 512u);
    ASSERT_EQ(ckpt.warnings.size(), 1u);
    EXPECT_NE(ckpt.warnings[0].find("tokenizer.bin"), std::string::npos)
        << ckpt.warnings[0];
  }
  {
    LoadOptions options;
    options.tokenizer_path = dir.file("missing.bin");
    auto r = load_checkpoint(dir.file("model.bin"), options);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("missing.bin"), std::string::npos) << r.error();
  }
}

TEST(CheckpointLlamaGguf, ExplicitTokenizerOverridesEmbedded) {
  HYC_CKPT_REQUIRE_SHARED(path,
                          std::string(kStories) + "/stories260K-f32.gguf");
  HYC_CKPT_REQUIRE_SHARED(tok_path, std::string(kStories) + "/tok512.bin");
  LoadOptions options;
  options.tokenizer_path = tok_path;
  HYC_CKPT_LOAD(ckpt, path, options);
  ASSERT_TRUE(ckpt.tokenizer.has_value());
  EXPECT_EQ(ckpt.tokenizer->kind, "llama2c");
}

TEST(CheckpointLlamaHf, LlamaTinyGolden) {
  HYC_CKPT_REQUIRE_SHARED(dir, "golden/llama-tiny");
  HYC_CKPT_LOAD(ckpt, dir);
  const ModelSpec &s = ckpt.spec;
  EXPECT_EQ(ckpt.format, "hf");
  EXPECT_EQ(s.arch, "llama");
  EXPECT_EQ(s.vocab_size, 512);
  EXPECT_EQ(s.hidden_size, 128);
  EXPECT_EQ(s.intermediate_size, 352);
  EXPECT_EQ(s.num_layers, 2);
  EXPECT_EQ(s.num_heads, 4);
  EXPECT_EQ(s.num_kv_heads, 2);
  EXPECT_EQ(s.head_dim, 32);
  EXPECT_EQ(s.rope.rotary_dim, 32);
  EXPECT_TRUE(s.rope.neox);
  EXPECT_EQ(s.rope.scaling, "none");
  EXPECT_EQ(s.rope.theta, 10000.0);
  EXPECT_EQ(s.rms_norm_eps, 1e-5);
  EXPECT_EQ(s.max_position_embeddings, 512);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_EQ(s.bos_token_id, 1);
  EXPECT_EQ(s.eos_token_id, 2);
  EXPECT_FALSE(ckpt.tokenizer.has_value());
  EXPECT_EQ(required_weights(s).size(), 1u + 2 * 9 + 2);

  Expected<io::SafetensorsModel> raw = io::SafetensorsModel::open(dir);
  ASSERT_TRUE(raw.ok()) << raw.error();
  for (const char *name : {"model.layers.1.self_attn.k_proj.weight",
                           "lm_head.weight", "model.norm.weight"}) {
    Expected<std::vector<float>> want = raw->read_f32(name);
    ASSERT_TRUE(want.ok()) << want.error();
    EXPECT_TRUE(readWeight(ckpt, name) == *want) << name;
  }
  const WeightInfo *k =
      ckpt.weights->find("model.layers.1.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{64, 128}));
}

TEST(CheckpointLlamaHf, Llama3TinyRopeScalingFromRopeScaling) {
  HYC_CKPT_REQUIRE_SHARED(dir, "golden/llama3-tiny");
  HYC_CKPT_LOAD(ckpt, dir + "/config.json"); // a file inside works too
  const RopeSpec &r = ckpt.spec.rope;
  EXPECT_EQ(r.scaling, "llama3");
  EXPECT_EQ(r.theta, 500000.0);
  EXPECT_EQ(r.factor, 8.0);
  EXPECT_EQ(r.low_freq_factor, 1.0);
  EXPECT_EQ(r.high_freq_factor, 4.0);
  // From rope_scaling (transformers), not a top-level field (llama.cpp's
  // converter, which would default to 8192).
  EXPECT_EQ(r.original_max_position, 64);
  EXPECT_TRUE(r.neox);
  EXPECT_TRUE(ckpt.spec.tie_word_embeddings);
  for (const WeightInfo &w : required_weights(ckpt.spec))
    EXPECT_NE(w.name, "lm_head.weight");
}

} // namespace
} // namespace hyc::models::test
