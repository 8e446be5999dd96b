// hyrt_cpu_paged_attention against the reference kernel it must reproduce:
// GQA, several sequences with scrambled block tables, odd page size; and
// the fused append + attention kernel against the two calls it replaces.
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"
#include "runtime/cpu/attention/attention_group.h"
#include "runtime/cpu/host_isa.h"
#include "runtime/reference/bf16.h"
#include "kv_cache_pair.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

/// One step of tokens at `positions` of sequences `seqs` (two sequences,
/// block tables `blocks`) with random queries: hyrt_cpu_paged_attention on
/// `cache` against the reference on `ref` (the same values in fp32), to
/// fp32-accumulation accuracy against the double reference.
void expectMatchesReference(const hyrt_kv_cache_v0 &ref, const hyrt_kv_cache_v0 &cache,
                            std::vector<int32_t> positions, std::vector<int32_t> seqs,
                            std::vector<int32_t> &blocks, int64_t maxPages, int64_t layer,
                            int64_t heads, float scale, std::mt19937 &rng,
                            const std::string &what) {
  std::uniform_real_distribution<float> d(-1, 1);
  const int64_t T = positions.size(), dk = ref.k_head_dim, dv = ref.v_head_dim;
  std::vector<int32_t> tokens(T, 5), start = {0, 1}, len = {1, 1}, prefix = {0, 0};
  hyrt_step_v0 step{T, 2, tokens.data(), positions.data(), seqs.data(), start.data(),
                    len.data(), prefix.data(), blocks.data(), maxPages, nullptr};
  std::vector<float> q(T * heads * dk);
  for (float &x : q)
    x = d(rng);
  std::vector<float> want(T * heads * dv), got(T * heads * dv, -7.0f);
  hyrt_ref_paged_attention(&ref, &step, layer, q.data(), heads, scale, want.data());
  hyrt_cpu_paged_attention(&cache, &step, layer, q.data(), heads, scale, got.data(), 1);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
        << what << ", " << T << " tokens, layer " << layer << ", element " << i;
}

// Head dims (dk, dv): dv = 12 takes the portable kernel; multiples of 16
// take the AVX-512 one where the host has it (48: one two-chain step of the
// key dot; 32: only the odd slice; dv = 80: four output slices then one).
// Each with an fp32 and a bf16 cache: the bf16 kernels must equal the
// reference run on the same values widened to fp32 (widening is exact), to
// the same fp32-accumulation tolerance.
class CpuPagedAttention
    : public ::testing::TestWithParam<std::tuple<std::pair<int64_t, int64_t>, bool, bool>> {
protected:
  // The third parameter forces the portable bodies on an AVX-512 host, so
  // both kinds are checked on every machine.
  // The bf16 cache's extend blocks stay on the fp32 kernels here (exact
  // widening, fp32 tolerance); attention_bf16_test.cpp checks the bf16
  // dot-product kernel those blocks take on AVX-512 BF16 hosts.
  void SetUp() override {
    hyrt::cpu::portableOnly() = std::get<2>(GetParam());
    hyrt::cpu::fp32AttentionOnly() = true;
  }
  void TearDown() override {
    hyrt::cpu::portableOnly() = false;
    hyrt::cpu::fp32AttentionOnly() = false;
  }
};

