// DeepSeek-V2 config.json reading: V2 (q LoRA, group_limited_greedy, YaRN)
// and V2-Lite (plain q_proj, greedy) layouts, the routing fields that differ
// from V3 (softmax, group score = max, scaling without renormalization, no
// correction bias) driven through the reference router on logits where the
// alternatives pick other experts, transformers' defaults, and errors that
// name the field.
#include "checkpoint_test_util.h"

#include "hf_config_parse.h"
#include "models/checkpoint/family.h"
#include "models/io/hf_config.h"
#include "runtime/reference/moe_route.h"

#include <cmath>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

/// DeepSeek-V2's config.json shape, shrunk (field names and values as the
/// released checkpoint writes them).
Json v2Config() {
  return {{"architectures", {"DeepseekV2ForCausalLM"}},
          {"model_type", "deepseek_v2"},
          {"vocab_size", 512},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"moe_intermediate_size", 16},
          {"num_hidden_layers", 3},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 4},
          {"n_shared_experts", 2},
          {"n_routed_experts", 8},
          {"routed_scaling_factor", 16.0},
          {"kv_lora_rank", 16},
          {"q_lora_rank", 24},
          {"qk_rope_head_dim", 8},
          {"v_head_dim", 12},
          {"qk_nope_head_dim", 16},
          {"topk_method", "group_limited_greedy"},
          {"n_group", 4},
          {"topk_group", 2},
          {"num_experts_per_tok", 3},
          {"moe_layer_freq", 1},
          {"first_k_dense_replace", 1},
          {"norm_topk_prob", false},
          {"scoring_func", "softmax"},
          {"aux_loss_alpha", 0.001},
          {"seq_aux", true},
          {"hidden_act", "silu"},
          {"max_position_embeddings", 163840},
          {"rms_norm_eps", 1e-6},
          {"rope_theta", 10000},
          {"rope_scaling",
           {{"beta_fast", 32},
            {"beta_slow", 1},
            {"factor", 40},
            {"mscale", 0.707},
            {"mscale_all_dim", 0.707},
            {"original_max_position_embeddings", 4096},
            {"type", "yarn"}}},
          {"attention_bias", false},
          {"tie_word_embeddings", false},
          {"bos_token_id", 500}, // the real 100000 / 100001, inside the
          {"eos_token_id", 501}}; // shrunk vocabulary
}

/// V2-Lite: no q LoRA (q_lora_rank null), greedy routing with n_group 1.
Json liteConfig() {
  Json c = v2Config();
  c["q_lora_rank"] = nullptr;
  c["topk_method"] = "greedy";
  c["n_group"] = 1;
  c["topk_group"] = 1;
  c["routed_scaling_factor"] = 1.0;
  return c;
}

Expected<ModelSpec> parse(const Json &config,
                          std::vector<std::string> *warnings = nullptr) {
  return parseHfConfig(config, "v2/config.json", warnings);
}

void expectError(const Json &config, std::initializer_list<const char *> parts) {
  expectHfConfigError(config, "v2/config.json", parts);
}

TEST(CheckpointDeepseekV2, FullLayout) {
  std::vector<std::string> warnings;
  Expected<ModelSpec> s = parse(v2Config(), &warnings);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(s->arch, "deepseek_v2");
  ASSERT_TRUE(s->mla.has_value());
  EXPECT_EQ(s->mla->q_lora_rank, 24);
  EXPECT_EQ(s->mla->kv_lora_rank, 16);
  EXPECT_EQ(s->head_dim, 16 + 8) << "softmax scale head size: nope + rope";
  EXPECT_EQ(s->rope.rotary_dim, 8);
  EXPECT_FALSE(s->rope.neox) << "V2 rotates adjacent pairs";
  EXPECT_EQ(s->rope.scaling, "yarn");
  EXPECT_EQ(s->rope.factor, 40.0);
  EXPECT_EQ(s->rope.mscale_all_dim, 0.707);
  EXPECT_EQ(s->rope.original_max_position, 4096);
  ASSERT_TRUE(s->moe.has_value());
  const MoeSpec &m = *s->moe;
  EXPECT_EQ(m.scoring, "softmax");
  EXPECT_FALSE(m.has_correction_bias);
  EXPECT_EQ(m.n_group, 4);
  EXPECT_EQ(m.topk_group, 2);
  EXPECT_EQ(m.group_score, "max") << "V2 ranks groups by their best expert";
  EXPECT_FALSE(m.renormalize);
  EXPECT_EQ(m.routed_scaling_factor, 16.0);
  EXPECT_EQ(m.top_k, 3);
  EXPECT_EQ(m.num_shared_experts, 2);
  EXPECT_EQ(m.shared_intermediate_size, 16);
  EXPECT_FALSE(is_moe_layer(*s, 0));
  EXPECT_TRUE(is_moe_layer(*s, 1));
  // The weights it needs: V3's MLA names with q_a/q_b, no correction bias.
  bool qa = false, bias = false;
  for (const WeightInfo &w : required_weights(*s)) {
    qa |= w.name == "model.layers.0.self_attn.q_a_proj.weight";
    bias |= w.name.find("e_score_correction_bias") != std::string::npos;
  }
  EXPECT_TRUE(qa);
  EXPECT_FALSE(bias);
}

