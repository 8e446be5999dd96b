// Elementwise kernels of optimized targets: RMSNorm (with the fused
// residual) and SiLU·mul over a step's rows, vectorized (elementwise.h) and
// split across the runtime's threads once a step has enough rows.
#include "elementwise.h"
#include "host_isa.h"

#include "hyrt/cpu_kernels.h"
#include "thread_pool.h"

#include <algorithm>
#include <cmath>

namespace hyrt::cpu {

void rmsNormRow(const float *x, const float *residual, const float *w, int64_t dim,
                float eps, float *out, float *residual_out) {
  if (hostHasAvx512()) {
    rmsNormRowAvx512(x, residual, w, dim, eps, out, residual_out);
    return;
  }
  // The reference's arithmetic, one pass for s and the sum, one for out.
  double sumSq = 0.0;
  for (int64_t i = 0; i < dim; ++i) {
    const float s = residual ? x[i] + residual[i] : x[i];
    if (residual_out)
      residual_out[i] = s;
    sumSq += double(s) * double(s);
  }
  const float inv = float(1.0 / std::sqrt(sumSq / double(dim) + double(eps)));
  for (int64_t i = 0; i < dim; ++i) {
    const float s = residual_out ? residual_out[i] : (residual ? x[i] + residual[i] : x[i]);
    out[i] = s * inv * w[i];
  }
}

void siluMulRow(const float *gate, const float *up, int64_t n, float *out) {
  if (hostHasAvx512()) {
    siluMulRowAvx512(gate, up, n, out);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void quantizeRowU8(const float *x, int64_t n, int64_t lda, uint8_t *q, float *scale) {
  if (hostHasAvx512()) {
    quantizeRowU8Avx512(x, n, lda, q, scale);
    return;
  }
  float amax = 0;
  bool finite = true;
  for (int64_t k = 0; k < n; ++k) {
    const float v = std::fabs(x[k]);
    finite = finite && std::isfinite(v);
    amax = v > amax ? v : amax;
  }
  const float s = !finite ? NAN : (amax > 0 ? amax / 127.0f : 1.0f);
  const float inv = finite ? 1.0f / s : 0.0f;
  *scale = s;
  for (int64_t k = 0; k < n; ++k) {
    float v = std::nearbyint(x[k] * inv);
    v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v);
    q[k] = uint8_t(int32_t(v == v ? v : 0.0f) + 128);
  }
  for (int64_t k = n; k < lda; ++k)
    q[k] = 128;
}

} // namespace hyrt::cpu

using namespace hyrt::cpu;

extern "C" void hyrt_cpu_rms_norm(const float *x, const float *residual, const float *w,
                                  int64_t rows, int64_t dim, float eps, float *out,
                                  float *residual_out) {
  parallelRows(rows, dim, [&](int64_t r) {
    rmsNormRow(x + r * dim, residual ? residual + r * dim : nullptr, w, dim, eps,
               out + r * dim, residual_out ? residual_out + r * dim : nullptr);
  });
}

extern "C" void hyrt_cpu_silu_mul(const float *gate, const float *up, int64_t rows,
                                  int64_t n, float *out) {
  parallelRows(rows, n, [&](int64_t r) {
    siluMulRow(gate + r * n, up + r * n, n, out + r * n);
  });
}

extern "C" void hyrt_cpu_add(const float *a, const float *b, int64_t n, float *out) {
  // Contiguous chunks of at least 2^15 / 4 elements per thread; each sum is
  // the reference's single fp32 add, so results are bit-identical.
  constexpr int64_t kChunk = hyrt::cpu::kParallelMinElements / 4;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  hyrt::cpu::parallelFor(chunks, hyrt::cpu::threadsForElements(n), [&](int64_t c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i)
      out[i] = a[i] + b[i];
  });
}
