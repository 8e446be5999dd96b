// The bf16 x f8 kernel (codegen/x86/avx512_fp8.cpp) against two references:
// the exact value of every e4m3 code from the format's definition, summed in
// double (tolerance derived from fp32 summation), and, bit for bit, the
// blockwise path the GEMM driver takes for larger M (the K = 128 bf16 kernel
// per block on the widened codes, then C = f0 * S0, C = C + f_g * S_g), so
// that a row's logits do not depend on which path its batch takes.
#include "codegen_test_util.h"

#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace hyc::codegen::test {
namespace {

constexpr int kCols = 32, kBlock = 128;

/// e4m3fn from its definition: sign, 4 exponent bits (bias 7), 3 mantissa
/// bits, subnormals at exponent 0, NaN at S.1111.111, no infinities.
double e4m3Value(uint8_t code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7)
    return NAN;
  const double mag = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
  return s ? -mag : mag;
}

#define HYC_REQUIRE_FP8_KERNEL()                                                   \
  do {                                                                             \
    HYC_REQUIRE_ISA(Isa::avx512_bf16);                                             \
    if (!__builtin_cpu_supports("avx512vbmi"))                                     \
      GTEST_SKIP() << "the bf16 x f8 kernel widens with VBMI byte permutes; this " \
                      "host has no avx512vbmi";                                   \
  } while (0)

struct Problem {
  int k = 0;
  std::vector<uint8_t> codes;  ///< W[n][k], n < 32
  std::vector<uint8_t> packed; ///< f8_vnni2: [K/2][32][2]
  std::vector<float> factors;  ///< [K / 128]
  std::vector<uint16_t> a;     ///< bf16 [4][lda]
  int lda = 0;

  uint8_t &w(int n, int kk) { return codes[size_t(n) * k + kk]; }
};

/// Random codes (every non-NaN code at least once, or NaN where asked; with
/// `tiny` only the subnormal and smallest normal codes, so that an error in
/// one of them is not lost in the sum of large ones), factors 2^-8..2^7
/// times [1, 2), activations uniform in [-1, 1) as bf16.
Problem makeProblem(int k, uint32_t seed, bool withNan = false, bool tiny = false) {
  std::mt19937 rng(seed);
  Problem p;
  p.k = k;
  p.lda = k + 8;
  p.codes.resize(size_t(kCols) * k);
  for (size_t i = 0; i < p.codes.size(); ++i) {
    uint8_t c = tiny ? uint8_t(rng() & 0x8F) : i < 256 ? uint8_t(i) : uint8_t(rng());
    if ((c & 0x7F) == 0x7F)
      c ^= 1; // 0x7E: the largest finite magnitude
    p.codes[i] = c;
  }
  if (withNan)
    p.w(5, k - 3) = 0xFF;
  p.packed.assign(size_t(k / 2) * kCols * 2, 0);
  for (int n = 0; n < kCols; ++n)
    for (int kk = 0; kk < k; ++kk)
      p.packed[size_t(kk / 2) * kCols * 2 + n * 2 + kk % 2] = p.w(n, kk);
  for (int g = 0; g < k / kBlock; ++g)
    p.factors.push_back(std::ldexp(1.0f + uniform(rng) * 0.5f + 0.5f, int(rng() % 16) - 8));
  p.a.resize(size_t(4) * p.lda);
  for (uint16_t &v : p.a)
    v = f32_to_bf16(uniform(rng));
  return p;
}

std::unique_ptr<BrgemmKernel> fp8Kernel(int k) {
  BrgemmGenResult gen = generate_brgemm(
      make_brgemm_desc(Isa::avx512_bf16, DataType::bf16, DataType::f8, DataType::f32, k));
  EXPECT_TRUE(gen) << gen.error;
  return std::move(gen.kernel);
}

/// C of the fused kernel for rows 0..m-1 (ldc 40; the padding must stay).
std::vector<float> runFused(const BrgemmKernel &kernel, const Problem &p, int m) {
  std::vector<float> c(size_t(4) * 40, -7.0f);
  BrgemmPostArgs post;
  post.b_scale = p.factors.data();
  kernel(p.a.data(), p.lda, p.packed.data(), c.data(), 40, m, &post);
  return c;
}

class BrgemmAvx512Fp8 : public ::testing::TestWithParam<int> {};