TEST(CheckpointDeepseekV2, LiteHasPlainQProjAndGreedyRouting) {
  Json c = liteConfig();
  // Groups written in a greedy config must not limit the routing.
  c["n_group"] = 4;
  c["topk_group"] = 1;
  Expected<ModelSpec> s = parse(c);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->mla->q_lora_rank, 0);
  EXPECT_EQ(s->moe->n_group, 1);
  EXPECT_EQ(s->moe->topk_group, 1);
  EXPECT_EQ(s->moe->routed_scaling_factor, 1.0);
  bool q = false;
  for (const WeightInfo &w : required_weights(*s))
    q |= w.name == "model.layers.0.self_attn.q_proj.weight";
  EXPECT_TRUE(q);
}

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

/// One token through the reference router with the spec's gating.
Routed route(const MoeSpec &m, const std::vector<float> &logits,
             const char *group_score = nullptr) {
  Routed r;
  r.ids.resize(static_cast<size_t>(m.top_k));
  r.weights.resize(r.ids.size());
  const std::string score = group_score ? group_score : m.group_score;
  hyrt::ref::RouteScratch scratch;
  hyrt::ref::routeToken(logits.data(), nullptr, m.num_experts, m.top_k,
                        m.scoring == "sigmoid" ? 1 : 0, m.n_group,
                        m.topk_group, score == "top2_sum" ? 1 : 0,
                        m.renormalize ? 1 : 0,
                        static_cast<float>(m.routed_scaling_factor),
                        r.weights.data(), r.ids.data(), scratch);
  return r;
}

double softmaxAt(const std::vector<float> &l, size_t i) {
  double z = 0.0;
  for (float x : l)
    z += std::exp(double(x));
  return std::exp(double(l[i])) / z;
}

