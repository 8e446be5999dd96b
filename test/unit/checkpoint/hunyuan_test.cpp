// Hunyuan-MoE: the A13B-style config.json (per-layer lists, its own field
// names and the `false` placeholders it writes), the NTK-alpha rope base,
// Hunyuan's tensor names mapped to canonical ones on load (and written back
// by synthesize), and errors that name the field.
#include "checkpoint_test_util.h"

#include "hf_config_parse.h"
#include "models/checkpoint/family.h"
#include "models/checkpoint/synth.h"
#include "models/io/hf_config.h"

#include <cmath>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

/// Hunyuan-A13B-Instruct's config.json, shrunk to 2 layers (the field set
/// and the odd values, e.g. routed_scaling_factor: false, as released).
Json a13bConfig() {
  return {{"architectures", {"HunYuanMoEV1ForCausalLM"}},
          {"model_type", "hunyuan_v1_moe"},
          {"attention_bias", false},
          {"attention_dropout", 0.1},
          {"attention_head_dim", 16},
          {"bos_token_id", 1},
          {"cla_share_factor", 2},
          {"eos_token_id", 511}, // A13B's 127960, inside the shrunk vocabulary
          {"group_limited_greedy", false},
          {"hidden_act", "silu"},
          {"hidden_size", 64},
          {"intermediate_size", 40},
          {"kv_lora_rank", nullptr},
          {"max_position_embeddings", 32768},
          {"mlp_bias", false},
          {"moe_drop_tokens", false},
          {"moe_intermediate_size", {24, 24}},
          {"moe_layer_num_skipped", 0},
          {"moe_random_routing_dropped_token", false},
          {"moe_topk", {2, 2}},
          {"n_group", false},
          {"norm_topk_prob", true},
          {"num_attention_heads", 4},
          {"num_experts", 8},
          {"num_hidden_layers", 2},
          {"num_key_value_heads", 2},
          {"num_shared_expert", {1, 1}},
          {"q_lora_rank", nullptr},
          {"rms_norm_eps", 1e-5},
          {"rope_scaling",
           {{"alpha", 1000.0},
            {"beta_fast", 32},
            {"beta_slow", 1},
            {"factor", 1.0},
            {"mscale", 1.0},
            {"mscale_all_dim", 1.0},
            {"type", "dynamic"}}},
          {"rope_theta", 10000.0},
          {"routed_scaling_factor", false},
          {"tie_word_embeddings", true},
          {"topk_group", false},
          {"use_cla", false},
          {"use_mixed_mlp_moe", true},
          {"use_mla", false},
          {"use_qk_norm", true},
          {"vocab_size", 512}};
}

Expected<ModelSpec> parse(const Json &config,
                          std::vector<std::string> *warnings = nullptr) {
  return parseHfConfig(config, "hy/config.json", warnings);
}

void expectError(const Json &config, std::initializer_list<const char *> parts) {
  expectHfConfigError(config, "hy/config.json", parts);
}

TEST(CheckpointHunyuan, A13bLayout) {
  std::vector<std::string> warnings;
  Expected<ModelSpec> s = parse(a13bConfig(), &warnings);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(s->arch, "hunyuan_moe");
  EXPECT_EQ(s->head_dim, 16);
  EXPECT_EQ(s->num_kv_heads, 2);
  EXPECT_TRUE(s->qk_norm);
  EXPECT_TRUE(s->qk_norm_after_rope);
  EXPECT_TRUE(s->tie_word_embeddings);
  EXPECT_EQ(s->rms_norm_eps, 1e-5);
  EXPECT_TRUE(s->rope.neox);
  EXPECT_EQ(s->rope.rotary_dim, 16);
  EXPECT_EQ(s->rope.theta, 10000.0);
  EXPECT_EQ(s->rope.scaling, "ntk_alpha");
  EXPECT_EQ(s->rope.alpha, 1000.0);
  ASSERT_TRUE(s->moe.has_value());
  const MoeSpec &m = *s->moe;
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.top_k, 2);
  EXPECT_EQ(m.expert_intermediate_size, 24);
  EXPECT_EQ(m.num_shared_experts, 1);
  EXPECT_EQ(m.shared_intermediate_size, 40) << "shared MLP: intermediate_size";
  EXPECT_EQ(m.scoring, "softmax");
  EXPECT_TRUE(m.renormalize);
  EXPECT_EQ(m.n_group, 1);
  EXPECT_EQ(m.routed_scaling_factor, 1.0);
  EXPECT_TRUE(is_moe_layer(*s, 0));
  EXPECT_TRUE(is_moe_layer(*s, 1));
}

TEST(CheckpointHunyuan, NtkAlphaRopeBase) {
  // transformers' HunYuan rotary embedding and llama.cpp's converter:
  // base = theta * alpha^(d / (d - 2)). A13B (d = 128): llama.cpp's comment
  // gives 11158839.9251; Python double: 11158839.92507748.
  RopeSpec r;
  r.theta = 10000.0;
  r.rotary_dim = 128;
  r.scaling = "ntk_alpha";
  r.alpha = 1000.0;
  EXPECT_NEAR(rope_base(r), 11158839.92507748, 1e-6);
  // d = 16: 10000 * 1000^(8/7) = 26826957.95279725 (Python), so the
  // frequency of the last pair, base^(-14/16), is 10000^(-7/8) / 1000.
  r.rotary_dim = 16;
  EXPECT_NEAR(rope_base(r), 26826957.95279725, 1e-6);
  EXPECT_NEAR(std::pow(rope_base(r), -14.0 / 16.0), 3.16227766016838e-07,
              1e-18);
  r.scaling = "none";
  EXPECT_EQ(rope_base(r), 10000.0) << "alpha only applies to ntk_alpha";
}

