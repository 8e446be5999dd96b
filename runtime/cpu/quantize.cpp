// Per-token activation quantization into the layout the W8A8 drivers read
// (u8 = q + 128), alone or inside the kernel of the op that produces the
// activations (see hyrt/cpu_kernels.h). The row arithmetic is elementwise.h's,
// shared with the unfused norm / SiLU kernels so fused equals unfused.
#include "elementwise.h"
#include "host_isa.h"
#include "hyrt/cpu_kernels.h"
#include "thread_pool.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace hyrt::cpu;

extern "C" void hyrt_cpu_quantize_rows_u8(const float *x, int64_t M, int64_t K,
                                          int64_t lda, uint8_t *a,
                                          float *a_scale) {
  parallelRows(M, K, [&](int64_t m) {
    quantizeRowU8(x + m * K, K, lda, a + m * lda, a_scale + m);
  });
}

extern "C" void hyrt_cpu_quantize_rows_s8_sums(const float *x, int64_t M, int64_t K,
                                               int64_t lda, int64_t group, int8_t *a,
                                               float *a_scale, int32_t *a_sum) {
  const int64_t groups = (K + group - 1) / group;
  parallelRows(M, K, [&](int64_t m) {
    // The u8 row of the W8A8 kernels, turned into s8 in place (q = u - 128:
    // the same numbers), so both schemes quantize activations alike.
    uint8_t *u = reinterpret_cast<uint8_t *>(a + m * lda);
    quantizeRowU8(x + m * K, K, lda, u, a_scale + m);
    if (hostHasAvx512BwVl()) {
      u8RowToS8SumsAvx512(u, K, lda, group, a_sum + m * groups);
      return;
    }
    // One pass: each group converted and summed; then the padding.
    int8_t *q = a + m * lda;
    for (int64_t g = 0; g < groups; ++g) {
      int32_t sum = 0;
      for (int64_t k = g * group; k < std::min(K, (g + 1) * group); ++k) {
        q[k] = int8_t(int32_t(u[k]) - 128);
        sum += q[k];
      }
      a_sum[m * groups + g] = sum;
    }
    for (int64_t k = K; k < lda; ++k)
      q[k] = int8_t(int32_t(u[k]) - 128);
  });
}

extern "C" void hyrt_cpu_quantize_groups_s8_sums(const float *x, int64_t M, int64_t K,
                                                 int64_t lda, int64_t group,
                                                 int64_t groups, int8_t *a,
                                                 int32_t *a_sum) {
  const bool avx512 = hostHasAvx512BwVl();
  parallelRows(M, K, [&](int64_t m) {
    uint8_t *u = reinterpret_cast<uint8_t *>(a + m * lda);
    int32_t *pairs = a_sum + m * 2 * groups;
    for (int64_t g = 0; g < groups; ++g) {
      // Each group quantized as a row of its own (quantizeRowU8: the same
      // rounding as per-token scales), then turned into s8 and summed.
      const int64_t k0 = g * group, len = std::max<int64_t>(0, std::min(group, K - k0));
      float scale = 1.0f;
      if (len > 0)
        quantizeRowU8(x + m * K + k0, len, group, u + k0, &scale);
      int32_t sum = 0;
      if (len > 0 && avx512) {
        u8RowToS8SumsAvx512(u + k0, len, group, group, &sum);
        pairs[2 * g] = sum;
        std::memcpy(&pairs[2 * g + 1], &scale, sizeof(float));
        continue;
      }
      for (int64_t k = k0; k < k0 + group; ++k) {
        a[m * lda + k] = k < K ? int8_t(int32_t(u[k]) - 128) : 0;
        sum += a[m * lda + k];
      }
      pairs[2 * g] = sum;
      std::memcpy(&pairs[2 * g + 1], &scale, sizeof(float));
    }
    for (int64_t k = groups * group; k < lda; ++k)
      a[m * lda + k] = 0;
  });
}

extern "C" void hyrt_cpu_rms_norm_quantize_u8(
    const float *x, const float *residual, const float *w, int64_t rows,
    int64_t dim, float eps, uint8_t *a, float *a_scale, float *residual_out) {
  // Each row normalized into a thread's buffer and quantized while it is in
  // cache: the fp32 rows are never written back.
  parallelRows(rows, dim, [&](int64_t r) {
    thread_local std::vector<float> row;
    row.resize(size_t(dim));
    rmsNormRow(x + r * dim, residual ? residual + r * dim : nullptr, w, dim, eps,
               row.data(), residual_out ? residual_out + r * dim : nullptr);
    quantizeRowU8(row.data(), dim, dim, a + r * dim, a_scale + r);
  });
}

extern "C" void hyrt_cpu_silu_mul_quantize_u8(const float *gate,
                                              const float *up, int64_t rows,
                                              int64_t dim, uint8_t *a,
                                              float *a_scale) {
  parallelRows(rows, dim, [&](int64_t r) {
    thread_local std::vector<float> row;
    row.resize(size_t(dim));
    siluMulRow(gate + r * dim, up + r * dim, dim, row.data());
    quantizeRowU8(row.data(), dim, dim, a + r * dim, a_scale + r);
  });
}
