// ModelSpec: the architecture-independent description of a checkpoint that
// the model definitions (models/<family>) turn into hyc IR, plus the weight
// and tokenizer sources the compiler packs into an artifact.
//
// Plain C++ (no MLIR): readers fill it, the IR builders and the artifact
// writer consume it. Weight names are canonical Hugging Face names whatever
// the input format (GGUF and llama2.c are renamed on load).
#ifndef HYC_MODELS_CHECKPOINT_MODEL_SPEC_H
#define HYC_MODELS_CHECKPOINT_MODEL_SPEC_H

#include "models/io/expected.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hyc::models {

using io::Error;
using io::Expected;
using io::Status;

/// Rotary embedding configuration, Hugging Face semantics.
struct RopeSpec {
  double theta = 10000.0;
  /// Rotated dims per head (partial rotary when < head_dim).
  int64_t rotary_dim = 0;
  /// true: pairs (i, i + d/2) (HF rotate_half); false: adjacent pairs
  /// (GGUF / llama2.c layouts, whose q/k rows are stored permuted).
  bool neox = true;
  /// "none", "linear", "llama3", "yarn" or "ntk_alpha" (Hunyuan's
  /// rope_scaling {type: dynamic, alpha}: a fixed base theta *
  /// alpha^(d / (d - 2)), see rope_base()).
  std::string scaling = "none";
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 1.0;
  double mscale_all_dim = 0.0;
  /// ntk_alpha only.
  double alpha = 1.0;
};

/// Mixture-of-experts configuration (Qwen3-MoE, DeepSeek, Hunyuan).
struct MoeSpec {
  int64_t num_experts = 0; ///< routed experts; 0 = dense model
  int64_t top_k = 0;
  int64_t expert_intermediate_size = 0;
  int64_t num_shared_experts = 0;
  /// Intermediate size of one shared expert. The shared experts form one
  /// SwiGLU block (`mlp.shared_experts.*`) whose intermediate dim is
  /// shared_intermediate_size * num_shared_experts (DeepSeek's layout).
  int64_t shared_intermediate_size = 0;
  std::string scoring = "softmax"; ///< "softmax" or "sigmoid"
  bool renormalize = false;        ///< norm_topk_prob
  double routed_scaling_factor = 1.0;
  int64_t n_group = 1;
  int64_t topk_group = 1;
  std::string group_score = "max";  ///< "max" or "top2_sum"
  bool has_correction_bias = false; ///< e_score_correction_bias
  int64_t first_k_dense = 0;        ///< first_k_dense_replace
  int64_t moe_layer_freq = 1;
};

