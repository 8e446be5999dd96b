// ModelSpec utilities: the weights a spec requires, MoE layer placement,
// the spec as JSON text, and WeightSource's default lookup.
#include "models/checkpoint/model_spec.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace hyc::models {

const WeightInfo *WeightSource::find(const std::string &name) const {
  for (const WeightInfo &w : weights())
    if (w.name == name)
      return &w;
  return nullptr;
}

bool is_moe_layer(const ModelSpec &spec, int64_t layer) {
  if (!spec.moe || spec.moe->num_experts <= 0)
    return false;
  const int64_t freq =
      spec.moe->moe_layer_freq > 0 ? spec.moe->moe_layer_freq : 1;
  return layer >= spec.moe->first_k_dense && layer % freq == 0;
}

bool moe_spec_consistent(const MoeSpec &m) {
  // The upper bounds keep the per-expert weight lists and the int64 size
  // arithmetic finite; real models are orders of magnitude below them.
  constexpr int64_t kMaxExperts = int64_t(1) << 16, kMaxDim = int64_t(1) << 24;
  return m.num_experts > 0 && m.num_experts <= kMaxExperts && m.top_k > 0 &&
         m.top_k <= m.num_experts && m.expert_intermediate_size > 0 &&
         m.expert_intermediate_size <= kMaxDim && m.num_shared_experts >= 0 &&
         m.num_shared_experts <= kMaxExperts &&
         m.shared_intermediate_size >= 0 &&
         m.shared_intermediate_size <= kMaxDim && m.n_group > 0 &&
         m.num_experts % m.n_group == 0 && m.topk_group > 0 &&
         m.topk_group <= m.n_group && m.first_k_dense >= 0 &&
         m.moe_layer_freq > 0 && std::isfinite(m.routed_scaling_factor) &&
         m.routed_scaling_factor > 0 && m.routed_scaling_factor <= 1e6;
}

std::string deepseek_moe_inconsistency(const std::string &path, const MoeSpec &moe) {
  return path + ": inconsistent MoE config: n_routed_experts=" +
         std::to_string(moe.num_experts) + " num_experts_per_tok=" +
         std::to_string(moe.top_k) + " moe_intermediate_size=" +
         std::to_string(moe.expert_intermediate_size) +
         " n_shared_experts=" + std::to_string(moe.num_shared_experts) +
         " n_group=" + std::to_string(moe.n_group) +
         " topk_group=" + std::to_string(moe.topk_group) +
         " first_k_dense_replace=" + std::to_string(moe.first_k_dense) +
         " moe_layer_freq=" + std::to_string(moe.moe_layer_freq) +
         " routed_scaling_factor=" + std::to_string(moe.routed_scaling_factor) +
         " (expected 0 < top-k <= experts <= 65536, groups dividing the "
         "experts, 0 < topk_group <= n_group, sizes up to 2^24, a finite "
         "scaling factor in (0, 1e6])";
}

double rope_base(const RopeSpec &rope) {
  if (rope.scaling != "ntk_alpha" || rope.rotary_dim <= 2)
    return rope.theta;
  const double d = static_cast<double>(rope.rotary_dim);
  return rope.theta * std::pow(rope.alpha, d / (d - 2.0));
}

namespace {

class WeightList {
public:
  void add(std::string name, std::vector<int64_t> shape) {
    out_.push_back(WeightInfo{std::move(name), std::move(shape), ""});
  }
  void swiglu(const std::string &prefix, int64_t hidden, int64_t inter) {
    add(prefix + "gate_proj.weight", {inter, hidden});
    add(prefix + "up_proj.weight", {inter, hidden});
    add(prefix + "down_proj.weight", {hidden, inter});
  }
  std::vector<WeightInfo> take() { return std::move(out_); }

private:
  std::vector<WeightInfo> out_;
};

void addAttention(const ModelSpec &s, const std::string &p, WeightList &w) {
  const int64_t h = s.hidden_size;
  if (s.mla) {
    const MlaSpec &m = *s.mla;
    const int64_t q_dim =
        s.num_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim);
    if (m.q_lora_rank > 0) {
      w.add(p + "self_attn.q_a_proj.weight", {m.q_lora_rank, h});
      w.add(p + "self_attn.q_a_layernorm.weight", {m.q_lora_rank});
      w.add(p + "self_attn.q_b_proj.weight", {q_dim, m.q_lora_rank});
    } else {
      w.add(p + "self_attn.q_proj.weight", {q_dim, h});
    }
    w.add(p + "self_attn.kv_a_proj_with_mqa.weight",
          {m.kv_lora_rank + m.qk_rope_head_dim, h});
    w.add(p + "self_attn.kv_a_layernorm.weight", {m.kv_lora_rank});
    w.add(p + "self_attn.kv_b_proj.weight",
          {s.num_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank});
    w.add(p + "self_attn.o_proj.weight", {h, s.num_heads * m.v_head_dim});
    return;
  }
  const int64_t q_dim = s.num_heads * s.head_dim;
  const int64_t kv_dim = s.num_kv_heads * s.head_dim;
  w.add(p + "self_attn.q_proj.weight", {q_dim, h});
  w.add(p + "self_attn.k_proj.weight", {kv_dim, h});
  w.add(p + "self_attn.v_proj.weight", {kv_dim, h});
  w.add(p + "self_attn.o_proj.weight", {h, q_dim});
  if (s.attention_bias) {
    w.add(p + "self_attn.q_proj.bias", {q_dim});
    w.add(p + "self_attn.k_proj.bias", {kv_dim});
    w.add(p + "self_attn.v_proj.bias", {kv_dim});
  }
  if (s.qk_norm) {
    w.add(p + "self_attn.q_norm.weight", {s.head_dim});
    w.add(p + "self_attn.k_norm.weight", {s.head_dim});
  }
}

