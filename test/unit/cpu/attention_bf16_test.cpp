// The flash attention over bf16 dot products (attention_bf16_avx512.cpp),
// which extend blocks of a bf16 KV cache take on AVX-512 BF16 hosts,
// against the fp32 reference run on the same cache values widened to fp32.
//
// The error bound, derived (not observed). Per query row with scaled query
// qs = scale * q and cached rows k_j, v_j (bf16, exact in fp32):
// - the kernel rounds qs to bf16, |q~ - qs| <= 2^-9 |qs| per element, so
//   each score moves by at most E = 2^-9 max_j sum_d |qs_d| |k_jd|, the
//   softmax weights by a factor within e^(+-2E), and the weighted mean of
//   the v_j by at most V (e^(2E) - 1), V = max |v|;
// - it rounds the probabilities to bf16 for the P x V products and divides
//   by the sum of the unrounded ones: at most 2^-9 V more;
// - the extend kernel's probabilities come from exp2ForBf16 (vec_avx512.h),
//   relative error below D = 2^-13 each, and the sum divides the same
//   values: the weights move by a factor within e^(+-2D) more (its
//   rescaling factors take the accurate exp, within the 1e-5 below);
// - fp32 accumulation and the 16-lane exp: 1e-5 (1 + |reference|), the
//   fp32 kernels' own tolerance (attention_test.cpp).
// With queries whose scaled values are bf16 numbers (scale a power of two)
// E is 0 and the bound (2^-9 + 2^-12) V is tight enough that one position too many
// or too few in the causal mask (weight ~1/n of a value ~1), or a wrong
// dim order in the output, fails it.
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"
#include "runtime/cpu/host_isa.h"
#include "runtime/reference/bf16.h"
#include "kv_cache_pair.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

/// exp2ForBf16's relative error bound (D above; 7.5e-5 measured over its
/// range with the fp32 coefficients).
const double kExp2Error = std::ldexp(1.0, -13);


struct Case {
  int64_t group, dk, dv;
};

// Groups of 1 to 16 heads (3: not a power of two), head dims 32 to 256.
const Case kCases[] = {{1, 32, 32},   {2, 64, 64},   {4, 64, 64}, {8, 128, 128},
                       {16, 32, 64}, {4, 256, 96}, {3, 64, 32}, {2, 128, 256}};

/// The tokens of one step: positions and sequences (0 or 1), the cache's
/// pages, and the KV splits allowed for decode tokens.
struct Scenario {
  std::vector<int32_t> positions, seqs;
  int64_t maxPages, kvSplits;
};

/// Sequence 0's tokens at positions 30..74 (blocks of consecutive tokens
/// over a cached prefix and their own causal triangle; the last block's
/// positions end inside a block of 32) and sequence 1's first three tokens
/// (positions 0..2: one partial block), then one decode token.
Scenario extendScenario() {
  Scenario s{{}, {}, 20, 1};
  for (int32_t p = 30; p < 75; ++p)
    s.positions.push_back(p), s.seqs.push_back(0);
  for (int32_t p = 0; p < 3; ++p)
    s.positions.push_back(p), s.seqs.push_back(1);
  s.positions.push_back(60), s.seqs.push_back(0); // a decode-like single token
  return s;
}

/// One sequence's 230 tokens at positions 40..269 over a cached prefix: with
/// four KV heads, enough (token block, KV head) items that hosts of up to 3
/// threads take token blocks of 64 (attention.cpp), larger hosts blocks of
/// 32; either way blocks end inside the kernel's 64-position blocks.
Scenario longExtendScenario() {
  Scenario s{{}, {}, 60, 1};
  for (int32_t p = 40; p < 270; ++p)
    s.positions.push_back(p), s.seqs.push_back(0);
  return s;
}

/// Decode tokens only (the decode kernel): an odd and an even count of
/// positions, across many pages, one of them below the split minimum
/// (kMinSplitRows, 256) and two long enough to split into `splits` KV ranges.
Scenario decodeScenario(int64_t splits) {
  return {{1500, 200, 1023}, {0, 1, 1}, 310, splits};
}

