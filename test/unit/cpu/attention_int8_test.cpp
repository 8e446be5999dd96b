// The int8 KV cache (one fp32 scale per token and KV head; MLA: per latent
// row): the row quantizer, every attention kernel that reads int8 rows
// (portable and AVX-512 GQA-group bodies, the row-blocked kernel with every
// group size, flash-decoding splits, the fused append, absorbed and plain
// MLA) against the fp32 reference run on the same quantized values
// (code x scale), and the attention output against the unquantized cache
// within a bound derived from the quantization step.
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"
#include "runtime/cpu/host_isa.h"
#include "runtime/reference/kv_int8.h"
#include "attention_bodies.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

bool hostHasRowsKernel() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

// Quantization: the largest magnitude maps to +-127 exactly, every element
// is within half a step (scale / 2, plus the fp32 rounding of x * 127/max),
// and an all-zero row is scale 0 with zero codes (no division by zero).
TEST(KvInt8Quantize, RowsWithinHalfAStepAndZeroSafe) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-3, 3);
  for (int64_t n : {1, 8, 64, 576}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float &v : x)
      v = d(rng);
    x[size_t(n / 2)] = 40.0f; // an outlier sets the step for the whole row
    std::vector<int8_t> q(static_cast<size_t>(n));
    const float s = hyrt::quantizeKvRow(x.data(), n, q.data());
    EXPECT_EQ(s, 40.0f / 127.0f);
    EXPECT_EQ(q[size_t(n / 2)], 127);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_LE(std::fabs(x[size_t(i)] - hyrt::dequantKv(q[size_t(i)], s)),
                s / 2 + std::fabs(x[size_t(i)]) * 0x1p-22f)
          << "n " << n << ", element " << i;
  }
  std::vector<float> zeros(16, 0.0f);
  std::vector<int8_t> q(16, 99);
  EXPECT_EQ(hyrt::quantizeKvRow(zeros.data(), 16, q.data()), 0.0f);
  for (int8_t c : q)
    EXPECT_EQ(c, 0);
  std::vector<float> neg = {-2.0f, 1.0f};
  std::vector<int8_t> qn(2);
  EXPECT_EQ(hyrt::quantizeKvRow(neg.data(), 2, qn.data()), 2.0f / 127.0f);
  EXPECT_EQ(qn[0], -127);
  EXPECT_EQ(qn[1], 64); // 63.5 rounds to even
}

/// One layer of a paged cache three ways: the fp32 rows as drawn, the int8
/// codes + per-row scales quantized from them, and those codes dequantized
/// to fp32 (code x scale): what the int8 kernels must compute with.
struct Int8Layer {
  int64_t pages, pageSize, kvHeads, dk, dv;
  std::vector<float> kF, vF, kDeq, vDeq, kS, vS;
  std::vector<int8_t> kQ, vQ;
  void *kFp, *vFp, *kDp, *vDp, *kQp, *vQp;
  float *kSp, *vSp;
  hyrt_kv_cache_v0 exact, dequant, int8;

  Int8Layer(int64_t pages_, int64_t pageSize_, int64_t kvHeads_, int64_t dk_, int64_t dv_,
            std::mt19937 &rng, float range = 1.0f)
      : pages(pages_), pageSize(pageSize_), kvHeads(kvHeads_), dk(dk_), dv(dv_) {
    std::uniform_real_distribution<float> d(-range, range);
    const int64_t rows = pages * pageSize * kvHeads;
    for (auto [f, deq, q, s, dim] : {std::tuple{&kF, &kDeq, &kQ, &kS, dk},
                                     std::tuple{&vF, &vDeq, &vQ, &vS, dv}}) {
      if (dim == 0)
        continue;
      f->resize(size_t(rows * dim));
      for (float &x : *f)
        x = d(rng);
      // Rows of very different magnitudes: per-row scales must not mix.
      for (int64_t r = 0; r < rows; r += 3)
        for (int64_t i = 0; i < dim; ++i)
          (*f)[size_t(r * dim + i)] *= 0.01f;
      q->resize(f->size());
      deq->resize(f->size());
      s->resize(size_t(rows));
      for (int64_t r = 0; r < rows; ++r) {
        (*s)[size_t(r)] = hyrt::quantizeKvRow(f->data() + r * dim, dim, q->data() + r * dim);
        for (int64_t i = 0; i < dim; ++i)
          (*deq)[size_t(r * dim + i)] =
              hyrt::dequantKv((*q)[size_t(r * dim + i)], (*s)[size_t(r)]);
      }
    }
    kFp = kF.data();
    vFp = dv ? vF.data() : nullptr;
    kDp = kDeq.data();
    vDp = dv ? vDeq.data() : nullptr;
    kQp = kQ.data();
    vQp = dv ? vQ.data() : nullptr;
    kSp = kS.data();
    vSp = dv ? vS.data() : nullptr;
    exact = {1, pages, pageSize, kvHeads, dk, dv, &kFp, dv ? &vFp : nullptr, HYRT_KV_F32};
    dequant = {1, pages, pageSize, kvHeads, dk, dv, &kDp, dv ? &vDp : nullptr, HYRT_KV_F32};
    int8 = {1,     pages, pageSize, kvHeads, dk, dv, &kQp, dv ? &vQp : nullptr, HYRT_KV_INT8,
            &kSp,  dv ? &vSp : nullptr};
  }
};