TEST(CheckpointHunyuan, TensorNamesAreHunyuansOnDiskAndCanonicalOnLoad) {
  TempDir dir;
  SynthOptions o;
  o.arch = "hunyuan-moe";
  o.output_dir = dir.str();
  ASSERT_TRUE(synthesize(o).ok());
  Expected<io::SafetensorsModel> raw = io::SafetensorsModel::open(dir.str());
  ASSERT_TRUE(raw.ok()) << raw.error();
  for (const char *stored :
       {"model.layers.0.self_attn.query_layernorm.weight",
        "model.layers.0.self_attn.key_layernorm.weight",
        "model.layers.0.mlp.gate.wg.weight",
        "model.layers.1.mlp.shared_mlp.down_proj.weight",
        "model.layers.1.mlp.experts.7.up_proj.weight"})
    EXPECT_TRUE(raw->has(stored)) << stored;
  EXPECT_FALSE(raw->has("model.layers.0.self_attn.q_norm.weight"));
  EXPECT_FALSE(raw->has("lm_head.weight")) << "tied";

  HYC_CKPT_LOAD(ckpt, dir.str());
  for (const WeightInfo &w : required_weights(ckpt.spec))
    EXPECT_NE(ckpt.weights->find(w.name), nullptr) << w.name;
  const WeightInfo *router = ckpt.weights->find("model.layers.0.mlp.gate.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->shape, (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(readWeight(ckpt, "model.layers.0.mlp.gate.weight"),
            *raw->read_f32("model.layers.0.mlp.gate.wg.weight"));
}

TEST(CheckpointHunyuan, IgnoredSettingsWarn) {
  Json c = a13bConfig();
  c["norm_topk_prob"] = false;
  c["moe_drop_tokens"] = true;
  std::vector<std::string> warnings;
  Expected<ModelSpec> s = parse(c, &warnings);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_TRUE(s->moe->renormalize);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("norm_topk_prob = false is ignored"),
            std::string::npos);
  EXPECT_NE(warnings[1].find("moe_drop_tokens = true is ignored"),
            std::string::npos);
}

TEST(CheckpointHunyuan, UnsupportedValuesNameTheField) {
  Json c = a13bConfig();
  c["use_cla"] = true;
  expectError(c, {"hy/config.json", "use_cla = true", "supported: false"});
  c = a13bConfig();
  c["use_qk_norm"] = false;
  expectError(c, {"use_qk_norm = false", "supported: true"});
  c = a13bConfig();
  c["num_shared_expert"] = {2, 2};
  expectError(c, {"num_shared_expert = 2", "expected 1"});
  c = a13bConfig();
  c["moe_topk"] = {2, 4};
  expectError(c, {"moe_topk = [2,4]", "differs between layers"});
  c = a13bConfig();
  c["moe_intermediate_size"] = {24, 24, 24};
  expectError(c, {"moe_intermediate_size lists 3 values", "one per layer (2)"});
  c = a13bConfig();
  c["rope_scaling"].erase("alpha");
  expectError(c, {"type 'dynamic' without alpha"});
  c = a13bConfig();
  c["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  expectError(c, {"rope_scaling type 'yarn' is not supported",
                  "supported: default, dynamic with alpha"});
  c = a13bConfig();
  c["rope_scaling"]["alpha"] = -1.0;
  expectError(c, {"rope_scaling.alpha = -1", "expected a finite number in (0, 1e+06]"});
  c = a13bConfig();
  c["head_dim"] = 32;
  expectError(c, {"head_dim = 32 and attention_head_dim = 16 disagree"});
  c = a13bConfig();
  c["sliding_window"] = 4096;
  expectError(c, {"sliding_window = 4096", "expected null"});
  c = a13bConfig();
  c["moe_topk"] = {9, 9};
  expectError(c, {"moe_topk = 9", "num_experts = 8"});
}

TEST(CheckpointHunyuan, WrittenConfigReadsBack) {
  Expected<ModelSpec> s = parse(a13bConfig());
  ASSERT_TRUE(s.ok()) << s.error();
  const detail::Family *f = detail::family_by_arch("hunyuan_moe");
  ASSERT_NE(f, nullptr);
  Json written = f->to_hf(*s);
  EXPECT_EQ(written["rope_scaling"]["type"], "dynamic");
  EXPECT_EQ(written["rope_scaling"]["alpha"], 1000.0);
  EXPECT_EQ(written["moe_topk"], Json({2, 2}));
  EXPECT_EQ(written["num_shared_expert"], Json({1, 1}));
  Expected<ModelSpec> back = parse(written);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(to_string(*back), to_string(*s));
}

} // namespace
} // namespace hyc::models::test
