// The MoE path of optimized artifacts (runtime/cpu/moe.cpp and the grouped
// brgemm drivers of gemm.cpp, with kernels generated here by codegen)
// against the reference kernels, one whole MoE layer at a time: route,
// permute, [gate; up] grouped GEMM with the SiLU·mul epilogue (also reading
// the token rows through the permute's row map), down grouped GEMM,
// weighted combine with the shared experts' output added.
//
// Routing, permute and combine use the reference's arithmetic: ids,
// weights, offsets and rows must match exactly. The expert outputs are
// compared with the tolerance, |d| <= 1e-2 + 1e-2 |ref| (2e-2 for
// INT8 beyond 35 tokens): the bf16 paths differ from the reference only in
// fp32 summation order (~K * 2^-24 relative); W8A8 additionally
// re-quantizes the SiLU·mul rows, where a sum-order difference can move an
// activation across a rounding boundary (one int8 step, 1/254 of the row's
// max|h|, in one of F products).
#include "hyrt/cpu_kernels.h"
#include "hyrt/gemm_layout.h"
#include "hyrt/reference.h"
#include "runtime/cpu/host_isa.h"
#include "runtime/reference/bf16.h"
#include "test/unit/runtime/ref_test_util.h"

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

// hidden (K of gate/up, N of down) and expert ffn width: a partial 32-column
// panel in both GEMMs, K a multiple of 4 for the VNNI layout.
constexpr int64_t kHidden = 72, kFfn = 40;
constexpr int64_t kMinMacs = int64_t(1) << 16;

struct MoeCase {
  int64_t experts, topK, tokens;
  int64_t nGroup = 1, topkGroup = 1;
  int32_t scoring = 0; // 0 softmax, 1 sigmoid (+ correction bias)
  bool shared = true;
  // skew: logits favour experts 0..2 (crowded and empty experts); one: a
  // huge logit on expert 3 sends every token there.
  enum Routing { kRandom, kSkew, kOne } routing = kRandom;
};

using hyrt_test::random_vec;


/// Per-channel symmetric int8 of [rows][k].
void quantizeChannels(const std::vector<float> &w, int64_t rows, int64_t k,
                      std::vector<int8_t> &q, std::vector<float> &scale) {
  q.resize(w.size());
  scale.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0;
    for (int64_t i = 0; i < k; ++i)
      amax = std::max(amax, std::fabs(w[r * k + i]));
    scale[r] = amax > 0 ? amax / 127.0f : 1.0f;
    for (int64_t i = 0; i < k; ++i)
      q[r * k + i] = int8_t(std::nearbyint(w[r * k + i] / scale[r]));
  }
}

/// sum_k |qa_k| |qw_k| sa sw of every output of an expert-grouped W8A8 GEMM
/// ([rows][N], rows of expert e in [offsets[e], offsets[e + 1]), its weight
/// rows [e N, (e + 1) N)), with the activations quantized as the reference
/// and the kernels do (hyrt_ref_quantize_rows): the size that the fp32
/// rescaling error of an exact int32 sum is relative to.
std::vector<double> w8a8Magnitudes(const float *x, int64_t rows, int64_t K,
                                   const std::vector<int8_t> &qw, const std::vector<float> &sw,
                                   const std::vector<int32_t> &offsets, int64_t N) {
  std::vector<int8_t> qa(size_t(rows * K));
  std::vector<float> sa(static_cast<size_t>(rows));
  hyrt_ref_quantize_rows(x, rows, K, qa.data(), sa.data());
  std::vector<double> mag(size_t(rows * N), 0.0);
  for (size_t e = 0; e + 1 < offsets.size(); ++e)
    for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t wRow = int64_t(e) * N + n;
        int64_t sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += std::abs(int64_t(qa[r * K + k]) * qw[wRow * K + k]);
        mag[r * N + n] = double(sum) * sa[r] * sw[wRow];
      }
  return mag;
}

