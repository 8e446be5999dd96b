// Llama family (Llama 2 / 3 / 3.x, TinyLlama, llama2.c models): ModelSpec
// from config.json, from GGUF `llama.*` metadata and from a llama2.c header,
// and the config.json synthesize() writes for it.
#include "models/checkpoint/family.h"

#include <algorithm>
#include <cmath>

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

/// Recognizes llama.cpp's `rope_freqs.weight` (per-frequency divisors the
/// converter bakes from Llama 3 rope scaling) as llama3 scaling with
/// low_freq_factor 1, high_freq_factor 4 (every Llama 3.x release), factor
/// = the last (lowest-frequency) divisor, original context
/// `rope.scaling.original_context_length` or the converter's default 8192.
Status readRopeFreqs(const io::GgufFile &file, const std::string &p,
                     ModelSpec &spec) {
  const io::GgufTensorInfo *info = file.find_tensor("rope_freqs.weight");
  if (!info)
    return Status();
  const std::string what = file.path() + ": GGUF llama3 rope_freqs.weight " +
                           io::shape_to_string(info->shape);
  if (spec.rope.scaling != "none")
    return Error(what + " together with rope.scaling.type '" +
                 spec.rope.scaling + "' is not supported");
  std::vector<float> freqs;
  HYC_CKPT_ASSIGN(freqs, file.read_f32("rope_freqs.weight"));
  if (static_cast<int64_t>(freqs.size()) != spec.rope.rotary_dim / 2)
    return Error(what + ": expected " +
                 std::to_string(spec.rope.rotary_dim / 2) +
                 " divisors (rope dim / 2)");
  RopeSpec rope = spec.rope;
  rope.scaling = "llama3";
  rope.factor = f32_decimal(freqs.back());
  rope.low_freq_factor = 1.0;
  rope.high_freq_factor = 4.0;
  HYC_CKPT_ASSIGN(
      rope.original_max_position,
      gguf_int_or(file, p + "rope.scaling.original_context_length", 8192));
  const std::vector<float> want = llama3_rope_divisors(rope);
  bool match = rope.factor >= 1.0;
  for (size_t i = 0; match && i < freqs.size(); ++i)
    match = std::fabs(freqs[i] - want[i]) <=
            1e-5f * std::max(1.0f, std::fabs(want[i]));
  if (!match)
    return Error(what + " is not llama3 rope scaling with factor " +
                 std::to_string(rope.factor) +
                 ", low_freq_factor 1, high_freq_factor 4 and original "
                 "context " +
                 std::to_string(rope.original_max_position) +
                 " (the only rope_freqs hyc reads); load the Hugging Face "
                 "checkpoint instead");
  spec.rope = rope;
  return Status();
}

Expected<ModelSpec> llamaFromGguf(const io::GgufFile &file,
                                  std::vector<std::string> &) {
  std::string arch;
  HYC_CKPT_ASSIGN(arch, file.get_string("general.architecture"));
  const std::string p = arch + ".";
  ModelSpec spec;
  spec.arch = "llama";
  HYC_CKPT_TRY(parse_gguf_decoder(file, spec));
  int64_t experts = 0;
  HYC_CKPT_ASSIGN(experts, gguf_int_or(file, p + "expert_count", 0));
  if (experts > 0)
    return Error(file.path() + ": GGUF llama with " + std::to_string(experts) +
                 " experts (Mixtral-style MoE) is not supported yet");
  int64_t value_dim = 0;
  HYC_CKPT_ASSIGN(value_dim, gguf_int_or(file, p + "attention.value_length",
                                         spec.head_dim));
  if (value_dim != spec.head_dim)
    return Error(file.path() + ": " + p +
                 "attention.value_length = " + std::to_string(value_dim) +
                 " differs from key_length = " + std::to_string(spec.head_dim) +
                 "; not supported");
  spec.rope.neox = false; // q/k rows are stored permuted for adjacent pairs
  HYC_CKPT_TRY(readRopeFreqs(file, p, spec));
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

std::vector<float> llama3_rope_divisors(const RopeSpec &rope) {
  // convert_hf_to_gguf.py computes these with float32 torch tensors.
  const int64_t dim = rope.rotary_dim;
  const float factor = static_cast<float>(rope.factor);
  const float low = static_cast<float>(rope.low_freq_factor);
  const float high = static_cast<float>(rope.high_freq_factor);
  const float old_ctx = static_cast<float>(rope.original_max_position);
  const float low_wavelen = static_cast<float>(
      static_cast<double>(rope.original_max_position) / rope.low_freq_factor);
  const float high_wavelen = static_cast<float>(
      static_cast<double>(rope.original_max_position) / rope.high_freq_factor);
  std::vector<float> out;
  for (int64_t i = 0; i < dim; i += 2) {
    const float freq =
        1.0f / std::pow(static_cast<float>(rope.theta),
                        static_cast<float>(i) / static_cast<float>(dim));
    const float wavelen = static_cast<float>(2.0 * M_PI) / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      const float smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
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
