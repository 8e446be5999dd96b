// hyrt_cpu_gemm_{f32,bf16,w8a8}: the drivers that optimized artifacts call,
// fed with kernels generated here by codegen (the same generator the
// compiler embeds), checked against a double-precision GEMM.
#include "hyrt/cpu_kernels.h"
#include "hyrt/gemm_layout.h"
#include "hyrt/reference.h"

#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"
#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace hyc::codegen;

struct Case {
  int64_t M, N, K;
};

std::vector<float> randomVec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

std::vector<double> refGemm(const std::vector<float> &x, const std::vector<float> &w,
                            const std::vector<float> &bias, const Case &c) {
  std::vector<double> out(c.M * c.N);
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double acc = bias[n];
      for (int64_t k = 0; k < c.K; ++k)
        acc += double(x[m * c.K + k]) * double(w[n * c.K + k]);
      out[m * c.N + n] = acc;
    }
  return out;
}

std::unique_ptr<BrgemmKernel> kernelFor(Isa isa, DataType a, DataType b, int k,
                                        bool accumulate = false) {
  BrgemmGenResult gen =
      generate_brgemm(make_brgemm_desc(isa, a, b, DataType::f32, k, 32, accumulate));
  EXPECT_TRUE(gen) << gen.error;
  return std::move(gen.kernel);
}

// The smallest GEMM the drivers fork threads for (a schedule decision the
// compiler passes in); the last case is above it, so both paths run.
constexpr int64_t kMinMacs = int64_t(1) << 20;
// {3, 40, 24}: a scratch size that used to be 4 bytes short for W8A8.
const Case kCases[] = {{1, 64, 64}, {3, 40, 24}, {5, 40, 96}, {14, 96, 128}, {33, 70, 200},
                       {64, 32, 260}, {40, 200, 256}};

/// The kernels an ISA level (an artifact variant) gives each driver.
struct Level {
  const char *name;
  Isa f32;    ///< f32 x f32 and f32 x bf16 (FMA) kernels
  Isa int8;   ///< u8 x s8 kernels
};

/// Every driver test runs once per level the host executes; the others skip
/// with the reason (an AVX2 host runs the avx2 column).
class CpuGemmDriver : public ::testing::TestWithParam<Level> {
protected:
  void SetUp() override {
    if (!host_supports(GetParam().f32) || !host_supports(GetParam().int8))
      GTEST_SKIP() << "host cannot run the " << GetParam().name << " kernels";
  }
  Isa f32() const { return GetParam().f32; }
  Isa int8() const { return GetParam().int8; }
};

TEST_P(CpuGemmDriver, F32MatchesReference) {
  for (const Case &c : kCases) {
    auto x = randomVec(c.M * c.K, 1), w = randomVec(c.N * c.K, 2), bias = randomVec(c.N, 3);
    auto kernel = kernelFor(f32(), DataType::f32, DataType::f32, int(c.K));
    PackedB p = pack_b_f32(w.data(), c.N, c.K, c.K);
    std::vector<float> out(c.M * c.N);
    hyrt_cpu_gemm_f32(x.data(), c.M, c.K, p.data.data(), c.N, bias.data(), out.data(),
                      nullptr, reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                      kernel->desc().m_max, kMinMacs);
    auto want = refGemm(x, w, bias, c);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
          << c.M << "x" << c.N << "x" << c.K << " at " << i;
  }
}