struct Step {
  std::vector<int32_t> tokens, positions, seqs, start, len, prefix;
  hyrt_step_v0 abi;
  Step(std::vector<int32_t> positions_, std::vector<int32_t> seqs_, std::vector<int32_t> &blocks,
       int64_t maxPages)
      : positions(std::move(positions_)), seqs(std::move(seqs_)) {
    const int64_t T = int64_t(positions.size());
    const int64_t S = *std::max_element(seqs.begin(), seqs.end()) + 1;
    tokens.assign(size_t(T), 5);
    start.assign(size_t(S), 0);
    len.assign(size_t(S), 0);
    prefix.assign(size_t(S), 0);
    for (int64_t t = T - 1; t >= 0; --t) {
      start[size_t(seqs[size_t(t)])] = int32_t(t);
      ++len[size_t(seqs[size_t(t)])];
    }
    abi = {T, S, tokens.data(), positions.data(), seqs.data(), start.data(), len.data(),
           prefix.data(), blocks.data(), maxPages, nullptr, 0, nullptr};
  }
};

/// Keeps the int8 cache on the fp32 kernels while alive (hosts with AVX-512
/// BF16 otherwise take the bf16 dot-product kernels for head dims that are
/// multiples of 32: CpuPagedAttentionInt8Bf16Dots below), so that the fp32
/// kernels, which hosts without it run, stay checked to their tolerance.
struct PinFp32Kernels {
  PinFp32Kernels() { hyrt::cpu::fp32AttentionOnly() = true; }
  ~PinFp32Kernels() { hyrt::cpu::fp32AttentionOnly() = false; }
};

std::vector<float> randomQueries(int64_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> q(static_cast<size_t>(n));
  for (float &x : q)
    x = d(rng);
  return q;
}

/// hyrt_cpu_paged_attention on the int8 cache against the reference on the
/// dequantized values: the same numbers, so the tolerance is fp32
/// accumulation against the reference's double (as for fp32 caches).
void expectMatchesDequantReference(const Int8Layer &c, Step &s, int64_t heads, float scale,
                                   int64_t kvSplits, std::mt19937 &rng,
                                   const std::string &what) {
  const int64_t T = int64_t(s.positions.size());
  std::vector<float> q = randomQueries(T * heads * c.dk, rng);
  std::vector<float> want(size_t(T * heads * c.dv)), got(want.size(), -7.0f);
  hyrt_ref_paged_attention(&c.dequant, &s.abi, 0, q.data(), heads, scale, want.data());
  hyrt_cpu_paged_attention(&c.int8, &s.abi, 0, q.data(), heads, scale, got.data(), kvSplits);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
        << what << ", " << T << " tokens, element " << i;
}

// Head dims as in attention_test.cpp's CpuPagedAttention (dv = 12: the
// portable body only; multiples of 16: the AVX-512 GQA-group and
// row-blocked bodies), each also with the portable bodies forced.
class CpuPagedAttentionInt8
    : public ::testing::TestWithParam<std::tuple<std::pair<int64_t, int64_t>, bool>> {
protected:
  void SetUp() override { hyrt::cpu::portableOnly() = std::get<1>(GetParam()); }
  void TearDown() override { hyrt::cpu::portableOnly() = false; }
};

