// Hugging Face directories: the Qwen3-MoE and DeepSeek-V3 golden
// checkpoints, RoPE scaling variants and config defaults on hand-written
// configs, Qwen2 biases, BF16/F16/FP8 weights and sharded checkpoints.
#include "checkpoint_test_util.h"

#include "models/io/tensor.h"

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

/// A Llama config small enough to write by hand.
Json tinyLlamaConfig() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", 16},
          {"hidden_size", 8},
          {"intermediate_size", 12},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1},
          {"max_position_embeddings", 32},
          {"rms_norm_eps", 1e-5}};
}

/// The spec tinyLlamaConfig() describes (for writing its weights).
ModelSpec tinyLlamaSpec() {
  ModelSpec s;
  s.arch = "llama";
  s.vocab_size = 16;
  s.hidden_size = 8;
  s.intermediate_size = 12;
  s.num_layers = 1;
  s.num_heads = 2;
  s.num_kv_heads = 1;
  s.head_dim = 4;
  return s;
}

/// Writes config + constant weights for `weights` into `dir` and loads it.
Expected<Checkpoint> loadHf(const TempDir &dir, const Json &config,
                            const ModelSpec &weights) {
  writeText(dir.file("config.json"), config.dump());
  Status s =
      io::write_safetensors(dir.file("model.safetensors"), entriesFor(weights));
  if (!s)
    return s.take_error();
  return load_checkpoint(dir.str());
}

TEST(CheckpointHfFamilies, Qwen3MoeGolden) {
  HYC_CKPT_REQUIRE_SHARED(dir, "golden/qwen3moe-tiny");
  HYC_CKPT_LOAD(ckpt, dir);
  const ModelSpec &s = ckpt.spec;
  EXPECT_EQ(s.arch, "qwen3_moe");
  EXPECT_TRUE(s.qk_norm);
  EXPECT_FALSE(s.attention_bias);
  EXPECT_EQ(s.head_dim, 32);
  EXPECT_EQ(s.rms_norm_eps, 1e-6);
  EXPECT_EQ(s.rope.theta, 1000000.0);
  EXPECT_TRUE(s.rope.neox);
  ASSERT_TRUE(s.moe.has_value());
  EXPECT_EQ(s.moe->num_experts, 8);
  EXPECT_EQ(s.moe->top_k, 2);
  EXPECT_EQ(s.moe->expert_intermediate_size, 64);
  EXPECT_EQ(s.moe->scoring, "softmax");
  EXPECT_TRUE(s.moe->renormalize);
  EXPECT_EQ(s.moe->num_shared_experts, 0);
  EXPECT_FALSE(s.moe->has_correction_bias);
  EXPECT_TRUE(is_moe_layer(s, 0));
  EXPECT_TRUE(is_moe_layer(s, 1));
  EXPECT_FALSE(s.mla.has_value());
  // embed, norm, lm_head + per layer: 2 norms, q/k/v/o, q/k norm, router,
  // 8 experts x 3.
  EXPECT_EQ(required_weights(s).size(), 3u + 2 * (2 + 4 + 2 + 1 + 24));
  const WeightInfo *qn =
      ckpt.weights->find("model.layers.1.self_attn.q_norm.weight");
  ASSERT_NE(qn, nullptr);
  EXPECT_EQ(qn->shape, (std::vector<int64_t>{32}));
}

