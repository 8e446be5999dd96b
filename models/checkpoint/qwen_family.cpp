// Qwen families from config.json: Qwen2 (q/k/v biases), Qwen3 (per-head
// q/k RMSNorm) and Qwen3-MoE (Qwen3 attention + softmax-routed experts), and
// the config.json synthesize() writes for each.
#include "models/checkpoint/family.h"

namespace hyc::models::detail {

namespace {

HfDefaults qwenDefaults() {
  HfDefaults d; // Qwen2Config / Qwen3Config: eps 1e-6, untied, 32768
  d.max_position_embeddings = 32768;
  return d;
}

Expected<ModelSpec> qwen2FromHf(const io::HfConfig &config,
                                std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "qwen2";
  HYC_CKPT_TRY(parse_hf_decoder(config, spec, qwenDefaults(), warnings));
  HYC_CKPT_TRY(require_hf_value(config, "use_sliding_window", false));
  spec.attention_bias = true; // Qwen2 always has q/k/v biases
  return spec;
}

Expected<ModelSpec> qwen3FromHf(const io::HfConfig &config,
                                std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "qwen3";
  HfDefaults d = qwenDefaults();
  d.head_dim = 128;
  HYC_CKPT_TRY(parse_hf_decoder(config, spec, d, warnings));
  HYC_CKPT_TRY(require_hf_value(config, "use_sliding_window", false));
  // Qwen3's attention_bias also biases o_proj, which ModelSpec cannot carry.
  HYC_CKPT_TRY(require_hf_value(config, "attention_bias", false));
  spec.qk_norm = true;
  return spec;
}

Expected<ModelSpec> qwen3MoeFromHf(const io::HfConfig &config,
                                   std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "qwen3_moe";
  HYC_CKPT_TRY(parse_hf_decoder(config, spec, qwenDefaults(), warnings));
  HYC_CKPT_TRY(require_hf_value(config, "use_sliding_window", false));
  HYC_CKPT_TRY(require_hf_value(config, "attention_bias", false));
  // Sparse layers are (l + 1) % decoder_sparse_step == 0 and not in
  // mlp_only_layers; ModelSpec expresses only "every layer" here.
  HYC_CKPT_TRY(require_hf_value(config, "decoder_sparse_step", 1));
  HYC_CKPT_TRY(
      require_hf_value(config, "mlp_only_layers", nlohmann::json::array()));
  spec.qk_norm = true;
  MoeSpec moe;
  HYC_CKPT_ASSIGN(moe.num_experts, config.get_int_or("num_experts", 128));
  HYC_CKPT_ASSIGN(moe.top_k, config.get_int_or("num_experts_per_tok", 8));
  HYC_CKPT_ASSIGN(moe.expert_intermediate_size,
                  config.get_int_or("moe_intermediate_size", 768));
  HYC_CKPT_ASSIGN(moe.renormalize, config.get_bool_or("norm_topk_prob", false));
  moe.scoring = "softmax";
  if (!moe_spec_consistent(moe))
    return Error(config.path() +
                 ": num_experts = " + std::to_string(moe.num_experts) +
                 ", num_experts_per_tok = " + std::to_string(moe.top_k) +
                 ", moe_intermediate_size = " +
                 std::to_string(moe.expert_intermediate_size) +
                 "; expected 0 < top-k <= experts and a positive size");
  spec.moe = moe;
  return spec;
}

//===----------------------------------------------------------------------===//
// GGUF (llama.cpp arch names qwen2, qwen3, qwen3moe): NeoX rope on unpermuted
// q/k rows, so the spec matches the Hugging Face one.
//===----------------------------------------------------------------------===//

Expected<ModelSpec> qwen2FromGguf(const io::GgufFile &file,
                                  std::vector<std::string> &) {
  ModelSpec spec;
  spec.arch = "qwen2";
  HYC_CKPT_TRY(parse_gguf_decoder(file, spec));
  spec.attention_bias = true;
  return spec;
}

Expected<ModelSpec> qwen3FromGguf(const io::GgufFile &file,
                                  std::vector<std::string> &) {
  ModelSpec spec;
  spec.arch = "qwen3";
  HYC_CKPT_TRY(parse_gguf_decoder(file, spec));
  spec.qk_norm = true;
  return spec;
}

Expected<ModelSpec> qwen3MoeFromGguf(const io::GgufFile &file,
                                     std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "qwen3_moe";
  HYC_CKPT_TRY(parse_gguf_decoder(file, spec));
  spec.qk_norm = true;
  const std::string p = "qwen3moe.";
  MoeSpec moe;
  HYC_CKPT_ASSIGN(moe.num_experts, gguf_required_int(file, p + "expert_count"));
  HYC_CKPT_ASSIGN(moe.top_k, gguf_required_int(file, p + "expert_used_count"));
  HYC_CKPT_ASSIGN(moe.expert_intermediate_size,
                  gguf_required_int(file, p + "expert_feed_forward_length"));
  moe.scoring = "softmax";
  // llama.cpp's qwen3moe graph always renormalizes the top-k weights; hyc's
  // converter writes expert_weights_norm = false for norm_topk_prob false.
  moe.renormalize = true;
  if (file.has(p + "expert_weights_norm")) {
    HYC_CKPT_ASSIGN(moe.renormalize, file.get_bool(p + "expert_weights_norm"));
    if (!moe.renormalize)
      warnings.push_back(file.path() + ": " + p +
                         "expert_weights_norm = false (llama.cpp ignores it "
                         "and renormalizes)");
  }
  if (!moe_spec_consistent(moe))
    return Error(file.path() + ": " + p +
                 "expert_count = " + std::to_string(moe.num_experts) +
                 ", expert_used_count = " + std::to_string(moe.top_k) +
                 ", expert_feed_forward_length = " +
                 std::to_string(moe.expert_intermediate_size) +
                 "; expected 0 < used <= count and a positive length");
  spec.moe = moe;
  return spec;
}

nlohmann::ordered_json qwen2ToHf(const ModelSpec &spec) {
  nlohmann::ordered_json j =
      hf_decoder_config(spec, "Qwen2ForCausalLM", "qwen2");
  j["use_sliding_window"] = false;
  return j;
}

nlohmann::ordered_json qwen3ToHf(const ModelSpec &spec) {
  nlohmann::ordered_json j =
      hf_decoder_config(spec, "Qwen3ForCausalLM", "qwen3");
  j["attention_bias"] = false;
  j["use_sliding_window"] = false;
  return j;
}

nlohmann::ordered_json qwen3MoeToHf(const ModelSpec &spec) {
  nlohmann::ordered_json j =
      hf_decoder_config(spec, "Qwen3MoeForCausalLM", "qwen3_moe");
  j["attention_bias"] = false;
  j["use_sliding_window"] = false;
  const MoeSpec &m = *spec.moe;
  j["num_experts"] = m.num_experts;
  j["num_experts_per_tok"] = m.top_k;
  j["moe_intermediate_size"] = m.expert_intermediate_size;
  j["norm_topk_prob"] = m.renormalize;
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = nlohmann::ordered_json::array();
  return j;
}

} // namespace

const Family &qwen2_family() {
  static const Family family{"qwen2",   {"Qwen2ForCausalLM"}, {"qwen2"},
                             {"qwen2"}, qwen2FromHf,          qwen2FromGguf,
                             qwen2ToHf};
  return family;
}

const Family &qwen3_family() {
  static const Family family{"qwen3",   {"Qwen3ForCausalLM"}, {"qwen3"},
                             {"qwen3"}, qwen3FromHf,          qwen3FromGguf,
                             qwen3ToHf};
  return family;
}

const Family &qwen3_moe_family() {
  static const Family family{
      "qwen3_moe",    {"Qwen3MoeForCausalLM"}, {"qwen3_moe"}, {"qwen3moe"},
      qwen3MoeFromHf, qwen3MoeFromGguf,        qwen3MoeToHf};
  return family;
}

} // namespace hyc::models::detail
