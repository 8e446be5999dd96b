// The vectorized elementwise kernels (runtime/cpu/elementwise.cpp) against
// the fp32 reference kernels of the same ops.
//
// Tolerances, derived:
// - RMSNorm: only the order of the double-precision sum of squares differs
//   (relative error ~dim * 2^-53 ~ 1e-13), so inv_rms can round to a float
//   one ulp away and out = s * inv * w then differs by at most ~2 ulp:
//   |d| <= 4 * 2^-24 * |ref| leaves room for one more rounding. The residual
//   sum s = x + r is the same fp32 add: bit for bit.
// - SiLU·mul: the 16-lane exp is within 2 ulp of exp on its reduced range;
//   1 + e, the division and the product add half an ulp each, so silu·up is
//   within ~4 ulp relative: |d| <= 8 * 2^-24 * |ref|, plus |g * up| / e^88.72
//   (< 3e-39 |g * up|) below g = -88.72, where the kernel's exp stops at
//   e^88.72 (FLT_MAX) and the reference's overflows to inf (silu = -0).
// - Quantization: the same fp32 arithmetic as hyrt_ref_quantize_rows (x * 1/s
//   rounded to nearest even, clamped): bit for bit, u8 = q + 128.
#include "hyrt/cpu_kernels.h"
#include "runtime/cpu/host_isa.h"
#include "hyrt/reference.h"
#include "test/unit/runtime/ref_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

constexpr float kUlp = 1.0f / (1 << 24);

using hyrt_test::random_vec;

// dims: a whole number of 16-lane vectors, and tails.
const int64_t kDims[] = {2048, 100, 17, 1};

TEST(CpuElementwise, RmsNormMatchesReference) {
  for (int64_t dim : kDims) {
    const int64_t rows = 40; // 40 x 2048 >= 2^15: the threaded split too
    auto x = random_vec(size_t(rows * dim), 1, -4, 4), r = random_vec(x.size(), 2, -4, 4),
         w = random_vec(size_t(dim), 3, 0.5f, 1.5f);
    for (bool withResidual : {false, true}) {
      std::vector<float> want(x.size()), got(x.size()), resWant(x.size()), resGot(x.size());
      const float *res = withResidual ? r.data() : nullptr;
      hyrt_ref_rms_norm(x.data(), res, w.data(), rows, dim, 1e-5f, want.data(),
                        withResidual ? resWant.data() : nullptr);
      hyrt_cpu_rms_norm(x.data(), res, w.data(), rows, dim, 1e-5f, got.data(),
                        withResidual ? resGot.data() : nullptr);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_LE(std::fabs(got[i] - want[i]), 4 * kUlp * std::fabs(want[i]))
            << "dim=" << dim << " residual=" << withResidual << " at " << i;
      if (withResidual)
        EXPECT_EQ(resGot, resWant) << "dim=" << dim;
    }
  }
}

TEST(CpuElementwise, RmsNormInPlace) {
  const int64_t rows = 3, dim = 100;
  auto x = random_vec(size_t(rows * dim), 4, -2, 2), r = random_vec(x.size(), 5, -2, 2),
       w = random_vec(size_t(dim), 6, 0.5f, 1.5f);
  std::vector<float> want(x.size()), resWant(x.size());
  hyrt_ref_rms_norm(x.data(), r.data(), w.data(), rows, dim, 1e-6f, want.data(),
                    resWant.data());
  // out over x and residual_out over residual, as the fused residual norm
  // of a decoder layer writes them.
  hyrt_cpu_rms_norm(x.data(), r.data(), w.data(), rows, dim, 1e-6f, x.data(), r.data());
  EXPECT_EQ(r, resWant);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_LE(std::fabs(x[i] - want[i]), 4 * kUlp * std::fabs(want[i])) << i;
}

TEST(CpuElementwise, SiluMulMatchesReference) {
  for (int64_t n : kDims) {
    const int64_t rows = 40;
    auto g = random_vec(size_t(rows * n), 7, -20, 20), u = random_vec(g.size(), 8, -3, 3);
    // The exp's clamps and specials: far tails, zero, and a NaN.
    g[0] = -100.0f;
    if (g.size() > 3) {
      g[1] = 100.0f;
      g[2] = 0.0f;
      g[3] = -88.5f;
    }
    std::vector<float> want(g.size()), got(g.size());
    hyrt_ref_silu_mul(g.data(), u.data(), int64_t(g.size()), want.data());
    hyrt_cpu_silu_mul(g.data(), u.data(), rows, n, got.data());
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - want[i]),
                8 * kUlp * std::fabs(want[i]) + 3e-39f * std::fabs(g[i] * u[i]))
          << "n=" << n << " g=" << g[i] << " at " << i;
  }
  const float nanIn = std::numeric_limits<float>::quiet_NaN(), one = 1.0f;
  float out = 0;
  hyrt_cpu_silu_mul(&nanIn, &one, 1, 1, &out);
  EXPECT_TRUE(std::isnan(out)) << "a NaN activation stays NaN";
}

