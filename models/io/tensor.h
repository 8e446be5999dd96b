// The common in-memory tensor view used by all checkpoint readers, its
// element types, and conversions of every supported type to fp32.
#ifndef HYC_MODELS_IO_TENSOR_H
#define HYC_MODELS_IO_TENSOR_H

#include "models/io/expected.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hyc::io {

/// Element types a TensorView can hold. All multi-byte values are stored
/// little-endian (the only host order hyc supports).
enum class DType {
  F32,
  F16,
  BF16,
  /// GGUF Q8_0: blocks of 32 values, each an f16 scale followed by 32 int8;
  /// 34 bytes per block, blocks run over the flattened tensor.
  Q8_0,
  /// OCP FP8 e4m3fn: bias 7, no infinities, S.1111.111 is NaN.
  F8_E4M3,
  I8,
  I32,
  /// llama2.c "ak42" v2 export: int8 q[numel] in `data`, plus one fp32 scale
  /// per `group_size` consecutive values of the flattened tensor in
  /// `group_scales` (a group may straddle rows). value[i] = q[i] *
  /// scale[i / group_size].
  Q8_GROUPED,
  /// ggml's other block-quantized GGUF types (models/io/gguf_dequant.h has
  /// their layouts): blocks run over the flattened tensor, a row holds whole
  /// blocks.
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
  MXFP4,
};

/// Upper-case name: "F32", "F16", "BF16", "Q8_0", "F8_E4M3", "I8", "I32",
/// "Q8_GROUPED", and ggml's names of the other block types ("Q4_K", ...).
const char *dtype_name(DType dtype);

/// Bytes of `data` that `numel` elements of `dtype` occupy (for Q8_GROUPED:
/// the int8 values only). Fails if numel is negative or, for a block type
/// (Q8_0, Q4_K, ...), not a multiple of its block size.
Expected<size_t> dtype_data_bytes(DType dtype, int64_t numel);

/// Product of dims; fails on negative dims or int64 overflow.
Expected<int64_t> shape_numel(const std::vector<int64_t> &shape);

/// "[512, 64]".
std::string shape_to_string(const std::vector<int64_t> &shape);

/// A non-owning view of one tensor. `shape` is row-major (last dim is the
/// fastest-varying). `data` points into storage owned by the reader that
/// produced the view (usually a MappedFile) and may be unaligned.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  size_t nbytes = 0;
  /// Q8_GROUPED only: values per scale and the fp32 scales (unaligned).
  int64_t group_size = 0;
  const uint8_t *group_scales = nullptr;

  /// Number of elements (product of shape; 1 for a scalar).
  int64_t numel() const;
};

/// Exact scalar conversions.
float f16_to_f32(uint16_t bits);
float bf16_to_f32(uint16_t bits);
float f8_e4m3_to_f32(uint8_t bits);
/// Round-to-nearest-even fp32 -> bf16 / fp16 (used by writers and tests).
uint16_t f32_to_bf16(float value);
uint16_t f32_to_f16(float value);

/// Converts every element of `view` to fp32 into `out` (numel() floats).
/// Fails if `nbytes` does not match shape and dtype.
Status to_f32(const TensorView &view, float *out);

/// Convenience overload returning a new vector.
Expected<std::vector<float>> to_f32(const TensorView &view);

/// DeepSeek-style FP8 block dequantization: `weight` is F8_E4M3 [N][K],
/// `scale_inv` is [ceil(N/block_n)][ceil(K/block_k)] (F32, BF16 or F16);
/// result[n][k] = weight[n][k] * scale_inv[n / block_n][k / block_k].
Expected<std::vector<float>> dequant_fp8_block(const TensorView &weight,
                                               const TensorView &scale_inv,
                                               int64_t block_n = 128,
                                               int64_t block_k = 128);

/// Channel-wise INT8 dequantization: `weight` is I8 [N][K], `scale` is [N] or
/// [N][1] (F32, BF16 or F16); result[n][k] = weight[n][k] * scale[n].
Expected<std::vector<float>> dequant_int8_channel(const TensorView &weight,
                                                  const TensorView &scale);

} // namespace hyc::io

#endif // HYC_MODELS_IO_TENSOR_H