TEST_P(CpuPagedAttention, MatchesReference) {
  const auto [dims, bf16, portable] = GetParam();
  (void)portable;
  const auto [dk, dv] = dims;
  if (dk % 16 == 0 && dv % 16 == 0 && !__builtin_cpu_supports("avx512f"))
    std::printf("note: no AVX-512F here, dk=%lld dv=%lld runs the portable kernel\n",
                static_cast<long long>(dk), static_cast<long long>(dv));
  const int64_t layers = 2, pages = 24, pageSize = 3, kvHeads = 2;
  const int64_t heads = 6, maxPages = 10;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<std::vector<float>> k(layers), v(layers);
  std::vector<std::vector<uint16_t>> kh(layers), vh(layers);
  std::vector<void *> kp, vp, khp, vhp;
  for (int64_t l = 0; l < layers; ++l) {
    for (auto [f, h, n] : {std::tuple{&k[l], &kh[l], dk}, std::tuple{&v[l], &vh[l], dv}}) {
      f->resize(pages * pageSize * kvHeads * n);
      h->resize(f->size());
      for (size_t i = 0; i < f->size(); ++i) {
        (*h)[i] = hyrt::toBf16(d(rng));
        (*f)[i] = hyrt::fromBf16((*h)[i]); // the reference reads these
      }
    }
    kp.push_back(k[l].data());
    vp.push_back(v[l].data());
    khp.push_back(kh[l].data());
    vhp.push_back(vh[l].data());
  }
  hyrt_kv_cache_v0 kv{layers, pages, pageSize, kvHeads, dk, dv, kp.data(), vp.data(),
                      HYRT_KV_F32};
  hyrt_kv_cache_v0 kvh{layers, pages, pageSize, kvHeads, dk, dv, khp.data(), vhp.data(),
                       HYRT_KV_BF16};
  // Two sequences decoding at positions 17 and 4, plus an extend-style step
  // of three tokens of sequence 0 at positions 15..17.
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[i] = int32_t((i * 7 + 3) % pages);
  for (auto [positions, seqs] :
       {std::pair{std::vector<int32_t>{17, 4}, std::vector<int32_t>{0, 1}},
        std::pair{std::vector<int32_t>{15, 16, 17}, std::vector<int32_t>{0, 0, 0}}})
    for (int64_t l = 0; l < layers; ++l)
      expectMatchesReference(kv, bf16 ? kvh : kv, positions, seqs, blocks, maxPages, l, heads,
                             0.25f, rng, bf16 ? "bf16" : "f32");
}

using HeadDims = std::pair<int64_t, int64_t>;
std::string headDimsName(
    const ::testing::TestParamInfo<std::tuple<HeadDims, bool, bool>> &info) {
  const HeadDims dims = std::get<0>(info.param);
  return "dk" + std::to_string(dims.first) + "_dv" + std::to_string(dims.second) +
         (std::get<1>(info.param) ? "_bf16" : "_f32") +
         (std::get<2>(info.param) ? "_portable" : "");
}

INSTANTIATE_TEST_SUITE_P(HeadDims, CpuPagedAttention,
                         ::testing::Combine(::testing::Values(HeadDims{16, 12}, HeadDims{48, 80},
                                                              HeadDims{32, 16}),
                                            ::testing::Bool(), ::testing::Bool()),
                         headDimsName);