// Every output against two bounds derived from the data, not observed:
//  - the reference of the same quantization (hyrt_ref_quantize_rows rounds
//    x * (1 / scale) to nearest even and clamps to +-127 with scale =
//    max|x| / 127, as the drivers' quantizer does, so both multiply the
//    same int8 values and their int32 sums are exact). The kernel rescales
//    in fp32 (convert, * w_scale, * a_scale, + bias: at most 4.1 u of |P|
//    plus u of |bias|, P = acc * sa * sw, u = 2^-24), the reference in double
//    rounded once (u of |P + bias|): |kernel - reference| <= 6 u (|P| + |b|).
//  - the float product it approximates: x - xq and w - wq are at most half
//    a step (sa / 2, sw / 2, widened by 2^-14 for the fp32 rounding of
//    x * (1 / scale) before it is rounded to an integer), so each product
//    moves by <= |x| ew + |w| ea + ea ew, plus the rescaling error above.
TEST_P(CpuGemmDriver, W8A8MatchesQuantizedReference) {
  constexpr double u = 0x1p-24, halfStep = 0.5 + 0x1p-14;
  for (const Case &c : kCases) {
    auto x = randomVec(c.M * c.K, 4), w = randomVec(c.N * c.K, 5), bias = randomVec(c.N, 6);
    // Per-channel symmetric weights, as the artifact writer makes them.
    std::vector<int8_t> q(c.N * c.K);
    std::vector<float> ws(c.N);
    for (int64_t n = 0; n < c.N; ++n) {
      float amax = 0;
      for (int64_t k = 0; k < c.K; ++k)
        amax = std::max(amax, std::fabs(w[n * c.K + k]));
      ws[n] = amax / 127.0f;
      for (int64_t k = 0; k < c.K; ++k)
        q[n * c.K + k] = int8_t(std::nearbyint(w[n * c.K + k] / ws[n]));
    }
    auto kernel = kernelFor(int8(), DataType::u8, DataType::s8, int(c.K));
    PackedB p = pack_b_s8(q.data(), c.N, c.K, c.K);
    std::vector<uint8_t> scratch(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_W8A8, c.M, c.K));
    std::vector<float> out(c.M * c.N);
    hyrt_cpu_gemm_w8a8(x.data(), c.M, c.K, p.data.data(), ws.data(), c.N, bias.data(),
                       out.data(), scratch.data(),
                       reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                       kernel->desc().m_max, kMinMacs);
    std::vector<float> ref(c.M * c.N), as(c.M);
    hyrt_ref_matmul_w8a8(x.data(), q.data(), ws.data(), bias.data(), c.M, c.N, c.K, ref.data());
    std::vector<int8_t> qa(c.M * c.K);
    hyrt_ref_quantize_rows(x.data(), c.M, c.K, qa.data(), as.data());
    auto exact = refGemm(x, w, bias, c);
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        int64_t acc = 0;
        double quantError = 0, products = 0;
        const double ea = as[m] * halfStep, ew = ws[n] * halfStep;
        for (int64_t k = 0; k < c.K; ++k) {
          const double a = x[m * c.K + k], b = w[n * c.K + k];
          acc += int64_t(qa[m * c.K + k]) * q[n * c.K + k];
          quantError += std::fabs(a) * ew + std::fabs(b) * ea + ea * ew;
          products += std::fabs(a * b);
        }
        const double rescale =
            6 * u * (std::fabs(double(acc) * as[m] * ws[n]) + std::fabs(bias[n])) + 1e-37;
        const size_t at = size_t(m * c.N + n);
        ASSERT_LE(std::fabs(double(out[at]) - ref[at]), rescale)
            << GetParam().name << " " << c.M << "x" << c.N << "x" << c.K << " at " << m << ","
            << n << ": kernel " << out[at] << ", reference " << ref[at];
        ASSERT_LE(std::fabs(double(out[at]) - exact[at]),
                  quantError + rescale + 0x1p-40 * products)
            << GetParam().name << " " << c.M << "x" << c.N << "x" << c.K << " at " << m << ","
            << n << ": kernel " << out[at] << ", float product " << exact[at];
      }
  }
}

TEST_P(CpuGemmDriver, W8A8NonFiniteActivationsPoisonOnlyTheirRow) {
  const int64_t M = 3, N = 32, K = 64;
  auto x = randomVec(M * K, 11), w = randomVec(N * K, 12);
  x[0 * K + 5] = NAN;      // row 0: NaN
  x[2 * K + 9] = INFINITY; // row 2: Inf
  std::vector<int8_t> q(N * K, 1);
  std::vector<float> ws(N, 0.01f);
  auto kernel = kernelFor(int8(), DataType::u8, DataType::s8, int(K));
  PackedB p = pack_b_s8(q.data(), N, K, K);
  std::vector<uint8_t> scratch(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_W8A8, M, K));
  std::vector<float> out(M * N);
  hyrt_cpu_gemm_w8a8(x.data(), M, K, p.data.data(), ws.data(), N, nullptr, out.data(),
                     scratch.data(), reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                     kernel->desc().m_max, kMinMacs);
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_TRUE(std::isnan(out[0 * N + n])) << n;
    EXPECT_TRUE(std::isfinite(out[1 * N + n])) << n;
    EXPECT_FALSE(std::isfinite(out[2 * N + n])) << n;
  }
}

