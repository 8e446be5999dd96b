// DeepSeek-V2 family (V2, V2-Lite, V2.5, Coder-V2) from config.json, and the
// config.json synthesize() writes for it. Attention is V3's MLA (with or
// without q LoRA); routing is what separates the two generations:
//
//   V2 (transformers' DeepseekV2Moe): softmax over all experts; topk_method
//     `greedy` = plain top-k, `group_limited_greedy` = keep the topk_group
//     groups whose best expert scores highest, then top-k inside them; no
//     correction bias; the kept weights are multiplied by
//     routed_scaling_factor and never renormalized.
//   V3: sigmoid + e_score_correction_bias, group score = sum of the best two,
//     renormalize (norm_topk_prob) and then scale.
//
// The rope part of q/k rotates adjacent pairs (transformers' V2 applies it
// as complex multiplication on (2i, 2i+1)), i.e. rope.neox = false, with no
// rope_interleave switch. YaRN's softmax-scale correction mscale(factor,
// mscale_all_dim)^2 is applied as DeepSeek's reference code and llama.cpp do
// (attentionScale in models/ir/Attention.cpp).
#include "models/checkpoint/family.h"

namespace hyc::models::detail {

namespace {

/// Routing fields of a V2 config into `moe`; warnings for settings that
/// transformers reads but ignores.
Status parseV2Routing(const io::HfConfig &config, MoeSpec &moe,
                      std::vector<std::string> &warnings) {
  HYC_CKPT_TRY(require_hf_value(config, "scoring_func", "softmax"));
  moe.scoring = "softmax";
  moe.has_correction_bias = false;
  moe.group_score = "max";
  std::string method;
  HYC_CKPT_ASSIGN(method, config.get_string_or("topk_method", "greedy"));
  if (method == "greedy") {
    // Plain top-k over all experts: n_group / topk_group (V2-Lite writes
    // 1 / 1) do not apply.
    moe.n_group = 1;
    moe.topk_group = 1;
  } else if (method == "group_limited_greedy") {
    if (!config.has("n_group") || !config.has("topk_group"))
      return Error(config.path() +
                   ": topk_method = \"group_limited_greedy\" needs n_group "
                   "and topk_group (found " +
                   (config.has("n_group") ? "" : "no ") + "n_group, " +
                   (config.has("topk_group") ? "" : "no ") + "topk_group)");
    HYC_CKPT_ASSIGN(moe.n_group, config.get_int("n_group"));
    HYC_CKPT_ASSIGN(moe.topk_group, config.get_int("topk_group"));
  } else {
    return Error(config.path() + ": topk_method = \"" + method +
                 "\" is not supported for DeepseekV2ForCausalLM (supported: "
                 "greedy, group_limited_greedy; noaux_tc is DeepSeek-V3's)");
  }
  // transformers' DeepseekV2Moe multiplies the kept softmax weights by
  // routed_scaling_factor and never looks at norm_topk_prob (DeepSeek's
  // original remote code normalized *instead of* scaling when it was true;
  // every released V2 checkpoint has it false).
  moe.renormalize = false;
  bool norm = false;
  HYC_CKPT_ASSIGN(norm, config.get_bool_or("norm_topk_prob", false));
  if (norm && moe.top_k > 1)
    warnings.push_back(
        config.path() +
        ": norm_topk_prob = true is ignored, as transformers' DeepseekV2 "
        "does (the top-k weights are scaled by routed_scaling_factor, not "
        "renormalized)");
  HYC_CKPT_ASSIGN(moe.routed_scaling_factor,
                  config.get_float_or("routed_scaling_factor", 1.0));
  if (!(moe.routed_scaling_factor > 0.0))
    return Error(config.path() + ": routed_scaling_factor = " +
                 std::to_string(moe.routed_scaling_factor) + ", expected > 0");
  return Status();
}

Expected<ModelSpec> deepseekV2FromHf(const io::HfConfig &config,
                                     std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "deepseek_v2";
  HfDefaults d; // DeepseekV2Config: eps 1e-6, untied, 2048, bos 1, eos 2
  d.bos_token_id = 1;
  d.eos_token_id = 2;
  // MLA dims first, so that a bad one is reported as such rather than by the
  // generic rope checks. V2 configs carry no head_dim and hidden / heads
  // need not be whole: the rope dim stands in until parse_hf_mla below.
  ModelSpec mla_only;
  HYC_CKPT_TRY(parse_hf_mla(config, mla_only));
  d.head_dim = mla_only.mla->qk_rope_head_dim;
  HYC_CKPT_TRY(parse_hf_decoder(config, spec, d, warnings));
  HYC_CKPT_TRY(require_hf_value(config, "attention_bias", false));
  HYC_CKPT_TRY(require_hf_value(config, "mlp_bias", false));
  warn_hf_mla_norm_eps(config, spec, warnings);
  HYC_CKPT_TRY(parse_hf_mla(config, spec));
  spec.rope.neox = false;

  if (!config.has("n_routed_experts"))
    return spec;
  MoeSpec moe;
  HYC_CKPT_ASSIGN(moe.num_experts, config.get_int("n_routed_experts"));
  HYC_CKPT_ASSIGN(moe.top_k, config.get_int("num_experts_per_tok"));
  HYC_CKPT_ASSIGN(moe.expert_intermediate_size,
                  config.get_int("moe_intermediate_size"));
  // Absent: DeepseekV2Config's default (2); null: no shared experts.
  const nlohmann::json &j = config.json();
  if (j.contains("n_shared_experts") && j["n_shared_experts"].is_null())
    moe.num_shared_experts = 0;
  else
    HYC_CKPT_ASSIGN(moe.num_shared_experts,
                    config.get_int_or("n_shared_experts", 2));
  moe.shared_intermediate_size =
      moe.num_shared_experts > 0 ? moe.expert_intermediate_size : 0;
  HYC_CKPT_TRY(parseV2Routing(config, moe, warnings));
  HYC_CKPT_ASSIGN(moe.first_k_dense,
                  config.get_int_or("first_k_dense_replace", 0));
  HYC_CKPT_ASSIGN(moe.moe_layer_freq, config.get_int_or("moe_layer_freq", 1));
  if (!moe_spec_consistent(moe))
    return Error(deepseek_moe_inconsistency(config.path(), moe));
  spec.moe = moe;
  return spec;
}

nlohmann::ordered_json deepseekV2ToHf(const ModelSpec &spec) {
  nlohmann::ordered_json j =
      hf_decoder_config(spec, "DeepseekV2ForCausalLM", "deepseek_v2");
  const MlaSpec &mla = *spec.mla;
  // Upstream V2 configs have neither (transformers derives head_dim).
  j.erase("head_dim");
  j.erase("partial_rotary_factor");
  mla_to_hf(mla, j);
  j["attention_bias"] = false;
  if (spec.moe)
    deepseek_moe_to_hf(*spec.moe, "softmax",
                       spec.moe->n_group > 1 ? "group_limited_greedy" : "greedy",
                       /*norm_topk_prob=*/false, j);
  return j;
}

} // namespace

const Family &deepseek_v2_family() {
  // GGUF: llama.cpp's `deepseek2` files are read by the DeepSeek-V3 family
  // (one GGUF arch cannot select two families).
  static const Family family{"deepseek_v2",    {"DeepseekV2ForCausalLM"},
                             {"deepseek_v2"},  {},
                             deepseekV2FromHf, nullptr,
                             deepseekV2ToHf};
  return family;
}

} // namespace hyc::models::detail
