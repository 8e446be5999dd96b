// synthesize(): every arch round-trips through load_checkpoint with the same
// spec, weights are a pure function of (seed, name), config.json uses
// transformers' field names, and the tokenizer.bin beside it is picked up.
#include "checkpoint_test_util.h"

#include "models/checkpoint/synth.h"

#include <cmath>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

Status synth(const std::string &arch, const std::string &preset, uint64_t seed,
             const std::string &dir) {
  SynthOptions o;
  o.arch = arch;
  o.preset = preset;
  o.seed = seed;
  o.output_dir = dir;
  return synthesize(o);
}

class CheckpointSynthRoundTrip : public ::testing::TestWithParam<std::string> {
};

TEST_P(CheckpointSynthRoundTrip, SpecWeightsAndTokenizer) {
  const std::string arch = GetParam();
  TempDir a, b, c;
  ASSERT_TRUE(synth(arch, "tiny", 7, a.str()).ok());
  ASSERT_TRUE(synth(arch, "tiny", 7, b.str()).ok());
  ASSERT_TRUE(synth(arch, "tiny", 8, c.str()).ok());
  Expected<ModelSpec> want = synth_spec(arch, "tiny");
  ASSERT_TRUE(want.ok()) << want.error();

  HYC_CKPT_LOAD(ca, a.str());
  HYC_CKPT_LOAD(cb, b.str());
  HYC_CKPT_LOAD(cc, c.str());
  EXPECT_EQ(ca.format, "hf");
  EXPECT_EQ(to_string(ca.spec), to_string(*want));
  EXPECT_TRUE(ca.warnings.empty());

  size_t differing = 0;
  const std::vector<WeightInfo> required = required_weights(ca.spec);
  EXPECT_EQ(ca.weights->weights().size(), required.size());
  for (const WeightInfo &w : required) {
    std::vector<float> x = readWeight(ca, w.name);
    EXPECT_TRUE(x == readWeight(cb, w.name)) << w.name << " not reproducible";
    if (x != readWeight(cc, w.name))
      ++differing;
  }
  EXPECT_EQ(differing, required.size()) << "seed 8 must change every tensor";

  ASSERT_TRUE(ca.tokenizer.has_value());
  const TokenizerSpec &t = *ca.tokenizer;
  EXPECT_EQ(t.kind, "llama2c");
  ASSERT_EQ(static_cast<int64_t>(t.tokens.size()), ca.spec.vocab_size);
  EXPECT_EQ(t.tokens[0], "<unk>");
  EXPECT_EQ(t.tokens[1], "<s>");
  EXPECT_EQ(t.tokens[2], "</s>");
  EXPECT_EQ(t.tokens[3], "<0x00>");
  EXPECT_EQ(t.tokens[258], "<0xFF>");
  EXPECT_EQ(t.tokens[259], " ");
  EXPECT_EQ(t.bos_id, ca.spec.bos_token_id);
  EXPECT_EQ(t.eos_id, ca.spec.eos_token_id);
}

INSTANTIATE_TEST_SUITE_P(Archs, CheckpointSynthRoundTrip,
                         ::testing::Values("llama", "qwen2", "qwen3",
                                           "qwen3-moe", "deepseek-v3"),
                         [](const auto &info) {
                           std::string n = info.param;
                           for (char &ch : n)
                             if (ch == '-')
                               ch = '_';
                           return n;
                         });

TEST(CheckpointSynth, LlamaTinyConfigUsesTransformersNames) {
  TempDir dir;
  ASSERT_TRUE(synth("llama", "tiny", 1, dir.str()).ok());
  std::ifstream in(dir.file("config.json"));
  Json c = Json::parse(in);
  EXPECT_EQ(c["architectures"], Json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(c["model_type"], "llama");
  EXPECT_EQ(c["vocab_size"], 512);
  EXPECT_EQ(c["hidden_size"], 64);
  EXPECT_EQ(c["intermediate_size"], 172);
  EXPECT_EQ(c["num_hidden_layers"], 2);
  EXPECT_EQ(c["num_attention_heads"], 4);
  EXPECT_EQ(c["num_key_value_heads"], 2);
  EXPECT_EQ(c["max_position_embeddings"], 256);
  EXPECT_EQ(c["rms_norm_eps"], 1e-5);
  EXPECT_EQ(c["rope_theta"], 10000.0);
  EXPECT_EQ(c["tie_word_embeddings"], false);
  EXPECT_EQ(c["bos_token_id"], 1);
  EXPECT_EQ(c["eos_token_id"], 2);
  EXPECT_EQ(c["torch_dtype"], "float32");
  EXPECT_TRUE(c["rope_scaling"].is_null());
  EXPECT_TRUE(fs::exists(dir.file("model.safetensors")));
  EXPECT_TRUE(fs::exists(dir.file("tokenizer.bin")));
}

TEST(CheckpointSynth, WeightStatistics) {
  TempDir dir;
  ASSERT_TRUE(synth("llama", "tiny", 3, dir.str()).ok());
  HYC_CKPT_LOAD(ckpt, dir.str());
  std::vector<float> e = readWeight(ckpt, "model.embed_tokens.weight");
  double sum = 0, sq = 0;
  for (float v : e) {
    sum += v;
    sq += double(v) * v;
  }
  const double mean = sum / e.size();
  const double std = std::sqrt(sq / e.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(std, 0.02, 0.002);
  for (float v : readWeight(ckpt, "model.layers.1.input_layernorm.weight")) {
    EXPECT_GE(v, 0.95f);
    EXPECT_LE(v, 1.05f);
  }
}

TEST(CheckpointSynth, SmallPresetAndTieOverride) {
  Expected<ModelSpec> small = synth_spec("llama", "small");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->vocab_size, 2048);
  EXPECT_EQ(small->hidden_size, 256);
  EXPECT_EQ(small->num_layers, 4);
  EXPECT_EQ(small->num_heads, 8);
  EXPECT_EQ(small->num_kv_heads, 4);
  EXPECT_EQ(small->intermediate_size, 688);

  TempDir dir;
  SynthOptions o;
  o.preset = "small";
  o.output_dir = dir.str();
  o.tie_word_embeddings = true;
  ASSERT_TRUE(synthesize(o).ok());
  HYC_CKPT_LOAD(ckpt, dir.str());
  EXPECT_TRUE(ckpt.spec.tie_word_embeddings);
  EXPECT_EQ(ckpt.weights->find("lm_head.weight"), nullptr);
  EXPECT_EQ(ckpt.spec.vocab_size, 2048);
  ASSERT_TRUE(ckpt.tokenizer.has_value());
  EXPECT_EQ(ckpt.tokenizer->tokens.size(), 2048u);
}

TEST(CheckpointSynth, Errors) {
  TempDir dir;
  Status s = synth("gpt-neox", "tiny", 0, dir.str());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("gpt-neox"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("deepseek-v3"), std::string::npos) << s.error();
  s = synth("llama", "huge", 0, dir.str());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("huge"), std::string::npos) << s.error();
  s = synth("llama", "tiny", 0, "");
  EXPECT_FALSE(s.ok());
  SynthOptions o;
  o.output_dir = dir.str();
  o.dequantize_fp8_to = dir.file("deq");
  s = synthesize(o); // a dequantized copy needs fp8
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("needs fp8"), std::string::npos) << s.error();
}

} // namespace
} // namespace hyc::models::test