TEST(CheckpointHfFamilies, DeepseekV3Golden) {
  HYC_CKPT_REQUIRE_SHARED(dir, "golden/deepseekv3-tiny");
  HYC_CKPT_LOAD(ckpt, dir);
  const ModelSpec &s = ckpt.spec;
  EXPECT_EQ(s.arch, "deepseek_v3");
  ASSERT_TRUE(s.mla.has_value());
  EXPECT_EQ(s.mla->q_lora_rank, 64);
  EXPECT_EQ(s.mla->kv_lora_rank, 32);
  EXPECT_EQ(s.mla->qk_nope_head_dim, 32);
  EXPECT_EQ(s.mla->qk_rope_head_dim, 16);
  EXPECT_EQ(s.mla->v_head_dim, 32);
  EXPECT_EQ(s.head_dim, 48);
  EXPECT_EQ(s.rope.rotary_dim, 16);
  EXPECT_FALSE(s.rope.neox) << "rope_interleave: adjacent pairs";
  ASSERT_TRUE(s.moe.has_value());
  EXPECT_EQ(s.moe->num_experts, 8);
  EXPECT_EQ(s.moe->top_k, 2);
  EXPECT_EQ(s.moe->expert_intermediate_size, 64);
  EXPECT_EQ(s.moe->num_shared_experts, 1);
  EXPECT_EQ(s.moe->shared_intermediate_size, 64);
  EXPECT_EQ(s.moe->scoring, "sigmoid");
  EXPECT_EQ(s.moe->group_score, "top2_sum");
  EXPECT_TRUE(s.moe->has_correction_bias);
  EXPECT_TRUE(s.moe->renormalize);
  EXPECT_EQ(s.moe->routed_scaling_factor, 2.5);
  EXPECT_EQ(s.moe->n_group, 1);
  EXPECT_EQ(s.moe->first_k_dense, 1);
  EXPECT_FALSE(is_moe_layer(s, 0));
  EXPECT_TRUE(is_moe_layer(s, 1));
  EXPECT_TRUE(is_moe_layer(s, 2));
  // 91 tensors in the file, all required.
  EXPECT_EQ(required_weights(s).size(), 91u);
  EXPECT_EQ(ckpt.weights->weights().size(), 91u);
}

TEST(CheckpointHfFamilies, DeepseekV3GroupedSharedExperts) {
  HYC_CKPT_REQUIRE_SHARED(dir, "golden/deepseekv3-grouped-tiny");
  HYC_CKPT_LOAD(ckpt, dir);
  const ModelSpec &s = ckpt.spec;
  ASSERT_TRUE(s.moe.has_value());
  EXPECT_EQ(s.moe->n_group, 4);
  EXPECT_EQ(s.moe->topk_group, 2);
  EXPECT_EQ(s.moe->num_experts, 16);
  EXPECT_EQ(s.moe->top_k, 4);
  EXPECT_EQ(s.moe->num_shared_experts, 2);
  const WeightInfo *g =
      ckpt.weights->find("model.layers.2.mlp.shared_experts.gate_proj.weight");
  ASSERT_NE(g, nullptr);
  // Two shared experts of 16 form one 32-wide block.
  EXPECT_EQ(g->shape, (std::vector<int64_t>{32, 128}));
}

TEST(CheckpointHfRope, LinearAndYarn) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->spec.rope.scaling, "linear");
    EXPECT_EQ(r->spec.rope.factor, 2.0);
  }
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_TRUE(r.ok()) << r.error();
    const RopeSpec &rope = r->spec.rope;
    EXPECT_EQ(rope.scaling, "yarn");
    EXPECT_EQ(rope.factor, 4.0);
    EXPECT_EQ(rope.original_max_position, 32) << "defaults to max positions";
    EXPECT_EQ(rope.beta_fast, 32.0);
    EXPECT_EQ(rope.beta_slow, 1.0);
    EXPECT_EQ(rope.mscale, 1.0);
    EXPECT_EQ(rope.mscale_all_dim, 0.0);
  }
  c["rope_scaling"] = {{"rope_type", "yarn"},
                       {"factor", 40.0},
                       {"original_max_position_embeddings", 4096},
                       {"beta_fast", 16},
                       {"beta_slow", 2},
                       {"mscale", 1.0},
                       {"mscale_all_dim", 1.0}};
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_TRUE(r.ok()) << r.error();
    const RopeSpec &rope = r->spec.rope;
    EXPECT_EQ(rope.factor, 40.0);
    EXPECT_EQ(rope.original_max_position, 4096);
    EXPECT_EQ(rope.beta_fast, 16.0);
    EXPECT_EQ(rope.beta_slow, 2.0);
    EXPECT_EQ(rope.mscale_all_dim, 1.0);
  }
  c["rope_scaling"] = {{"rope_type", "default"}};
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->spec.rope.scaling, "none");
  }
}

