// FP8 weight-only GEMM: the e4m3 -> bf16 widening (both bodies, every code)
// and hyrt_cpu_gemm_fp8 (plain, gate/up and expert-grouped) against the
// exact dequantized weights.
#include "hyrt/cpu_kernels.h"
#include "hyrt/gemm_layout.h"
#include "hyrt/reference.h"
#include "runtime/cpu/host_isa.h"

#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"
#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace hyc::codegen;

/// The value of an e4m3fn code from its definition (sign, 4-bit exponent
/// with bias 7, 3-bit mantissa; E = 0 subnormal; S.1111.111 NaN), computed
/// in double: independent of the runtime's table and bit arithmetic.
double e4m3Value(uint8_t code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double mag = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return (code & 0x80) ? -mag : mag;
}

bool isNanCode(uint8_t code) { return (code & 0x7F) == 0x7F; }

/// The bf16 bits every finite code must widen to: its value as fp32 (exact:
/// at most 4 significant bits), whose low 16 bits are zero.
uint16_t expectedBits(uint8_t code) {
  if (isNanCode(code))
    return uint16_t((code & 0x80) << 8) | 0x7FC0;
  const float f = float(e4m3Value(code));
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  EXPECT_EQ(bits & 0xFFFF, 0u) << "code " << int(code) << " is not a bf16 value";
  return uint16_t(bits >> 16);
}

class Fp8Widening : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override {
    if (!GetParam() && !__builtin_cpu_supports("avx512bw"))
      GTEST_SKIP() << "host lacks AVX-512BW: the vector body is not used here";
    hyrt::cpu::portableOnly() = GetParam();
  }
  void TearDown() override { hyrt::cpu::portableOnly() = false; }
};

// All 256 codes, as bit patterns; a length that is not a multiple of the
// vector step (the tail) and an odd start (unaligned) included.
TEST_P(Fp8Widening, EveryCodeExactAsBits) {
  std::vector<uint8_t> codes(256 + 37);
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = uint8_t(i * 167 + 3); // every byte value among the first 256
  std::vector<uint16_t> out(codes.size() + 1, 0xDEAD);
  hyrt_cpu_f8_to_bf16(codes.data() + 1, out.data(), int64_t(codes.size() - 1));
  for (size_t i = 0; i + 1 < codes.size(); ++i)
    ASSERT_EQ(out[i], expectedBits(codes[i + 1]))
        << "code 0x" << std::hex << int(codes[i + 1]);
  EXPECT_EQ(out[codes.size() - 1], 0xDEAD) << "wrote past the end";
  // Runs of 64 normal codes only (the vector body skips its subnormal
  // permutes for them).
  std::vector<uint8_t> normals;
  for (int c = 0; c < 256; ++c)
    if ((c & 0x78) != 0 && !isNanCode(uint8_t(c)))
      normals.push_back(uint8_t(c));
  std::vector<uint16_t> normalOut(normals.size());
  hyrt_cpu_f8_to_bf16(normals.data(), normalOut.data(), int64_t(normals.size()));
  for (size_t i = 0; i < normals.size(); ++i)
    ASSERT_EQ(normalOut[i], expectedBits(normals[i])) << "code 0x" << std::hex << int(normals[i]);
  // Spot values from the format's definition.
  const uint8_t spot[] = {0x00, 0x80, 0x01, 0x08, 0x7E, 0xFE, 0x38, 0x7F, 0xFF};
  const uint16_t want[] = {0x0000, 0x8000, 0x3B00, 0x3C80, 0x43E0, 0xC3E0, 0x3F80,
                           0x7FC0, 0xFFC0};
  uint16_t got[9];
  hyrt_cpu_f8_to_bf16(spot, got, 9);
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(got[i], want[i]) << "code 0x" << std::hex << int(spot[i]);
}

INSTANTIATE_TEST_SUITE_P(Body, Fp8Widening, ::testing::Values(false, true),
                         [](const auto &i) { return i.param ? "portable" : "avx512"; });