/// The W8A8 layer stage by stage, every element against a bound derived
/// from the arithmetic. The kernels and the reference quantize alike (scale
/// max|x| / 127, x * (1 / scale) rounded to nearest even, clamped to +-127)
/// and sum int8 products exactly; the kernels rescale in fp32 (convert,
/// * w_scale, * a_scale: <= 4.1 u |P|, u = 2^-24), the reference in double
/// rounded once (u |P|): each GEMM output within 6 u sum|qa qw| sa sw.
///  - gate/up with SiLU-multiply (same input rows): silu' is within
///    [-0.1, 1.1] and |silu(g)| <= |g|, so errors eg, eu of gate and up move
///    silu(g) u by <= 1.1 eg (|u| + eu) + (|g| + eg) eu; the two SiLU
///    evaluations add their own rounding (the kernels' within 8 ulp of the
///    reference formula, elementwise_test; that formula a few ulp of exact):
///    20 ulp (2^-23) of the value, plus elementwise_test's 3e-39 |g u| for
///    the exp's underflow.
///  - down, on the kernels' own SiLU-multiply rows (so that both quantize the
///    same values): within 6 u sum|qa qw| sa sw again.
///  - the combine: the reference's double sums, bit for bit.
void expectW8a8Stages(const MoeCase &c, const std::vector<float> &px,
                      const std::vector<float> &gu, const std::vector<float> &h,
                      const std::vector<float> &h2, const std::vector<float> &y2,
                      const std::vector<float> &got, const std::vector<int8_t> &qGateUp,
                      const std::vector<float> &sGateUp, const std::vector<int8_t> &qDown,
                      const std::vector<float> &sDown, const std::vector<int32_t> &offsets,
                      const std::vector<int32_t> &rows, const std::vector<float> &w,
                      const float *add0) {
  constexpr double u = 0x1p-24, ulp = 0x1p-23;
  const int64_t T = c.tokens, pairs = T * c.topK;
  const std::vector<double> magGu =
      w8a8Magnitudes(px.data(), pairs, kHidden, qGateUp, sGateUp, offsets, 2 * kFfn);
  for (int64_t r = 0; r < pairs; ++r)
    for (int64_t n = 0; n < kFfn; ++n) {
      const double g = gu[r * 2 * kFfn + n], up = gu[r * 2 * kFfn + kFfn + n];
      const double eg = 6 * u * magGu[r * 2 * kFfn + n] + 1e-37,
                   eu = 6 * u * magGu[r * 2 * kFfn + kFfn + n] + 1e-37;
      const double moved = 1.1 * eg * (std::fabs(up) + eu) + (std::fabs(g) + eg) * eu;
      const double bound =
          moved + 20 * ulp * (std::fabs(h[r * kFfn + n]) + moved) + 3e-39 * std::fabs(g * up);
      ASSERT_LE(std::fabs(double(h2[r * kFfn + n]) - h[r * kFfn + n]), bound)
          << "gate/up + silu_mul, pair row " << r << ", column " << n << ": kernel "
          << h2[r * kFfn + n] << ", reference " << h[r * kFfn + n];
    }
  std::vector<float> y(size_t(pairs * kHidden));
  hyrt_ref_moe_grouped_matmul_w8a8(h2.data(), qDown.data(), sDown.data(), offsets.data(), pairs,
                                   c.experts, kHidden, kFfn, y.data());
  const std::vector<double> magDown =
      w8a8Magnitudes(h2.data(), pairs, kFfn, qDown, sDown, offsets, kHidden);
  for (int64_t i = 0; i < pairs * kHidden; ++i)
    ASSERT_LE(std::fabs(double(y2[i]) - y[i]), 6 * u * magDown[i] + 1e-37)
        << "down, pair row " << i / kHidden << ", column " << i % kHidden << ": kernel "
        << y2[i] << ", reference " << y[i];
  std::vector<float> combined(size_t(T * kHidden));
  hyrt_ref_moe_unpermute_add(y2.data(), rows.data(), w.data(), T, c.topK, kHidden, add0,
                             nullptr, combined.data());
  ASSERT_EQ(0, std::memcmp(combined.data(), got.data(), got.size() * sizeof(float)))
      << "the combine differs from the reference's sums";
}