TEST(CheckpointHfRope, RopeParametersAndRejections) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  // transformers >= 4.56 style: theta and scaling under rope_parameters.
  c["rope_parameters"] = {
      {"rope_type", "llama3"},   {"rope_theta", 500000.0},
      {"factor", 32.0},          {"low_freq_factor", 1.0},
      {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->spec.rope.theta, 500000.0);
    EXPECT_EQ(r->spec.rope.scaling, "llama3");
    EXPECT_EQ(r->spec.rope.factor, 32.0);
    EXPECT_EQ(r->spec.rope.original_max_position, 8192);
  }
  c.erase("rope_parameters");
  c["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}};
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("original_max_position_embeddings"),
              std::string::npos)
        << r.error();
  }
  c["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("'dynamic'"), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("config.json"), std::string::npos) << r.error();
  }
  c["rope_scaling"] = nullptr;
  c["partial_rotary_factor"] = 0.5;
  {
    Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->spec.rope.rotary_dim, 2);
    EXPECT_EQ(r->spec.rope.scaling, "none");
  }
}

TEST(CheckpointHfConfigDefaults, LlamaDefaultsAndEosList) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  c.erase("num_key_value_heads");
  c.erase("rms_norm_eps");
  c["eos_token_id"] = {12, 13}; // Llama 3.1 lists 128001, 128008, 128009
  ModelSpec weights = tinyLlamaSpec();
  weights.num_kv_heads = 2;
  Expected<Checkpoint> r = loadHf(dir, c, weights);
  ASSERT_TRUE(r.ok()) << r.error();
  const ModelSpec &s = r->spec;
  EXPECT_EQ(s.num_kv_heads, 2);
  EXPECT_EQ(s.head_dim, 4);
  EXPECT_EQ(s.rms_norm_eps, 1e-6);
  EXPECT_EQ(s.rope.theta, 10000.0);
  EXPECT_FALSE(s.tie_word_embeddings);
  EXPECT_EQ(s.bos_token_id, 1);
  EXPECT_EQ(s.eos_token_id, 12);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("eos_token_id"), std::string::npos);
}

TEST(CheckpointHfConfigDefaults, LlamaAttentionBiasRejected) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  c["attention_bias"] = true;
  Expected<Checkpoint> r = loadHf(dir, c, tinyLlamaSpec());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("attention_bias"), std::string::npos) << r.error();
}

TEST(CheckpointHfFamilies, Qwen2RequiresQkvBiases) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  c["architectures"] = {"Qwen2ForCausalLM"};
  c["model_type"] = "qwen2";
  ModelSpec weights = tinyLlamaSpec();
  weights.attention_bias = true;
  {
    Expected<Checkpoint> r = loadHf(dir, c, weights);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->spec.arch, "qwen2");
    EXPECT_TRUE(r->spec.attention_bias);
    EXPECT_NE(r->weights->find("model.layers.0.self_attn.k_proj.bias"),
              nullptr);
  }
  weights.attention_bias = false;
  Expected<Checkpoint> r = loadHf(dir, c, weights);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("model.layers.0.self_attn.q_proj.bias"),
            std::string::npos)
      << r.error();
}