// f32 activations x bf16 weights on FMA (the avx512 and avx2 variants'
// bf16 path): exact products of the rounded weights, fp32 sums.
TEST_P(CpuGemmDriver, F32Bf16MatchesRoundedWeightReference) {
  for (const Case &c : kCases) {
    auto x = randomVec(c.M * c.K, 17), w = randomVec(c.N * c.K, 18), bias = randomVec(c.N, 19);
    std::vector<float> wr = w;
    for (float &f : wr)
      f = bf16_to_f32(f32_to_bf16(f));
    auto kernel = kernelFor(f32(), DataType::f32, DataType::bf16, int(c.K));
    PackedB p = pack_b_bf16_from_f32(w.data(), c.N, c.K, c.K);
    std::vector<float> out(c.M * c.N);
    hyrt_cpu_gemm_f32_bf16(x.data(), c.M, c.K, p.data.data(), c.N, bias.data(), out.data(),
                           nullptr, reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                           kernel->desc().m_max, kMinMacs);
    auto want = refGemm(x, wr, bias, c);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
          << GetParam().name << " " << c.M << "x" << c.N << "x" << c.K << " at " << i;
  }
}

// W8A8 with one scale per 128 K-elements: every K-group summed in int32 by
// the K = 128 accumulating kernel and folded into fp32 with a_scale *
// w_scale[group]. Checked against the int32-exact group sums of the same
// quantized activations and weights; the only difference left is the fp32
// rounding of the per-group terms (G additions of terms bounded by T: at
// most G * 2^-23 * sum|term|, doubled for the scale products).
TEST_P(CpuGemmDriver, W8A8G128MatchesInt32ExactGroupSums) {
  const int64_t G = HYRT_GEMM_GROUP_K;
  for (int64_t K : {int64_t(128), int64_t(384), int64_t(640), int64_t(200)})
    for (int64_t M : {int64_t(1), int64_t(2), int64_t(7), int64_t(14), int64_t(15),
                      int64_t(33), int64_t(64), int64_t(128)}) {
      const int64_t N = M % 2 ? 70 : 64, groups = (K + G - 1) / G;
      auto x = randomVec(M * K, 21 + uint32_t(M)), w = randomVec(N * K, 22 + uint32_t(K));
      // Weights: per-group outliers so that group scales differ.
      for (int64_t n = 0; n < N; ++n)
        w[n * K + (n * 37) % K] *= 8.0f;
      std::vector<int8_t> q(N * K);
      std::vector<float> ws(N * groups);
      quantize_s8_per_group(w.data(), N, K, K, G, q.data(), ws.data());
      PackedB p = pack_b_s8_grouped(q.data(), N, K, K, G);
      auto kernel = kernelFor(int8(), DataType::u8, DataType::s8, int(G), /*acc=*/true);
      std::vector<uint8_t> scratch(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_W8A8_G128, M, K));
      std::vector<float> out(M * N, -9.0f);
      hyrt_cpu_gemm_w8a8_g128(x.data(), M, K, p.data.data(), ws.data(), N, nullptr, out.data(),
                              scratch.data(), reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                              kernel->desc().m_max, kMinMacs);
      // The activations exactly as the driver quantizes them.
      std::vector<uint8_t> qa(M * K);
      std::vector<float> as(M);
      hyrt_cpu_quantize_rows_u8(x.data(), M, K, K, qa.data(), as.data());
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = 0, mag = 0;
          for (int64_t g = 0; g < groups; ++g) {
            int32_t sum = 0;
            for (int64_t k = g * G; k < std::min(K, (g + 1) * G); ++k)
              sum += (int32_t(qa[m * K + k]) - 128) * int32_t(q[n * K + k]);
            const double term = double(sum) * double(ws[n * groups + g]) * double(as[m]);
            want += term;
            mag += std::fabs(term);
          }
          ASSERT_NEAR(out[m * N + n], want, 2.0 * double(groups + 2) * 0x1p-23 * mag + 1e-30)
              << GetParam().name << " M=" << M << " K=" << K << " at " << m << "," << n;
        }
    }
}

/// The scalar reference's bound against the kernels on the same codes and
/// quantized activations: both sum each group's integer products exactly;
/// the kernel folds `groups` terms into fp32 (one rounding each, plus the
/// scale products and a_scale), the reference in double.
double codesBound(double magnitude, int64_t groups) {
  return 2.0 * double(groups + 3) * 0x1p-23 * magnitude + 1e-30;
}

