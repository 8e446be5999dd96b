// GGUF block tensors as integer codes with their scales (StoredCodes,
// model_spec.h): the formats hyc's kernels hold exactly (Q4_K, Q5_K, Q6_K,
// IQ4_XS, IQ4_NL, Q4_1, Q5_1), unpacked from ggml's block layouts
// (../shared/golden-gguf/README.md lists them). Internal to hyc_checkpoint.
#ifndef HYC_MODELS_CHECKPOINT_GGUF_CODES_H
#define HYC_MODELS_CHECKPOINT_GGUF_CODES_H

#include "models/checkpoint/model_spec.h"
#include "models/io/tensor.h"

#include <string>

namespace hyc::models::detail {

/// The StoredCodes format a GGUF block type maps to ("q4k", "q5k", "q6k",
/// "iq4xs", "iq4nl", "q4_1", "q5_1"), or "" for the others.
std::string gguf_codes_format(io::DType type);

/// Unpacks a 2-D [N, K] block tensor of a gguf_codes_format type into
/// `out`, bit for bit. False (out untouched) for other types, shapes or
/// sizes.
bool gguf_codes(const io::TensorView &v, StoredCodes &out);

} // namespace hyc::models::detail

#endif // HYC_MODELS_CHECKPOINT_GGUF_CODES_H
