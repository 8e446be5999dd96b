// Llama family (Llama 2 / 3 / 3.x, TinyLlama, llama2.c models): ModelSpec
// from config.json, from GGUF `llama.*` metadata and from a llama2.c header,
// and the config.json synthesize() writes for it.
#include "models/checkpoint/family.h"

namespace hyc::models::detail {

namespace {

Expected<ModelSpec> llamaFromHf(const io::HfConfig &config,
                                std::vector<std::string> &warnings) {
  ModelSpec spec;
  spec.arch = "llama";
  HfDefaults defaults; // LlamaConfig: eps 1e-6, untied, 2048, bos 1, eos 2
  defaults.bos_token_id = 1;
  defaults.eos_token_id = 2;
  HYC_CKPT_TRY(parse_hf_decoder(config, spec, defaults, warnings));
  // Llama's attention_bias also adds an o_proj bias, which ModelSpec cannot
  // express (attention_bias there means q/k/v only).
  HYC_CKPT_TRY(require_hf_value(config, "attention_bias", false));
  HYC_CKPT_TRY(require_hf_value(config, "mlp_bias", false));
  return spec;
}

Expected<int64_t> requiredInt(const io::GgufFile &file,
                              const std::string &key) {
  if (!file.has(key))
    return Error(file.path() + ": missing GGUF key '" + key + "'");
  return file.get_i64(key);
}

Expected<ModelSpec> llamaFromGguf(const io::GgufFile &file,
                                  std::vector<std::string> &) {
  std::string arch;
  HYC_CKPT_ASSIGN(arch, file.get_string("general.architecture"));
  const std::string p = arch + ".";
  ModelSpec spec;
  spec.arch = "llama";
  HYC_CKPT_ASSIGN(spec.hidden_size, requiredInt(file, p + "embedding_length"));
  HYC_CKPT_ASSIGN(spec.intermediate_size,
                  requiredInt(file, p + "feed_forward_length"));
  HYC_CKPT_ASSIGN(spec.num_layers, requiredInt(file, p + "block_count"));
  HYC_CKPT_ASSIGN(spec.num_heads,
                  requiredInt(file, p + "attention.head_count"));
  HYC_CKPT_ASSIGN(
      spec.num_kv_heads,
      gguf_int_or(file, p + "attention.head_count_kv", spec.num_heads));
  HYC_CKPT_ASSIGN(spec.max_position_embeddings,
                  requiredInt(file, p + "context_length"));
  if (!file.has(p + "attention.layer_norm_rms_epsilon"))
    return Error(file.path() + ": missing GGUF key '" + p +
                 "attention.layer_norm_rms_epsilon'");
  HYC_CKPT_ASSIGN(
      spec.rms_norm_eps,
      gguf_float_or(file, p + "attention.layer_norm_rms_epsilon", 1e-5));
  int64_t experts = 0;
  HYC_CKPT_ASSIGN(experts, gguf_int_or(file, p + "expert_count", 0));
  if (experts > 0)
    return Error(file.path() + ": GGUF llama with " + std::to_string(experts) +
                 " experts (Mixtral-style MoE) is not supported yet");
  for (const char *key :
       {"embedding_length", "feed_forward_length", "block_count",
        "attention.head_count", "attention.head_count_kv", "context_length"}) {
    int64_t v = 0;
    HYC_CKPT_ASSIGN(v, gguf_int_or(file, p + key, 1));
    if (v <= 0)
      return Error(file.path() + ": " + p + key + " = " + std::to_string(v) +
                   ", expected > 0");
  }
  if (spec.num_heads % spec.num_kv_heads != 0)
    return Error(file.path() + ": " + p +
                 "attention.head_count = " + std::to_string(spec.num_heads) +
                 " is not a multiple of head_count_kv = " +
                 std::to_string(spec.num_kv_heads));

  int64_t default_head_dim = spec.hidden_size / spec.num_heads;
  HYC_CKPT_ASSIGN(spec.head_dim, gguf_int_or(file, p + "attention.key_length",
                                             default_head_dim));
  int64_t value_dim = 0;
  HYC_CKPT_ASSIGN(value_dim, gguf_int_or(file, p + "attention.value_length",
                                         spec.head_dim));
  if (value_dim != spec.head_dim)
    return Error(file.path() + ": " + p +
                 "attention.value_length = " + std::to_string(value_dim) +
                 " differs from key_length = " + std::to_string(spec.head_dim) +
                 "; not supported");

  const io::GgufTensorInfo *embed = file.find_tensor("token_embd.weight");
  int64_t embed_rows = embed && embed->shape.size() == 2 ? embed->shape[0] : 0;
  HYC_CKPT_ASSIGN(spec.vocab_size,
                  gguf_int_or(file, p + "vocab_size", embed_rows));
  if (spec.vocab_size <= 0)
    return Error(file.path() + ": cannot tell the vocabulary size (no " + p +
                 "vocab_size and no 2-D token_embd.weight)");
  spec.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;

  RopeSpec &rope = spec.rope;
  rope.neox = false; // q/k rows are stored permuted for adjacent pairs
  HYC_CKPT_ASSIGN(rope.theta,
                  gguf_float_or(file, p + "rope.freq_base", 10000.0));
  HYC_CKPT_ASSIGN(rope.rotary_dim,
                  gguf_int_or(file, p + "rope.dimension_count", spec.head_dim));
  if (rope.rotary_dim <= 0 || rope.rotary_dim > spec.head_dim ||
      rope.rotary_dim % 2 != 0)
    return Error(file.path() + ": " + p +
                 "rope.dimension_count = " + std::to_string(rope.rotary_dim) +
                 ", expected an even number in 2.." +
                 std::to_string(spec.head_dim));
  if (const io::GgufTensorInfo *freqs = file.find_tensor("rope_freqs.weight"))
    return Error(file.path() +
                 ": GGUF llama3 rope_freqs not supported yet "
                 "(tensor rope_freqs.weight " +
                 io::shape_to_string(freqs->shape) +
                 "); load the Hugging Face checkpoint instead");
  std::string scaling;
  HYC_CKPT_ASSIGN(scaling, file.has(p + "rope.scaling.type")
                               ? file.get_string(p + "rope.scaling.type")
                               : Expected<std::string>("none"));
  double linear_scale = 0.0; // legacy key
  HYC_CKPT_ASSIGN(linear_scale,
                  gguf_float_or(file, p + "rope.scale_linear", 0.0));
  if (scaling == "none" && linear_scale > 0.0 && linear_scale != 1.0) {
    rope.scaling = "linear";
    rope.factor = linear_scale;
  } else if (scaling == "linear") {
    rope.scaling = "linear";
    HYC_CKPT_ASSIGN(rope.factor,
                    gguf_float_or(file, p + "rope.scaling.factor", 1.0));
  } else if (scaling == "yarn") {
    rope.scaling = "yarn";
    HYC_CKPT_ASSIGN(rope.factor,
                    gguf_float_or(file, p + "rope.scaling.factor", 1.0));
    HYC_CKPT_ASSIGN(rope.original_max_position,
                    gguf_int_or(file,
                                p + "rope.scaling.original_context_length",
                                spec.max_position_embeddings));
    HYC_CKPT_ASSIGN(
        rope.beta_fast,
        gguf_float_or(file, p + "rope.scaling.yarn_beta_fast", 32.0));
    HYC_CKPT_ASSIGN(
        rope.beta_slow,
        gguf_float_or(file, p + "rope.scaling.yarn_beta_slow", 1.0));
  } else if (scaling != "none") {
    return Error(file.path() + ": " + p + "rope.scaling.type '" + scaling +
                 "' is not supported (supported: none, linear, yarn)");
  }

  int64_t bos = -1, eos = -1;
  HYC_CKPT_ASSIGN(bos, gguf_int_or(file, "tokenizer.ggml.bos_token_id", -1));
  HYC_CKPT_ASSIGN(eos, gguf_int_or(file, "tokenizer.ggml.eos_token_id", -1));
  spec.bos_token_id = static_cast<int32_t>(bos);
  spec.eos_token_id = static_cast<int32_t>(eos);
  return spec;
}

nlohmann::ordered_json llamaToHf(const ModelSpec &spec) {
  nlohmann::ordered_json j =
      hf_decoder_config(spec, "LlamaForCausalLM", "llama");
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  return j;
}

} // namespace

const Family &llama_family() {
  static const Family family{"llama",   {"LlamaForCausalLM"}, {"llama"},
                             {"llama"}, llamaFromHf,          llamaFromGguf,
                             llamaToHf};
  return family;
}

ModelSpec llama_spec_from_llama2c(const io::Llama2cConfig &c) {
  ModelSpec spec;
  spec.arch = "llama";
  spec.vocab_size = c.vocab_size;
  spec.hidden_size = c.dim;
  spec.intermediate_size = c.hidden_dim;
  spec.num_layers = c.n_layers;
  spec.num_heads = c.n_heads;
  spec.num_kv_heads = c.n_kv_heads;
  spec.head_dim = c.head_size();
  spec.rms_norm_eps = 1e-5;
  spec.max_position_embeddings = c.seq_len;
  spec.tie_word_embeddings = c.shared_classifier;
  spec.rope.theta = 10000.0;
  spec.rope.rotary_dim = spec.head_dim;
  spec.rope.neox = false; // llama2.c rotates adjacent pairs (2i, 2i+1)
  spec.bos_token_id = 1;
  spec.eos_token_id = 2;
  return spec;
}

} // namespace hyc::models::detail
