// Row kernels of the elementwise ops (RMSNorm with the fused residual,
// SiLU·mul, per-token int8 quantization), shared by the standalone kernels
// (elementwise.cpp, quantize.cpp) and the kernels that fuse them (the gate/up
// GEMM's epilogue, norm + quantize). Fused and unfused paths calling the
// same row function is what keeps them equal bit for bit.
//
// Each function picks its AVX-512 body on hosts that have it
// (elementwise_avx512.cpp) and a portable one elsewhere; the two differ only
// in summation order (RMSNorm's sum of squares) and in exp (SiLU), within
// the tolerances the unit tests derive.
#ifndef HYRT_CPU_ELEMENTWISE_H
#define HYRT_CPU_ELEMENTWISE_H

#include <cstdint>

namespace hyrt::cpu {

/// s = x (+ residual); residual_out = s when given; out = s * inv_rms(s) * w.
/// out may alias x and residual_out may alias residual (in place).
void rmsNormRow(const float *x, const float *residual, const float *w, int64_t dim,
                float eps, float *out, float *residual_out);

/// out = gate / (1 + e^-gate) * up; out may alias either input.
void siluMulRow(const float *gate, const float *up, int64_t n, float *out);

/// Per-token symmetric int8 of one row, stored as u8 = q + 128 with the pad
/// [n, lda) set to 128 (zero): scale = max|x| / 127 (1 for an all-zero row;
/// NaN when the row holds a NaN or Inf, so that it poisons its outputs).
void quantizeRowU8(const float *x, int64_t n, int64_t lda, uint8_t *q, float *scale);

// The AVX-512 bodies (elementwise_avx512.cpp), for AVX-512F hosts only
// (u8RowToS8SumsAvx512: AVX-512F + BW).
void rmsNormRowAvx512(const float *x, const float *residual, const float *w,
                      int64_t dim, float eps, float *out, float *residual_out);
void siluMulRowAvx512(const float *gate, const float *up, int64_t n, float *out);
void quantizeRowU8Avx512(const float *x, int64_t n, int64_t lda, uint8_t *q,
                         float *scale);
/// A row quantized by quantizeRowU8 turned into s8 in place (q - 128 over
/// [0, lda)), and sums[g] = the sum of the s8 values of group g over
/// [g * group, min(n, (g + 1) * group)) for g < ceil(n / group).
void u8RowToS8SumsAvx512(uint8_t *q, int64_t n, int64_t lda, int64_t group, int32_t *sums);

} // namespace hyrt::cpu

#endif // HYRT_CPU_ELEMENTWISE_H