TEST(CheckpointHfWeights, Bf16F16AndFp8BlockScales) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  c["quantization_config"] = {{"quant_method", "fp8"},
                              {"weight_block_size", {4, 4}}};
  writeText(dir.file("config.json"), c.dump());
  std::vector<io::SafetensorsEntry> entries = entriesFor(tinyLlamaSpec());
  for (io::SafetensorsEntry &e : entries) {
    const size_t n = e.bytes.size() / 4;
    if (e.name == "model.layers.0.self_attn.q_proj.weight") { // [8, 8]
      e.dtype = io::DType::F8_E4M3;
      e.bytes.assign(n, 0x38); // 1.0
    } else if (e.name == "model.layers.0.mlp.up_proj.weight") {
      e.dtype = io::DType::BF16;
      e.bytes.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        uint16_t v = io::f32_to_bf16(0.25f);
        std::memcpy(&e.bytes[2 * i], &v, 2);
      }
    } else if (e.name == "model.layers.0.mlp.down_proj.weight") {
      e.dtype = io::DType::F16;
      e.bytes.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        uint16_t v = io::f32_to_f16(-1.5f);
        std::memcpy(&e.bytes[2 * i], &v, 2);
      }
    }
  }
  // 2 x 2 blocks of 4 x 4; block (i, j) scales by i * 2 + j + 1.
  entries.push_back(
      f32Entry("model.layers.0.self_attn.q_proj.weight_scale_inv", {2, 2}));
  float scales[4] = {1, 2, 3, 4};
  std::memcpy(entries.back().bytes.data(), scales, sizeof(scales));
  Status w = io::write_safetensors(dir.file("model.safetensors"), entries);
  ASSERT_TRUE(w.ok()) << w.error();

  HYC_CKPT_LOAD(ckpt, dir.str());
  EXPECT_EQ(ckpt.weights->find("model.layers.0.self_attn.q_proj.weight")
                ->source_dtype,
            "F8_E4M3");
  std::vector<float> q =
      readWeight(ckpt, "model.layers.0.self_attn.q_proj.weight");
  ASSERT_EQ(q.size(), 64u);
  EXPECT_EQ(q[0 * 8 + 0], 1.0f);
  EXPECT_EQ(q[0 * 8 + 7], 2.0f);
  EXPECT_EQ(q[7 * 8 + 0], 3.0f);
  EXPECT_EQ(q[5 * 8 + 6], 4.0f);
  std::vector<float> up = readWeight(ckpt, "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(up.front(), 0.25f);
  EXPECT_EQ(up.back(), 0.25f);
  std::vector<float> down =
      readWeight(ckpt, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(down.front(), -1.5f);
}

TEST(CheckpointHfWeights, ShardedIndex) {
  TempDir dir;
  writeText(dir.file("config.json"), tinyLlamaConfig().dump());
  std::vector<io::SafetensorsEntry> all = entriesFor(tinyLlamaSpec());
  std::vector<io::SafetensorsEntry> a(all.begin(), all.begin() + 4),
      b(all.begin() + 4, all.end());
  Json map = Json::object();
  for (const io::SafetensorsEntry &e : a)
    map[e.name] = "model-00001-of-00002.safetensors";
  for (const io::SafetensorsEntry &e : b)
    map[e.name] = "model-00002-of-00002.safetensors";
  ASSERT_TRUE(
      io::write_safetensors(dir.file("model-00001-of-00002.safetensors"), a)
          .ok());
  ASSERT_TRUE(
      io::write_safetensors(dir.file("model-00002-of-00002.safetensors"), b)
          .ok());
  writeText(dir.file("model.safetensors.index.json"),
            Json{{"metadata", Json::object()}, {"weight_map", map}}.dump());
  HYC_CKPT_LOAD(ckpt, dir.str());
  EXPECT_EQ(ckpt.weights->weights().size(), all.size());
  EXPECT_EQ(readWeight(ckpt, "lm_head.weight").front(), 0.5f);
}

TEST(CheckpointRequiredWeights, OrderAndShapesForLlama) {
  ModelSpec s = tinyLlamaSpec();
  std::vector<WeightInfo> w = required_weights(s);
  ASSERT_EQ(w.size(), 1u + 9 + 2);
  EXPECT_EQ(w.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(w[1].name, "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(w[3].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(w[3].shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(w.back().name, "lm_head.weight");
  s.tie_word_embeddings = true;
  EXPECT_EQ(required_weights(s).back().name, "model.norm.weight");
}

} // namespace
} // namespace hyc::models::test
