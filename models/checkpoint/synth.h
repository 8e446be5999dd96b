// Synthetic checkpoints: small random models of every supported family,
// written as Hugging Face directories (config.json, model.safetensors F32)
// plus a llama2.c tokenizer.bin, so the whole compile-and-run path can be
// exercised without downloading a model (`hyc synth`).
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
  /// "llama", "qwen2", "qwen3", "qwen3-moe", "deepseek-v3" ('-' and '_'
  /// are interchangeable).
  std::string arch = "llama";
  /// "tiny" (vocab 512, hidden 64, 2-3 layers) or "small" (vocab 2048,
  /// hidden 256, 4 layers).
  std::string preset = "tiny";
  /// Same seed, same weights (bit for bit, on every platform).
  uint64_t seed = 0;
  /// Overrides the preset's tie_word_embeddings.
  std::optional<bool> tie_word_embeddings;
  /// Directory to write; created if needed, existing files replaced.
  std::string output_dir;
  /// FP8 (e4m3 + weight_scale_inv) weights: not implemented yet; true is
  /// an error.
  bool fp8 = false;
};

/// The spec synthesize() writes for `arch` / `preset`; errors list the
/// supported values.
Expected<ModelSpec> synth_spec(const std::string &arch,
                               const std::string &preset);

/// Writes `output_dir`/config.json (transformers field names, torch_dtype
/// float32, bos 1, eos 2), `output_dir`/model.safetensors (every weight of
/// required_weights(spec), F32: linear weights and embeddings uniform with
/// std 0.02, norm weights 1 +- 0.05, biases +- 0.02) and
/// `output_dir`/tokenizer.bin (llama2.c format: <unk>, <s>, </s>, byte tokens
/// <0x00>..<0xFF> at ids 3..258, then printable ASCII characters and letter
/// pairs). Each tensor's values depend only on the seed and the tensor's name.
/// load_checkpoint(output_dir) reads it back with the same spec.
Status synthesize(const SynthOptions &options);

/// Arch names synthesize() accepts.
std::vector<std::string> synth_archs();

} // namespace hyc::models

#endif // HYC_MODELS_CHECKPOINT_SYNTH_H
