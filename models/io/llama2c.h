// llama2.c checkpoint (.bin) and tokenizer (tokenizer.bin) readers.
//
// Supported checkpoint layouts:
//  - version 0 (legacy, no magic): 7 int32 header + fp32 weights + freq_cis;
//  - version 1 ("ak42", 256-byte header): fp32 weights, norms first;
//  - version 2 ("ak42", 256-byte header): fp32 norms + Q8 weights, each
//    tensor quantized on its own (per layer) in groups of `group_size` over
//    its flattened elements, as llama2.c export.py writes them.
//
// Tensors are exposed under Hugging Face-like names (all row-major, out x in):
//   model.embed_tokens.weight                         [vocab, dim]
//   model.layers.{i}.input_layernorm.weight           [dim]      (rms_att)
//   model.layers.{i}.self_attn.q_proj.weight          [dim, dim]
//   model.layers.{i}.self_attn.k_proj.weight          [kv_dim, dim]
//   model.layers.{i}.self_attn.v_proj.weight          [kv_dim, dim]
//   model.layers.{i}.self_attn.o_proj.weight          [dim, dim]
//   model.layers.{i}.post_attention_layernorm.weight  [dim]      (rms_ffn)
//   model.layers.{i}.mlp.gate_proj.weight             [hidden, dim] (w1)
//   model.layers.{i}.mlp.down_proj.weight             [dim, hidden] (w2)
//   model.layers.{i}.mlp.up_proj.weight               [hidden, dim] (w3)
//   model.norm.weight                                 [dim]      (rms_final)
//   lm_head.weight                                    [vocab, dim] (wcls),
//                                                     only if unshared
// Unlike HF checkpoints, q/k rows keep llama2.c's order: RoPE rotates
// adjacent pairs (2i, 2i+1) within each head (GGML "normal" rope); no
// HF-style permutation has been applied.
#ifndef HYC_MODELS_IO_LLAMA2C_H
#define HYC_MODELS_IO_LLAMA2C_H

#include "models/io/expected.h"
#include "models/io/mapped_file.h"
#include "models/io/tensor.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hyc::io {

/// Model hyper-parameters from a llama2.c header.
struct Llama2cConfig {
  /// 0 = legacy fp32, 1 = ak42 fp32, 2 = ak42 Q8 grouped.
  int32_t version = 0;
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  /// Always positive here (the legacy sign flag is decoded into
  /// shared_classifier).
  int32_t vocab_size = 0;
  int32_t seq_len = 0;
  bool shared_classifier = true;
  /// Version 2 only; 0 otherwise.
  int32_t group_size = 0;

  int32_t head_size() const { return dim / n_heads; }
  int32_t kv_dim() const { return dim / n_heads * n_kv_heads; }
  /// "dim=64, hidden_dim=172, ..., seq_len=512".
  std::string to_string() const;
};

/// An open llama2.c checkpoint. Move-only; views point into its mapping.
class Llama2cModel {
public:
  /// Opens the file, decodes the header and checks that the file size
  /// matches it exactly.
  static Expected<Llama2cModel> open(const std::string &path);

  const std::string &path() const { return file_.path(); }
  const Llama2cConfig &config() const { return config_; }

  /// All tensors in file order; dtype F32, or Q8_GROUPED for version 2
  /// weight matrices.
  const std::vector<TensorView> &tensors() const { return tensors_; }
  /// nullptr when absent.
  const TensorView *find(const std::string &name) const;
  /// Zero-copy view; error names the file and tensor when absent.
  Expected<TensorView> tensor(const std::string &name) const;
  /// The tensor as fp32 (dequantized for version 2).
  Expected<std::vector<float>> read_f32(const std::string &name) const;

private:
  Llama2cModel() = default;
  friend class Llama2cLayout;

  MappedFile file_;
  Llama2cConfig config_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

/// Contents of a llama2.c tokenizer.bin.
struct Llama2cTokenizer {
  int32_t max_token_length = 0;
  /// Raw piece bytes (llama2.c uses ' ' where SentencePiece uses U+2581).
  std::vector<std::string> pieces;
  std::vector<float> scores;
};

/// Reads `vocab_size` entries (f32 score, i32 len, len bytes) after the
/// int32 max_token_length. Fails on truncation, negative lengths, or bytes
/// left over after the last entry.
Expected<Llama2cTokenizer> read_llama2c_tokenizer(const std::string &path,
                                                  int32_t vocab_size);

} // namespace hyc::io

#endif // HYC_MODELS_IO_LLAMA2C_H