/// FP8 weights [rows][K] with their block factors: finite codes over the
/// whole range (subnormals, zeros of both signs and the largest normals
/// included), factors per 128 x 128 block that differ by block.
struct Fp8Weights {
  std::vector<uint8_t> codes;
  std::vector<float> factors;
  std::vector<float> dequantized; // exact: code value * factor
};

Fp8Weights randomFp8(int64_t rows, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  Fp8Weights w;
  const int64_t rb = (rows + 127) / 128, kb = (K + 127) / 128;
  w.codes.resize(size_t(rows * K));
  for (uint8_t &c : w.codes) {
    do
      c = uint8_t(rng());
    while (isNanCode(c));
  }
  w.factors.resize(size_t(rb * kb));
  for (size_t i = 0; i < w.factors.size(); ++i)
    w.factors[i] = std::ldexp(1.0f + float(rng() % 1000) / 1000.0f, -9 - int(i % 3));
  w.dequantized.resize(w.codes.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k)
      w.dequantized[size_t(r * K + k)] =
          float(e4m3Value(w.codes[size_t(r * K + k)]) * w.factors[size_t((r / 128) * kb + k / 128)]);
  return w;
}

std::vector<float> randomVec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

float roundBf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }

/// One FP8 level: its activation form and the bf16 kernel that reads it.
struct Level {
  const char *name;
  int32_t scheme;
  Isa isa;
  DataType a;
};

void PrintTo(const Level &l, std::ostream *os) { *os << l.name; }

class CpuFp8Gemm : public ::testing::TestWithParam<Level> {
protected:
  void SetUp() override {
    if (!host_supports(GetParam().isa))
      GTEST_SKIP() << "host cannot run the " << GetParam().name << " kernels";
    BrgemmGenResult gen = generate_brgemm(
        make_brgemm_desc(GetParam().isa, GetParam().a, DataType::bf16, DataType::f32,
                         HYRT_GEMM_GROUP_K, 32, /*accumulate=*/false));
    ASSERT_TRUE(gen) << gen.error;
    kernel = std::move(gen.kernel);
  }
  hyrt_brgemm_fn fn() const { return reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()); }
  int64_t mMax() const { return kernel->desc().m_max; }
  /// Activations as the scheme's kernels read them.
  float activation(float x) const { return GetParam().scheme == HYRT_GEMM_FP8 ? roundBf16(x) : x; }
  std::unique_ptr<BrgemmKernel> kernel;
};

constexpr int64_t kMinMacs = int64_t(1) << 20;

// Against the double-precision GEMM of the exact dequantized weights (and
// the activations the kernel reads): the only error left is fp32 rounding,
// 128 FMAs per block plus one scaled addition per block, each at most
// 2^-24 relative to the running magnitude: bounded by (128 + blocks + 2) *
// 2^-24 * sum|x * w|, doubled for the scaled block products.
TEST_P(CpuFp8Gemm, MatchesExactDequantizedWeights) {
  for (int64_t K : {int64_t(128), int64_t(384), int64_t(640), int64_t(200)})
    for (int64_t M : {int64_t(1), int64_t(2), int64_t(7), int64_t(14), int64_t(15),
                      int64_t(33), int64_t(64), int64_t(128)}) {
      const int64_t N = M % 2 ? 200 : 64, kb = (K + 127) / 128;
      Fp8Weights w = randomFp8(N, K, 31 + uint32_t(K));
      auto x = randomVec(size_t(M * K), 41 + uint32_t(M)), bias = randomVec(size_t(N), 5);
      PackedB p = pack_b_f8(w.codes.data(), N, K, K);
      std::vector<uint8_t> scratch(size_t(hyrt_gemm_scratch_bytes_for(GetParam().scheme, M, K)));
      std::vector<float> out(size_t(M * N), -9.0f);
      hyrt_cpu_gemm_fp8(GetParam().scheme, x.data(), M, K, p.data.data(), w.factors.data(), N,
                        bias.data(), out.data(), scratch.data(), fn(), mMax(), kMinMacs);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = bias[size_t(n)], mag = std::fabs(bias[size_t(n)]);
          for (int64_t k = 0; k < K; ++k) {
            const double t = double(activation(x[size_t(m * K + k)])) *
                             double(w.dequantized[size_t(n * K + k)]);
            want += t;
            mag += std::fabs(t);
          }
          ASSERT_NEAR(out[size_t(m * N + n)], want, 2.0 * double(128 + kb + 2) * 0x1p-24 * mag)
              << GetParam().name << " M=" << M << " K=" << K << " at " << m << "," << n;
        }
    }
}

