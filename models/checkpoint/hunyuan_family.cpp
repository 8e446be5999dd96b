// Hunyuan-MoE family (HunYuanMoEV1ForCausalLM, the Hunyuan-A13B layout) from
// config.json and from llama.cpp's `hunyuan-moe` GGUF, its tensor names, and
// the config.json synthesize() writes for it.
//
// Semantics follow the current transformers HunYuanMoEV1 code:
//  * GQA attention whose per-head query/key RMSNorm (query_layernorm,
//    key_layernorm; eps rms_norm_eps) is applied to the *rotated* q and k
//    (earlier published modeling files normalized before RoPE);
//  * rotate-half (NeoX) RoPE; rope_scaling {type: dynamic, alpha} is a fixed
//    base theta * alpha^(d / (d - 2)) (the NTK-alpha rotary embedding; see
//    rope_base()), not transformers' position-dependent dynamic NTK;
//  * every layer is MoE: router `mlp.gate.wg` (fp32), softmax over all
//    experts, top-k, the k weights renormalized to sum 1, no capacity limit
//    (earlier files dropped tokens past an expert capacity, which made a
//    token's output depend on its batch), plus a shared SwiGLU `shared_mlp`
//    added beside the routed experts.
// Expert width is moe_intermediate_size and the shared MLP's is
// intermediate_size (vLLM and llama.cpp; A13B has both 3072).
#include "models/checkpoint/family.h"