TEST_P(CpuPagedAttentionInt8, MatchesReferenceOnDequantizedRows) {
  const PinFp32Kernels pin;
  const auto [dk, dv] = std::get<0>(GetParam());
  const int64_t pages = 24, pageSize = 3, kvHeads = 2, heads = 6, maxPages = 10;
  std::mt19937 rng(7);
  Int8Layer c(pages, pageSize, kvHeads, dk, dv, rng);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 7 + 3) % pages);
  Step decode({17, 4}, {0, 1}, blocks, maxPages);
  expectMatchesDequantReference(c, decode, heads, 0.25f, 1, rng, "decode");
  Step extend({15, 16, 17}, {0, 0, 0}, blocks, maxPages);
  expectMatchesDequantReference(c, extend, heads, 0.25f, 1, rng, "extend");
}

INSTANTIATE_TEST_SUITE_P(
    HeadDims, CpuPagedAttentionInt8,
    ::testing::Combine(::testing::Values(std::pair<int64_t, int64_t>{16, 12},
                                         std::pair<int64_t, int64_t>{48, 80},
                                         std::pair<int64_t, int64_t>{64, 64}),
                       ::testing::Bool()),
    [](const auto &info) {
      const auto dims = std::get<0>(info.param);
      return "dk" + std::to_string(dims.first) + "_dv" + std::to_string(dims.second) +
             (std::get<1>(info.param) ? "_portable" : "_native");
    });

// The row-blocked kernel's int8 path: every group size, value widths on
// and off the 16-lane grid (masked int8 loads), decode tokens and an
// extend block whose key/value rows are widened once for 8 tokens.
TEST(CpuPagedAttentionInt8Rows, EveryGroupAndValueWidthMatchesReference) {
  const PinFp32Kernels pin;
  if (!hostHasRowsKernel())
    GTEST_SKIP() << "no AVX-512F/BW/VL on this host: the row-blocked kernel cannot run";
  const int64_t pages = 40, pageSize = 5, kvHeads = 2, maxPages = 20;
  std::mt19937 rng(3);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 11 + 5) % pages);
  for (int64_t group : {1, 2, 4, 8, 16})
    for (int64_t dv : {8, 40, 64, 128}) {
      const int64_t dk = dv == 8 ? 8 : dv == 40 ? 24 : dv;
      Int8Layer c(pages, pageSize, kvHeads, dk, dv, rng);
      std::vector<int32_t> extendPos, extendSeq;
      for (int32_t p = 21; p < 40; ++p) {
        extendPos.push_back(p);
        extendSeq.push_back(0);
      }
      extendPos.push_back(9);
      extendSeq.push_back(1);
      const std::string what = "group " + std::to_string(group) + " dv " + std::to_string(dv);
      Step decode({0, 16, 37, 8}, {0, 1, 1, 0}, blocks, maxPages);
      expectMatchesDequantReference(c, decode, group * kvHeads, 0.3f, 1, rng, what + " decode");
      Step extend(extendPos, extendSeq, blocks, maxPages);
      expectMatchesDequantReference(c, extend, group * kvHeads, 0.3f, 1, rng, what + " extend");
    }
}

// Flash decoding over an int8 cache: positions 1500 and 300 split into KV
// ranges (partials merged), against the reference on the dequantized rows.
TEST(CpuPagedAttentionInt8Splits, SplitDecodeMatchesReference) {
  const PinFp32Kernels pin;
  if (!hostHasRowsKernel())
    GTEST_SKIP() << "no AVX-512F/BW/VL on this host: splits run on the row-blocked kernel only";
  const int64_t pageSize = 16, kvHeads = 2, maxPages = 100, pages = 2 * maxPages;
  std::mt19937 rng(9);
  Int8Layer c(pages, pageSize, kvHeads, 64, 64, rng, 2.0f);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 37 + 11) % pages);
  Step decode({1500, 300}, {0, 1}, blocks, maxPages);
  expectMatchesDequantReference(c, decode, 8, 0.125f, 8, rng, "split decode");
}

