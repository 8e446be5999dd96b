// Per-token activation quantization into the layout the W8A8 drivers read
// (u8 = q + 128), alone or inside the kernel of the op that produces the
// activations (see hyrt/cpu_kernels.h).
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"

#include <cmath>
#include <vector>

namespace {
/// Rows are independent, so a step's rows split across threads once there is
/// enough of them: a fork/join costs ~10 us here (the cost model's figure)
/// and an element of norm + quantize about 1 ns, so from 2^15 elements
/// (16 rows of 2048) the split pays. Decode's single row never forks.
constexpr int64_t kParallelMinElements = int64_t(1) << 15;
} // namespace

extern "C" void hyrt_cpu_quantize_rows_u8(const float *x, int64_t M, int64_t K,
                                          int64_t lda, uint8_t *a,
                                          float *a_scale) {
#pragma omp parallel for schedule(static) if (M * K >= kParallelMinElements)
  for (int64_t m = 0; m < M; ++m) {
    const float *row = x + m * K;
    float amax = 0;
    bool finite = true;
    for (int64_t k = 0; k < K; ++k) {
      const float v = std::fabs(row[k]);
      finite = finite && std::isfinite(v);
      amax = v > amax ? v : amax;
    }
    // A NaN or Inf activation poisons its row (scale NaN -> NaN outputs), as
    // in the fp32 reference, instead of being quantized to something finite.
    const float s = !finite ? NAN : (amax > 0 ? amax / 127.0f : 1.0f);
    const float inv = finite ? 1.0f / s : 0.0f;
    a_scale[m] = s;
    for (int64_t k = 0; k < K; ++k) {
      float q = std::nearbyint(row[k] * inv);
      q = q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
      a[m * lda + k] = uint8_t(int32_t(q == q ? q : 0.0f) + 128);
    }
    for (int64_t k = K; k < lda; ++k)
      a[m * lda + k] = 128;
  }
}

extern "C" void hyrt_cpu_rms_norm_quantize_u8(
    const float *x, const float *residual, const float *w, int64_t rows,
    int64_t dim, float eps, uint8_t *a, float *a_scale, float *residual_out) {
  // Row by row through the reference norm: the same fp32 values the unfused
  // norm would store, quantized while they are in cache.
#pragma omp parallel if (rows * dim >= kParallelMinElements)
  {
    std::vector<float> row(static_cast<size_t>(dim));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      hyrt_ref_rms_norm(x + r * dim, residual ? residual + r * dim : nullptr, w,
                        1, dim, eps, row.data(),
                        residual_out ? residual_out + r * dim : nullptr);
      hyrt_cpu_quantize_rows_u8(row.data(), 1, dim, dim, a + r * dim,
                                a_scale + r);
    }
  }
}

extern "C" void hyrt_cpu_silu_mul_quantize_u8(const float *gate,
                                              const float *up, int64_t rows,
                                              int64_t dim, uint8_t *a,
                                              float *a_scale) {
#pragma omp parallel if (rows * dim >= kParallelMinElements)
  {
    std::vector<float> row(static_cast<size_t>(dim));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      hyrt_ref_silu_mul(gate + r * dim, up + r * dim, dim, row.data());
      hyrt_cpu_quantize_rows_u8(row.data(), 1, dim, dim, a + r * dim,
                                a_scale + r);
    }
  }
}
