// Model families known to load_checkpoint: how each one's config (HF
// config.json, GGUF metadata) becomes a ModelSpec and back, plus the helpers
// the per-family files share. Internal to hyc_checkpoint.
//
// Adding a family: write <name>_family.cpp defining a Family, list it in
// families() (family.cpp), and, when it needs weights required_weights() does
// not yet produce, extend the spec features (model_spec.h) and
// required_weights.cpp.
#ifndef HYC_MODELS_CHECKPOINT_FAMILY_H
#define HYC_MODELS_CHECKPOINT_FAMILY_H

#include "models/checkpoint/model_spec.h"
#include "models/io/gguf.h"
#include "models/io/hf_config.h"
#include "models/io/llama2c.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace hyc::models::detail {

/// One architecture family and the formats it can be read from.
struct Family {
  /// ModelSpec::arch ("llama", "qwen3", ...).
  const char *arch;
  /// config.json `architectures` entries that select this family.
  std::vector<std::string> hf_architectures;
  /// config.json `model_type` values (used when `architectures` is absent).
  std::vector<std::string> hf_model_types;
  /// GGUF `general.architecture` values; empty when GGUF is not supported.
  std::vector<std::string> gguf_architectures;
  /// Spec from a parsed config.json; may append to `warnings`.
  Expected<ModelSpec> (*from_hf)(const io::HfConfig &config,
                                 std::vector<std::string> &warnings);
  /// Spec from GGUF metadata; nullptr when GGUF is not supported.
  Expected<ModelSpec> (*from_gguf)(const io::GgufFile &file,
                                   std::vector<std::string> &warnings);
  /// config.json (transformers field names) describing `spec`; from_hf of
  /// its result gives `spec` back. Used by synthesize().
  nlohmann::ordered_json (*to_hf)(const ModelSpec &spec);
  /// Canonical weight name of a tensor stored under `hf_name` in this
  /// family's safetensors (names it does not rename come back unchanged);
  /// nullptr when the family stores canonical names.
  std::string (*hf_to_canonical)(const std::string &hf_name) = nullptr;
  /// The inverse, for writing upstream-style checkpoints (synthesize()).
  std::string (*canonical_to_hf)(const std::string &canonical) = nullptr;
};

/// Every known family, in a fixed order.
const std::vector<const Family *> &families();
/// nullptr when no family has this ModelSpec::arch.
const Family *family_by_arch(const std::string &arch);
/// The family a config.json selects. On failure the error names the file,
/// what it found and the supported list.
Expected<const Family *> family_for_hf(const io::HfConfig &config);
/// nullptr when no family reads this GGUF `general.architecture`.
const Family *family_for_gguf(const std::string &gguf_arch);

// The families (one file each).
const Family &llama_family();
const Family &qwen2_family();
const Family &qwen3_family();
const Family &qwen3_moe_family();
const Family &deepseek_v2_family();
const Family &deepseek_v3_family();
const Family &hunyuan_moe_family();

/// llama.cpp's `rope_freqs.weight` for llama3 rope scaling: one divisor
/// per rotary frequency (rope.rotary_dim / 2 values), computed like
/// convert_hf_to_gguf.py (float32) from theta, factor, low/high_freq_factor
/// and original_max_position.
std::vector<float> llama3_rope_divisors(const RopeSpec &rope);

/// Llama spec from a llama2.c header (adjacent-pair RoPE, theta 10000,
/// eps 1e-5, BOS 1, EOS 2).
ModelSpec llama_spec_from_llama2c(const io::Llama2cConfig &config);

//===----------------------------------------------------------------------===//
// Range checks of the values a config declares. `where` is the file (and
// for GGUF nothing more: `field` is the full key); messages read
// "<where>: <field> = <value>, expected <range>".
//===----------------------------------------------------------------------===//

/// Largest width, head count or per-head size any family accepts (sizes are
/// multiplied together in int64; every real model is far below).
constexpr int64_t kMaxModelDim = int64_t(1) << 24;
/// Largest routed-expert count.
constexpr int64_t kMaxExperts = int64_t(1) << 16;
/// Largest RoPE base, before and after NTK scaling.
constexpr double kMaxRopeTheta = 1e12;
/// Largest multiplier among the RoPE scaling and routing factors.
constexpr double kMaxFactor = 1e6;

/// `value` in [lo, hi].
Status check_int(const std::string &where, const std::string &field,
                 int64_t value, int64_t lo, int64_t hi);
/// `value` finite and in (lo, hi] (open_lo) or [lo, hi].
Status check_real(const std::string &where, const std::string &field,
                  double value, double lo, double hi, bool open_lo);
/// A token id: -1 (none) or in [0, vocab) (which also bounds it to int32).
Expected<int32_t> check_token_id(const std::string &where,
                                 const std::string &field, int64_t value,
                                 int64_t vocab);
/// The RoPE fields of `rope` (theta, the scaling variant's factors and
/// original context, the NTK base) named with `names(field)`, a format's
/// spelling of the canonical name ("theta", "factor", "low_freq_factor",
/// "high_freq_factor", "original_max_position", "beta_fast", "beta_slow",
/// "mscale", "mscale_all_dim", "alpha").
Status check_rope_values(
    const std::string &where, const RopeSpec &rope,
    const std::function<std::string(const std::string &field)> &names);

//===----------------------------------------------------------------------===//
// config.json helpers shared by the families.
//===----------------------------------------------------------------------===//

/// transformers' defaults for fields a config.json may omit.
struct HfDefaults {
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 2048;
  int32_t bos_token_id = -1;
  int32_t eos_token_id = -1;
  /// 0: hidden_size / num_attention_heads (Qwen3Config alone defaults to 128).
  int64_t head_dim = 0;
};