/// The step on a cache of random bf16 values (page size 5 unless told, block tables
/// scrambled, `kvHeads` KV heads), checked against the reference to the
/// bound above.
void checkCase(const Case &c, bool bf16Queries, const Scenario &sc, std::mt19937 &rng,
               int64_t kvHeads = 2, int64_t pageSize = 5) {
  const int64_t maxPages = sc.maxPages, pages = 2 * maxPages + 3;
  const int64_t heads = c.group * kvHeads, dk = c.dk, dv = c.dv;
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<int32_t> blocks(size_t(2 * maxPages));
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 17 + 4) % pages);
  const hyc::test::KvCachePair kv(pages, pageSize, kvHeads, dk, dv, rng);
  float vMax = 0, kMax = 0;
  for (float x : kv.v)
    vMax = std::max(vMax, std::fabs(x));
  for (float x : kv.k)
    kMax = std::max(kMax, std::fabs(x));
  const hyrt_kv_cache_v0 &ref = kv.f32, &cache = kv.bf16;

  std::vector<int32_t> positions = sc.positions, seqs = sc.seqs;
  const int64_t T = int64_t(positions.size());
  std::vector<int32_t> tokens(size_t(T), 5), start = {0, 1}, len = {1, 1}, prefix = {0, 0};
  hyrt_step_v0 step{T, 2, tokens.data(), positions.data(), seqs.data(), start.data(),
                    len.data(), prefix.data(), blocks.data(), maxPages, nullptr};
  const float scale = bf16Queries ? 0.25f : 1.0f / std::sqrt(float(dk));
  std::vector<float> q(size_t(T * heads * dk));
  for (float &x : q)
    x = bf16Queries ? hyrt::fromBf16(hyrt::toBf16(d(rng))) : d(rng);
  std::vector<float> want(size_t(T * heads * dv)), got(want.size(), -7.0f);
  hyrt_ref_paged_attention(&ref, &step, 0, q.data(), heads, scale, want.data());
  hyrt_cpu_paged_attention(&cache, &step, 0, q.data(), heads, scale, got.data(),
                           sc.kvSplits);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      double qAbs = 0;
      for (int64_t x = 0; x < dk; ++x)
        qAbs += std::fabs(double(scale) * q[size_t((t * heads + h) * dk + x)]);
      const double E = bf16Queries ? 0.0 : std::ldexp(qAbs * kMax, -9);
      const double bound = vMax * (std::expm1(2 * E + 2 * kExp2Error) + std::ldexp(1.0, -9));
      for (int64_t x = 0; x < dv; ++x) {
        const size_t i = size_t((t * heads + h) * dv + x);
        ASSERT_NEAR(got[i], want[i], bound + 1e-5 * (1 + std::fabs(want[i])))
            << kvHeads << " KV heads, group " << c.group << " dk " << dk << " dv " << dv
            << (bf16Queries ? ", bf16 queries" : ", fp32 queries") << ", " << sc.kvSplits
            << " splits: token " << t
            << " (position " << positions[size_t(t)] << "), head " << h << ", dim " << x;
      }
    }
}

TEST(CpuPagedAttentionBf16Dots, ExtendBlocksWithinTheDerivedBound) {
  if (!hyrt::cpu::hostHasAvx512Bf16())
    GTEST_SKIP() << "no AVX-512 BF16 on this host: extend blocks of a bf16 cache run the "
                    "fp32 kernel (attention_test.cpp)";
  std::mt19937 rng(21);
  for (const Case &c : kCases)
    for (bool bf16Queries : {true, false})
      checkCase(c, bf16Queries, extendScenario(), rng);
  for (const Case &c : {Case{4, 64, 64}, Case{8, 128, 128}, Case{3, 64, 32}})
    checkCase(c, /*bf16Queries=*/true, longExtendScenario(), rng, /*kvHeads=*/4);
}

// Decode tokens take the decode kernel (attention_decode_bf16_avx512.cpp),
// whole or split into KV ranges merged after (flash decoding): the same
// bound, since a split's partial sums are the unsplit ones regrouped.
TEST(CpuPagedAttentionBf16Dots, DecodeTokensAndSplitsWithinTheDerivedBound) {
  if (!hyrt::cpu::hostHasAvx512Bf16())
    GTEST_SKIP() << "no AVX-512 BF16 on this host: decode tokens of a bf16 cache run the "
                    "fp32 kernel (attention_test.cpp)";
  std::mt19937 rng(22);
  for (const Case &c : kCases)
    for (int64_t splits : {1, 3})
      checkCase(c, /*bf16Queries=*/true, decodeScenario(splits), rng);
  checkCase(Case{4, 64, 64}, /*bf16Queries=*/false, decodeScenario(4), rng);
}