TEST(CpuElementwise, QuantizeRowsEqualsReferenceBitForBit) {
  const int64_t K = 100, lda = 112, M = 6;
  auto x = random_vec(size_t(M * K), 9, -5, 5);
  for (int64_t k = 0; k < K; ++k)
    x[size_t(1 * K + k)] = 0.0f;                           // all-zero row: scale 1
  x[size_t(2 * K + 7)] = std::numeric_limits<float>::quiet_NaN(); // poisoned rows
  x[size_t(3 * K + 99)] = std::numeric_limits<float>::infinity();
  x[size_t(4 * K + 5)] = 1e-40f;                           // a denormal among normals
  for (int64_t k = 0; k < K; ++k)                          // ties at .5 after scaling
    x[size_t(5 * K + k)] = float(k % 7) - 3.0f + (k == 0 ? 124.0f : 0.0f);
  std::vector<int8_t> q(size_t(M * K));
  std::vector<float> want(M), got(M);
  hyrt_ref_quantize_rows(x.data(), M, K, q.data(), want.data());
  std::vector<uint8_t> a(size_t(M * lda), 7);
  hyrt_cpu_quantize_rows_u8(x.data(), M, K, lda, a.data(), got.data());
  for (int64_t m = 0; m < M; ++m) {
    if (std::isnan(want[size_t(m)]))
      EXPECT_TRUE(std::isnan(got[size_t(m)])) << "row " << m;
    else
      EXPECT_EQ(got[size_t(m)], want[size_t(m)]) << "row " << m;
    for (int64_t k = 0; k < K; ++k)
      ASSERT_EQ(int(a[size_t(m * lda + k)]), int(q[size_t(m * K + k)]) + 128)
          << "row " << m << " k " << k;
    for (int64_t k = K; k < lda; ++k)
      ASSERT_EQ(int(a[size_t(m * lda + k)]), 128) << "pad of row " << m;
  }
}

// The grouped kernels' activations (hyrt_cpu_quantize_rows_s8_sums): the
// same per-token codes as s8 (pad 0) and each group's sum over the row's
// elements, computed independently here from the reference codes. K = 100
// ends inside a group for every group size (16: the two-level Q6_K, 32,
// 64, 128: longer than the row), and the pad runs past a 64-byte vector.
// Both bodies: AVX-512 (vpsadbw sums) where the host has F + BW, and the
// portable loop, which must agree with it.
TEST(CpuElementwise, QuantizeRowsS8SumsEqualsReference) {
  const int64_t K = 100, lda = 176, M = 3;
  auto x = random_vec(size_t(M * K), 10, -5, 5);
  x[size_t(K + 3)] = 0.0f;
  for (int64_t k = 0; k < K; ++k) // a row of one sign: sums far from 0
    x[size_t(2 * K + k)] = 1.0f + float(k % 13);
  std::vector<int8_t> q(size_t(M * K));
  std::vector<float> want(M);
  hyrt_ref_quantize_rows(x.data(), M, K, q.data(), want.data());
  const bool avx512 = hyrt::cpu::hostHasAvx512BwVl();
  for (bool portable : {false, true}) {
    if (!portable && !avx512) {
      std::printf("[ skipped  ] the AVX-512 body: this host lacks AVX-512F/BW\n");
      continue;
    }
    hyrt::cpu::portableOnly() = portable;
    for (int64_t group : {16, 32, 64, 128}) {
      const int64_t groups = (K + group - 1) / group;
      std::vector<int8_t> a(size_t(M * lda), 7);
      std::vector<float> scale(M);
      std::vector<int32_t> sums(size_t(M * groups), -1);
      hyrt_cpu_quantize_rows_s8_sums(x.data(), M, K, lda, group, a.data(), scale.data(),
                                     sums.data());
      const std::string what = std::string(portable ? "portable" : "avx512") + " group " +
                               std::to_string(group);
      for (int64_t m = 0; m < M; ++m) {
        EXPECT_EQ(scale[size_t(m)], want[size_t(m)]) << what << " row " << m;
        for (int64_t k = 0; k < K; ++k)
          ASSERT_EQ(int(a[size_t(m * lda + k)]), int(q[size_t(m * K + k)]))
              << what << " row " << m << " k " << k;
        for (int64_t k = K; k < lda; ++k)
          ASSERT_EQ(int(a[size_t(m * lda + k)]), 0) << what << " pad of row " << m;
        for (int64_t g = 0; g < groups; ++g) {
          int32_t sum = 0;
          for (int64_t k = g * group; k < std::min(K, (g + 1) * group); ++k)
            sum += q[size_t(m * K + k)];
          EXPECT_EQ(sums[size_t(m * groups + g)], sum) << what << " row " << m << " group " << g;
        }
      }
    }
  }
  hyrt::cpu::portableOnly() = false;
}

} // namespace
