// `hyc synth --awq`: one synthetic linear weight rewritten as the tensors
// AutoAWQ's GEMM format stores for it. Internal to hyc_checkpoint.
#ifndef HYC_MODELS_CHECKPOINT_SYNTH_AWQ_H
#define HYC_MODELS_CHECKPOINT_SYNTH_AWQ_H

#include "models/checkpoint/model_spec.h"
#include "models/io/safetensors.h"

#include <vector>

namespace hyc::models::detail {

/// AWQ's group size for synthetic checkpoints (AutoAWQ's default).
inline constexpr int64_t kSynthAwqGroup = 128;

/// Replaces `weight`, an F32 or BF16 [N, K] entry named `<prefix>.weight`,
/// by `<prefix>.qweight` I32 [K, N / 8] and appends `<prefix>.qzeros` I32
/// [K / 128, N / 8] and `<prefix>.scales` F16 [K / 128, N] to `extra`:
/// quantize_int4_groups with group 128, packed as pack_awq_rows. Fails,
/// naming the tensor, when K is not a multiple of 128 or N of 8.
Status quantize_entry_awq(io::SafetensorsEntry &weight, std::vector<io::SafetensorsEntry> &extra);

} // namespace hyc::models::detail

#endif // HYC_MODELS_CHECKPOINT_SYNTH_AWQ_H
