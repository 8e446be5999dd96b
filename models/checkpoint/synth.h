// Synthetic checkpoints: small random models of every supported family,
// written as Hugging Face directories (config.json, model.safetensors F32,
// or DeepSeek-style FP8 with `hyc synth --fp8`, channel-INT8 with --int8,
// AWQ int4 with --awq) plus a llama2.c
// tokenizer.bin, so the whole compile-and-run path can be exercised without
// downloading a model (`hyc synth`).
#ifndef HYC_MODELS_CHECKPOINT_SYNTH_H
#define HYC_MODELS_CHECKPOINT_SYNTH_H

#include "models/checkpoint/model_spec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hyc::models {

/// What synthesize() writes.
struct SynthOptions {
  /// "llama", "qwen2", "qwen3", "qwen3-moe", "deepseek-v2",
  /// "deepseek-v2-lite" (no q LoRA, greedy routing), "deepseek-v3",
  /// "hunyuan-moe" ('-' and '_' are interchangeable).
  std::string arch = "llama";
  /// "tiny" (vocab 512, hidden 64, 2-3 layers), "small" (vocab 2048,
  /// hidden 256, 4 layers), or a real-size shape with bf16 weights that
  /// implies the arch: "dense-1b" (Llama-3.2-1B), "moe-small" (Qwen3-MoE,
  /// hidden 2048, 64 experts top-8), "mla-small" (DeepSeek-V3 layout, hidden
  /// 2048, 64 experts top-6 + 2 shared).
  std::string preset = "tiny";
  /// Same seed, same weights (bit for bit, on every platform).
  uint64_t seed = 0;
  /// Overrides the preset's tie_word_embeddings.
  std::optional<bool> tie_word_embeddings;
  /// Override the preset's dense MLP width and each routed expert's
  /// (uneven widths exercise tensor parallel's padded shards).
  std::optional<int64_t> intermediate_size, expert_intermediate_size;
  /// Overrides the preset's vocabulary size (embedding and head rows): a
  /// real tokenizer's ids must fit (Qwen3's: 151936).
  std::optional<int64_t> vocab_size;
  /// A Hugging Face tokenizer to ship instead of the llama2.c one: its
  /// tokenizer.json and tokenizer_config.json (with the chat template) are
  /// copied, and no tokenizer.bin is written. Empty: tokenizer.bin.
  std::string hf_tokenizer_dir;
  /// Directory to write; created if needed, existing files replaced.
  std::string output_dir;
  /// DeepSeek-style FP8 weights (any arch): every attention / MLP / expert
  /// projection weight (`*_proj.weight`, `kv_a_proj_with_mqa.weight`; not
  /// embeddings, norms, biases, the router `mlp.gate` or lm_head) is stored
  /// as F8_E4M3 with a `<name>_scale_inv` F32 tensor of shape
  /// [ceil(N/128), ceil(K/128)] (dequantized = e4m3 value * scale_inv; see
  /// fp8.h), and config.json gets `quantization_config` {quant_method fp8,
  /// fmt e4m3, activation_scheme dynamic, weight_block_size [128, 128]}.
  /// The values are the seeded ones of the fp32 model except that block
  /// (0, 0) of every quantized weight has a wide dynamic range (element
  /// (r, c) scaled by 2^-((r + c) % 16)) so that e4m3 subnormals occur; the
  /// fp8 model is therefore not the fp32 synth model of the same seed: use
  /// dequantize_fp8_to for its exact fp32 twin.
  bool fp8 = false;
  /// Channel-INT8 weights (the same projections as fp8): int8 values with
  /// one F32 `<name>_scale` per output row (dequantized = q * scale), and
  /// config.json `quantization_config` {quant_method w8a8_int8}. Odd rows
  /// use scale = max|w| / 100, so their largest |q| is 100: re-quantizing
  /// the dequantized weights (scale max|w| / 127) would change them, which
  /// is what tests of "kept as stored" need. Exclusive with fp8.
  bool int8 = false;
  /// AutoAWQ GEMM int4 weights (the same projections as fp8): each
  /// `<module>.weight` [N, K] becomes `<module>.qweight` I32 [K, N / 8],
  /// `.qzeros` I32 [K / 128, N / 8] and `.scales` F16 [K / 128, N]
  /// (quantize_int4_groups, group 128, packed as pack_awq_rows; see
  /// int4_pack.h), and config.json gets `quantization_config` {quant_method
  /// awq, bits 4, group_size 128, zero_point true, version gemm}. Every
  /// such weight needs K a multiple of 128 and N of 8: the tiny presets
  /// (hidden 64) and small's dense MLP (688) are refused, naming the
  /// tensor; `--preset small --ffn 512` fits. Exclusive with fp8 and int8.
  bool awq = false;
  /// With fp8 or awq: also write the exact dequantized fp32 checkpoint here
  /// (see write_dequantized_copy). Empty: none. Set otherwise: an error.
  std::string dequantize_fp8_to;
};

/// The arch a real-size preset implies ("dense-1b" -> llama, "moe-small" ->
/// qwen3-moe, "mla-small" -> deepseek-v3); "" for tiny / small.
std::string synth_preset_arch(const std::string &preset);

/// The spec synthesize() writes for `arch` / `preset` (an empty arch with a
/// real-size preset takes the preset's); errors list the supported values.
Expected<ModelSpec> synth_spec(const std::string &arch,
                               const std::string &preset);

/// Writes `output_dir`/config.json (transformers field names, torch_dtype
/// float32, bos 1, eos 2), `output_dir`/model.safetensors (every weight of
/// required_weights(spec), F32: linear weights and embeddings uniform with
/// std 0.02, norm weights 1 +- 0.05, biases +- 0.02; with fp8 the linear
/// layers become F8_E4M3 + `_scale_inv`, see SynthOptions::fp8) and
/// `output_dir`/tokenizer.bin (llama2.c format: <unk>, <s>, </s>, byte tokens
/// <0x00>..<0xFF> at ids 3..258, then printable ASCII characters and letter
/// pairs). Each tensor's values depend only on the seed and the tensor's name.
/// load_checkpoint(output_dir) reads it back with the same spec.
Status synthesize(const SynthOptions &options);

/// Writes `out_dir` as the fp32 twin of the Hugging Face checkpoint in
/// `fp8_dir`: model.safetensors holds every tensor of `fp8_dir` as F32 (FP8
/// weights dequantized exactly as load_checkpoint does, i.e. the fp32
/// product e4m3 value * scale_inv; the `*_scale_inv` tensors of FP8 weights
/// dropped; AWQ layers as their dequantized `<module>.weight`; other dtypes
/// converted exactly), config.json is the original
/// minus `quantization_config` with torch_dtype float32, and tokenizer.bin /
/// tokenizer.json / tokenizer_config.json / generation_config.json are
/// copied when present. load_checkpoint of both gives the same spec and
/// bit-identical read_f32 weights. Holds all weights in memory (meant for
/// test-size models).
Status write_dequantized_copy(const std::string &fp8_dir,
                              const std::string &out_dir);

/// Arch names synthesize() accepts.
std::vector<std::string> synth_archs();

} // namespace hyc::models

#endif // HYC_MODELS_CHECKPOINT_SYNTH_H