// The bf16 dot-product kernels over an int8 cache (hosts with AVX-512 BF16,
// head dims multiples of 32): the codes widened to bf16 exactly, the keys'
// scales applied to the scores, the values' to the probabilities before
// their rounding. The bound of attention_bf16_test.cpp holds with the
// dequantized rows: per (token, head) with scaled query qs, E = 2^-9
// max_j sum_d |qs_d| |k_jd|, V = max |v| over the dequantized values and
// D = 2^-13 the extend kernel's exp2 error,
//   |got - reference| <= V (e^(2E + 2D) - 1 + 2^-9) + 1e-5 (1 + |reference|).
// Rows of very different scales (Int8Layer: every third row 100x smaller)
// make a scale dropped or applied to the wrong row fail it by far. Decode
// tokens (whole, and split into ranges over several KV heads) and extend
// blocks across the kernel's 64-position blocks.
TEST(CpuPagedAttentionInt8Bf16Dots, DecodeExtendAndSplitsWithinTheDerivedBound) {
  if (!hyrt::cpu::hostHasAvx512Bf16())
    GTEST_SKIP() << "no AVX-512 BF16 on this host: an int8 cache runs the fp32 kernels "
                    "(the tests above)";
  // Extend blocks here on the bf16 kernel, also where the host has VNNI
  // (CpuPagedAttentionInt8Dots below checks that kernel).
  struct PinBf16 {
    PinBf16() { hyrt::cpu::int8AttentionDotsOff() = true; }
    ~PinBf16() { hyrt::cpu::int8AttentionDotsOff() = false; }
  } pin;
  const int64_t pageSize = 16, maxPages = 100, pages = 2 * maxPages;
  std::mt19937 rng(17);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 37 + 11) % pages);
  std::vector<int32_t> extendPos, extendSeq;
  for (int32_t p = 40; p < 150; ++p)
    extendPos.push_back(p), extendSeq.push_back(0);
  struct Shape {
    int64_t group, kvHeads, dk, dv;
  };
  for (const Shape &sh : {Shape{1, 2, 32, 32}, Shape{4, 2, 64, 64}, Shape{8, 3, 128, 128},
                          Shape{2, 1, 64, 96}}) {
    Int8Layer c(pages, pageSize, sh.kvHeads, sh.dk, sh.dv, rng, 2.0f);
    float kMax = 0, vMax = 0;
    for (float x : c.kDeq)
      kMax = std::max(kMax, std::fabs(x));
    for (float x : c.vDeq)
      vMax = std::max(vMax, std::fabs(x));
    const int64_t heads = sh.group * sh.kvHeads;
    const float scale = 0.125f;
    Step decode({1500, 300, 7}, {0, 1, 1}, blocks, maxPages);
    Step extend(extendPos, extendSeq, blocks, maxPages);
    for (auto [step, splits] : {std::pair{&decode, int64_t(1)}, std::pair{&decode, int64_t(3)},
                                std::pair{&extend, int64_t(1)}}) {
      const int64_t T = int64_t(step->positions.size());
      std::vector<float> q = randomQueries(T * heads * sh.dk, rng);
      std::vector<float> want(size_t(T * heads * sh.dv)), got(want.size(), -7.0f);
      hyrt_ref_paged_attention(&c.dequant, &step->abi, 0, q.data(), heads, scale, want.data());
      hyrt_cpu_paged_attention(&c.int8, &step->abi, 0, q.data(), heads, scale, got.data(),
                               splits);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < heads; ++h) {
          double q1 = 0;
          for (int64_t i = 0; i < sh.dk; ++i)
            q1 += std::fabs(double(scale) * q[size_t((t * heads + h) * sh.dk + i)]);
          const double E = std::ldexp(q1 * kMax, -9);
          const double D = std::ldexp(1.0, -13); // exp2ForBf16 (vec_avx512.h)
          const double bound = vMax * (std::expm1(2 * E + 2 * D) + std::ldexp(1.0, -9));
          for (int64_t i = 0; i < sh.dv; ++i) {
            const size_t e = size_t((t * heads + h) * sh.dv + i);
            ASSERT_NEAR(got[e], want[e], bound + 1e-5 * (1 + std::fabs(want[e])))
                << "group " << sh.group << ", " << sh.kvHeads << " KV heads, dk " << sh.dk
                << " dv " << sh.dv << ", " << T << " tokens, " << splits << " splits: token "
                << t << " (position " << step->positions[size_t(t)] << "), head " << h
                << ", dim " << i;
          }
        }
    }
  }
}

