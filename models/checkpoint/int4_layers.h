// Packed int4 linear layers of Hugging Face checkpoints (AutoAWQ GEMM,
// AutoGPTQ, compressed-tensors pack-quantized): quantization_config read
// into a scheme (int4_schemes.cpp), each layer's tensors found and checked
// when the checkpoint opens (a hostile file fails there, naming the tensor,
// instead of while compiling), and a layer read back unpacked. Internal to
// hyc_checkpoint; load_hf.cpp wires it into its weight source.
#ifndef HYC_MODELS_CHECKPOINT_INT4_LAYERS_H
#define HYC_MODELS_CHECKPOINT_INT4_LAYERS_H

#include "models/checkpoint/int4_pack.h"
#include "models/checkpoint/model_spec.h"
#include "models/io/hf_config.h"
#include "models/io/safetensors.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_set>

namespace hyc::models::detail {

/// How quantization_config packs the int4 linear layers.
struct Int4Scheme {
  /// quant_method: "awq", "gptq" or "compressed-tensors" (pack-quantized).
  std::string method = "awq";
  int64_t group = 128; ///< group_size: K-elements per scale and zero
  /// Added to each stored zero point: 1 for AutoGPTQ's (v1) checkpoints,
  /// which store zero - 1; 0 for every other format.
  int zero_offset = 0;
  /// compressed-tensors symmetric weights: no weight_zero_point, zero 8.
  bool symmetric = false;
};

/// The scheme of a quantization_config whose quant_method is "awq": bits 4,
/// group_size a positive multiple of 32, zero_point true, version "gemm"
/// (fields left out take transformers' AwqConfig defaults: 4, 128, true,
/// "gemm"). Errors name config.json, the field, the value found and what
/// hyc reads.
Expected<Int4Scheme> read_awq_scheme(const io::HfConfig &config);

/// quant_method "gptq": bits 4, group_size a positive multiple of 32,
/// desc_act false (act-order reorders K by g_idx: refused), sym either
/// way, checkpoint_format "gptq" (zero - 1 stored; the default) or
/// "gptq_v2" (zero stored).
Expected<Int4Scheme> read_gptq_scheme(const io::HfConfig &config);

/// quant_method "compressed-tensors", format "pack-quantized": every entry
/// of config_groups with weights {num_bits 4, type int, strategy group,
/// group_size a positive multiple of 32, no actorder}, the same in all, and
/// no input activations (weight-only).
Expected<Int4Scheme> read_ct_packed_scheme(const io::HfConfig &config);

/// WeightInfo::source_dtype of the scheme's layers: "AWQ_INT4",
/// "GPTQ_INT4" or "CT_INT4" when the group is a multiple of 128
/// (StoredCodes "q4z128" holds the layer as stored), with "_G<group>"
/// appended otherwise (read as fp32 only).
std::string int4_dtype_name(const Int4Scheme &scheme);

/// One packed layer: its tensors (`<prefix>.qweight`, `.qzeros`, `.scales`
/// for AWQ and GPTQ; `<prefix>.weight_packed`, `.weight_scale`, ... for
/// compressed-tensors) standing for the [n, k] weight `<prefix>.weight`.
struct Int4Layer {
  std::string prefix;
  int64_t n = 0, k = 0;
};

/// Every packed layer of a checkpoint.
struct Int4Layers {
  Int4Scheme scheme;
  /// Keyed by the stored name of the layer's codes (`<prefix>.qweight`,
  /// `<prefix>.weight_packed`), which stands for the layer in the weight
  /// source.
  std::map<std::string, Int4Layer> by_codes;
  /// Stored names of every layer's tensors: parts of a weight, not weights.
  std::unordered_set<std::string> parts;
};

/// Finds every layer of `scheme` in `model` and checks its tensors
/// (int4_awq.cpp etc. say which: present, dtypes, shapes agreeing with
/// each other, the group dividing K); no `<prefix>.weight` beside them; no
/// zeros or scales without their codes; at least one layer. Errors start
/// with `origin` and name the tensor, what was expected and what was found.
Expected<Int4Layers> find_int4_layers(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                                      const std::string &origin);

/// The layer's codes, zero points and scales unpacked to [N][...] order
/// (`layer` as find_int4_layers checked it).
Status read_int4_layer(const io::SafetensorsModel &model, const Int4Scheme &scheme,
                       const Int4Layer &layer, Int4GroupQuant &out);

} // namespace hyc::models::detail

#endif // HYC_MODELS_CHECKPOINT_INT4_LAYERS_H