// Integer codes with in-panel fp16 scales per 32 (HYRT_GEMM_W4A8 and
// HYRT_GEMM_W8A8_G32): the dense driver (partial panels, K not whole
// groups, row blocks of every height, one and several threads) and the
// grouped expert driver against hyrt_ref_matmul_codes on the same packed
// weights, with a bias.
TEST_P(CpuGemmDriver, CodesMatchTheScalarReference) {
  for (const int bits : {4, 8}) {
    const int32_t scheme = bits == 4 ? HYRT_GEMM_W4A8 : HYRT_GEMM_W8A8_G32;
    const DataType codeType = bits == 4 ? DataType::u4 : DataType::u8;
    for (const Case &c : kCases) {
      const int64_t kp = (c.K + 31) / 32 * 32, groups = kp / 32;
      auto x = randomVec(c.M * c.K, 31 + uint32_t(c.M)), bias = randomVec(c.N, 33);
      std::vector<float> w(size_t(c.N * kp), 0.0f), src = randomVec(c.N * c.K, 32);
      for (int64_t n = 0; n < c.N; ++n)
        for (int64_t k = 0; k < c.K; ++k)
          w[size_t(n * kp + k)] = src[size_t(n * c.K + k)] * (1.0f + float((n + k) % 7));
      std::vector<uint8_t> codes(size_t(c.N * kp));
      std::vector<uint16_t> scales(size_t(c.N * groups));
      quantize_grouped(w.data(), c.N, kp, kp, bits, 32, false, codes.data(), scales.data(),
                       nullptr);
      PackedB p = pack_b_grouped(codes.data(), c.N, kp, kp, bits, 32, scales.data(), nullptr);
      BrgemmDesc desc = make_brgemm_desc(int8(), DataType::s8, codeType, DataType::f32, int(kp));
      desc.group = 32;
      BrgemmGenResult gen = generate_brgemm(desc);
      ASSERT_TRUE(gen) << gen.error;
      std::vector<uint8_t> scratch(size_t(hyrt_gemm_scratch_bytes_for(scheme, c.M, c.K)));
      std::vector<float> out(size_t(c.M * c.N), -9.0f), want(size_t(c.M * c.N));
      hyrt_cpu_gemm_codes(scheme, x.data(), c.M, c.K, p.data.data(), c.N, bias.data(),
                          out.data(), scratch.data(),
                          reinterpret_cast<hyrt_brgemm_fn>(gen.kernel->fn()),
                          gen.kernel->desc().m_max, kMinMacs);
      hyrt_ref_matmul_codes(x.data(), p.data.data(), bias.data(), c.M, c.N, c.K, scheme, 1,
                            want.data());
      // Magnitude of the terms: |x| <= 1 and |w| <= 7 summed over K.
      const double mag = 7.0 * double(c.K);
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], want[i], codesBound(mag, groups) + 1e-6 * std::fabs(bias[i % c.N]))
            << GetParam().name << " bits=" << bits << " M=" << c.M << " N=" << c.N
            << " K=" << c.K << " at " << i;

      // Two experts of the same matrix: rows [0, 1) and [1, M).
      const size_t matrix = p.data.size();
      AlignedBuffer stacked(2 * matrix);
      std::memcpy(stacked.data(), p.data.data(), matrix);
      std::memcpy(stacked.data() + matrix, p.data.data(), matrix);
      const int32_t offsets[3] = {0, 1, int32_t(c.M)};
      std::vector<float> grouped(size_t(c.M * c.N), -9.0f), gwant(size_t(c.M * c.N));
      hyrt_cpu_grouped_gemm(scheme, x.data(), c.M, c.K, offsets, 2, stacked.data(), nullptr,
                            c.N, grouped.data(), scratch.data(),
                            reinterpret_cast<hyrt_brgemm_fn>(gen.kernel->fn()),
                            gen.kernel->desc().m_max, kMinMacs);
      hyrt_ref_moe_grouped_matmul_codes(x.data(), stacked.data(), offsets, c.M, 2, c.N, c.K,
                                        scheme, 1, gwant.data());
      for (size_t i = 0; i < grouped.size(); ++i)
        ASSERT_NEAR(grouped[i], gwant[i], codesBound(mag, groups))
            << "grouped, bits=" << bits << " M=" << c.M << " at " << i;
    }
  }
}

