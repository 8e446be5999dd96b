// The activation-quantizing kernels split a step's rows across threads from
// 2^15 elements (runtime/cpu/quantize.cpp). Rows are independent, so a
// large step must equal the same rows done one call per row (which never
// forks), byte for byte, scales included; a residual is added and written
// back as well.
#include "hyrt/cpu_kernels.h"

#include <gtest/gtest.h>

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
