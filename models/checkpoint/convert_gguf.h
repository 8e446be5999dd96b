// Hugging Face checkpoint -> GGUF, writing what llama.cpp's
// convert_hf_to_gguf.py writes for the architectures hyc reads from GGUF
// (llama, qwen2, qwen3, qwen3moe, deepseek2, hunyuan-moe), so GGUF loading can
// be tested against the original checkpoint and GGUF files can be made without
// Python.
#ifndef HYC_MODELS_CHECKPOINT_CONVERT_GGUF_H
#define HYC_MODELS_CHECKPOINT_CONVERT_GGUF_H

#include "models/checkpoint/model_spec.h"

#include <string>
#include <vector>

namespace hyc::models {

struct GgufConvertOptions {
  /// "f32" (default), "f16", "bf16", "q8_0" or "q4_0": like the
  /// converter's --outtype (q4_0: llama-quantize --pure Q4_0), weights with
  /// 2+ dims take the type except `*_norm.weight` and the router
  /// (`ffn_gate_inp`); 1-D tensors, biases and `exp_probs_b.bias` stay F32;
  /// q8_0 / q4_0 rows that are not whole 32-blocks F16.
  std::string outtype = "f32";
  /// deepseek2 only. true (llama.cpp's converter since MLA absorption):
  /// kv_b_proj is split into `attn_k_b` [H, kv_lora, nope] (the k rows of
  /// each head, transposed) and `attn_v_b` [H, v, kv_lora], with
  /// head_count_kv 1, key_length kv_lora + rope, value_length kv_lora,
  /// key_length_mla nope + rope, value_length_mla v. false (older
  /// converters): one `attn_kv_b`, head_count_kv = heads, key_length
  /// nope + rope, value_length v.
  bool deepseek2_split_kv_b = true;
};

/// Converts the Hugging Face directory `hf_dir` (any dtype load_checkpoint
/// reads, FP8 included: weights are written dequantized) into a GGUF v3 file
/// at `gguf_path`, following convert_hf_to_gguf.py:
///  * llama (`llama`): q_proj / k_proj rows permuted per head (LlamaModel.
///    permute with n_head for q and n_kv_head for k) so llama.cpp's
///    adjacent-pair rope (LLAMA_ROPE_TYPE_NORM) equals HF's rotate-half;
///    llama3 rope scaling baked into `rope_freqs.weight` with
///    rope_scaling.original_max_position_embeddings, i.e. the value
///    transformers uses (the Python converter reads the top-level key,
///    default 8192, see shared/golden/README.md); when that value is not
///    8192 it is also written as `rope.scaling.original_context_length`
///    (llama.cpp only uses that key for YaRN) so hyc reads the scaling back.
///  * qwen2 / qwen3 / qwen3moe: NeoX rope, no permutation; qwen3moe experts
///    stacked into `ffn_{gate,up,down}_exps` [E, rows, cols], router
///    `ffn_gate_inp`; norm_topk_prob false (which llama.cpp's qwen3moe
///    cannot represent: it always renormalizes) is written as
///    `qwen3moe.expert_weights_norm` = false, read back by hyc.
///  * deepseek_v3 (`deepseek2`): no permutation (llama.cpp's NORM rope on
///    the unpermuted rope dims equals HF's rope_interleave = true;
///    rope_interleave = false is rejected), MLA tensors attn_q / attn_q_a /
///    attn_q_a_norm / attn_q_b / attn_kv_a_mqa / attn_kv_a_norm, kv_b_proj
///    split (see GgufConvertOptions), experts stacked, shared experts
///    `ffn_*_shexp`, `exp_probs_b.bias`, and expert_count, expert_used_count,
///    expert_feed_forward_length, expert_shared_count, expert_weights_scale,
///    expert_weights_norm, expert_gating_func (1 softmax, 2 sigmoid),
///    expert_group_count, expert_group_used_count, leading_dense_block_count,
///    attention.q_lora_rank / kv_lora_rank, yarn as rope.scaling.* with
///    yarn_log_multiplier = 0.1 * mscale_all_dim.
///  * hunyuan_moe (`hunyuan-moe`): NeoX rope, no permutation, q/k norms
///    `attn_{q,k}_norm`, router `ffn_gate_inp`, experts stacked, the shared
///    MLP as `ffn_*_shexp` with expert_shared_count and
///    expert_shared_feed_forward_length; the NTK-alpha rope scaling folded
///    into rope.freq_base with rope.scaling.type none, as llama.cpp's
///    converter does (which also rewrites context_length to 262144 for
///    A13B; hyc keeps max_position_embeddings).
/// Metadata written for every arch: general.architecture, general.name,
/// general.file_type, context_length, embedding_length, block_count,
/// feed_forward_length, attention.head_count(_kv), attention.key_length /
/// value_length, attention.layer_norm_rms_epsilon, rope.freq_base,
/// rope.dimension_count (llama, deepseek2, or when partial), rope.scaling.*,
/// and tokenizer.ggml.bos/eos_token_id. No tokenizer vocabulary is embedded
/// (hyc's tokenizer.bin is not a GGUF tokenizer). Fails, naming the field,
/// when the spec has something the GGUF arch cannot express, and when
/// `gguf_path` is (or links to) a file of `hf_dir`, which it would replace.
/// The loader's warnings (tensors it ignored, ...) are appended to
/// `warnings` when given.
Status convert_hf_to_gguf(const std::string &hf_dir,
                          const std::string &gguf_path,
                          const GgufConvertOptions &options = {},
                          std::vector<std::string> *warnings = nullptr);

} // namespace hyc::models

#endif // HYC_MODELS_CHECKPOINT_CONVERT_GGUF_H