TEST(CpuGemmDriverBf16, Bf16MatchesRoundedReference) {
  if (!host_supports(Isa::avx512_bf16))
    GTEST_SKIP() << "host lacks AVX-512 BF16: the bf16 kernels only compile here";
  for (const Case &c : kCases) {
    auto x = randomVec(c.M * c.K, 7), w = randomVec(c.N * c.K, 8), bias = randomVec(c.N, 9);
    auto round = [](std::vector<float> v) {
      for (float &f : v)
        f = bf16_to_f32(f32_to_bf16(f));
      return v;
    };
    auto kernel = kernelFor(Isa::avx512_bf16, DataType::bf16, DataType::bf16, int(c.K));
    PackedB p = pack_b_bf16_from_f32(w.data(), c.N, c.K, c.K);
    std::vector<uint8_t> scratch(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_BF16, c.M, c.K));
    std::vector<float> out(c.M * c.N);
    hyrt_cpu_gemm_bf16(x.data(), c.M, c.K, p.data.data(), c.N, bias.data(), out.data(),
                       scratch.data(), reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                       kernel->desc().m_max, kMinMacs);
    auto want = refGemm(round(x), round(w), bias, c);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want[i], 1e-4 * (1 + std::fabs(want[i])));
  }
}

// The gate/up driver against silu of the two f32 GEMMs: the up half starts
// after the packed gate matrix, partial panels (N = 16, 40) included, and
// the grouped variant strides over [gate; up] pairs per expert.
TEST_P(CpuGemmDriver, SiluMulPairsGateAndUpPanels) {
  for (const Case &c : {Case{3, 16, 64}, Case{17, 40, 96}, Case{40, 64, 128}}) {
    auto x = randomVec(c.M * c.K, 11), wg = randomVec(c.N * c.K, 12),
         wu = randomVec(c.N * c.K, 13);
    std::vector<float> zero(c.N, 0.0f);
    auto kernel = kernelFor(f32(), DataType::f32, DataType::f32, int(c.K));
    PackedB pg = pack_b_f32(wg.data(), c.N, c.K, c.K), pu = pack_b_f32(wu.data(), c.N, c.K, c.K);
    // [gate; up] packed back to back, and two experts of that (expert 1
    // gets rows [1, M) with the same weights), in 64-byte aligned memory.
    const size_t half = pg.data.size();
    AlignedBuffer packed(2 * half), stacked(4 * half);
    for (size_t i = 0; i < 4; ++i) {
      const AlignedBuffer &src = i % 2 ? pu.data : pg.data;
      if (i < 2)
        std::memcpy(packed.data() + i * half, src.data(), half);
      std::memcpy(stacked.data() + i * half, src.data(), half);
    }
    std::vector<float> out(c.M * c.N, -7.0f), grouped(c.M * c.N, -7.0f);
    hyrt_cpu_gemm_silu_mul(HYRT_GEMM_F32, x.data(), c.M, c.K, packed.data(), nullptr, c.N,
                           out.data(), nullptr, reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                           kernel->desc().m_max, kMinMacs);
    const int32_t offsets[3] = {0, 1, int32_t(c.M)};
    hyrt_cpu_grouped_gemm_silu_mul(HYRT_GEMM_F32, x.data(), c.M, c.K, offsets, 2,
                                   stacked.data(), nullptr, c.N, grouped.data(), nullptr,
                                   reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                                   kernel->desc().m_max, kMinMacs);
    auto g = refGemm(x, wg, zero, c), u = refGemm(x, wu, zero, c);
    for (size_t i = 0; i < out.size(); ++i) {
      const double want = g[i] / (1 + std::exp(-g[i])) * u[i];
      // fp32 sums of K products (the kernels split them over accumulators
      // by row-block height, so grouped rows may round differently).
      ASSERT_NEAR(out[i], want, 1e-4 * (1 + std::fabs(want)))
          << "M=" << c.M << " N=" << c.N << " at " << i;
      ASSERT_NEAR(grouped[i], want, 1e-4 * (1 + std::fabs(want)))
          << "grouped, M=" << c.M << " N=" << c.N << " at " << i;
    }
  }
}