TEST_P(BrgemmAvx512Fp8, EveryRowMatchesTheExactCodesWithinFp32Summation) {
  HYC_REQUIRE_FP8_KERNEL();
  const int k = GetParam();
  auto kernel = fp8Kernel(k);
  ASSERT_TRUE(kernel);
  ASSERT_EQ(kernel->desc().m_max, 4);
  for (bool tiny : {false, true})
  for (int m = 1; m <= 4; ++m) {
    SCOPED_TRACE(tiny ? "subnormal codes" : "every code");
    const Problem p = makeProblem(k, 11 + k, false, tiny);
    const std::vector<float> c = runFused(*kernel, p, m);
    for (int i = 0; i < 4; ++i)
      for (int n = 0; n < 40; ++n) {
        const float got = c[size_t(i) * 40 + n];
        if (i >= m || n >= kCols) {
          ASSERT_EQ(got, -7.0f) << "m " << m << " wrote outside its block at " << i << "," << n;
          continue;
        }
        double want = 0, mass = 0;
        for (int kk = 0; kk < k; ++kk) {
          const double t = bf16_to_f32(p.a[size_t(i) * p.lda + kk]) *
                           e4m3Value(p.codes[size_t(n) * k + kk]) * p.factors[kk / kBlock];
          want += t;
          mass += std::fabs(t);
        }
        // Sequential fp32 sums: 128 terms per block (vdpbf16ps adds both of
        // a pair), one rounding for the factor, one add per block.
        const double tol = (kBlock + k / kBlock + 2) * std::ldexp(1.0, -24) * mass;
        ASSERT_NEAR(got, want, tol) << "K " << k << " m " << m << " row " << i << " col " << n;
      }
  }
}

TEST_P(BrgemmAvx512Fp8, BitIdenticalToTheBlockwiseBf16Path) {
  HYC_REQUIRE_FP8_KERNEL();
  const int k = GetParam();
  const Problem p = makeProblem(k, 23 + k);
  auto fused = fp8Kernel(k);
  ASSERT_TRUE(fused);
  BrgemmGenResult block = generate_brgemm(
      make_brgemm_desc(Isa::avx512_bf16, DataType::bf16, DataType::bf16, DataType::f32, kBlock));
  ASSERT_TRUE(block) << block.error;
  // The driver's path: each block's codes widened (exactly) into a
  // bf16_vnni2 panel, the K = 128 kernel, the factor applied in fp32.
  std::vector<uint16_t> widened(p.packed.size());
  for (size_t i = 0; i < widened.size(); ++i)
    widened[i] = f32_to_bf16(float(e4m3Value(p.packed[i])));
  for (int m = 1; m <= 4; ++m) {
    std::vector<float> want(size_t(m) * kCols), product(size_t(m) * kCols);
    for (int g = 0; g < k / kBlock; ++g) {
      (*block.kernel)(p.a.data() + g * kBlock, p.lda, widened.data() + size_t(g) * kBlock * kCols,
                      product.data(), kCols, m, nullptr);
      const float f = p.factors[g];
      for (size_t j = 0; j < want.size(); ++j) {
        const float scaled = f * product[j];
        want[j] = g == 0 ? scaled : want[j] + scaled;
      }
    }
    const std::vector<float> c = runFused(*fused, p, m);
    for (int i = 0; i < m; ++i)
      for (int n = 0; n < kCols; ++n) {
        uint32_t gotBits, wantBits;
        std::memcpy(&gotBits, &c[size_t(i) * 40 + n], 4);
        std::memcpy(&wantBits, &want[size_t(i) * kCols + n], 4);
        ASSERT_EQ(gotBits, wantBits) << "K " << k << " m " << m << " row " << i << " col " << n
                                     << ": " << c[size_t(i) * 40 + n] << " vs "
                                     << want[size_t(i) * kCols + n];
      }
  }
}

INSTANTIATE_TEST_SUITE_P(K, BrgemmAvx512Fp8, ::testing::Values(128, 384, 2048, 6 * 128 + 128),
                         [](const auto &info) { return "K" + std::to_string(info.param); });

TEST(BrgemmAvx512Fp8, ANanCodeMakesOnlyItsColumnNan) {
  HYC_REQUIRE_FP8_KERNEL();
  const Problem p = makeProblem(256, 5, /*withNan=*/true);
  auto kernel = fp8Kernel(256);
  ASSERT_TRUE(kernel);
  const std::vector<float> c = runFused(*kernel, p, 2);
  for (int i = 0; i < 2; ++i)
    for (int n = 0; n < kCols; ++n)
      EXPECT_EQ(std::isnan(c[size_t(i) * 40 + n]), n == 5) << "row " << i << " col " << n;
}

TEST(BrgemmAvx512Fp8, RefusesKOutsideWholeBlocksAndEpilogues) {
  BrgemmDesc d = make_brgemm_desc(Isa::avx512_bf16, DataType::bf16, DataType::f8, DataType::f32, 200);
  EXPECT_NE(validate_brgemm(d).find("whole blocks of 128 (found K=200)"), std::string::npos)
      << validate_brgemm(d);
  d.k = 256;
  EXPECT_EQ(validate_brgemm(d), "");
  d.accumulate = true;
  EXPECT_NE(validate_brgemm(d), "");
  EXPECT_EQ(d.b_layout, BLayout::f8_vnni2);
  EXPECT_EQ(packed_panel_bytes(BLayout::f8_vnni2, 200), 2 * 128 * 32);
}

} // namespace
} // namespace hyc::codegen::test