std::unique_ptr<BrgemmKernel> kernelFor(Isa isa, DataType a, DataType b, int64_t k) {
  BrgemmGenResult gen = generate_brgemm(make_brgemm_desc(isa, a, b, DataType::f32, int(k)));
  EXPECT_TRUE(gen) << gen.error;
  return std::move(gen.kernel);
}

/// Every expert's matrices packed back to back in the scheme's layout.
AlignedBuffer packExperts(int32_t scheme, const std::vector<float> &w,
                          const std::vector<int8_t> &q, int64_t experts, int64_t n,
                          int64_t k) {
  std::vector<PackedB> parts;
  size_t total = 0;
  for (int64_t e = 0; e < experts; ++e) {
    parts.push_back(scheme == HYRT_GEMM_W8A8
                        ? pack_b_s8(q.data() + e * n * k, n, k, k)
                        : scheme == HYRT_GEMM_BF16
                              ? pack_b_bf16_from_f32(w.data() + e * n * k, n, k, k)
                              : pack_b_f32(w.data() + e * n * k, n, k, k));
    total += parts.back().data.size();
  }
  AlignedBuffer out(total);
  size_t at = 0;
  for (const PackedB &p : parts) {
    std::memcpy(out.data() + at, p.data.data(), p.data.size());
    at += p.data.size();
  }
  return out;
}

/// Packs [gate; up] of each expert as two matrices of kFfn rows.
AlignedBuffer packGateUp(int32_t scheme, const std::vector<float> &w,
                         const std::vector<int8_t> &q, int64_t experts) {
  return packExperts(scheme, w, q, experts * 2, kFfn, kHidden);
}

