// The llama.cpp <-> Hugging Face tensor name tables (llama-arch.cpp names).
#include "models/checkpoint/gguf_names.h"

namespace hyc::models::detail {

namespace {

constexpr GgufBlockName kBlockNames[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    // deepseek2 multi-head latent attention.
    {"attn_q_a", "self_attn.q_a_proj"},
    {"attn_q_a_norm", "self_attn.q_a_layernorm"},
    {"attn_q_b", "self_attn.q_b_proj"},
    {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
    {"attn_kv_a_norm", "self_attn.kv_a_layernorm"},
    {"attn_kv_b", "self_attn.kv_b_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    // Mixture of experts: router and shared experts.
    {"ffn_gate_inp", "mlp.gate"},
    {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
    {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
};

bool startsWith(const std::string &s, const std::string &prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

const GgufBlockName *gguf_block_names(size_t *count) {
  *count = sizeof(kBlockNames) / sizeof(kBlockNames[0]);
  return kBlockNames;
}

bool split_gguf_block_name(const std::string &name, int64_t *layer,
                           std::string *stem, std::string *suffix) {
  if (!startsWith(name, "blk."))
    return false;
  const size_t layer_end = name.find('.', 4);
  const size_t stem_end = name.rfind('.');
  if (layer_end == std::string::npos || stem_end <= layer_end)
    return false;
  const std::string digits = name.substr(4, layer_end - 4);
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *layer = std::stoll(digits);
  *stem = name.substr(layer_end + 1, stem_end - layer_end - 1);
  *suffix = name.substr(stem_end + 1);
  return true;
}

std::string gguf_to_hf_name(const std::string &gguf) {
  if (gguf == "token_embd.weight")
    return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight")
    return "model.norm.weight";
  if (gguf == "output.weight")
    return "lm_head.weight";
  int64_t layer = 0;
  std::string stem, suffix;
  if (!split_gguf_block_name(gguf, &layer, &stem, &suffix))
    return gguf;
  for (const GgufBlockName &b : kBlockNames)
    if (stem == b.gguf)
      return "model.layers." + std::to_string(layer) + "." + b.hf + "." +
             suffix;
  return gguf;
}

std::string hf_to_gguf_name(const std::string &hf) {
  if (hf == "model.embed_tokens.weight")
    return "token_embd.weight";
  if (hf == "model.norm.weight")
    return "output_norm.weight";
  if (hf == "lm_head.weight")
    return "output.weight";
  const std::string prefix = "model.layers.";
  if (!startsWith(hf, prefix))
    return "";
  const size_t layer_end = hf.find('.', prefix.size());
  const size_t module_end = hf.rfind('.');
  if (layer_end == std::string::npos || module_end <= layer_end)
    return "";
  const std::string layer = hf.substr(prefix.size(), layer_end - prefix.size());
  const std::string module =
      hf.substr(layer_end + 1, module_end - layer_end - 1);
  const std::string suffix = hf.substr(module_end + 1);
  for (const GgufBlockName &b : kBlockNames)
    if (module == b.hf)
      return "blk." + layer + "." + b.gguf + "." + suffix;
  return "";
}

} // namespace hyc::models::detail