/// Reads the decoder fields every family has: vocab_size, hidden_size,
/// intermediate_size, num_hidden_layers, num_attention_heads,
/// num_key_value_heads (default: heads), head_dim (default hidden/heads),
/// rms_norm_eps, max_position_embeddings, tie_word_embeddings,
/// bos/eos_token_id (an eos list keeps its first id, with a warning), and
/// RoPE (parse_hf_rope). Rejects hidden_act other than silu.
Status parse_hf_decoder(const io::HfConfig &config, ModelSpec &spec,
                        const HfDefaults &defaults,
                        std::vector<std::string> &warnings);

/// rope_theta (or rope_parameters.rope_theta; default 10000),
/// partial_rotary_factor, and rope_scaling / rope_parameters with
/// rope_type/type none|default|linear|llama3|yarn, read the way transformers
/// reads them (llama3's original_max_position_embeddings from inside
/// rope_scaling). Sets rope.neox = true; callers override it.
Status parse_hf_rope(const io::HfConfig &config, ModelSpec &spec);

/// DeepSeek multi-head latent attention dims (q_lora_rank, absent or null
/// = plain q_proj; kv_lora_rank, qk_nope/qk_rope_head_dim, v_head_dim) into
/// spec.mla; sets head_dim to nope + rope (the softmax-scale head size) and
/// rope.rotary_dim to the rope dim. Shared by DeepSeek-V2 and V3.
Status parse_hf_mla(const io::HfConfig &config, ModelSpec &spec);

/// DeepSeek's note when rms_norm_eps is not 1e-6 (transformers applies 1e-6
/// in the MLA layernorms regardless, llama.cpp the config's value).
void warn_hf_mla_norm_eps(const io::HfConfig &config, const ModelSpec &spec,
                          std::vector<std::string> &warnings);

/// The MLA dims and DeepSeek MoE fields of a config.json (the inverse of
/// parse_hf_mla and of the MoE parsing; the routing fields scoring_func,
/// topk_method and norm_topk_prob are the version's). Shared by V2 and V3.
void mla_to_hf(const MlaSpec &mla, nlohmann::ordered_json &j);
void deepseek_moe_to_hf(const MoeSpec &moe, const char *scoring, const char *topk_method,
                        bool norm_topk_prob, nlohmann::ordered_json &j);

/// Fails with "<file>: <field> = <value> is not supported yet" when `field`
/// is present and not equal to `supported` (JSON equality).
Status require_hf_value(const io::HfConfig &config, const std::string &field,
                        const nlohmann::json &supported);

/// The common part of a config.json for `spec` (the inverse of
/// parse_hf_decoder), starting with architectures and model_type.
nlohmann::ordered_json hf_decoder_config(const ModelSpec &spec,
                                         const std::string &architecture,
                                         const std::string &model_type);

//===----------------------------------------------------------------------===//
// GGUF metadata helpers.
//===----------------------------------------------------------------------===//

/// Integer value of `key`, or `fallback` when absent.
Expected<int64_t> gguf_int_or(const io::GgufFile &file, const std::string &key,
                              int64_t fallback);
/// Float value of `key` (float32 values via f32_decimal), or `fallback`.
Expected<double> gguf_float_or(const io::GgufFile &file, const std::string &key,
                               double fallback);

/// Integer value of `key`; "missing GGUF key" error when absent.
Expected<int64_t> gguf_required_int(const io::GgufFile &file,
                                    const std::string &key);

/// Reads the metadata every decoder architecture has, from the
/// `<general.architecture>.` keys llama.cpp writes: embedding_length,
/// feed_forward_length, block_count, attention.head_count, context_length,
/// attention.layer_norm_rms_epsilon (all required),
/// attention.head_count_kv (default head_count), attention.key_length ->
/// head_dim (default hidden / heads), vocab_size (default token_embd rows),
/// tie_word_embeddings (no output.weight), rope.freq_base (default 10000),
/// rope.dimension_count -> rotary_dim (default head_dim), rope.scaling.*
/// (none, linear, yarn incl. yarn_beta_fast/slow and DeepSeek's
/// yarn_log_multiplier = 0.1 * mscale_all_dim; legacy rope.scale_linear),
/// and bos/eos from tokenizer.ggml.*_token_id. Sets rope.neox = true;
/// families override what their architecture implies.
Status parse_gguf_decoder(const io::GgufFile &file, ModelSpec &spec);

/// Shortest decimal that rounds to `value`, as a double: 1e-5f -> 1e-5.
/// GGUF stores hyper-parameters as float32 that were written from decimals.
double f32_decimal(float value);

/// `return`s the error of a failed Status / Expected expression.
#define HYC_CKPT_TRY(expr)                                                     \
  do {                                                                         \
    auto hyc_ckpt_status_ = (expr);                                            \
    if (!hyc_ckpt_status_)                                                     \
      return hyc_ckpt_status_.take_error();                                    \
  } while (0)

/// Assigns the value of an Expected expression to `lhs`, or `return`s its
/// error.
#define HYC_CKPT_ASSIGN(lhs, expr)                                             \
  do {                                                                         \
    auto hyc_ckpt_result_ = (expr);                                            \
    if (!hyc_ckpt_result_)                                                     \
      return hyc_ckpt_result_.take_error();                                    \
    lhs = std::move(*hyc_ckpt_result_);                                        \
  } while (0)

} // namespace hyc::models::detail

#endif // HYC_MODELS_CHECKPOINT_FAMILY_H