/// One layer through the kernels: `avx2` takes the AVX2 variant's expert
/// kernels (f32 and W8A8 schemes) instead of the AVX-512 ones.
void runCase(int32_t scheme, const MoeCase &c, bool avx2 = false) {
  SCOPED_TRACE(::testing::Message()
               << "scheme " << scheme << ", experts " << c.experts << ", top-k "
               << c.topK << ", tokens " << c.tokens << ", groups " << c.nGroup
               << "/" << c.topkGroup << ", routing " << int(c.routing));
  const int64_t E = c.experts, T = c.tokens, k = c.topK, pairs = T * k;
  auto x = random_vec(T * kHidden, 1, -1, 1);
  auto logits = random_vec(T * E, 2, -2, 2);
  if (c.routing == MoeCase::kSkew)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < 3 && e < E; ++e)
        logits[t * E + e] += 3.0f;
  if (c.routing == MoeCase::kOne)
    for (int64_t t = 0; t < T; ++t)
      logits[t * E + 3 % E] = 50.0f;
  auto bias = random_vec(E, 3, -0.5, 0.5);
  auto wGateUp = random_vec(E * 2 * kFfn * kHidden, 4, -0.2f, 0.2f);
  auto wDown = random_vec(E * kHidden * kFfn, 5, -0.2f, 0.2f);
  if (scheme == HYRT_GEMM_BF16)
    for (auto *w : {&wGateUp, &wDown})
      for (float &v : *w)
        v = hyrt::fromBf16(hyrt::toBf16(v));
  auto shared = random_vec(T * kHidden, 6, -1, 1);
  const float *add0 = c.shared ? shared.data() : nullptr;
  const float *correction = c.scoring == 1 ? bias.data() : nullptr;

  // Reference layer.
  std::vector<float> w(T * k), px(pairs * kHidden), gu(pairs * 2 * kFfn), h(pairs * kFfn),
      y(pairs * kHidden), want(T * kHidden);
  std::vector<int32_t> ids(T * k), offsets(E + 1), rows(pairs);
  hyrt_ref_moe_route(logits.data(), correction, T, E, k, c.scoring, c.nGroup, c.topkGroup,
                     c.scoring, 1, 2.5f, w.data(), ids.data());
  hyrt_ref_moe_permute(x.data(), ids.data(), T, kHidden, k, E, 0, px.data(), offsets.data(),
                       rows.data());
  std::vector<int8_t> qGateUp, qDown;
  std::vector<float> sGateUp, sDown;
  quantizeChannels(wGateUp, E * 2 * kFfn, kHidden, qGateUp, sGateUp);
  quantizeChannels(wDown, E * kHidden, kFfn, qDown, sDown);
  if (scheme == HYRT_GEMM_W8A8) {
    hyrt_ref_moe_grouped_matmul_w8a8(px.data(), qGateUp.data(), sGateUp.data(),
                                     offsets.data(), pairs, E, 2 * kFfn, kHidden, gu.data());
  } else if (scheme == HYRT_GEMM_BF16) {
    hyrt_ref_moe_grouped_matmul_bf16_activations(px.data(), wGateUp.data(), offsets.data(),
                                                 pairs, E, 2 * kFfn, kHidden, gu.data());
  } else {
    hyrt_ref_moe_grouped_matmul(px.data(), wGateUp.data(), offsets.data(), pairs, E,
                                2 * kFfn, kHidden, gu.data());
  }
  // The reference weight is [E][2F][K] with gate rows then up rows: the
  // grouped result's row is [gate | up].
  hyrt_ref_silu_mul_halves(gu.data(), pairs, kFfn, h.data());
  if (scheme == HYRT_GEMM_W8A8)
    hyrt_ref_moe_grouped_matmul_w8a8(h.data(), qDown.data(), sDown.data(), offsets.data(),
                                     pairs, E, kHidden, kFfn, y.data());
  else if (scheme == HYRT_GEMM_BF16)
    hyrt_ref_moe_grouped_matmul_bf16_activations(h.data(), wDown.data(), offsets.data(),
                                                 pairs, E, kHidden, kFfn, y.data());
  else
    hyrt_ref_moe_grouped_matmul(h.data(), wDown.data(), offsets.data(), pairs, E, kHidden,
                                kFfn, y.data());
  hyrt_ref_moe_unpermute_add(y.data(), rows.data(), w.data(), T, k, kHidden, add0, nullptr,
                             want.data());

  // Optimized layer.
  std::vector<float> w2(T * k, -1), px2(pairs * kHidden, -1), h2(pairs * kFfn, -1),
      y2(pairs * kHidden, -1), got(T * kHidden, -1);
  std::vector<int32_t> ids2(T * k, -1), offsets2(E + 1, -1), rows2(pairs, -1);
  hyrt_cpu_moe_route(logits.data(), correction, T, E, k, c.scoring, c.nGroup, c.topkGroup,
                     c.scoring, 1, 2.5f, w2.data(), ids2.data());
  ASSERT_EQ(ids2, ids);
  ASSERT_EQ(0, std::memcmp(w2.data(), w.data(), w.size() * sizeof(float)));
  hyrt_cpu_moe_permute(x.data(), ids.data(), T, kHidden, k, E, 0, px2.data(), offsets2.data(),
                       rows2.data());
  ASSERT_EQ(offsets2, offsets);
  ASSERT_EQ(rows2, rows);
  ASSERT_EQ(px2, px);

  const Isa isa = avx2                       ? Isa::avx2
                  : scheme == HYRT_GEMM_W8A8 ? Isa::avx512_vnni
                  : scheme == HYRT_GEMM_BF16 ? Isa::avx512_bf16
                                             : Isa::avx512_core;
  const DataType a = scheme == HYRT_GEMM_W8A8   ? DataType::u8
                     : scheme == HYRT_GEMM_BF16 ? DataType::bf16
                                                : DataType::f32;
  const DataType b = scheme == HYRT_GEMM_W8A8   ? DataType::s8
                     : scheme == HYRT_GEMM_BF16 ? DataType::bf16
                                                : DataType::f32;
  auto kUp = kernelFor(isa, a, b, kHidden), kDown = kernelFor(isa, a, b, kFfn);
  AlignedBuffer pGateUp = packGateUp(scheme, wGateUp, qGateUp, E);
  AlignedBuffer pDown = packExperts(scheme, wDown, qDown, E, kHidden, kFfn);
  std::vector<uint8_t> scratch(std::max(hyrt_gemm_scratch_bytes_for(scheme, pairs, kHidden),
                                        hyrt_gemm_scratch_bytes_for(scheme, pairs, kFfn)));
  const bool w8 = scheme == HYRT_GEMM_W8A8;
  hyrt_cpu_grouped_gemm_silu_mul(scheme, px2.data(), pairs, kHidden, offsets2.data(), E,
                                 pGateUp.data(), w8 ? sGateUp.data() : nullptr, kFfn,
                                 h2.data(), scratch.data(),
                                 reinterpret_cast<hyrt_brgemm_fn>(kUp->fn()),
                                 kUp->desc().m_max, kMinMacs);
  if (scheme != HYRT_GEMM_F32) {
    // Reading the token rows through the permute's row map (each token
    // quantized / converted once) gives the same activations: bit for bit.
    std::vector<float> hTok(pairs * kFfn, -1);
    std::vector<uint8_t> tokScratch(
        size_t((hyrt_gemm_scratch_bytes_for(scheme, T, kHidden) + 63) / 64 * 64 +
               hyrt_gemm_scratch_bytes_for(scheme, pairs, kHidden)));
    hyrt_cpu_grouped_gemm_tokens(scheme, x.data(), T, k, rows2.data(), kHidden, offsets2.data(),
                                 E, pGateUp.data(), w8 ? sGateUp.data() : nullptr, kFfn, 1,
                                 hTok.data(), tokScratch.data(),
                                 reinterpret_cast<hyrt_brgemm_fn>(kUp->fn()), kUp->desc().m_max,
                                 kMinMacs);
    ASSERT_EQ(0, std::memcmp(hTok.data(), h2.data(), h2.size() * sizeof(float)));
  }
  hyrt_cpu_grouped_gemm(scheme, h2.data(), pairs, kFfn, offsets2.data(), E, pDown.data(),
                        w8 ? sDown.data() : nullptr, kHidden, y2.data(), scratch.data(),
                        reinterpret_cast<hyrt_brgemm_fn>(kDown->fn()), kDown->desc().m_max,
                        kMinMacs);
  hyrt_cpu_moe_unpermute_add(y2.data(), rows2.data(), w2.data(), T, k, kHidden, add0,
                             nullptr, got.data());
  if (w8)
    expectW8a8Stages(c, px, gu, h, h2, y2, got, qGateUp, sGateUp, qDown, sDown, offsets, rows,
                     w, add0);
  // The whole layer against the all-reference layer, at the issue's
  // tolerance (a re-quantized SiLU-multiply row can differ by one int8 step,
  // which the stage checks above take out by feeding the kernels' rows).
  const double tol = w8 && T > 35 ? 2e-2 : 1e-2;
  for (int64_t i = 0; i < T * kHidden; ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
        << "token " << i / kHidden << ", dim " << i % kHidden;
}