// A decode token's work items sweep several KV heads at once over a range of
// positions (attention.cpp's decodeCut: kvHeads * kvSplits items, ranges
// first). Head counts that the ranges do not divide leave a shorter last
// group (3 heads over 4 ranges: groups of 2 and 1; 5 heads over 4 ranges: groups of 3 and 2); a
// partial written to another head's slot, a head left out of a group or a
// range merged twice fails the bound.
TEST(CpuPagedAttentionBf16Dots, DecodeItemsOverSeveralKvHeadsWithinTheDerivedBound) {
  if (!hyrt::cpu::hostHasAvx512Bf16())
    GTEST_SKIP() << "no AVX-512 BF16 on this host: decode tokens of a bf16 cache run the "
                    "fp32 kernel (attention_test.cpp)";
  std::mt19937 rng(23);
  for (int64_t kvHeads : {1, 3, 4, 5})
    for (int64_t splits : {1, 2})
      for (const Case &c : {Case{2, 64, 64}, Case{8, 128, 128}, Case{3, 64, 32}})
        checkCase(c, /*bf16Queries=*/true, decodeScenario(splits), rng, kvHeads);
}

// Pages of 16 positions (the engine's default) and 32: the decode kernel's
// blocks of 16 positions then lie in one page or straddle two depending on
// where a split starts, and groups of 4, 8 and 12 heads over head dims 64
// and 128 (dense-1b's and moe-small's shapes) run as they do in a model.
TEST(CpuPagedAttentionBf16Dots, DecodeBlocksOnWholePagesWithinTheDerivedBound) {
  if (!hyrt::cpu::hostHasAvx512Bf16())
    GTEST_SKIP() << "no AVX-512 BF16 on this host: decode tokens of a bf16 cache run the "
                    "fp32 kernel (attention_test.cpp)";
  std::mt19937 rng(24);
  for (int64_t pageSize : {16, 32})
    for (int64_t splits : {1, 3})
      for (const Case &c : {Case{4, 64, 64}, Case{8, 128, 128}, Case{12, 128, 64}})
        checkCase(c, /*bf16Queries=*/true, Scenario{{1500, 200, 1023}, {0, 1, 1}, 100, splits},
                  rng, /*kvHeads=*/3, pageSize);
}

// Head dims off the kernel's grid (multiples of 32 up to 256) keep the fp32
// kernel: the same step with dk = 48 must match the reference to the fp32
// tolerance, which the bf16 kernel's rounding would not.
TEST(CpuPagedAttentionBf16Dots, OtherHeadDimsKeepTheFp32Kernel) {
  if (!hyrt::cpu::hostHasAvx512Bf16())
    GTEST_SKIP() << "no AVX-512 BF16 on this host: nothing to tell apart";
  const int64_t pageSize = 4, kvHeads = 1, dk = 48, dv = 48, heads = 2, pages = 16;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  const hyc::test::KvCachePair kv(pages, pageSize, kvHeads, dk, dv, rng);
  const hyrt_kv_cache_v0 &ref = kv.f32, &cache = kv.bf16;
  std::vector<int32_t> blocks(pages);
  for (int64_t i = 0; i < pages; ++i)
    blocks[size_t(i)] = int32_t((i * 5 + 3) % pages);
  std::vector<int32_t> positions, seqs;
  for (int32_t p = 20; p < 40; ++p)
    positions.push_back(p), seqs.push_back(0);
  const int64_t T = int64_t(positions.size());
  std::vector<int32_t> tokens(size_t(T), 5), start = {0}, len = {1}, prefix = {0};
  hyrt_step_v0 step{T, 1, tokens.data(), positions.data(), seqs.data(), start.data(),
                    len.data(), prefix.data(), blocks.data(), pages, nullptr};
  std::vector<float> q(size_t(T * heads * dk));
  for (float &x : q)
    x = d(rng);
  std::vector<float> want(size_t(T * heads * dv)), got(want.size(), -7.0f);
  hyrt_ref_paged_attention(&ref, &step, 0, q.data(), heads, 0.3f, want.data());
  hyrt_cpu_paged_attention(&cache, &step, 0, q.data(), heads, 0.3f, got.data(), 1);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;
}

} // namespace