/// DeepSeek multi-head latent attention.
struct MlaSpec {
  int64_t q_lora_rank = 0; ///< 0: plain q_proj
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

/// Everything the IR builder needs to know about a model.
struct ModelSpec {
  /// Family: "llama", "qwen2", "qwen3", "qwen3_moe", "deepseek_v3", ...
  std::string arch;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  double rms_norm_eps = 1e-5;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false; ///< q/k/v biases (Qwen2)
  bool qk_norm = false;        ///< per-head RMSNorm of q and k (Qwen3)
  /// q/k RMSNorm applied to the rotated q/k instead of before RoPE
  /// (Hunyuan's current transformers code).
  bool qk_norm_after_rope = false;
  RopeSpec rope;
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  int32_t bos_token_id = -1;
  int32_t eos_token_id = -1;
};

/// Shape and source dtype of one weight.
struct WeightInfo {
  std::string name;
  std::vector<int64_t> shape;
  std::string source_dtype; ///< "F32", "BF16", "Q8_0", "F8_E4M3", ...
};

/// Integer weight codes with two-level scales, as a checkpoint stores them
/// (GGUF K-quants and IQ4, AWQ), in the kernels' terms (codegen/pack.h,
/// "Grouped integer kernels" of codegen/brgemm.h): element [n][k] is
///   d[n][k / super] * sub_scales[n][k / group] * (value(code) - zero)
///     - dmin[n][k / super] * sub_mins[n][k / group]          (asymmetric)
/// with value(code) = code, or kvalues_iq4nl[code] + 128 for the iq4nl
/// codebook, and zero = 8 (4-bit), 128 (8-bit or codebook) when symmetric,
/// 0 when asymmetric. Formats, by name (bits, group, super, asymmetric):
///   "q4k"   GGUF Q4_K:    4, 32, 256, yes (sc, m: the 6-bit fields)
///   "q5k"   GGUF Q5_K:    8, 32, 256, yes (code = the 5-bit q)
///   "q6k"   GGUF Q6_K:    8, 16, 256, no  (code = q + 96; sc: int8)
///   "iq4xs" GGUF IQ4_XS:  4, 32, 256, no, codebook (sc = ls - 32)
///   "iq4nl" GGUF IQ4_NL:  4, 32,  32, no, codebook (sc = 1)
///   "q4z"   Q4_K halves:  4, 32, 128, yes (a tensor-parallel part of a
///           Q4_K matrix cut at half a super-block: its d, dmin, sc, m)
///   "q4z128" AWQ / GPTQ:  4, 128, 128, yes (d = dmin = the group's fp16
///           scale, sc = 1, m = the zero point: w = s * (q - z))
///   "q4_1"  GGUF Q4_1:    4, 32,  32, yes (d, dmin = -m, sc = m = 1:
///           w = d * q + m)
///   "q5_1"  GGUF Q5_1:    8, 32,  32, yes (code = the 5-bit q; as q4_1)
struct StoredCodes {
  std::string format;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> codes;     ///< [N][K], one per byte
  std::vector<int8_t> sub_scales; ///< [N][K / group]
  std::vector<uint8_t> sub_mins;  ///< [N][K / group]; empty when symmetric
  std::vector<uint16_t> d;        ///< [N][K / super] fp16 bits
  std::vector<uint16_t> dmin;     ///< [N][K / super]; empty when symmetric
};

/// Gives weights by canonical name, converted to fp32 (dequantized when the
/// checkpoint stores them quantized). Implementations keep files mapped.
class WeightSource {
public:
  virtual ~WeightSource() = default;
  /// Every weight the checkpoint provides, canonical names.
  virtual const std::vector<WeightInfo> &weights() const = 0;
  /// nullptr when absent. The default scans weights(); the loaders'
  /// sources override it with a hashed lookup.
  virtual const WeightInfo *find(const std::string &name) const;
  /// Writes the weight as fp32 into out (numel floats).
  virtual Status read_f32(const std::string &name, float *out) const = 0;
  /// Rows [row0, row0 + rows) of the 2-D weight `name` as fp32 (rows * K
  /// floats), where the source can read them alone (unscaled F32 / F16 /
  /// BF16 storage); false (nothing written) otherwise: read it whole.
  virtual bool read_f32_rows(const std::string &name, int64_t row0, int64_t rows,
                             float *out) const {
    (void)name, (void)row0, (void)rows, (void)out;
    return false;
  }
  /// True when the checkpoint stores `name` [N, K] as symmetric per-channel
  /// int8 (channel-INT8, compressed-tensors int-quantized): then writes its
  /// int8 values (N * K) and its scales (N, as fp32) as stored, so that a
  /// W8A8 artifact keeps them bit for bit instead of re-quantizing their
  /// fp32 product. False (nothing written) for any other storage.
  virtual bool read_int8_channel(const std::string &name, int8_t *q,
                                 float *scale) const {
    (void)name, (void)q, (void)scale;
    return false;
  }
  /// True when the checkpoint stores `name` [N, K] as DeepSeek FP8: e4m3fn
  /// codes with a `weight_scale_inv` of 128 x 128 blocks. Then writes the
  /// codes (N * K bytes) and the block factors ([ceil(N/128)][ceil(K/128)]
  /// fp32) as stored, so that an fp8 artifact keeps them bit for bit. False
  /// (nothing written) for any other storage or block size.
  virtual bool read_fp8_block(const std::string &name, uint8_t *codes,
                              float *scale_inv) const {
    (void)name, (void)codes, (void)scale_inv;
    return false;
  }
  /// True when the checkpoint stores `name` [N, K] as integer codes with one
  /// fp16 scale per 32 K-elements, `bits` wide: GGUF Q4_0 (bits 4, weight =
  /// d * (code - 8)) or Q8_0 (bits 8, stored int8 q as code q + 128; a
  /// Q4_0 tensor reads as 8-bit codes too, nibble n as n + 120, and a Q5_0
  /// one, weight d * (q - 16) for its 5-bit q, as code q + 112). Then
  /// writes the codes (N * K, one per byte) and the scales' fp16 bits
  /// ([N][K / 32]) as stored, so that a q4 / q8 artifact keeps them bit for
  /// bit. False (nothing written) for any other storage.
  virtual bool read_codes_g32(const std::string &name, int bits, uint8_t *codes,
                              uint16_t *scales) const {
    (void)name, (void)bits, (void)codes, (void)scales;
    return false;
  }
  /// The integer-code format `name` [N, K] is stored in, when the kernels
  /// can keep it exactly (StoredCodes above), else "".
  virtual std::string stored_codes_format(const std::string &name) const {
    (void)name;
    return "";
  }
  /// True when stored_codes_format(name) is not empty: then fills `out`
  /// with the codes and scales as stored (bit for bit). False (out
  /// untouched) otherwise.
  virtual bool read_stored_codes(const std::string &name, StoredCodes &out) const {
    (void)name, (void)out;
    return false;
  }
};

/// Tokenizer vocabulary carried by a checkpoint (maps onto
/// hyrt::TokenizerData; kept separate so models/ does not depend on runtime/).
struct TokenizerSpec {
  /// "llama2c", "sentencepiece", "gpt2", or "hf": a Hugging Face
  /// tokenizer.json (+ tokenizer_config.json) in `hf_dir`, which the
  /// compiler reads with the runtime's reader (models/ does not parse it).
  std::string kind;
  std::string hf_dir;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
};

/// A checkpoint opened for compilation.
struct Checkpoint {
  std::string source; ///< path given by the user
  std::string format; ///< "gguf", "llama2c", "hf"
  ModelSpec spec;
  std::unique_ptr<WeightSource> weights;
  std::optional<TokenizerSpec> tokenizer;
  /// Things the loader noticed but did not treat as errors (a tokenizer
  /// candidate it skipped, a GGUF tokenizer model it cannot carry, extra eos
  /// ids). The driver may print them.
  std::vector<std::string> warnings;
};

struct LoadOptions {
  /// Explicit tokenizer file (llama2.c tokenizer.bin); when empty, a
  /// tokenizer.bin / tok<vocab>.bin beside the checkpoint is used if present.
  std::string tokenizer_path;
};

/// Opens a GGUF file, a llama2.c .bin or a Hugging Face directory, detects
/// the format, validates the architecture and every weight's shape against
/// the spec, and returns it. Errors name the file, tensor and expected vs
/// found values.
Expected<Checkpoint> load_checkpoint(const std::string &path,
                                     const LoadOptions &options = {});

/// The canonical weight names a ModelSpec requires, with their shapes
/// (source_dtype left empty). Driven by the spec's features, in this order:
/// embed_tokens; per layer input_layernorm, attention (q/k/v/o with
/// optional q/k/v biases and q_norm/k_norm, or MLA), post_attention_layernorm,
/// MLP (dense gate/up/down, or router + experts + shared experts); model.norm;
/// lm_head unless tied.
std::vector<WeightInfo> required_weights(const ModelSpec &spec);

/// Whether `layer` uses the MoE block: spec.moe is set, layer >=
/// first_k_dense and layer % moe_layer_freq == 0 (DeepSeek's rule).
bool is_moe_layer(const ModelSpec &spec, int64_t layer);

/// True when the MoE fields agree with each other (positive sizes up to
/// 2^24, 0 < top_k <= num_experts <= 2^16, groups dividing the experts,
/// 0 < topk_group <= n_group, non-negative shared experts and dense prefix,
/// positive layer frequency, a finite routed_scaling_factor in (0, 1e6]).
/// Loaders phrase the error in their own format's field names.
bool moe_spec_consistent(const MoeSpec &moe);

/// The error text for a DeepSeek-style config.json (V2 and V3 field names)
/// whose MoE fields fail moe_spec_consistent.
std::string deepseek_moe_inconsistency(const std::string &path, const MoeSpec &moe);

/// The RoPE base the frequencies use: rope.theta, or for ntk_alpha
/// theta * alpha^(d / (d - 2)) with d = rotary_dim (transformers'
/// HunYuan rotary embedding; llama.cpp's converter writes the same value as
/// rope.freq_base).
double rope_base(const RopeSpec &rope);

/// Every field of the spec as indented JSON text (doubles round-trip), for
/// messages, manifests and tests that compare two specs.
std::string to_string(const ModelSpec &spec);

/// "LlamaForCausalLM (llama)", ...: what load_checkpoint accepts, for
/// error messages and `--help`.
std::vector<std::string> supported_architectures();

} // namespace hyc::models

#endif // HYC_MODELS_CHECKPOINT_MODEL_SPEC_H