const MoeCase kCases[] = {
    {4, 1, 1},
    {4, 2, 39, 1, 1, 0, false},
    {8, 2, 2},
    {8, 2, 114, 1, 1, 0, true, MoeCase::kSkew},
    {64, 8, 39},
    {64, 8, 1024},
    {64, 6, 114, 1, 1, 1},                        // sigmoid + correction bias
    {64, 1, 114, 1, 1, 0, true, MoeCase::kOne},   // every token on expert 3
    {256, 8, 114, 8, 4, 1},                       // group-limited, top-2-sum groups
    {256, 8, 2, 8, 4, 1, false},
    {256, 6, 1024, 1, 1, 0, true, MoeCase::kSkew}, // crowded and empty experts
};

TEST(CpuMoe, W8A8LayerMatchesReference) {
  if (!host_supports(Isa::avx512_vnni))
    GTEST_SKIP() << "host lacks AVX-512 VNNI: the W8A8 expert kernels cannot run";
  for (const MoeCase &c : kCases)
    runCase(HYRT_GEMM_W8A8, c);
}

TEST(CpuMoe, Bf16LayerMatchesReference) {
  if (!host_supports(Isa::avx512_bf16))
    GTEST_SKIP() << "host lacks AVX512_BF16: the native bf16 expert kernels cannot run";
  for (const MoeCase &c : kCases)
    runCase(HYRT_GEMM_BF16, c);
}