// The row-blocked AVX-512 kernel (groups of 1, 2, 4, 8, 16 query heads per
// KV head; dv up to 128, masked tails) against the reference: every group
// size with value widths on and off the 16-lane grid, fp32 and bf16 caches, positions that end inside a
// key block (R = 16 / G rows) and inside a page of 5 rows, more KV heads
// than one so head-major page offsets are exercised, and blocks of
// consecutive tokens sharing each row load (extend). Same tolerance as
// above: fp32 accumulation against the double reference.
namespace {
/// `portable`: no AVX-512 bodies (the AVX2 row-blocked kernel where the
/// host has AVX2 + FMA); `perToken`: not that kernel either (the per-token
/// portable bodies).
void everyGroupMatchesReference(bool portable, bool perToken) {
  // Extend blocks of the bf16 cache on this kernel too (not the bf16
  // dot-product one): see attention_bf16_test.cpp.
  hyrt::cpu::fp32AttentionOnly() = true;
  hyrt::cpu::portableOnly() = portable;
  hyrt::cpu::perTokenAttentionOnly() = perToken;
  struct Restore {
    ~Restore() {
      hyrt::cpu::fp32AttentionOnly() = false, hyrt::cpu::portableOnly() = false;
      hyrt::cpu::perTokenAttentionOnly() = false;
    }
  } restore;
  const int64_t pages = 40, pageSize = 5, kvHeads = 2, maxPages = 20;
  std::mt19937 rng(3);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[i] = int32_t((i * 11 + 5) % pages);
  for (int64_t group : {1, 2, 4, 8, 16})
    for (int64_t dv : {8, 32, 40, 64, 128})
      for (bool bf16 : {false, true}) {
        // dk: on the grid, and off it (8: one masked slice; 24: one and a half).
        const int64_t dk = dv == 32 ? 48 : dv == 8 ? 8 : dv == 40 ? 24 : dv,
                      heads = group * kvHeads;
        const hyc::test::KvCachePair kv(pages, pageSize, kvHeads, dk, dv, rng);
        const hyrt_kv_cache_v0 &kvF = kv.f32, &kvH = kv.bf16;
        // Single tokens at scattered positions (decode-like), then an
        // extend-like step: 19 consecutive tokens of sequence 0 (blocks of
        // 8, 8 and 3 tokens; the last block's tokens end inside a key block)
        // and one token of sequence 1.
        std::vector<int32_t> extendPos(19), extendSeq(19, 0);
        for (int i = 0; i < 19; ++i)
          extendPos[size_t(i)] = 21 + i;
        extendPos.push_back(9);
        extendSeq.push_back(1);
        for (auto [positions, seqs] :
             {std::pair{std::vector<int32_t>{0, 16, 37, 8}, std::vector<int32_t>{0, 1, 1, 0}},
              std::pair{extendPos, extendSeq}})
          expectMatchesReference(kvF, bf16 ? kvH : kvF, positions, seqs, blocks, maxPages, 0,
                                 heads, 0.3f, rng,
                                 "group " + std::to_string(group) + " dv " +
                                     std::to_string(dv) + (bf16 ? " bf16" : " f32"));
      }
}
} // namespace

TEST(CpuPagedAttentionRows, EveryGroupAndValueWidthMatchesReference) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "no AVX-512F/BW/VL on this host: the row-blocked kernel cannot run";
  everyGroupMatchesReference(false, false);
}

// The same shapes on the row-blocked kernel's AVX2 form (what hosts without
// AVX-512 and the avx2 variant run): groups 1, 2, 4 and 8 (eight-lane key
// steps of 8 / G rows ending inside a page and inside a step; value passes
// of 1, 2, 4 and 8 slices: dv 8, 40 (5 slices), 32, 64, 128); group 16
// falls back to the per-token bodies.
TEST(CpuPagedAttentionRows, Avx2FormMatchesReferenceForEveryGroup) {
  if (!hyrt::cpu::hostHasAvx2Fma())
    GTEST_SKIP() << "no AVX2 + FMA on this host: the AVX2 row-blocked kernel cannot run";
  everyGroupMatchesReference(true, false);
}

// The same shapes on the per-token portable bodies (group 16 on AVX2 hosts,
// every shape on hosts without AVX2): groups 1, 2, 4 and 8 with dk a
// multiple of 8 take the AVX2 key pass where the host has AVX2 + FMA
// (attention_keys_avx2.cpp: eight-row steps ending inside a page and inside
// a step), group 16 and the others the scalar one.
TEST(CpuPagedAttentionRows, PortableBodiesMatchReferenceForEveryGroup) {
  if (!hyrt::cpu::hostHasAvx2Fma())
    std::printf("note: no AVX2 + FMA here: every group takes the scalar key pass\n");
  everyGroupMatchesReference(true, true);
}

// Flash decoding: a decode token's positions split into KV ranges of at
// least 256, partial softmax results merged, against the reference and the
// unsplit kernel (same fp32-accumulation tolerance: the merge rescales
// each split's sums by e^(m_s - M) once).
// On the AVX-512 form, and on the AVX2 form (portableOnly): both write the
// partials' layout (kvSplitFloats) that the merge reads.
class CpuPagedAttentionSplits : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override { hyrt::cpu::portableOnly() = GetParam(); }
  void TearDown() override { hyrt::cpu::portableOnly() = false; }
};

