// The activation-quantizing kernels split a step's rows across threads from
// 2^15 elements (runtime/cpu/quantize.cpp). Rows are independent, so a
// large step must equal the same rows done one call per row (which never
// forks), byte for byte, scales included; a residual is added and written
// back as well.
#include "hyrt/cpu_kernels.h"
#include "runtime/cpu/host_isa.h"
#include "hyrt/reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr int64_t kRows = 48, kDim = 1024; // 48 x 1024 >= 2^15: threaded

std::vector<float> randomRows(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-3, 3);
  std::vector<float> v(size_t(kRows * kDim));
  for (float &x : v)
    x = d(rng);
  return v;
}

TEST(CpuQuantizeKernels, ThreadedRmsNormQuantizeEqualsRowByRow) {
  const std::vector<float> x = randomRows(1), res = randomRows(2), w = randomRows(3);
  std::vector<uint8_t> aAll(x.size()), aRow(x.size());
  std::vector<float> sAll(kRows), sRow(kRows), rAll(x.size()), rRow(x.size());
  hyrt_cpu_rms_norm_quantize_u8(x.data(), res.data(), w.data(), kRows, kDim, 1e-5f,
                                aAll.data(), sAll.data(), rAll.data());
  for (int64_t r = 0; r < kRows; ++r)
    hyrt_cpu_rms_norm_quantize_u8(x.data() + r * kDim, res.data() + r * kDim, w.data(), 1,
                                  kDim, 1e-5f, aRow.data() + r * kDim, sRow.data() + r,
                                  rRow.data() + r * kDim);
  EXPECT_EQ(aAll, aRow);
  EXPECT_EQ(0, std::memcmp(sAll.data(), sRow.data(), sizeof(float) * kRows));
  EXPECT_EQ(0, std::memcmp(rAll.data(), rRow.data(), sizeof(float) * rAll.size()));
  EXPECT_NE(aAll, std::vector<uint8_t>(aAll.size(), 0)) << "nothing was written";
}

TEST(CpuQuantizeKernels, ThreadedSiluMulQuantizeAndQuantizeRowsEqualRowByRow) {
  const std::vector<float> gate = randomRows(4), up = randomRows(5);
  std::vector<uint8_t> aAll(gate.size()), aRow(gate.size());
  std::vector<float> sAll(kRows), sRow(kRows);
  hyrt_cpu_silu_mul_quantize_u8(gate.data(), up.data(), kRows, kDim, aAll.data(),
                                sAll.data());
  for (int64_t r = 0; r < kRows; ++r)
    hyrt_cpu_silu_mul_quantize_u8(gate.data() + r * kDim, up.data() + r * kDim, 1, kDim,
                                  aRow.data() + r * kDim, sRow.data() + r);
  EXPECT_EQ(aAll, aRow);
  EXPECT_EQ(0, std::memcmp(sAll.data(), sRow.data(), sizeof(float) * kRows));

  hyrt_cpu_quantize_rows_u8(gate.data(), kRows, kDim, kDim, aAll.data(), sAll.data());
  for (int64_t r = 0; r < kRows; ++r)
    hyrt_cpu_quantize_rows_u8(gate.data() + r * kDim, 1, kDim, kDim, aRow.data() + r * kDim,
                              sRow.data() + r);
  EXPECT_EQ(aAll, aRow);
  EXPECT_EQ(0, std::memcmp(sAll.data(), sRow.data(), sizeof(float) * kRows));
}

} // namespace

// The two-level code schemes' activations (hyrt_cpu_quantize_groups_s8_sums):
// each group is a row of its own for hyrt_ref_quantize_rows (scale = its
// max|x| / 127), the pairs hold the group's sum of q and its scale, groups
// past K hold sum 0 and scale 1, the padding is zero; a group with a NaN
// gets a NaN scale while its neighbours keep theirs.
// Both bodies: AVX-512 (F + BW hosts) and the portable loop.
TEST(CpuQuantizeKernels, GroupScalesEqualTheReferenceQuantizerPerGroup) {
  for (bool portable : {false, true}) {
    SCOPED_TRACE(portable ? "portable body" : "host's body");
    hyrt::cpu::portableOnly() = portable;
    constexpr int64_t K = 1000, group = 32, groups = 40, lda = 1344; // K padded to 1280
    std::vector<float> x = randomRows(6);
    x.resize(size_t(kRows * K));
    for (int64_t k = 64; k < 96; ++k) // row 0, group 2: small values beside big ones
      x[size_t(k)] *= 1e-3f;
    x[size_t(K + 5)] = std::nanf("");  // row 1, group 0
    std::vector<int8_t> a(size_t(kRows * lda), 99);
    std::vector<int32_t> pairs(size_t(kRows * 2 * groups), -1);
    hyrt_cpu_quantize_groups_s8_sums(x.data(), kRows, K, lda, group, groups, a.data(),
                                     pairs.data());
    int64_t bad = 0;
    for (int64_t m = 0; m < kRows; ++m)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t k0 = g * group, len = std::max<int64_t>(0, std::min(group, K - k0));
        std::vector<int8_t> q(size_t(group), 0);
        float s = 1.0f;
        if (len > 0)
          hyrt_ref_quantize_rows(x.data() + m * K + k0, 1, len, q.data(), &s);
        int32_t sum = 0;
        for (int64_t i = 0; i < group; ++i) {
          bad += a[size_t(m * lda + k0 + i)] != q[size_t(i)];
          sum += q[size_t(i)];
        }
        float got;
        std::memcpy(&got, &pairs[size_t(m * 2 * groups + 2 * g + 1)], 4);
        bad += pairs[size_t(m * 2 * groups + 2 * g)] != sum;
        bad += std::isnan(s) ? !std::isnan(got) : got != s;
      }
    EXPECT_EQ(bad, 0);
    for (int64_t m = 0; m < kRows; ++m)
      for (int64_t k = groups * group; k < lda; ++k)
        ASSERT_EQ(a[size_t(m * lda + k)], 0) << "padding of row " << m;
    float s2, s3, nan0, next;
    std::memcpy(&s2, &pairs[2 * 2 + 1], 4);
    std::memcpy(&s3, &pairs[2 * 3 + 1], 4);
    EXPECT_LT(s2 * 100, s3) << "the small group keeps its own scale";
    std::memcpy(&nan0, &pairs[size_t(2 * groups + 1)], 4);
    std::memcpy(&next, &pairs[size_t(2 * groups + 3)], 4);
    EXPECT_TRUE(std::isnan(nan0));
    EXPECT_FALSE(std::isnan(next));
  }
  hyrt::cpu::portableOnly() = false;
}