// The int8 dot-product kernel (extend blocks of an int8 cache, hosts with
// AVX-512 VNNI, head dims multiples of 16: whole 64-dim chunks and the
// padded ones of 16 and 48) against the reference on the
// dequantized rows. Per (token, head) with scaled query qs, its int8 step
// sq = max |qs| / 127 and the dequantized keys k_j:
// - each score moves by at most delta = sq / 2 max_j |k_j|_1 (+ the fp32
//   rounding of qs before its codes), each exponential by the relative
//   D = 2^-13 of exp2ForBf16: the weights move by at most
//   e^(2 delta + 2 D) - 1 in L1, the output by V times that (V = max |v|);
// - each block b of 128 positions (the kernel's) rounds its weighted
//   probabilities
//   w_j = p_j s_vj to steps of max_(j in b) w_j / 255: with the reference
//   weights p_j (normalized; the kernel's are within e^(2 delta + 2 D) of
//   them) output dim i moves by at most
//   e^(2 delta + 2 D) sum_b max_(j in b) (p_j s_vj) / 510 sum_(j in b) |v8_ji|
//   (v8 the value codes; every rounding error of a block aligned).
// Plus fp32 accumulation. Rows of very different scales (Int8Layer) make a
// scale dropped, applied to the wrong row or a wrong dim order fail it by
// far. Two sequences: one extending at position 40 across the kernel's
// 128-position blocks and its token blocks, one from position 0. Decode
// tokens too (whole and split): the bf16 decode kernel, whose keys (and,
// dv a multiple of 64, values) are int8 dot products on such hosts for
// groups of 4 and 8 heads (bound below).
TEST(CpuPagedAttentionInt8Dots, ExtendAndDecodeWithinTheDerivedBound) {
  if (!hyrt::cpu::hostHasAvx512Vnni())
    GTEST_SKIP() << "no AVX-512 VNNI on this host: an int8 cache runs the bf16 or fp32 "
                    "kernels (the tests above)";
  const int64_t pageSize = 16, maxPages = 20, pages = 2 * maxPages;
  std::mt19937 rng(23);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 13 + 5) % pages);
  std::vector<int32_t> pos, seq;
  for (int32_t p = 40; p < 300; ++p)
    pos.push_back(p), seq.push_back(0);
  for (int32_t p = 0; p < 21; ++p)
    pos.push_back(p), seq.push_back(1);
  Step extend(pos, seq, blocks, maxPages);
  Step decode({290, 150, 7}, {0, 1, 1}, blocks, maxPages);
  struct Shape {
    int64_t group, kvHeads, dk, dv;
  };
  for (const Shape &sh : {Shape{1, 2, 64, 64}, Shape{4, 2, 64, 128}, Shape{8, 3, 128, 128},
                          Shape{2, 1, 192, 64}, Shape{2, 2, 16, 16}, Shape{1, 1, 96, 48}}) {
    Int8Layer c(pages, pageSize, sh.kvHeads, sh.dk, sh.dv, rng, 2.0f);
    float vMax = 0;
    for (float x : c.vDeq)
      vMax = std::max(vMax, std::fabs(x));
    const int64_t heads = sh.group * sh.kvHeads;
    const float scale = 0.125f;
    for (auto [step, splits] : {std::pair{&extend, int64_t(1)}, std::pair{&decode, int64_t(1)},
                                std::pair{&decode, int64_t(3)}}) {
      const bool isDecode = step == &decode;
      const std::vector<int32_t> &P = step->positions;
      const int64_t T = int64_t(P.size());
      std::vector<float> q = randomQueries(T * heads * sh.dk, rng);
      std::vector<float> want(size_t(T * heads * sh.dv)), got(want.size(), -7.0f);
      hyrt_ref_paged_attention(&c.dequant, &step->abi, 0, q.data(), heads, scale, want.data());
      hyrt_cpu_paged_attention(&c.int8, &step->abi, 0, q.data(), heads, scale, got.data(),
                               splits);
      for (int64_t t = 0; t < T; ++t) {
        const int64_t n = P[size_t(t)] + 1;
        const int32_t *table = &blocks[size_t(step->seqs[size_t(t)] * maxPages)];
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t kvh = h / sh.group;
          auto rowOf = [&](int64_t j) { // element row of position j, KV head kvh
            return (int64_t(table[j / pageSize]) * pageSize * sh.kvHeads + j % pageSize) +
                   kvh * pageSize;
          };
          const float *qr = &q[size_t((t * heads + h) * sh.dk)];
          double qMax = 0, q1 = 0;
          for (int64_t d = 0; d < sh.dk; ++d)
            qMax = std::max(qMax, std::fabs(double(scale) * qr[d])),
            q1 += std::fabs(double(scale) * qr[d]);
          std::vector<double> s(static_cast<size_t>(n));
          double k1Max = 0, kAbsMax = 0, sMax = -INFINITY;
          for (int64_t j = 0; j < n; ++j) {
            const float *k = &c.kDeq[size_t(rowOf(j) * sh.dk)];
            double dot = 0, k1 = 0;
            for (int64_t d = 0; d < sh.dk; ++d)
              dot += double(scale) * qr[d] * k[d], k1 += std::fabs(k[d]),
                  kAbsMax = std::max(kAbsMax, double(std::fabs(k[d])));
            s[size_t(j)] = dot;
            k1Max = std::max(k1Max, k1);
            sMax = std::max(sMax, dot);
          }
          double sum = 0;
          for (double &x : s)
            sum += (x = std::exp(x - sMax));
          const double delta = qMax / 127 / 2 * k1Max + std::ldexp(q1 * kAbsMax, -21);
          const double D = std::ldexp(1.0, -13);
          std::vector<double> window(static_cast<size_t>(n), 0.0);
          for (int64_t j = 0; isDecode && j < n; ++j)
            for (int64_t k = std::max<int64_t>(0, j - 63); k < std::min(n, j + 64); ++k)
              window[size_t(j)] =
                  std::max(window[size_t(j)], s[size_t(k)] / sum * c.vS[size_t(rowOf(k))]);
          for (int64_t i = 0; i < sh.dv; ++i) {
            const size_t e = size_t((t * heads + h) * sh.dv + i);
            double bound;
            if (isDecode) {
              // Decode tokens: the bf16 decode kernel (attention_bf16_test.cpp's
              // bound: E from the queries' bf16 rounding, 2^-9 from the
              // probabilities'), whose keys for groups of 4 or 8 heads are
              // int8 dot products (delta instead of E) and with dv a multiple
              // of 64 its values too: uint8 codes per head and block of up
              // to 64 positions (a split's blocks start at its range, so each
              // position takes the largest weighted probability within 63
              // of it: window[j]). Every term taken: a bound for either form.
              const double E = std::ldexp(q1 * kAbsMax, -9);
              double pq = 0;
              for (int64_t j = 0; j < n; ++j)
                pq += window[size_t(j)] * std::abs(int(c.vQ[size_t(rowOf(j) * sh.dv + i)]));
              bound = vMax * (std::expm1(2 * (delta + E) + 2 * D) + std::ldexp(1.0, -9)) +
                      std::exp(2 * (delta + E) + 2 * D) * pq / 510 * (1 + std::ldexp(1.0, -10));
            } else {
              const double grow = std::exp(2 * delta + 2 * D);
              double pq = 0;
              for (int64_t b = 0; b < n; b += 128) {
                double top = 0, codes = 0;
                for (int64_t j = b; j < std::min(n, b + 128); ++j) {
                  top = std::max(top, s[size_t(j)] / sum * c.vS[size_t(rowOf(j))]);
                  codes += std::abs(int(c.vQ[size_t(rowOf(j) * sh.dv + i)]));
                }
                pq += top / 510 * (1 + std::ldexp(1.0, -10)) * codes;
              }
              bound = (grow - 1) * vMax + grow * pq;
            }
            ASSERT_NEAR(got[e], want[e], bound + 1e-5 * (1 + std::fabs(want[e])))
                << (isDecode ? "decode" : "extend") << ", " << splits << " splits, group "
                << sh.group << ", " << sh.kvHeads << " KV heads, dk " << sh.dk << " dv "
                << sh.dv << ": token " << t << " (position " << P[size_t(t)] << "), head " << h
                << ", dim " << i;
          }
        }
      }
    }
  }
}