TEST_P(CpuPagedAttentionSplits, SplitDecodeMatchesReference) {
  if (!GetParam() && (!__builtin_cpu_supports("avx512f") ||
                      !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl")))
    GTEST_SKIP() << "no AVX-512F/BW/VL on this host: the AVX-512 row-blocked kernel cannot run";
  if (GetParam() && !hyrt::cpu::hostHasAvx2Fma())
    GTEST_SKIP() << "no AVX2 + FMA on this host: the AVX2 row-blocked kernel cannot run";
  const int64_t pageSize = 16, kvHeads = 2, dk = 64, dv = 64, heads = 8, maxPages = 100;
  const int64_t pages = 2 * maxPages;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[i] = int32_t((i * 37 + 11) % pages);
  std::vector<float> k(pages * pageSize * kvHeads * dk), v(pages * pageSize * kvHeads * dv);
  for (auto *vec : {&k, &v})
    for (float &x : *vec)
      x = d(rng) * 2;
  void *kp = k.data(), *vp = v.data();
  hyrt_kv_cache_v0 kv{1, pages, pageSize, kvHeads, dk, dv, &kp, &vp, HYRT_KV_F32};
  // Positions 1500 (5 ranges of 256+ at most) and 300 (one), two sequences.
  std::vector<int32_t> positions = {1500, 300}, seqs = {0, 1}, tokens = {5, 5};
  std::vector<int32_t> start = {0, 1}, len = {1, 1}, prefix = {1500, 300};
  hyrt_step_v0 step{2, 2, tokens.data(), positions.data(), seqs.data(), start.data(),
                    len.data(), prefix.data(), blocks.data(), maxPages, nullptr};
  std::vector<float> q(2 * heads * dk);
  for (float &x : q)
    x = d(rng);
  std::vector<float> ref(2 * heads * dv), whole(2 * heads * dv);
  hyrt_ref_paged_attention(&kv, &step, 0, q.data(), heads, 0.125f, ref.data());
  hyrt_cpu_paged_attention(&kv, &step, 0, q.data(), heads, 0.125f, whole.data(), 1);
  for (int64_t splits : {2, 4, 16}) {
    std::vector<float> got(2 * heads * dv, -7.0f);
    hyrt_cpu_paged_attention(&kv, &step, 0, q.data(), heads, 0.125f, got.data(), splits);
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_NEAR(got[i], ref[i], 1e-5f * (1 + std::fabs(ref[i]))) << splits << " splits, " << i;
      ASSERT_NEAR(got[i], whole[i], 1e-5f * (1 + std::fabs(whole[i]))) << splits << " splits, " << i;
    }
    if (splits == 2) // the 300-position token is never split: bit for bit
      for (size_t i = heads * dv; i < got.size(); ++i)
        ASSERT_EQ(got[i], whole[i]) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, CpuPagedAttentionSplits, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return std::string(info.param ? "Avx2" : "Avx512");
                         });

// The AVX-512 softmax's exp against std::exp over the range softmax feeds
// it (x = score - max <= 0, down past float's underflow) and the special
// values. Bound: Cephes' expf polynomial has a documented peak relative
// error of 1.6e-7 on [-ln2/2, ln2/2] (n ln2 is exact with the split
// constant, 2^n by vscalefps is exact), plus 0.5 ulp (6e-8) for the last
// rounding: 2.2e-7, and 2^-149 absolute where the result is denormal.
// The AVX2 form's exp: the same polynomial, 2^n as two exact powers of two
// (their product's one rounding in the denormal range is within the same
// 2^-149 absolute), so the same bound.
namespace {
void expWithinTwoUlpOfStdExp(void (*expOf)(const float *, float *, int64_t)) {
  std::vector<float> x;
  for (float v = -110.0f; v <= 1.0f; v += 0.00731f)
    x.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {0.0f, -0.0f, -inf, std::nanf(""), 88.0f, -87.5f, -103.9f});
  std::vector<float> y(x.size());
  expOf(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::exp(x[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y[i])) << "exp(NaN) = " << y[i];
      continue;
    }
    EXPECT_LE(std::fabs(y[i] - want), 2.2e-7f * want + 1.5e-45f)
        << "x = " << x[i] << ": " << y[i] << " vs " << want;
  }
}
} // namespace