// Decode-sized W8A8 gate/up steps (at most a row block: runs of 8 panels,
// each half's run before the other's, and the kernel's two-K-stream bodies
// from K = 512) give every row the bits the same row gets inside a large
// step (one panel at a time, 14-row blocks): the batch-invariance contract;
// so do the expert driver's experts of few rows (runs) and of many.
// N = 552 is two whole runs and a run of two panels, the last one partial.
// The large step's rows are checked against silu of the quantized
// reference GEMMs, so both paths are right, not merely equal.
TEST_P(CpuGemmDriver, W8A8SiluMulRowsAreTheSameInDecodeRunsAndLargeSteps) {
  const int64_t M = 20, N = 552, K = 512;
  auto x = randomVec(M * K, 21), wg = randomVec(N * K, 22), wu = randomVec(N * K, 23);
  auto kernel = kernelFor(int8(), DataType::u8, DataType::s8, int(K));
  ASSERT_LT(3, kernel->desc().m_max);
  ASSERT_GT(M, kernel->desc().m_max);
  // [gate; up] per-channel int8 with [gate scales; up scales].
  std::vector<int8_t> q(size_t(2 * N * K));
  std::vector<float> ws(size_t(2 * N));
  for (int64_t n = 0; n < 2 * N; ++n) {
    const float *row = (n < N ? wg.data() + n * K : wu.data() + (n - N) * K);
    float amax = 0;
    for (int64_t k = 0; k < K; ++k)
      amax = std::max(amax, std::fabs(row[k]));
    ws[size_t(n)] = amax / 127.0f;
    for (int64_t k = 0; k < K; ++k)
      q[size_t(n * K + k)] = int8_t(std::nearbyint(row[k] / ws[size_t(n)]));
  }
  PackedB pg = pack_b_s8(q.data(), N, K, K), pu = pack_b_s8(q.data() + N * K, N, K, K);
  const size_t half = pg.data.size();
  AlignedBuffer packed(2 * half);
  std::memcpy(packed.data(), pg.data.data(), half);
  std::memcpy(packed.data() + half, pu.data.data(), half);
  std::vector<uint8_t> scratch(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_W8A8, M, K));
  auto run = [&](const float *rows, int64_t m, float *out) {
    hyrt_cpu_gemm_silu_mul(HYRT_GEMM_W8A8, rows, m, K, packed.data(), ws.data(), N, out,
                           scratch.data(), reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                           kernel->desc().m_max, kMinMacs);
  };
  std::vector<float> large(size_t(M * N));
  run(x.data(), M, large.data());
  // The large step against silu of the quantized reference GEMMs.
  std::vector<float> g(size_t(M * N)), u(size_t(M * N));
  hyrt_ref_matmul_w8a8(x.data(), q.data(), ws.data(), nullptr, M, N, K, g.data());
  hyrt_ref_matmul_w8a8(x.data(), q.data() + N * K, ws.data() + N, nullptr, M, N, K, u.data());
  for (size_t i = 0; i < large.size(); ++i) {
    const double want = g[i] / (1 + std::exp(-double(g[i]))) * u[i];
    ASSERT_NEAR(large[i], want, 1e-4 * (1 + std::fabs(want))) << "at " << i;
  }
  for (int64_t m : {int64_t(1), int64_t(3)})
    for (int64_t r0 = 0; r0 + m <= M; r0 += 7) {
      std::vector<float> small(size_t(m * N), -7.0f);
      run(x.data() + r0 * K, m, small.data());
      ASSERT_EQ(std::memcmp(small.data(), large.data() + r0 * N, small.size() * 4), 0)
          << GetParam().name << ": rows " << r0 << ".." << r0 + m - 1
          << " of a " << m << "-row step differ from the same rows of a " << M << "-row step";
    }
  // The expert driver, these weights for every expert: 3 rows (runs), 15
  // (panels, two row blocks) and 2 rows from row 18 (runs, offset rows).
  constexpr int kExperts = 3;
  AlignedBuffer stacked(2 * kExperts * half);
  std::vector<float> stackedScales;
  for (size_t i = 0; i < kExperts; ++i) {
    std::memcpy(stacked.data() + i * 2 * half, packed.data(), 2 * half);
    stackedScales.insert(stackedScales.end(), ws.begin(), ws.end());
  }
  const int32_t offsets[kExperts + 1] = {0, 3, 18, int32_t(M)};
  std::vector<float> grouped(size_t(M * N), -7.0f);
  std::vector<uint8_t> groupedScratch(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_W8A8, M, K));
  hyrt_cpu_grouped_gemm_silu_mul(HYRT_GEMM_W8A8, x.data(), M, K, offsets, kExperts, stacked.data(),
                                 stackedScales.data(), N, grouped.data(), groupedScratch.data(),
                                 reinterpret_cast<hyrt_brgemm_fn>(kernel->fn()),
                                 kernel->desc().m_max, kMinMacs);
  for (int64_t r = 0; r < M; ++r)
    ASSERT_EQ(std::memcmp(grouped.data() + r * N, large.data() + r * N, size_t(N) * 4), 0)
        << GetParam().name << ": expert row " << r << " differs from the dense step's";
}

