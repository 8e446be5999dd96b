// synthesize(): every arch round-trips through load_checkpoint with the same
// spec, weights are a pure function of (seed, name), config.json uses
// transformers' field names, and the tokenizer.bin beside it is picked up.
#include "checkpoint_test_util.h"

#include "models/checkpoint/family.h"
#include "models/checkpoint/synth.h"
#include "models/io/hf_config.h"

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
                                           "qwen3-moe", "deepseek-v2",
                                           "deepseek-v2-lite", "deepseek-v3",
                                           "hunyuan-moe"),
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

namespace hyc::models::test {
namespace {

/// Parameters of every weight the spec needs.
int64_t parameterCount(const ModelSpec &spec) {
  int64_t n = 0;
  for (const WeightInfo &w : required_weights(spec)) {
    int64_t e = 1;
    for (int64_t d : w.shape)
      e *= d;
    n += e;
  }
  return n;
}

// The real-size presets imply their arch, describe the published shapes
// (issue 8's table) and survive config.json: from_hf(to_hf(spec)) == spec.
// Their weights (GBs) are not written here.
TEST(CheckpointSynthPresets, RealSizeShapesRoundTripThroughConfig) {
  // Parameter counts from the shapes, independently of required_weights:
  // dense-1b is Llama-3.2-1B (1,235,814,400 published); moe-small has per
  // layer q/o 2048x4096, k/v 2048x512, 64 experts x 3 x 768 x 2048, a
  // 64-way router and two q/k norms of 128, plus untied 128256 x 2048
  // embeddings and head; mla-small has MLA projections (q_a 2048x512, q_b
  // 512x16x192, kv_a 2048x576, kv_b 512x16x256, o 2048x2048), a dense first
  // layer (3 x 10944 x 2048) and four MoE layers (64 + 2 shared experts of
  // 3 x 1408 x 2048, router, correction bias).
  const int64_t H = 2048, V = 128256;
  const int64_t moeLayer = 2 * H * 4096 + 2 * H * 512 + 64 * 3 * 768 * H + 64 * H +
                           2 * 128 + 2 * H;
  const int64_t mlaAttn = H * 512 + 512 + 512 * 16 * 192 + H * 576 + 512 +
                          512 * 16 * 256 + 16 * 128 * H + 2 * H;
  const int64_t mlaMoe = 66 * 3 * 1408 * H + 64 * H + 64;
  struct Want {
    const char *preset, *arch;
    int64_t layers, params;
  };
  for (const Want &w :
       {Want{"dense-1b", "llama", 16, 1235814400},
        Want{"moe-small", "qwen3_moe", 8, 8 * moeLayer + 2 * V * H + H},
        Want{"mla-small", "deepseek_v3", 5,
             5 * mlaAttn + 3 * 10944 * H + 4 * mlaMoe + 2 * V * H + H}}) {
    Expected<ModelSpec> spec = synth_spec("", w.preset);
    ASSERT_TRUE(spec.ok()) << spec.error();
    EXPECT_EQ(spec->arch, w.arch) << w.preset;
    EXPECT_EQ(spec->num_layers, w.layers) << w.preset;
    EXPECT_EQ(spec->vocab_size, V) << w.preset;
    EXPECT_EQ(spec->hidden_size, H) << w.preset;
    EXPECT_EQ(parameterCount(*spec), w.params) << w.preset;
    const detail::Family *family = detail::family_by_arch(spec->arch);
    ASSERT_NE(family, nullptr);
    nlohmann::json config = family->to_hf(*spec);
    std::vector<std::string> warnings;
    Expected<ModelSpec> back =
        family->from_hf(io::HfConfig::from_json(config, w.preset), warnings);
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(to_string(*back), to_string(*spec)) << w.preset;
  }
  Expected<ModelSpec> dense = synth_spec("", "dense-1b");
  EXPECT_TRUE(dense->tie_word_embeddings);
  EXPECT_EQ(dense->rope.scaling, "llama3");
  EXPECT_EQ(dense->num_kv_heads, 8);
  Expected<ModelSpec> mla = synth_spec("deepseek-v3", "mla-small");
  ASSERT_TRUE(mla.ok()) << mla.error();
  EXPECT_EQ(mla->moe->num_shared_experts, 2);
  EXPECT_EQ(mla->moe->first_k_dense, 1);
}

TEST(CheckpointSynthPresets, ArchContradictingThePresetIsAnError) {
  Expected<ModelSpec> s = synth_spec("qwen3", "dense-1b");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("preset 'dense-1b' is a llama model, but --arch is 'qwen3'"),
            std::string::npos)
      << s.error();
  Expected<ModelSpec> u = synth_spec("llama", "huge");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().find("supported: tiny, small, dense-1b, moe-small, mla-small"),
            std::string::npos)
      << u.error();
}

} // namespace
} // namespace hyc::models::test
