// llama.cpp GGUF tensor names <-> canonical Hugging Face names, shared by
// the GGUF loader and the HF -> GGUF converter. Internal to hyc_checkpoint.
#ifndef HYC_MODELS_CHECKPOINT_GGUF_NAMES_H
#define HYC_MODELS_CHECKPOINT_GGUF_NAMES_H

#include <cstdint>
#include <string>

namespace hyc::models::detail {

/// A per-block tensor stem: `blk.<N>.<gguf>.<weight|bias>` is
/// `model.layers.<N>.<hf>.<weight|bias>`.
struct GgufBlockName {
  const char *gguf;
  const char *hf;
};

/// Every one-to-one block stem (llama, qwen2/3, qwen3moe, deepseek2).
/// Not listed, because they are not one-to-one: ffn_{gate,up,down}_exps
/// (stacked experts), attn_k_b / attn_v_b (deepseek2's split kv_b_proj) and
/// exp_probs_b (`.bias` in GGUF, `mlp.gate.e_score_correction_bias` in HF).
const GgufBlockName *gguf_block_names(size_t *count);

/// `blk.<N>.<stem>.<suffix>` split into its parts; false for other names.
bool split_gguf_block_name(const std::string &name, int64_t *layer,
                           std::string *stem, std::string *suffix);

/// Canonical name of a one-to-one GGUF tensor (token_embd, output_norm,
/// output, the block stems above); names without a mapping are returned
/// unchanged.
std::string gguf_to_hf_name(const std::string &gguf);

/// GGUF name of a canonical one-to-one weight, or "" when it has none.
std::string hf_to_gguf_name(const std::string &hf);

} // namespace hyc::models::detail

#endif // HYC_MODELS_CHECKPOINT_GGUF_NAMES_H
