// FP8 (OCP e4m3fn) encoding and DeepSeek-style 128x128 block quantization,
// used by `hyc synth --fp8`. Decoding is io::f8_e4m3_to_f32
// (models/io/tensor.h); dequantized = decode(code) * scale_inv[block].
#ifndef HYC_MODELS_CHECKPOINT_FP8_H
#define HYC_MODELS_CHECKPOINT_FP8_H

#include <cstdint>
#include <vector>

namespace hyc::models {

/// fp32 -> e4m3fn (bias 7, no infinities, S.1111.111 = NaN), round to
/// nearest, ties to even, computed exactly on the fp32 bits (no dependence on
/// the floating-point environment). Subnormal results (|x| < 2^-6, step
/// 2^-9) are produced exactly; |x| <= 2^-10 becomes +-0 (the sign is kept).
/// Saturating: |x| >= 448 (including infinities) gives +-448; NaN gives
/// 0x7F (0xFF when the sign bit is set).
uint8_t f32_to_e4m3fn(float value);

/// One weight quantized with per-block scales.
struct Fp8BlockQuant {
  /// e4m3fn codes, row-major [n][k].
  std::vector<uint8_t> codes;
  /// Row-major [ceil(n / block_n)][ceil(k / block_k)] fp32 factors:
  /// dequantized[r][c] = f8_e4m3_to_f32(codes[r][c]) *
  /// scale_inv[r / block_n][c / block_k] (DeepSeek's weight_scale_inv).
  std::vector<float> scale_inv;
  std::vector<int64_t> scale_shape;
};

/// Quantizes a row-major [n][k] fp32 matrix by blocks (the last block of a
/// dim may be partial): scale_inv = max|block| / 448 (1.0 for an all-zero
/// block), code = f32_to_e4m3fn(w / scale_inv).
Fp8BlockQuant quantize_fp8_block(const float *w, int64_t n, int64_t k,
                                 int64_t block_n = 128, int64_t block_k = 128);

} // namespace hyc::models

#endif // HYC_MODELS_CHECKPOINT_FP8_H