// The avx2 variant of the same layers (an AVX2 host runs these).
TEST(CpuMoe, Avx2W8A8AndF32LayersMatchReference) {
  if (!host_supports(Isa::avx2))
    GTEST_SKIP() << "host lacks AVX2";
  for (const MoeCase &c : kCases) {
    runCase(HYRT_GEMM_W8A8, c, /*avx2=*/true);
    runCase(HYRT_GEMM_F32, c, /*avx2=*/true);
  }
}

TEST(CpuMoe, F32LayerMatchesReference) {
  if (!host_supports(Isa::avx512_core))
    GTEST_SKIP() << "host lacks AVX-512";
  for (const MoeCase &c : kCases)
    runCase(HYRT_GEMM_F32, c);
}

// The combine alone, on both bodies (the AVX-512 one where the host has it,
// the portable one always): the reference's output bit for bit, for a row
// width on the 16-lane grid and one off it (masked tail), slots dropped
// (another expert-parallel rank's: row -1), no addend, one, and two. The
// values span many binades, so a sum in another order or in fp32 would
// round differently somewhere in these 37 x 8 x 2077 terms.
TEST(CpuMoe, CombineEqualsTheReferenceBitForBitOnEveryBody) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> d(-1, 1), e(-20, 20);
  const int64_t T = 37, topK = 8;
  for (int64_t dim : {int64_t(2048), int64_t(2077)}) {
    const int64_t pairs = T * topK;
    std::vector<float> y(static_cast<size_t>(pairs * dim)), w(static_cast<size_t>(pairs)),
        a0(static_cast<size_t>(T * dim)), a1(static_cast<size_t>(T * dim));
    for (float &x : y)
      x = d(rng) * std::exp2(e(rng));
    for (float &x : w)
      x = d(rng);
    for (float &x : a0)
      x = d(rng);
    for (float &x : a1)
      x = d(rng) * 1e-3f;
    // rows: the permuted order (pair r of the expert-sorted rows is pair
    // rows[r]); every 7th pair dropped.
    std::vector<int32_t> rows(static_cast<size_t>(pairs));
    for (int64_t r = 0; r < pairs; ++r)
      rows[size_t(r)] = int32_t((r * 101 + 3) % pairs);
    for (int64_t r = 0; r < pairs; r += 7)
      rows[size_t(r)] = -1;
    for (int addends = 0; addends <= 2; ++addends) {
      const float *add0 = addends >= 1 ? a0.data() : nullptr;
      const float *add1 = addends >= 2 ? a1.data() : nullptr;
      std::vector<float> want(static_cast<size_t>(T * dim));
      hyrt_ref_moe_unpermute_add(y.data(), rows.data(), w.data(), T, topK, dim, add0, add1,
                                 want.data());
      for (bool portable : {false, true}) {
        hyrt::cpu::portableOnly() = portable;
        std::vector<float> got(want.size(), -7.0f);
        hyrt_cpu_moe_unpermute_add(y.data(), rows.data(), w.data(), T, topK, dim, add0, add1,
                                   got.data());
        hyrt::cpu::portableOnly() = false;
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << (portable ? "portable" : "host's best") << " body, dim " << dim << ", "
            << addends << " addends";
      }
    }
  }
}

} // namespace