// Against the unquantized cache. Per head, with scores perturbed by at most
// delta each (|q|_1 * scale * max_j s_k[j] / 2) and values by at most
// max_j s_v[j] / 2 per element, the softmax weights move by at most
// e^(2 delta) - 1 in L1, so
//   |o_int8 - o| <= max_j s_v[j] / 2 + (e^(2 delta) - 1) max |v|
// (plus fp32 accumulation). On hosts with AVX-512 BF16 the native body is
// the bf16 dot-product kernel, whose own rounding (queries and weighted
// probabilities to bf16) adds at most V' (e^(2E) - 1 + 2^-9), with V' and
// E those of CpuPagedAttentionInt8Bf16Dots below. Checked for every output,
// on both bodies.
TEST(CpuPagedAttentionInt8, WithinTheQuantizationBoundOfTheExactCache) {
  // The three tokens form an extend block: kept off the int8 dot-product
  // kernel, whose own rounding CpuPagedAttentionInt8Dots bounds.
  hyrt::cpu::int8AttentionDotsOff() = true;
  for (bool portable : {false, true}) {
    hyrt::cpu::portableOnly() = portable;
    const int64_t pages = 30, pageSize = 4, kvHeads = 2, heads = 4, dk = 32, dv = 32,
                  maxPages = 30;
    std::mt19937 rng(21);
    Int8Layer c(pages, pageSize, kvHeads, dk, dv, rng);
    std::vector<int32_t> blocks(maxPages);
    for (int64_t i = 0; i < maxPages; ++i)
      blocks[size_t(i)] = int32_t((i * 7 + 2) % pages);
    Step s({100, 101, 102}, {0, 0, 0}, blocks, maxPages);
    const float scale = 0.2f;
    std::vector<float> q = randomQueries(3 * heads * dk, rng);
    std::vector<float> exact(static_cast<size_t>(3 * heads * dv)), got(exact.size());
    hyrt_ref_paged_attention(&c.exact, &s.abi, 0, q.data(), heads, scale, exact.data());
    hyrt_cpu_paged_attention(&c.int8, &s.abi, 0, q.data(), heads, scale, got.data(), 1);
    const float maxSk = *std::max_element(c.kS.begin(), c.kS.end());
    const float maxSv = *std::max_element(c.vS.begin(), c.vS.end());
    float maxV = 0, maxVq = 0, maxKq = 0;
    for (float v : c.vF)
      maxV = std::max(maxV, std::fabs(v));
    for (float v : c.vDeq)
      maxVq = std::max(maxVq, std::fabs(v));
    for (float k : c.kDeq)
      maxKq = std::max(maxKq, std::fabs(k));
    const bool bf16Dots = hyrt::cpu::hostHasAvx512Bf16(); // dk, dv = 32: on its grid
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        double q1 = 0;
        for (int64_t i = 0; i < dk; ++i)
          q1 += std::fabs(q[size_t((t * heads + h) * dk + i)]);
        const double delta = q1 * scale * maxSk / 2;
        const double E = std::ldexp(q1 * scale * maxKq, -9);
        const double bound = maxSv / 2 + std::expm1(2 * delta) * maxV + 1e-5 +
                             (bf16Dots ? maxVq * (std::expm1(2 * E) + std::ldexp(1.0, -9)) : 0);
        for (int64_t i = 0; i < dv; ++i) {
          const size_t e = size_t((t * heads + h) * dv + i);
          ASSERT_LE(std::fabs(got[e] - exact[e]), bound)
              << (portable ? "portable" : "native") << " token " << t << " head " << h;
        }
      }
  }
  hyrt::cpu::portableOnly() = false;
  hyrt::cpu::int8AttentionDotsOff() = false;
}