// Non-temporal C stores (the kernel the compiler picks for outputs past the
// caches): the dense and the grouped expert driver store the same bits as
// with the plain kernel, on 64-byte aligned outputs as the arena gives them,
// with a partial last panel (N = 80) going through the driver's local tile.
TEST(CpuGemmDriverStream, NonTemporalStoresGiveThePlainKernelsBits) {
  if (!host_supports(Isa::avx512_vnni))
    GTEST_SKIP() << "host lacks AVX-512 VNNI: non-temporal kernels are AVX-512 only";
  for (const Case &c : {Case{33, 80, 200}, Case{70, 64, 96}, Case{5, 96, 64}}) {
    auto x = randomVec(c.M * c.K, 41);
    std::vector<int8_t> q(size_t(c.N * c.K));
    std::vector<float> ws(size_t(c.N));
    std::mt19937 rng(42);
    for (auto &v : q)
      v = int8_t(int(rng() % 255) - 127);
    for (auto &v : ws)
      v = 0.001f * float(1 + rng() % 50);
    PackedB p = pack_b_s8(q.data(), c.N, c.K, c.K);
    BrgemmDesc desc = make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8,
                                       DataType::f32, int(c.K));
    BrgemmGenResult plain = generate_brgemm(desc);
    desc.stream_c = true;
    BrgemmGenResult nt = generate_brgemm(desc);
    ASSERT_TRUE(plain && nt) << plain.error << nt.error;
    const size_t bytes = size_t(c.M * c.N) * sizeof(float);
    AlignedBuffer outPlain(bytes), outNt(bytes);
    std::vector<uint8_t> scratch(size_t(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_W8A8, c.M, c.K)));
    auto run = [&](const BrgemmGenResult &k, AlignedBuffer &out, bool grouped) {
      std::memset(out.data(), 0xA5, bytes);
      const auto fn = reinterpret_cast<hyrt_brgemm_fn>(k.kernel->fn());
      float *y = reinterpret_cast<float *>(out.data());
      if (!grouped) {
        hyrt_cpu_gemm_w8a8(x.data(), c.M, c.K, p.data.data(), ws.data(), c.N, nullptr, y,
                           scratch.data(), fn, k.kernel->desc().m_max, kMinMacs);
        return;
      }
      // One expert's matrix twice: rows [0, 3) and [3, M).
      const size_t matrix = p.data.size();
      AlignedBuffer stacked(2 * matrix);
      std::memcpy(stacked.data(), p.data.data(), matrix);
      std::memcpy(stacked.data() + matrix, p.data.data(), matrix);
      std::vector<float> scales(ws);
      scales.insert(scales.end(), ws.begin(), ws.end());
      const int32_t offsets[3] = {0, int32_t(std::min<int64_t>(3, c.M)), int32_t(c.M)};
      hyrt_cpu_grouped_gemm(HYRT_GEMM_W8A8, x.data(), c.M, c.K, offsets, 2, stacked.data(),
                            scales.data(), c.N, y, scratch.data(), fn, k.kernel->desc().m_max,
                            kMinMacs);
    };
    for (bool grouped : {false, true}) {
      run(plain, outPlain, grouped);
      run(nt, outNt, grouped);
      ASSERT_EQ(std::memcmp(outPlain.data(), outNt.data(), bytes), 0)
          << (grouped ? "grouped " : "dense ") << c.M << "x" << c.N << "x" << c.K;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuGemmDriver,
                         ::testing::Values(Level{"avx512", Isa::avx512_core, Isa::avx512_vnni},
                                           Level{"avx2", Isa::avx2, Isa::avx2}),
                         [](const ::testing::TestParamInfo<Level> &i) { return i.param.name; });

} // namespace