TEST(CheckpointDeepseekV2, GroupLimitedGreedyRanksGroupsByTheirBestExpert) {
  // 8 experts in 4 groups of 2, keep 2 groups, top-2 (v2Config with top_k 2).
  Json c = v2Config();
  c["num_experts_per_tok"] = 2;
  Expected<ModelSpec> s = parse(c);
  ASSERT_TRUE(s.ok()) << s.error();
  // Group maxima 3, 2, 2.5, 1 keep groups 0 and 2 -> experts 0 and 4. Sums
  // of the best two (V3's rule) would keep groups 0 and 1 -> experts 0, 2.
  const std::vector<float> logits = {3.0f, -5.0f, 2.0f,  2.0f,
                                     2.5f, -5.0f, 1.0f, 1.0f};
  Routed got = route(*s->moe, logits);
  EXPECT_EQ(got.ids, (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(route(*s->moe, logits, "top2_sum").ids,
            (std::vector<int32_t>{0, 2}))
      << "the case must tell the two rules apart";
  // Softmax over all 8 experts times routed_scaling_factor 16, no
  // renormalization.
  EXPECT_NEAR(got.weights[0], 16.0 * softmaxAt(logits, 0), 1e-5);
  EXPECT_NEAR(got.weights[1], 16.0 * softmaxAt(logits, 4), 1e-5);
}

TEST(CheckpointDeepseekV2, GreedyIgnoresGroups) {
  // A greedy config that still writes n_group 4 / topk_group 1.
  Json c = liteConfig();
  c["num_experts_per_tok"] = 2;
  c["n_group"] = 4;
  c["topk_group"] = 1;
  Expected<ModelSpec> s = parse(c);
  ASSERT_TRUE(s.ok()) << s.error();
  // Best experts 0 (group 0) and 4 (group 2); keeping only the best group
  // would give 0 and 1.
  const std::vector<float> logits = {3.0f,  2.9f,  -5.0f, -5.0f,
                                     2.95f, -5.0f, -5.0f, -5.0f};
  EXPECT_EQ(route(*s->moe, logits).ids, (std::vector<int32_t>{0, 4}));
  MoeSpec grouped = *s->moe;
  grouped.n_group = 4;
  grouped.topk_group = 1;
  EXPECT_EQ(route(grouped, logits).ids, (std::vector<int32_t>{0, 1}))
      << "the case must tell greedy from grouped routing";
}

TEST(CheckpointDeepseekV2, TransformersDefaults) {
  Json c = liteConfig();
  for (const char *field :
       {"topk_method", "n_shared_experts", "routed_scaling_factor",
        "norm_topk_prob", "scoring_func", "first_k_dense_replace",
        "rms_norm_eps", "bos_token_id", "eos_token_id"})
    c.erase(field);
  Expected<ModelSpec> s = parse(c);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->moe->n_group, 1) << "topk_method defaults to greedy";
  EXPECT_EQ(s->moe->num_shared_experts, 2) << "DeepseekV2Config default";
  EXPECT_EQ(s->moe->routed_scaling_factor, 1.0);
  EXPECT_EQ(s->moe->first_k_dense, 0);
  EXPECT_EQ(s->rms_norm_eps, 1e-6);
  EXPECT_EQ(s->bos_token_id, 1);
  EXPECT_EQ(s->eos_token_id, 2);
  c["n_shared_experts"] = nullptr;
  s = parse(c);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->moe->num_shared_experts, 0) << "null: no shared experts";
}

TEST(CheckpointDeepseekV2, NormTopkProbIsIgnoredWithAWarning) {
  Json c = v2Config();
  c["norm_topk_prob"] = true;
  std::vector<std::string> warnings;
  Expected<ModelSpec> s = parse(c, &warnings);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_FALSE(s->moe->renormalize);
  EXPECT_EQ(s->moe->routed_scaling_factor, 16.0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("norm_topk_prob = true is ignored"),
            std::string::npos)
      << warnings[0];
}

TEST(CheckpointDeepseekV2, UnsupportedValuesNameTheField) {
  Json c = v2Config();
  c["scoring_func"] = "sigmoid";
  expectError(c, {"v2/config.json", "scoring_func = \"sigmoid\"",
                  "supported: \"softmax\""});
  c = v2Config();
  c["topk_method"] = "noaux_tc";
  expectError(c, {"topk_method = \"noaux_tc\"",
                  "supported: greedy, group_limited_greedy"});
  c = v2Config();
  c.erase("topk_group");
  expectError(c, {"group_limited_greedy", "no topk_group"});
  c = v2Config();
  c["n_group"] = 3; // does not divide 8 experts
  expectError(c, {"inconsistent MoE config", "n_group=3",
                  "n_routed_experts=8"});
  c = v2Config();
  c["attention_bias"] = true;
  expectError(c, {"attention_bias = true", "supported: false"});
  c = v2Config();
  c["qk_rope_head_dim"] = 7;
  expectError(c, {"qk_rope_head_dim=7", "rope dim even"});
  c = v2Config();
  c["routed_scaling_factor"] = 0.0;
  expectError(c, {"routed_scaling_factor = 0", "expected > 0"});
}

TEST(CheckpointDeepseekV2, WrittenConfigReadsBack) {
  for (const Json &c : {v2Config(), liteConfig()}) {
    Expected<ModelSpec> s = parse(c);
    ASSERT_TRUE(s.ok()) << s.error();
    const detail::Family *f = detail::family_by_arch("deepseek_v2");
    ASSERT_NE(f, nullptr);
    Json written = f->to_hf(*s);
    EXPECT_EQ(written["architectures"][0], "DeepseekV2ForCausalLM");
    EXPECT_EQ(written["topk_method"], c["topk_method"]);
    EXPECT_EQ(written["scoring_func"], "softmax");
    EXPECT_FALSE(written.contains("head_dim"));
    Expected<ModelSpec> back = parse(written);
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(to_string(*back), to_string(*s));
  }
}

} // namespace
} // namespace hyc::models::test