// The fused decode append writes the same codes and scales as the
// reference append (one quantizer), then attends over them.
TEST(CpuPagedAttentionInt8, FusedAppendWritesTheReferenceCodes) {
  const PinFp32Kernels pin;
  for (bool portable : {false, true}) {
    hyrt::cpu::portableOnly() = portable;
    const int64_t pages = 12, pageSize = 4, kvHeads = 2, heads = 8, dk = 64, dv = 64,
                  maxPages = 6;
    std::mt19937 rng(5);
    Int8Layer a(pages, pageSize, kvHeads, dk, dv, rng), b(pages, pageSize, kvHeads, dk, dv, rng);
    b.kQ = a.kQ;
    b.vQ = a.vQ;
    b.kS = a.kS;
    b.vS = a.vS;
    std::vector<int32_t> blocks(2 * maxPages);
    for (int64_t i = 0; i < 2 * maxPages; ++i)
      blocks[size_t(i)] = int32_t((i * 5 + 1) % pages);
    Step s({13, 6}, {0, 1}, blocks, maxPages);
    std::vector<float> k = randomQueries(2 * kvHeads * dk, rng),
                       v = randomQueries(2 * kvHeads * dv, rng),
                       q = randomQueries(2 * heads * dk, rng);
    k[3] = 0; // a zero element among others; and a whole zero row:
    std::fill(v.begin() + dv, v.begin() + 2 * dv, 0.0f);
    std::vector<float> want(static_cast<size_t>(2 * heads * dv)), got(want.size());
    hyrt_ref_kv_cache_append(&a.int8, &s.abi, 0, k.data(), v.data());
    hyrt_ref_paged_attention(&a.int8, &s.abi, 0, q.data(), heads, 0.125f, want.data());
    hyrt_cpu_paged_attention_append(&b.int8, &s.abi, 0, k.data(), v.data(), q.data(), heads,
                                    0.125f, got.data(), 1);
    EXPECT_EQ(a.kQ, b.kQ);
    EXPECT_EQ(a.vQ, b.vQ);
    EXPECT_EQ(0, std::memcmp(a.kS.data(), b.kS.data(), a.kS.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(a.vS.data(), b.vS.data(), a.vS.size() * sizeof(float)));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
          << (portable ? "portable" : "native") << ", element " << i;
  }
  hyrt::cpu::portableOnly() = false;
}

/// MLA over an int8 latent cache: the absorbed kernel (and the plain form
/// where forced) against the reference plain form on the same cache (it
/// dequantizes every row, code x scale). Tolerance as in
/// mla_attention_test.cpp (same values, re-associated fp32 sums).
void expectMlaMatches(const Int8Layer &c, int64_t heads, int64_t nope, int64_t rope, int64_t v,
                      Step &s, int64_t kvSplits, int64_t plainForm, std::mt19937 &rng,
                      const std::string &what) {
  const int64_t rank = c.dk - rope, T = int64_t(s.positions.size());
  std::vector<float> qn = randomQueries(T * heads * nope, rng),
                     qp = randomQueries(T * heads * rope, rng),
                     kvb = randomQueries(heads * (nope + v) * rank, rng);
  for (float &x : kvb)
    x *= 0.2f;
  const float scale = 1.0f / std::sqrt(float(nope + rope));
  std::vector<float> want(static_cast<size_t>(T * heads * v)), got(want.size(), -7.0f);
  hyrt_ref_mla_attention(&c.int8, &s.abi, 0, qn.data(), qp.data(), kvb.data(), heads, nope,
                         rope, v, rank, scale, want.data());
  hyrt_cpu_mla_attention(&c.int8, &s.abi, 0, qn.data(), qp.data(), kvb.data(), 0, heads, nope,
                         rope, v, rank, scale, got.data(), kvSplits, plainForm, plainForm);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-2) << what << ", element " << i;
}