namespace hyc::models::detail {

namespace {

/// Hunyuan's HF tensor stems and the canonical ones hyc uses (Qwen3 /
/// DeepSeek names), so required_weights, the IR and the GGUF tables apply.
struct Rename {
  const char *hf;
  const char *canonical;
};
constexpr Rename kRenames[] = {
    {".self_attn.query_layernorm.", ".self_attn.q_norm."},
    {".self_attn.key_layernorm.", ".self_attn.k_norm."},
    {".mlp.gate.wg.", ".mlp.gate."},
    {".mlp.shared_mlp.", ".mlp.shared_experts."},
};

std::string replaceOnce(const std::string &name, const std::string &from,
                        const std::string &to) {
  const size_t at = name.find(from);
  if (at == std::string::npos)
    return name;
  return name.substr(0, at) + to + name.substr(at + from.size());
}

std::string hunyuanToCanonical(const std::string &hf) {
  for (const Rename &r : kRenames)
    if (hf.find(r.hf) != std::string::npos)
      return replaceOnce(hf, r.hf, r.canonical);
  return hf;
}

std::string hunyuanToHf(const std::string &canonical) {
  for (const Rename &r : kRenames)
    if (canonical.find(r.canonical) != std::string::npos)
      return replaceOnce(canonical, r.canonical, r.hf);
  return canonical;
}

/// `field` as one integer: a number, or a per-layer list (length
/// num_layers) whose entries are all equal; `fallback` when absent.
Expected<int64_t> uniformInt(const io::HfConfig &config,
                             const std::string &field, int64_t num_layers,
                             int64_t fallback) {
  if (!config.has(field))
    return fallback;
  if (!config.json()[field].is_array())
    return config.get_int(field);
  std::vector<int64_t> v;
  HYC_CKPT_ASSIGN(v, config.get_int_array(field));
  if (static_cast<int64_t>(v.size()) != num_layers)
    return Error(
        config.path() + ": " + field + " lists " + std::to_string(v.size()) +
        " values, expected one per layer (" + std::to_string(num_layers) + ")");
  for (int64_t x : v)
    if (x != v[0])
      return Error(config.path() + ": " + field + " = " +
                   config.json()[field].dump() +
                   " differs between layers, which is not supported (expected "
                   "one value for every layer)");
  return v.empty() ? fallback : v[0];
}

/// rope_scaling: absent / default, or {type: dynamic, alpha}.
Status parseHunyuanRope(const io::HfConfig &config, ModelSpec &spec) {
  if (!config.has("rope_scaling"))
    return Status();
  io::HfConfig scaling;
  HYC_CKPT_ASSIGN(scaling, config.get_object("rope_scaling"));
  std::string type;
  HYC_CKPT_ASSIGN(type, scaling.get_string_or("type", "default"));
  HYC_CKPT_ASSIGN(type, scaling.get_string_or("rope_type", type));
  const std::string where = config.path() + ": rope_scaling";
  if (type == "default" || type == "none")
    return Status();
  if (type != "dynamic")
    return Error(where + " type '" + type +
                 "' is not supported for HunYuanMoEV1ForCausalLM (supported: "
                 "default, dynamic with alpha)");
  if (!scaling.has("alpha"))
    return Error(where + ": type 'dynamic' without alpha (transformers' "
                         "position-dependent dynamic NTK) is not supported; "
                         "expected Hunyuan's {type: dynamic, alpha}");
  double alpha = 0.0;
  HYC_CKPT_ASSIGN(alpha, scaling.get_float("alpha"));
  HYC_CKPT_TRY(check_real(config.path(), "rope_scaling.alpha", alpha, 0.0,
                          kMaxFactor, true));
  if (spec.rope.rotary_dim <= 2)
    return Error(where +
                 ": dynamic alpha scaling needs a rotary dim > 2, "
                 "found " +
                 std::to_string(spec.rope.rotary_dim));
  spec.rope.scaling = "ntk_alpha";
  spec.rope.alpha = alpha;
  return check_rope_values(config.path(), spec.rope,
                           [](const std::string &field) {
                             return field == "theta" ? "rope_theta"
                                                     : "rope_scaling." + field;
                           });
}

/// head_dim, else attention_head_dim (Hunyuan's own name), else
/// hidden / heads; both present and different is an error.
Status parseHunyuanHeadDim(const io::HfConfig &config, ModelSpec &spec) {
  if (!config.has("attention_head_dim"))
    return Status(); // parse_hf_decoder's head_dim / hidden / heads stand
  int64_t attention_head_dim = 0;
  HYC_CKPT_ASSIGN(attention_head_dim, config.get_int("attention_head_dim"));
  if (config.has("head_dim") && attention_head_dim != spec.head_dim)
    return Error(
        config.path() + ": head_dim = " + std::to_string(spec.head_dim) +
        " and attention_head_dim = " + std::to_string(attention_head_dim) +
        " disagree");
  if (attention_head_dim <= 0)
    return Error(config.path() + ": attention_head_dim = " +
                 std::to_string(attention_head_dim) + ", expected > 0");
  spec.head_dim = attention_head_dim;
  return Status();
}

Expected<ModelSpec> hunyuanMoeFromHf(const io::HfConfig &config,
                                     std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "hunyuan_moe";
  HfDefaults d; // HunYuanMoEV1Config: eps 1e-5, 2048, bos 1, eos 2
  d.rms_norm_eps = 1e-5;
  d.bos_token_id = 1;
  d.eos_token_id = 2;
  // parse_hf_decoder knows only the standard rope types; Hunyuan's
  // {type: dynamic, alpha} is read below.
  nlohmann::json without_rope = config.json();
  without_rope.erase("rope_scaling");
  without_rope.erase("rope_parameters");
  const io::HfConfig base =
      io::HfConfig::from_json(std::move(without_rope), config.path());
  HYC_CKPT_TRY(parse_hf_decoder(base, spec, d, warnings));
  HYC_CKPT_TRY(parseHunyuanHeadDim(config, spec));
  spec.rope.rotary_dim = spec.head_dim;
  HYC_CKPT_TRY(parseHunyuanRope(config, spec));

  // Features the current modeling code does not have, or that ModelSpec
  // cannot carry: each must be off.
  HYC_CKPT_TRY(require_hf_value(config, "attention_bias", false));
  HYC_CKPT_TRY(require_hf_value(config, "mlp_bias", false));
  HYC_CKPT_TRY(require_hf_value(config, "use_cla", false));
  HYC_CKPT_TRY(require_hf_value(config, "use_mla", false));
  HYC_CKPT_TRY(require_hf_value(config, "use_qk_norm", true));
  HYC_CKPT_TRY(require_hf_value(config, "use_mixed_mlp_moe", true));
  if (config.has("sliding_window"))
    return Error(config.path() + ": sliding_window = " +
                 config.json()["sliding_window"].dump() +
                 " is not supported (expected null)");
  spec.qk_norm = true;
  spec.qk_norm_after_rope = true;
  spec.rope.neox = true;

  MoeSpec moe;
  HYC_CKPT_ASSIGN(moe.num_experts,
                  uniformInt(config, "num_experts", spec.num_layers, 0));
  HYC_CKPT_ASSIGN(moe.top_k,
                  uniformInt(config, "moe_topk", spec.num_layers, 1));
  HYC_CKPT_ASSIGN(moe.expert_intermediate_size,
                  uniformInt(config, "moe_intermediate_size", spec.num_layers,
                             spec.intermediate_size));
  int64_t shared = 1;
  HYC_CKPT_ASSIGN(shared,
                  uniformInt(config, "num_shared_expert", spec.num_layers, 1));
  // transformers builds one shared MLP of intermediate_size; vLLM widens it
  // by num_shared_expert. Only 1 means the same model to both.
  if (shared != 1)
    return Error(config.path() +
                 ": num_shared_expert = " + std::to_string(shared) +
                 " is not supported (expected 1: implementations disagree on "
                 "the shared MLP width otherwise)");
  if (moe.num_experts <= 1)
    return Error(config.path() +
                 ": num_experts = " + std::to_string(moe.num_experts) +
                 ", expected > 1 (HunYuanMoEV1 is a mixture of experts)");
  moe.num_shared_experts = 1;
  moe.shared_intermediate_size = spec.intermediate_size;
  moe.scoring = "softmax";
  moe.renormalize = true;
  bool norm = true;
  HYC_CKPT_ASSIGN(norm, config.get_bool_or("norm_topk_prob", true));
  if (!norm)
    warnings.push_back(config.path() +
                       ": norm_topk_prob = false is ignored: HunYuanMoEV1 "
                       "always renormalizes the top-k weights");
  bool drop = false;
  HYC_CKPT_ASSIGN(drop, config.get_bool_or("moe_drop_tokens", false));
  if (drop)
    warnings.push_back(config.path() +
                       ": moe_drop_tokens = true is ignored: the current "
                       "HunYuanMoEV1 routing has no expert capacity");
  if (!moe_spec_consistent(moe))
    return Error(config.path() +
                 ": num_experts = " + std::to_string(moe.num_experts) +
                 ", moe_topk = " + std::to_string(moe.top_k) +
                 ", moe_intermediate_size = " +
                 std::to_string(moe.expert_intermediate_size) +
                 "; expected 0 < moe_topk <= num_experts and a positive size");
  spec.moe = moe;
  return spec;
}

/// llama.cpp's `hunyuan-moe`: rope.freq_base already holds the scaled base
/// (its converter folds alpha in and writes rope.scaling.type none), NeoX
/// rope, the shared MLP width in expert_shared_feed_forward_length (the
/// graph uses that one shared MLP whatever expert_shared_count says), and
/// softmax top-k with renormalized weights.
Expected<ModelSpec> hunyuanMoeFromGguf(const io::GgufFile &file,
                                       std::vector<std::string> &) {
  const std::string p = "hunyuan-moe.";
  ModelSpec spec;
  spec.arch = "hunyuan_moe";
  HYC_CKPT_TRY(parse_gguf_decoder(file, spec));
  if (spec.rope.scaling != "none")
    return Error(file.path() + ": " + p + "rope.scaling.type '" +
                 spec.rope.scaling +
                 "' is not supported for hunyuan-moe (expected none: the "
                 "alpha scaling is folded into rope.freq_base)");
  spec.qk_norm = true;
  spec.qk_norm_after_rope = true;
  MoeSpec moe;
  HYC_CKPT_ASSIGN(moe.num_experts, gguf_required_int(file, p + "expert_count"));
  HYC_CKPT_ASSIGN(moe.top_k, gguf_required_int(file, p + "expert_used_count"));
  HYC_CKPT_ASSIGN(moe.expert_intermediate_size,
                  gguf_required_int(file, p + "expert_feed_forward_length"));
  HYC_CKPT_ASSIGN(
      moe.shared_intermediate_size,
      gguf_required_int(file, p + "expert_shared_feed_forward_length"));
  moe.num_shared_experts = 1;
  moe.scoring = "softmax";
  moe.renormalize = true;
  if (!moe_spec_consistent(moe) || moe.shared_intermediate_size <= 0)
    return Error(file.path() + ": " + p +
                 "expert_count = " + std::to_string(moe.num_experts) +
                 ", expert_used_count = " + std::to_string(moe.top_k) +
                 ", expert_feed_forward_length = " +
                 std::to_string(moe.expert_intermediate_size) +
                 ", expert_shared_feed_forward_length = " +
                 std::to_string(moe.shared_intermediate_size) +
                 "; expected 0 < used <= count and positive lengths");
  spec.moe = moe;
  return spec;
}

nlohmann::ordered_json hunyuanMoeToHf(const ModelSpec &spec) {
  nlohmann::ordered_json j =
      hf_decoder_config(spec, "HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe");
  const MoeSpec &m = *spec.moe;
  j["attention_head_dim"] = spec.head_dim;
  j.erase("partial_rotary_factor");
  if (spec.rope.scaling == "ntk_alpha")
    j["rope_scaling"] = {{"alpha", spec.rope.alpha},
                         {"beta_fast", 32},
                         {"beta_slow", 1},
                         {"factor", 1.0},
                         {"mscale", 1.0},
                         {"mscale_all_dim", 1.0},
                         {"type", "dynamic"}};
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  j["use_qk_norm"] = true;
  j["use_cla"] = false;
  j["use_mla"] = false;
  j["use_mixed_mlp_moe"] = true;
  j["num_experts"] = m.num_experts;
  const auto perLayer = [&](int64_t v) {
    return nlohmann::ordered_json(
        std::vector<int64_t>(static_cast<size_t>(spec.num_layers), v));
  };
  j["moe_topk"] = perLayer(m.top_k);
  j["moe_intermediate_size"] = perLayer(m.expert_intermediate_size);
  j["num_shared_expert"] = perLayer(m.num_shared_experts);
  j["moe_drop_tokens"] = false;
  j["norm_topk_prob"] = true;
  j["sliding_window"] = nullptr;
  return j;
}

} // namespace

const Family &hunyuan_moe_family() {
  static const Family family{"hunyuan_moe",      {"HunYuanMoEV1ForCausalLM"},
                             {"hunyuan_v1_moe"}, {"hunyuan-moe"},
                             hunyuanMoeFromHf,   hunyuanMoeFromGguf,
                             hunyuanMoeToHf,     hunyuanToCanonical,
                             hunyuanToHf};
  return family;
}

} // namespace hyc::models::detail