void addMlp(const ModelSpec &s, int64_t layer, const std::string &p,
            WeightList &w) {
  const int64_t h = s.hidden_size;
  if (!is_moe_layer(s, layer)) {
    w.swiglu(p + "mlp.", h, s.intermediate_size);
    return;
  }
  const MoeSpec &m = *s.moe;
  w.add(p + "mlp.gate.weight", {m.num_experts, h});
  if (m.has_correction_bias)
    w.add(p + "mlp.gate.e_score_correction_bias", {m.num_experts});
  for (int64_t e = 0; e < m.num_experts; ++e)
    w.swiglu(p + "mlp.experts." + std::to_string(e) + ".", h,
             m.expert_intermediate_size);
  if (m.num_shared_experts > 0)
    w.swiglu(p + "mlp.shared_experts.", h,
             m.shared_intermediate_size * m.num_shared_experts);
}

} // namespace

std::vector<WeightInfo> required_weights(const ModelSpec &s) {
  WeightList w;
  w.add("model.embed_tokens.weight", {s.vocab_size, s.hidden_size});
  for (int64_t l = 0; l < s.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    w.add(p + "input_layernorm.weight", {s.hidden_size});
    addAttention(s, p, w);
    w.add(p + "post_attention_layernorm.weight", {s.hidden_size});
    addMlp(s, l, p, w);
  }
  w.add("model.norm.weight", {s.hidden_size});
  if (!s.tie_word_embeddings)
    w.add("lm_head.weight", {s.vocab_size, s.hidden_size});
  return w.take();
}

std::string to_string(const ModelSpec &s) {
  nlohmann::ordered_json j;
  j["arch"] = s.arch;
  j["vocab_size"] = s.vocab_size;
  j["hidden_size"] = s.hidden_size;
  j["intermediate_size"] = s.intermediate_size;
  j["num_layers"] = s.num_layers;
  j["num_heads"] = s.num_heads;
  j["num_kv_heads"] = s.num_kv_heads;
  j["head_dim"] = s.head_dim;
  j["rms_norm_eps"] = s.rms_norm_eps;
  j["max_position_embeddings"] = s.max_position_embeddings;
  j["tie_word_embeddings"] = s.tie_word_embeddings;
  j["attention_bias"] = s.attention_bias;
  j["qk_norm"] = s.qk_norm;
  j["qk_norm_after_rope"] = s.qk_norm_after_rope;
  const RopeSpec &r = s.rope;
  j["rope"] = {{"theta", r.theta},
               {"rotary_dim", r.rotary_dim},
               {"neox", r.neox},
               {"scaling", r.scaling},
               {"factor", r.factor},
               {"low_freq_factor", r.low_freq_factor},
               {"high_freq_factor", r.high_freq_factor},
               {"original_max_position", r.original_max_position},
               {"beta_fast", r.beta_fast},
               {"beta_slow", r.beta_slow},
               {"mscale", r.mscale},
               {"mscale_all_dim", r.mscale_all_dim},
               {"alpha", r.alpha}};
  if (s.moe) {
    const MoeSpec &m = *s.moe;
    j["moe"] = {{"num_experts", m.num_experts},
                {"top_k", m.top_k},
                {"expert_intermediate_size", m.expert_intermediate_size},
                {"num_shared_experts", m.num_shared_experts},
                {"shared_intermediate_size", m.shared_intermediate_size},
                {"scoring", m.scoring},
                {"renormalize", m.renormalize},
                {"routed_scaling_factor", m.routed_scaling_factor},
                {"n_group", m.n_group},
                {"topk_group", m.topk_group},
                {"group_score", m.group_score},
                {"has_correction_bias", m.has_correction_bias},
                {"first_k_dense", m.first_k_dense},
                {"moe_layer_freq", m.moe_layer_freq}};
  } else {
    j["moe"] = nullptr;
  }
  if (s.mla) {
    const MlaSpec &m = *s.mla;
    j["mla"] = {{"q_lora_rank", m.q_lora_rank},
                {"kv_lora_rank", m.kv_lora_rank},
                {"qk_nope_head_dim", m.qk_nope_head_dim},
                {"qk_rope_head_dim", m.qk_rope_head_dim},
                {"v_head_dim", m.v_head_dim}};
  } else {
    j["mla"] = nullptr;
  }
  j["bos_token_id"] = s.bos_token_id;
  j["eos_token_id"] = s.eos_token_id;
  return j.dump(2);
}

} // namespace hyc::models