class CpuMlaAttentionInt8 : public ::testing::TestWithParam<hyc::test::Bodies> {
protected:
  void SetUp() override {
    const std::string missing = hyc::test::bodiesMissing(GetParam());
    if (!missing.empty())
      GTEST_SKIP() << missing;
    hyc::test::pinBodies(GetParam());
  }
  void TearDown() override { hyc::test::unpinBodies(); }
};

TEST_P(CpuMlaAttentionInt8, DecodeExtendAndPlainMatchTheReference) {
  std::mt19937 rng(13);
  const int64_t heads = 8, nope = 16, rope = 8, v = 16, rank = 64, pageSize = 7,
                maxPages = 100, pages = 2 * maxPages;
  Int8Layer c(pages, pageSize, 1, rank + rope, 0, rng);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 37 + 5) % pages);
  for (int32_t n : {1, 17, 600})
    for (int64_t splits : {1, 4}) {
      Step decode({n - 1, 9}, {0, 1}, blocks, maxPages);
      expectMlaMatches(c, heads, nope, rope, v, decode, splits, 0, rng,
                       "decode at " + std::to_string(n) + ", splits " + std::to_string(splits));
    }
  Step extend({95, 96, 97, 98, 99}, {0, 0, 0, 0, 0}, blocks, maxPages);
  expectMlaMatches(c, heads, nope, rope, v, extend, 1, 0, rng, "absorbed extend");
  expectMlaMatches(c, heads, nope, rope, v, extend, 1, -1, rng, "plain extend");
}

INSTANTIATE_TEST_SUITE_P(Bodies, CpuMlaAttentionInt8, hyc::test::allBodies(),
                         [](const auto &info) {
                           return std::string(hyc::test::bodiesName(info.param));
                         });

} // namespace
