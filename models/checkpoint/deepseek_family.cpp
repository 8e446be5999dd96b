// DeepSeek-V3 family from config.json: multi-head latent attention
// (optional q LoRA), sigmoid-routed experts with e_score_correction_bias,
// group-limited top-k and shared experts, dense first layers; and the
// config.json synthesize() writes for it. Semantics follow transformers'
// DeepseekV3 modeling code.
#include "models/checkpoint/family.h"

#include <algorithm>

namespace hyc::models::detail {

Status parse_hf_mla(const io::HfConfig &config, ModelSpec &spec) {
  MlaSpec mla;
  HYC_CKPT_ASSIGN(mla.q_lora_rank, config.get_int_or("q_lora_rank", 0));
  HYC_CKPT_ASSIGN(mla.kv_lora_rank, config.get_int("kv_lora_rank"));
  HYC_CKPT_ASSIGN(mla.qk_nope_head_dim, config.get_int("qk_nope_head_dim"));
  HYC_CKPT_ASSIGN(mla.qk_rope_head_dim, config.get_int("qk_rope_head_dim"));
  HYC_CKPT_ASSIGN(mla.v_head_dim, config.get_int("v_head_dim"));
  if (mla.q_lora_rank < 0 || mla.kv_lora_rank <= 0 ||
      mla.qk_nope_head_dim <= 0 || mla.qk_rope_head_dim <= 0 ||
      mla.qk_rope_head_dim % 2 != 0 || mla.v_head_dim <= 0 ||
      std::max({mla.q_lora_rank, mla.kv_lora_rank, mla.qk_nope_head_dim,
                mla.qk_rope_head_dim, mla.v_head_dim}) > kMaxModelDim)
    return Error(config.path() +
                 ": MLA dims q_lora_rank=" + std::to_string(mla.q_lora_rank) +
                 " kv_lora_rank=" + std::to_string(mla.kv_lora_rank) +
                 " qk_nope_head_dim=" + std::to_string(mla.qk_nope_head_dim) +
                 " qk_rope_head_dim=" + std::to_string(mla.qk_rope_head_dim) +
                 " v_head_dim=" + std::to_string(mla.v_head_dim) +
                 "; expected 1..2^24 (q_lora_rank 0 for none, rope dim even)");
  spec.mla = mla;
  // head_dim in DeepseekV3Config is the rope dim; the spec's head_dim is the
  // q/k head size that sets the softmax scale.
  spec.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  spec.rope.rotary_dim = mla.qk_rope_head_dim;
  return Status();
}

void warn_hf_mla_norm_eps(const io::HfConfig &config, const ModelSpec &spec,
                          std::vector<std::string> &warnings) {
  if (spec.rms_norm_eps != 1e-6)
    warnings.push_back(config.path() +
                       ": rms_norm_eps = " + std::to_string(spec.rms_norm_eps) +
                       "; transformers applies 1e-6 in q_a_layernorm and "
                       "kv_a_layernorm regardless, llama.cpp uses "
                       "rms_norm_eps");
}

void mla_to_hf(const MlaSpec &mla, nlohmann::ordered_json &j) {
  j["q_lora_rank"] = mla.q_lora_rank > 0
                         ? nlohmann::ordered_json(mla.q_lora_rank)
                         : nlohmann::ordered_json(nullptr);
  j["kv_lora_rank"] = mla.kv_lora_rank;
  j["qk_nope_head_dim"] = mla.qk_nope_head_dim;
  j["qk_rope_head_dim"] = mla.qk_rope_head_dim;
  j["v_head_dim"] = mla.v_head_dim;
}

void deepseek_moe_to_hf(const MoeSpec &m, const char *scoring, const char *topk_method,
                        bool norm_topk_prob, nlohmann::ordered_json &j) {
  j["n_routed_experts"] = m.num_experts;
  j["num_experts_per_tok"] = m.top_k;
  j["moe_intermediate_size"] = m.expert_intermediate_size;
  j["n_shared_experts"] = m.num_shared_experts;
  j["routed_scaling_factor"] = m.routed_scaling_factor;
  j["scoring_func"] = scoring;
  j["topk_method"] = topk_method;
  j["n_group"] = m.n_group;
  j["topk_group"] = m.topk_group;
  j["norm_topk_prob"] = norm_topk_prob;
  j["first_k_dense_replace"] = m.first_k_dense;
  j["moe_layer_freq"] = m.moe_layer_freq;
}

namespace {

Expected<ModelSpec> deepseekV3FromHf(const io::HfConfig &config,
                                     std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "deepseek_v3";
  HfDefaults d; // DeepseekV3Config: eps 1e-6, untied, 4096, bos 0, eos 1
  d.max_position_embeddings = 4096;
  d.bos_token_id = 0;
  d.eos_token_id = 1;
  HYC_CKPT_TRY(parse_hf_decoder(config, spec, d, warnings));
  HYC_CKPT_TRY(require_hf_value(config, "attention_bias", false));
  warn_hf_mla_norm_eps(config, spec, warnings);

  HYC_CKPT_TRY(parse_hf_mla(config, spec));
  // rope_interleave: the rope part of q/k is interleaved, i.e. adjacent
  // pairs rotate together.
  bool interleave = true;
  HYC_CKPT_ASSIGN(interleave, config.get_bool_or("rope_interleave", true));
  spec.rope.neox = !interleave;

  if (config.has("n_routed_experts")) {
    MoeSpec moe;
    HYC_CKPT_ASSIGN(moe.num_experts, config.get_int("n_routed_experts"));
    HYC_CKPT_ASSIGN(moe.top_k, config.get_int("num_experts_per_tok"));
    HYC_CKPT_ASSIGN(moe.expert_intermediate_size,
                    config.get_int("moe_intermediate_size"));
    HYC_CKPT_ASSIGN(moe.num_shared_experts,
                    config.get_int_or("n_shared_experts", 0));
    moe.shared_intermediate_size =
        moe.num_shared_experts > 0 ? moe.expert_intermediate_size : 0;
    HYC_CKPT_TRY(require_hf_value(config, "scoring_func", "sigmoid"));
    HYC_CKPT_TRY(require_hf_value(config, "topk_method", "noaux_tc"));
    moe.scoring = "sigmoid";
    moe.group_score = "top2_sum";
    moe.has_correction_bias = true;
    HYC_CKPT_ASSIGN(moe.renormalize,
                    config.get_bool_or("norm_topk_prob", true));
    HYC_CKPT_ASSIGN(moe.routed_scaling_factor,
                    config.get_float_or("routed_scaling_factor", 1.0));
    HYC_CKPT_ASSIGN(moe.n_group, config.get_int_or("n_group", 1));
    HYC_CKPT_ASSIGN(moe.topk_group, config.get_int_or("topk_group", 1));
    HYC_CKPT_ASSIGN(moe.first_k_dense,
                    config.get_int_or("first_k_dense_replace", 0));
    HYC_CKPT_ASSIGN(moe.moe_layer_freq, config.get_int_or("moe_layer_freq", 1));
    if (!moe_spec_consistent(moe))
      return Error(deepseek_moe_inconsistency(config.path(), moe));
    spec.moe = moe;
  }
  return spec;
}

/// llama.cpp's `deepseek2` (DeepSeek V2 / V2.5 / V3 / R1 GGUFs). Newer
/// converters write the absorbed-MLA form (head_count_kv 1, key_length
/// kv_lora + rope, value_length kv_lora, key_length_mla nope + rope,
/// value_length_mla v, kv_b_proj split into attn_k_b / attn_v_b); older ones
/// key_length nope + rope, value_length v and one attn_kv_b. Both are read.
/// The rope part is unpermuted and llama.cpp rotates adjacent pairs
/// (LLAMA_ROPE_TYPE_NORM), i.e. HF's rope_interleave = true: rope.neox =
/// false. Routing follows llama.cpp: expert_gating_func 2 = sigmoid, 1 or
/// absent (V2 files) = softmax; e_score_correction_bias when exp_probs_b
/// tensors exist; group scores are top-2 sums (llama.cpp's group-limited
/// routing); expert_weights_norm default false, expert_weights_scale
/// default 1.
Expected<ModelSpec> deepseek2FromGguf(const io::GgufFile &file,
                                      std::vector<std::string> &) {
  const std::string p = "deepseek2.";
  ModelSpec spec;
  spec.arch = "deepseek_v3";
  if (!file.has(p + "rope.dimension_count"))
    return Error(file.path() + ": missing GGUF key '" + p +
                 "rope.dimension_count'");
  if (!file.has(p + "attention.key_length"))
    return Error(file.path() + ": missing GGUF key '" + p +
                 "attention.key_length'");
  HYC_CKPT_TRY(parse_gguf_decoder(file, spec));
  MlaSpec mla;
  HYC_CKPT_ASSIGN(mla.q_lora_rank,
                  gguf_int_or(file, p + "attention.q_lora_rank", 0));
  HYC_CKPT_ASSIGN(mla.kv_lora_rank,
                  gguf_required_int(file, p + "attention.kv_lora_rank"));
  mla.qk_rope_head_dim = spec.rope.rotary_dim;
  const int64_t key_length = spec.head_dim;
  int64_t value_length = 0;
  HYC_CKPT_ASSIGN(value_length,
                  gguf_int_or(file, p + "attention.value_length", key_length));
  if (file.has(p + "attention.key_length_mla")) {
    int64_t key_mla = 0;
    HYC_CKPT_ASSIGN(key_mla,
                    gguf_required_int(file, p + "attention.key_length_mla"));
    HYC_CKPT_ASSIGN(mla.v_head_dim,
                    gguf_required_int(file, p + "attention.value_length_mla"));
    mla.qk_nope_head_dim = key_mla - mla.qk_rope_head_dim;
    if (key_length != mla.kv_lora_rank + mla.qk_rope_head_dim ||
        value_length != mla.kv_lora_rank)
      return Error(file.path() + ": " + p +
                   "attention.key_length = " + std::to_string(key_length) +
                   " and value_length = " + std::to_string(value_length) +
                   " do not match the absorbed MLA form (kv_lora_rank + "
                   "rope dim = " +
                   std::to_string(mla.kv_lora_rank + mla.qk_rope_head_dim) +
                   ", kv_lora_rank = " + std::to_string(mla.kv_lora_rank) +
                   ") that key_length_mla implies");
  } else {
    mla.qk_nope_head_dim = key_length - mla.qk_rope_head_dim;
    mla.v_head_dim = value_length;
  }
  if (mla.q_lora_rank < 0 || mla.kv_lora_rank <= 0 ||
      mla.qk_nope_head_dim <= 0 || mla.qk_rope_head_dim % 2 != 0 ||
      mla.v_head_dim <= 0 ||
      std::max({mla.q_lora_rank, mla.kv_lora_rank, mla.qk_nope_head_dim,
                mla.v_head_dim}) > kMaxModelDim)
    return Error(file.path() +
                 ": MLA dims q_lora_rank=" + std::to_string(mla.q_lora_rank) +
                 " kv_lora_rank=" + std::to_string(mla.kv_lora_rank) +
                 " qk_nope_head_dim=" + std::to_string(mla.qk_nope_head_dim) +
                 " qk_rope_head_dim=" + std::to_string(mla.qk_rope_head_dim) +
                 " v_head_dim=" + std::to_string(mla.v_head_dim) +
                 "; expected 1..2^24 (q_lora_rank 0 for none, rope dim even)");
  spec.mla = mla;
  spec.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  spec.num_kv_heads = spec.num_heads; // MLA: every head has its own k and v
  spec.rope.neox = false;

  int64_t experts = 0;
  HYC_CKPT_ASSIGN(experts, gguf_int_or(file, p + "expert_count", 0));
  if (experts > 0) {
    MoeSpec moe;
    moe.num_experts = experts;
    HYC_CKPT_ASSIGN(moe.top_k,
                    gguf_required_int(file, p + "expert_used_count"));
    HYC_CKPT_ASSIGN(moe.expert_intermediate_size,
                    gguf_required_int(file, p + "expert_feed_forward_length"));
    HYC_CKPT_ASSIGN(moe.num_shared_experts,
                    gguf_int_or(file, p + "expert_shared_count", 0));
    moe.shared_intermediate_size =
        moe.num_shared_experts > 0 ? moe.expert_intermediate_size : 0;
    int64_t gating = 0;
    HYC_CKPT_ASSIGN(gating, gguf_int_or(file, p + "expert_gating_func", 0));
    if (gating == 0 || gating == 1)
      moe.scoring = "softmax";
    else if (gating == 2)
      moe.scoring = "sigmoid";
    else
      return Error(file.path() + ": " + p +
                   "expert_gating_func = " + std::to_string(gating) +
                   " is not supported (1 softmax, 2 sigmoid)");
    if (file.has(p + "expert_weights_norm"))
      HYC_CKPT_ASSIGN(moe.renormalize,
                      file.get_bool(p + "expert_weights_norm"));
    HYC_CKPT_ASSIGN(moe.routed_scaling_factor,
                    gguf_float_or(file, p + "expert_weights_scale", 1.0));
    HYC_CKPT_ASSIGN(moe.n_group,
                    gguf_int_or(file, p + "expert_group_count", 1));
    if (moe.n_group == 0)
      moe.n_group = 1;
    HYC_CKPT_ASSIGN(
        moe.topk_group,
        gguf_int_or(file, p + "expert_group_used_count", moe.n_group));
    if (moe.topk_group == 0)
      moe.topk_group = moe.n_group;
    // deepseek2 GGUFs carry V2 (softmax gating: group_limited_greedy ranks
    // groups by their best expert) and V3 (sigmoid: noaux_tc ranks them by
    // the sum of their best two); the metadata has no key for the group
    // score, the gating tells which model it is.
    moe.group_score = moe.scoring == "softmax" ? "max" : "top2_sum";
    HYC_CKPT_ASSIGN(moe.first_k_dense,
                    gguf_int_or(file, p + "leading_dense_block_count", 0));
    moe.moe_layer_freq = 1;
    for (const io::GgufTensorInfo &t : file.tensor_infos())
      if (t.name.find(".exp_probs_b") != std::string::npos)
        moe.has_correction_bias = true;
    if (!moe_spec_consistent(moe))
      return Error(
          file.path() + ": inconsistent MoE metadata: expert_count=" +
          std::to_string(moe.num_experts) + " expert_used_count=" +
          std::to_string(moe.top_k) + " expert_feed_forward_length=" +
          std::to_string(moe.expert_intermediate_size) +
          " expert_shared_count=" + std::to_string(moe.num_shared_experts) +
          " expert_group_count=" + std::to_string(moe.n_group) +
          " expert_group_used_count=" + std::to_string(moe.topk_group) +
          " leading_dense_block_count=" + std::to_string(moe.first_k_dense));
    spec.moe = moe;
  }
  return spec;
}

nlohmann::ordered_json deepseekV3ToHf(const ModelSpec &spec) {
  nlohmann::ordered_json j =
      hf_decoder_config(spec, "DeepseekV3ForCausalLM", "deepseek_v3");
  const MlaSpec &mla = *spec.mla;
  j["head_dim"] = mla.qk_rope_head_dim; // transformers' meaning
  j.erase("partial_rotary_factor");
  mla_to_hf(mla, j);
  j["rope_interleave"] = !spec.rope.neox;
  j["attention_bias"] = false;
  if (spec.moe)
    deepseek_moe_to_hf(*spec.moe, "sigmoid", "noaux_tc", spec.moe->renormalize, j);
  return j;
}

} // namespace

const Family &deepseek_v3_family() {
  static const Family family{"deepseek_v3",    {"DeepseekV3ForCausalLM"},
                             {"deepseek_v3"},  {"deepseek2"},
                             deepseekV3FromHf, deepseek2FromGguf,
                             deepseekV3ToHf};
  return family;
}

} // namespace hyc::models::detail
