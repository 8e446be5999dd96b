// Reference kernels for dense matmul (x . w^T + bias) and elementwise ops.
#include "hyrt/reference.h"

#include <cmath>

extern "C" void hyrt_ref_matmul(const float *x, const float *w,
                                const float *bias, int64_t M, int64_t N,
                                int64_t K, float *out) {
  // Four rows of x share each pass over a weight row; double accumulation.
  constexpr int64_t kRows = 4;
  for (int64_t m0 = 0; m0 < M; m0 += kRows) {
    const int64_t mb = M - m0 < kRows ? M - m0 : kRows;
    for (int64_t n = 0; n < N; ++n) {
      const float *wr = w + n * K;
      double acc[kRows] = {0.0, 0.0, 0.0, 0.0};
      for (int64_t k = 0; k < K; ++k) {
        const double wk = wr[k];
        for (int64_t i = 0; i < mb; ++i)
          acc[i] += double(x[(m0 + i) * K + k]) * wk;
      }
      const double b = bias ? double(bias[n]) : 0.0;
      for (int64_t i = 0; i < mb; ++i)
        out[(m0 + i) * N + n] = float(acc[i] + b);
    }
  }
}

extern "C" void hyrt_ref_add(const float *a, const float *b, int64_t n,
                             float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

extern "C" void hyrt_ref_silu_mul(const float *gate, const float *up,
                                  int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

extern "C" void hyrt_ref_copy_columns(const float *src, int64_t src_stride,
                                      int64_t src_offset, int64_t rows,
                                      int64_t cols, float *dst,
                                      int64_t dst_stride, int64_t dst_offset) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * dst_stride + dst_offset + c] = src[r * src_stride + src_offset + c];
}