TEST(CpuSoftmaxExp, WithinTwoUlpOfStdExp) {
  if (!__builtin_cpu_supports("avx512f"))
    GTEST_SKIP() << "no AVX-512F on this host: the kernel using this exp cannot run";
  expWithinTwoUlpOfStdExp(hyrt::cpu::expAvx512);
}

TEST(CpuSoftmaxExp, Avx2FormWithinTwoUlpOfStdExp) {
  if (!hyrt::cpu::hostHasAvx2Fma())
    GTEST_SKIP() << "no AVX2 + FMA on this host: the kernel using this exp cannot run";
  expWithinTwoUlpOfStdExp(hyrt::cpu::expAvx2);
}

/// A cache pool of n random elements in [-1, 1] as fp32 or bf16 bytes.
std::vector<unsigned char> randomPool(size_t n, bool bf16, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<unsigned char> pool(n * (bf16 ? 2 : 4));
  for (size_t i = 0; i < n; ++i) {
    const float x = d(rng);
    if (bf16) {
      const uint16_t h = hyrt::toBf16(x);
      std::memcpy(pool.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(pool.data() + 4 * i, &x, 4);
    }
  }
  return pool;
}

// The fused append + attention against the reference append then the
// attention kernel, for an fp32 and a bf16 cache (the reference append
// rounds to bf16 as the fused one does: the caches must agree byte for byte).
TEST(CpuPagedAttentionAppend, EqualsAppendThenAttentionBitForBit) {
  const int64_t pages = 24, pageSize = 3, kvHeads = 2, dk = 16, dv = 12;
  const int64_t heads = 6, maxPages = 10;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[i] = int32_t((i * 7 + 3) % pages);
  // Decode (one token per sequence: each work item writes its own row and
  // attends) and a step with three tokens of one sequence (rows written
  // first, since token 17 reads the rows of tokens 15 and 16).
  for (bool bf16 : {false, true})
    for (auto [positions, seqs, numSeqs] :
         {std::tuple{std::vector<int32_t>{17, 4}, std::vector<int32_t>{0, 1}, int64_t(2)},
          std::tuple{std::vector<int32_t>{15, 16, 17}, std::vector<int32_t>{0, 0, 0},
                     int64_t(1)}}) {
      const int64_t T = positions.size();
      const auto k0 = randomPool(size_t(pages * pageSize * kvHeads * dk), bf16, rng),
                 v0 = randomPool(size_t(pages * pageSize * kvHeads * dv), bf16, rng);
      std::vector<float> q(T * heads * dk), newK(T * kvHeads * dk), newV(T * kvHeads * dv);
      for (auto *vec : {&q, &newK, &newV})
        for (float &x : *vec)
          x = d(rng);
      std::vector<int32_t> tokens(T, 5), start = {0, 1}, len = {1, 1}, prefix = {0, 0};
      hyrt_step_v0 step{T, numSeqs, tokens.data(), positions.data(), seqs.data(), start.data(),
                        len.data(), prefix.data(), blocks.data(), maxPages, nullptr};
      auto kA = k0, vA = v0, kB = k0, vB = v0;
      void *kpA = kA.data(), *vpA = vA.data(), *kpB = kB.data(), *vpB = vB.data();
      const int32_t dtype = bf16 ? HYRT_KV_BF16 : HYRT_KV_F32;
      hyrt_kv_cache_v0 a{1, pages, pageSize, kvHeads, dk, dv, &kpA, &vpA, dtype};
      hyrt_kv_cache_v0 b{1, pages, pageSize, kvHeads, dk, dv, &kpB, &vpB, dtype};
      std::vector<float> want(T * heads * dv), got(T * heads * dv, -7.0f);
      hyrt_ref_kv_cache_append(&a, &step, 0, newK.data(), newV.data());
      hyrt_cpu_paged_attention(&a, &step, 0, q.data(), heads, 0.25f, want.data(), 1);
      hyrt_cpu_paged_attention_append(&b, &step, 0, newK.data(), newV.data(), q.data(), heads,
                                      0.25f, got.data(), 1);
      EXPECT_EQ(got, want) << T << " tokens, bf16 " << bf16;
      EXPECT_EQ(kA, kB);
      EXPECT_EQ(vA, vB);
      EXPECT_NE(kA, k0) << "nothing was appended";
    }
}

// Long contexts take the threaded path (>= 2^18 multiply-adds): the fused
// kernel's threads write rows that other threads' attention then reads.
TEST(CpuPagedAttentionAppend, ThreadedLongContextEqualsTheTwoCalls) {
  const int64_t pageSize = 16, kvHeads = 2, dk = 64, dv = 64, heads = 8;
  const int64_t maxPages = 20, pages = 2 * maxPages;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[i] = int32_t((i * 13 + 7) % pages);
  // Two sequences decoding at positions 300 and 200: (301 + 201) x 8 heads x
  // 128 = 514k multiply-adds.
  std::vector<int32_t> positions = {300, 200}, seqs = {0, 1}, tokens = {5, 5};
  std::vector<int32_t> start = {0, 1}, len = {1, 1}, prefix = {300, 200};
  hyrt_step_v0 step{2, 2, tokens.data(), positions.data(), seqs.data(), start.data(),
                    len.data(), prefix.data(), blocks.data(), maxPages, nullptr};
  std::vector<float> k0(pages * pageSize * kvHeads * dk), v0(pages * pageSize * kvHeads * dv);
  for (auto *vec : {&k0, &v0})
    for (float &x : *vec)
      x = d(rng);
  std::vector<float> q(2 * heads * dk), newK(2 * kvHeads * dk), newV(2 * kvHeads * dv);
  for (auto *vec : {&q, &newK, &newV})
    for (float &x : *vec)
      x = d(rng);
  std::vector<float> kA = k0, vA = v0, kB = k0, vB = v0;
  void *kpA = kA.data(), *vpA = vA.data(), *kpB = kB.data(), *vpB = vB.data();
  hyrt_kv_cache_v0 a{1, pages, pageSize, kvHeads, dk, dv, &kpA, &vpA, HYRT_KV_F32};
  hyrt_kv_cache_v0 b{1, pages, pageSize, kvHeads, dk, dv, &kpB, &vpB, HYRT_KV_F32};
  std::vector<float> want(2 * heads * dv), got(2 * heads * dv, -7.0f), ref(2 * heads * dv);
  hyrt_ref_kv_cache_append(&a, &step, 0, newK.data(), newV.data());
  hyrt_cpu_paged_attention(&a, &step, 0, q.data(), heads, 0.125f, want.data(), 1);
  hyrt_ref_paged_attention(&a, &step, 0, q.data(), heads, 0.125f, ref.data());
  hyrt_cpu_paged_attention_append(&b, &step, 0, newK.data(), newV.data(), q.data(), heads,
                                  0.125f, got.data(), 1);
  EXPECT_EQ(got, want);
  EXPECT_EQ(kA, kB);
  EXPECT_EQ(vA, vB);
  // fp32 softmax and sums over 301 positions vs the double reference.
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(want[i], ref[i], 1e-5f * (1 + std::fabs(ref[i]))) << i;
}

} // namespace