// [gate; up] (each half its own row blocks: N = 200 leaves a partial one)
// and two experts of that, against silu of the two exact GEMMs.
TEST_P(CpuFp8Gemm, SiluMulAndExpertsUseEachMatrixBlocks) {
  const int64_t M = 20, N = 200, K = 256, kb = 2, rb = 2;
  Fp8Weights g = randomFp8(N, K, 3), u = randomFp8(N, K, 4);
  auto x = randomVec(size_t(M * K), 6);
  PackedB pg = pack_b_f8(g.codes.data(), N, K, K), pu = pack_b_f8(u.codes.data(), N, K, K);
  const size_t half = pg.data.size();
  AlignedBuffer packed(2 * half), stacked(4 * half);
  std::vector<float> factors, stackedFactors;
  for (size_t i = 0; i < 4; ++i) {
    const AlignedBuffer &src = i % 2 ? pu.data : pg.data;
    const std::vector<float> &f = i % 2 ? u.factors : g.factors;
    if (i < 2) {
      std::memcpy(packed.data() + i * half, src.data(), half);
      factors.insert(factors.end(), f.begin(), f.end());
    }
    std::memcpy(stacked.data() + i * half, src.data(), half);
    stackedFactors.insert(stackedFactors.end(), f.begin(), f.end());
  }
  ASSERT_EQ(factors.size(), size_t(2 * rb * kb));
  std::vector<uint8_t> scratch(size_t(hyrt_gemm_scratch_bytes_for(GetParam().scheme, M, K)));
  std::vector<float> out(size_t(M * N), -7.0f), grouped(size_t(M * N), -7.0f);
  hyrt_cpu_gemm_silu_mul(GetParam().scheme, x.data(), M, K, packed.data(), factors.data(), N,
                         out.data(), scratch.data(), fn(), mMax(), kMinMacs);
  const int32_t offsets[3] = {0, 5, int32_t(M)};
  hyrt_cpu_grouped_gemm_silu_mul(GetParam().scheme, x.data(), M, K, offsets, 2,
                                 stacked.data(), stackedFactors.data(), N, grouped.data(),
                                 scratch.data(), fn(), mMax(), kMinMacs);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double gs = 0, us = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double a = activation(x[size_t(m * K + k)]);
        gs += a * g.dequantized[size_t(n * K + k)];
        us += a * u.dequantized[size_t(n * K + k)];
        mag += std::fabs(a * g.dequantized[size_t(n * K + k)]) +
               std::fabs(a * u.dequantized[size_t(n * K + k)]);
      }
      const double want = gs / (1 + std::exp(-gs)) * us;
      // The GEMM bound above on each half, carried through silu(g) * u
      // (|d silu| <= 1.1), plus the fp32 epilogue.
      const double tol = 2.2 * (128 + kb + 2) * 0x1p-24 * mag * (1 + std::fabs(us) + std::fabs(gs)) +
                         1e-6 * std::fabs(want);
      ASSERT_NEAR(out[size_t(m * N + n)], want, tol) << GetParam().name << " at " << m << "," << n;
      ASSERT_NEAR(grouped[size_t(m * N + n)], want, tol)
          << GetParam().name << " grouped at " << m << "," << n;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Isa, CpuFp8Gemm,
    ::testing::Values(Level{"avx512bf16", HYRT_GEMM_FP8, Isa::avx512_bf16, DataType::bf16},
                      Level{"avx512", HYRT_GEMM_FP8_F32, Isa::avx512_core, DataType::f32},
                      Level{"avx2", HYRT_GEMM_FP8_F32, Isa::avx2, DataType::f32}),
    [](const ::testing::TestParamInfo<Level> &i) { return i.param.name; });

} // namespace
