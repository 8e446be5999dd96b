// hyrt_cpu_mla_attention (the absorbed form: MQA over the latent rows)
// against hyrt_ref_mla_attention (the plain form: every cached latent
// expanded through kv_b), on the same cache: decode tokens at lengths
// 1..2048 (two sequences per step, scrambled block tables, odd page size),
// KV splits on and off, an extend step of consecutive tokens, fp32 and bf16
// caches and kv_b weights (the reference widens bf16 exactly, so both read
// the same values).
//
// Tolerance (the issue's): per (token, head) output cosine >= 0.999 and
// |d| <= 1e-2. The two forms are the same sums re-associated; the absorbed
// one accumulates in fp32 (dots of rank + rope terms, relative error
// ~sqrt(rank) 2^-24 per score, an online softmax rescaled per 32-position
// block) against the reference's double, so the observed error is orders of
// magnitude below the bound; a wrong fold, mask or split merge is not.
//
// One path rounds more: the plain form over a bf16 cache, where the head
// dims fit the bf16 dot-product kernel (dk = nope + rope and v multiples of
// 32: DeepSeek's 192 and 128), rounds the expanded keys and values, the
// scaled queries and the probabilities to bf16 (mla_plain.cpp). Its extra
// error is derived as in attention_bf16_test.cpp: per (token, head) with
// scaled query qs and expanded rows k_j, v_j, each score moves by at most
// E = 2^-8 max_j sum_d |qs_d| |k_jd| (two roundings of 2^-9 each, to first
// order; 2^-7.9 covers the product), the weights by e^(+-2E), the output by
// V (e^(2E) - 1) plus 2^-9 V for the probabilities and 2^-9 V for the
// values, V = max_j,d |v_jd|; added to the 1e-2 above.
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"
#include "runtime/cpu/attention/mla_attention.h"
#include "runtime/cpu/host_isa.h"
#include "runtime/reference/bf16.h"
#include "test/common/compare.h"
#include "attention_bodies.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct Dims {
  int64_t heads, nope, rope, v, rank;
};

/// A block table of n entries, entry i = (i * mul + add) mod pages: pages
/// out of order, so page boundaries are crossed by jumps.
std::vector<int32_t> scrambledBlocks(int64_t n, int64_t mul, int64_t add, int64_t pages) {
  std::vector<int32_t> blocks(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    blocks[size_t(i)] = int32_t(((i * mul + add) % pages + pages) % pages);
  return blocks;
}

/// A one-layer latent cache with every slot filled, in fp32 and in bf16.
struct LatentCache {
  int64_t pages, pageSize, rowDim;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  void *fp, *bp;
  hyrt_kv_cache_v0 kvF32, kvBf16;
  LatentCache(int64_t pages_, int64_t pageSize_, int64_t rowDim_, std::mt19937 &rng)
      : pages(pages_), pageSize(pageSize_), rowDim(rowDim_) {
    std::uniform_real_distribution<float> d(-1, 1);
    f32.resize(size_t(pages * pageSize * rowDim));
    bf16.resize(f32.size());
    for (size_t i = 0; i < f32.size(); ++i) {
      bf16[i] = hyrt::toBf16(d(rng));
      f32[i] = hyrt::fromBf16(bf16[i]);
    }
    fp = f32.data();
    bp = bf16.data();
    kvF32 = {1, pages, pageSize, 1, rowDim, 0, &fp, nullptr, HYRT_KV_F32};
    kvBf16 = {1, pages, pageSize, 1, rowDim, 0, &bp, nullptr, HYRT_KV_BF16};
  }
};

/// Runs both kernels on one step and compares every (token, head) output.
void expectMatch(const Dims &m, const LatentCache &c, bool bf16, bool bf16KvB,
                 std::vector<int32_t> positions,
                 std::vector<int32_t> tokenSeq, std::vector<int32_t> start,
                 std::vector<int32_t> len, const std::vector<int32_t> &blocks,
                 int64_t maxPages, int64_t kvSplits, std::mt19937 &rng,
                 const std::string &what, int64_t plainForm = 0) {
  std::uniform_real_distribution<float> d(-1, 1);
  const int64_t T = int64_t(positions.size()), S = int64_t(start.size());
  std::vector<int32_t> tokens(T, 3), prefix(S, 0);
  hyrt_step_v0 step{T, S, tokens.data(), positions.data(), tokenSeq.data(), start.data(),
                    len.data(), prefix.data(), blocks.data(), maxPages, nullptr, 0, nullptr};
  std::vector<float> qn(T * m.heads * m.nope), qp(T * m.heads * m.rope),
      kvb(m.heads * (m.nope + m.v) * m.rank);
  for (float &x : qn)
    x = d(rng);
  for (float &x : qp)
    x = d(rng);
  // bf16 kv_b: the kernel reads bf16 rows, the reference their exact fp32
  // widening (what the artifact writer stores for each target).
  std::vector<uint16_t> kvbHalf(kvb.size());
  for (size_t i = 0; i < kvb.size(); ++i) {
    kvb[i] = 0.2f * d(rng);
    if (bf16KvB) {
      kvbHalf[i] = hyrt::toBf16(kvb[i]);
      kvb[i] = hyrt::fromBf16(kvbHalf[i]);
    }
  }
  const float scale = 1.0f / std::sqrt(float(m.nope + m.rope));
  std::vector<float> want(T * m.heads * m.v), got(want.size(), -7.0f);
  const hyrt_kv_cache_v0 &kv = bf16 ? c.kvBf16 : c.kvF32;
  hyrt_ref_mla_attention(&kv, &step, 0, qn.data(), qp.data(), kvb.data(), m.heads, m.nope,
                         m.rope, m.v, m.rank, scale, want.data());
  hyrt_cpu_mla_attention(&kv, &step, 0, qn.data(), qp.data(),
                         bf16KvB ? static_cast<const void *>(kvbHalf.data()) : kvb.data(),
                         bf16KvB ? 1 : 0, m.heads, m.nope,
                         m.rope, m.v, m.rank, scale, got.data(), kvSplits, plainForm,
                         plainForm);
  // The bf16 plain path (see the top): one sequence, plain form forced, a
  // bf16 cache, dims on the kernel's grid, a host with AVX-512 BF16.
  const bool bf16Plain = bf16 && plainForm < 0 && S == 1 && (m.nope + m.rope) % 32 == 0 &&
                         m.nope + m.rope <= 256 && m.v % 32 == 0 && m.v <= 256 &&
                         m.rank % 16 == 0 && hyrt::cpu::hostHasAvx512Bf16() &&
                         !hyrt::cpu::portableOnly();
  std::vector<double> extra(size_t(T * m.heads), 0.0);
  if (bf16Plain) {
    const int64_t n = int64_t(*std::max_element(positions.begin(), positions.end())) + 1;
    const int64_t D = m.rank + m.rope;
    const float *lat = c.f32.data();
    for (int64_t h = 0; h < m.heads; ++h) {
      // Expanded rows of head h: keys [nope | rope] and values, in double.
      std::vector<double> k(size_t(n * (m.nope + m.rope))), v(size_t(n * m.v));
      double vMax = 0;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = int64_t(blocks[size_t(j / c.pageSize)]) * c.pageSize + j % c.pageSize;
        const float *cj = lat + row * D;
        for (int64_t d = 0; d < m.nope + m.v; ++d) {
          double acc = 0;
          for (int64_t r = 0; r < m.rank; ++r)
            acc += double(kvb[size_t((h * (m.nope + m.v) + d) * m.rank + r)]) * cj[r];
          if (d < m.nope)
            k[size_t(j * (m.nope + m.rope) + d)] = acc;
          else
            v[size_t(j * m.v + d - m.nope)] = acc, vMax = std::max(vMax, std::fabs(acc));
        }
        for (int64_t d = 0; d < m.rope; ++d)
          k[size_t(j * (m.nope + m.rope) + m.nope + d)] = cj[m.rank + d];
      }
      for (int64_t t = 0; t < T; ++t) {
        double worst = 0;
        for (int64_t j = 0; j <= positions[size_t(t)]; ++j) {
          double sum = 0;
          for (int64_t d = 0; d < m.nope + m.rope; ++d) {
            const double q = d < m.nope ? qn[size_t((t * m.heads + h) * m.nope + d)]
                                        : qp[size_t((t * m.heads + h) * m.rope + d - m.nope)];
            sum += std::fabs(scale * q) * std::fabs(k[size_t(j * (m.nope + m.rope) + d)]);
          }
          worst = std::max(worst, sum);
        }
        const double E = std::ldexp(worst, -8) * 1.01;
        extra[size_t(t * m.heads + h)] = vMax * (std::expm1(2 * E) + std::ldexp(1.0, -8));
      }
    }
  }
  // The bf16 decode path (mla_attention.cpp): decode tokens alone in their
  // sequence over a bf16 cache, heads x positions >= 64K, latent dims on
  // the bf16 kernels' grid. Its extra error, as in attention_bf16_test.cpp
  // in latent space: the scaled query qs = scale [q_lat | q_pe] rounded to
  // bf16 moves each score by at most E = 2^-9 max_j sum_d |qs_d| |c_jd|,
  // the probabilities (exp error under 2^-13, rounded to bf16) give o_lat
  // an error of at most Vc (e^(2E + 2^-12) - 1 + 2^-9), Vc = max |c_jr|,
  // and the output fold multiplies it by at most max_d sum_r |W_UV[d][r]|.
  const bool bf16Decode = bf16 && plainForm == 0 && T == S && hyrt::cpu::hostHasAvx512Bf16() &&
                          (m.rank + m.rope) % 32 == 0 && m.rank % 32 == 0 &&
                          (m.rank & (m.rank - 1)) == 0 && m.rank >= 32;
  for (int64_t t = 0; bf16Decode && t < T; ++t) {
    const int64_t n = int64_t(positions[size_t(t)]) + 1, D = m.rank + m.rope;
    if (m.heads * n < 64 * 1024)
      continue;
    for (int64_t h = 0; h < m.heads; ++h) {
      std::vector<double> qs(size_t(D), 0.0);
      for (int64_t r = 0; r < m.rank; ++r) {
        double acc = 0;
        for (int64_t d = 0; d < m.nope; ++d)
          acc += double(kvb[size_t((h * (m.nope + m.v) + d) * m.rank + r)]) *
                 qn[size_t((t * m.heads + h) * m.nope + d)];
        qs[size_t(r)] = scale * acc;
      }
      for (int64_t d = 0; d < m.rope; ++d)
        qs[size_t(m.rank + d)] = scale * double(qp[size_t((t * m.heads + h) * m.rope + d)]);
      double worst = 0, vc = 0;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = int64_t(blocks[size_t(int64_t(tokenSeq[size_t(t)]) * maxPages +
                                                  j / c.pageSize)]) *
                                c.pageSize +
                            j % c.pageSize;
        const float *cj = c.f32.data() + row * D;
        double sum = 0;
        for (int64_t d = 0; d < D; ++d)
          sum += std::fabs(qs[size_t(d)]) * std::fabs(cj[d]);
        worst = std::max(worst, sum);
        for (int64_t r = 0; r < m.rank; ++r)
          vc = std::max(vc, double(std::fabs(cj[r])));
      }
      double fold = 0;
      for (int64_t d = 0; d < m.v; ++d) {
        double row = 0;
        for (int64_t r = 0; r < m.rank; ++r)
          row += std::fabs(kvb[size_t((h * (m.nope + m.v) + m.nope + d) * m.rank + r)]);
        fold = std::max(fold, row);
      }
      const double E = std::ldexp(worst, -9) * 1.01;
      extra[size_t(t * m.heads + h)] =
          fold * vc * (std::expm1(2 * E + std::ldexp(1.0, -12)) + std::ldexp(1.0, -9));
    }
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < m.heads; ++h) {
      const float *g = got.data() + (t * m.heads + h) * m.v,
                  *w = want.data() + (t * m.heads + h) * m.v;
      ASSERT_GE(hyc::test::cosine(g, w, size_t(m.v)), 0.999)
          << what << ": token " << t << " (position " << positions[size_t(t)] << "), head " << h;
      for (int64_t i = 0; i < m.v; ++i)
        ASSERT_NEAR(g[i], w[i], 1e-2 + extra[size_t(t * m.heads + h)])
            << what << ": token " << t << ", head " << h << ", " << i;
    }
}

// Parameters: bf16 cache (else fp32), and the bodies (attention_bodies.h:
// the host's widest, the AVX2 + FMA forms, the per-token portable ones),
// so every kind runs on every host that has it.
class CpuMlaAttention
    : public ::testing::TestWithParam<std::tuple<bool, hyc::test::Bodies>> {
protected:
  void SetUp() override {
    const std::string missing = hyc::test::bodiesMissing(std::get<1>(GetParam()));
    if (!missing.empty())
      GTEST_SKIP() << missing;
    hyc::test::pinBodies(std::get<1>(GetParam()));
  }
  void TearDown() override { hyc::test::unpinBodies(); }
};

// Decode: two sequences per step, the second at a short fixed length; the
// first at lengths 1..2048, with KV splits off and on (a split needs 256
// positions, so 512+ really splits).
TEST_P(CpuMlaAttention, DecodeMatchesThePlainForm) {
  const bool bf16 = std::get<0>(GetParam());
  const Dims m{8, 16, 8, 16, 64};
  const int64_t pageSize = 7, maxPages = 2048 / pageSize + 2, pages = 2 * maxPages;
  std::mt19937 rng(11);
  LatentCache cache(pages, pageSize, m.rank + m.rope, rng);
  const std::vector<int32_t> blocks = scrambledBlocks(2 * maxPages, 37, 5, pages);
  for (int32_t n : {1, 2, 17, 255, 256, 257, 600, 1100, 2048})
    for (int64_t splits : {1, 4})
      expectMatch(m, cache, bf16, /*bf16KvB=*/bf16, {n - 1, 9}, {0, 1}, {0, 1}, {1, 1}, blocks, maxPages, splits,
                  rng,
                  std::string(bf16 ? "bf16" : "f32") + " decode at length " +
                      std::to_string(n) + ", splits " + std::to_string(splits));
  // A step of two sequences never takes the plain form, even forced (its
  // one-page view holds one sequence): still the reference's result.
  expectMatch(m, cache, bf16, /*bf16KvB=*/bf16, {599, 9}, {0, 1}, {0, 1}, {1, 1}, blocks,
              maxPages, 2, rng, "two sequences, plain form forced", /*plainForm=*/-1);
}

// Extend: five new tokens of one sequence at consecutive positions (each
// sees its own prefix) in both forms (absorbed, and plain forced), and
// DeepSeek-V3's real head
// shapes (16 heads, nope 128, rope 64, v 128, rank 512) for a long plain
// extend chunk and a decode step.
TEST_P(CpuMlaAttention, ExtendAndRealShapesMatchThePlainForm) {
  const bool bf16 = std::get<0>(GetParam());
  std::mt19937 rng(12);
  {
    const Dims m{4, 16, 8, 16, 32};
    const int64_t pageSize = 5, maxPages = 30;
    LatentCache cache(maxPages, pageSize, m.rank + m.rope, rng);
    const std::vector<int32_t> blocks = scrambledBlocks(maxPages, 7, 2, maxPages);
    expectMatch(m, cache, bf16, /*bf16KvB=*/!bf16, {95, 96, 97, 98, 99}, {0, 0, 0, 0, 0}, {0}, {5}, blocks,
                maxPages, 1, rng, "extend of 5 tokens at 95..99");
    expectMatch(m, cache, bf16, /*bf16KvB=*/bf16, {95, 96, 97, 98, 99}, {0, 0, 0, 0, 0}, {0}, {5},
                blocks, maxPages, 1, rng, "plain form, 5 tokens at 95..99", /*plainForm=*/-1);
    expectMatch(m, cache, bf16, /*bf16KvB=*/!bf16, {0, 1, 2}, {0, 0, 0}, {0}, {3}, blocks, maxPages, 1, rng,
                "extend of 3 tokens from position 0");
  }
  {
    // A rank off the 16-lane grid (40): the AVX-512 attention and output
    // fold decline it and the portable bodies run, in both forms.
    const Dims m{4, 16, 8, 16, 40};
    const int64_t pageSize = 5, maxPages = 30;
    LatentCache cache(maxPages, pageSize, m.rank + m.rope, rng);
    const std::vector<int32_t> blocks = scrambledBlocks(maxPages, 11, 1, maxPages);
    expectMatch(m, cache, bf16, /*bf16KvB=*/bf16, {60, 61, 62}, {0, 0, 0}, {0}, {3}, blocks,
                maxPages, 1, rng, "rank 40, extend", /*plainForm=*/-1);
    expectMatch(m, cache, bf16, /*bf16KvB=*/!bf16, {140}, {0}, {0}, {1}, blocks, maxPages, 2, rng,
                "rank 40, decode");
  }
  const Dims m{16, 128, 64, 128, 512};
  {
    // The plain form of a long extend chunk (expand, then multi-head
    // attention), at DeepSeek-V3's head shapes: 40 new tokens over 200
    // positions.
    const int64_t pageSize = 16, maxPages = 14;
    LatentCache cache(maxPages, pageSize, m.rank + m.rope, rng);
    const std::vector<int32_t> blocks = scrambledBlocks(maxPages, 5, 3, maxPages);
    std::vector<int32_t> pos, seq;
    for (int32_t p = 160; p < 200; ++p) {
      pos.push_back(p);
      seq.push_back(0);
    }
    expectMatch(m, cache, bf16, /*bf16KvB=*/bf16, pos, seq, {0}, {40}, blocks, maxPages, 1, rng,
                "plain form, 40 tokens at 160..199", /*plainForm=*/-1);
  }
  const int64_t pageSize = 16, maxPages = 20;
  LatentCache cache(maxPages, pageSize, m.rank + m.rope, rng);
  const std::vector<int32_t> blocks = scrambledBlocks(maxPages, -1, maxPages - 1, maxPages);
  expectMatch(m, cache, bf16, /*bf16KvB=*/!bf16, {299}, {0}, {0}, {1}, blocks, maxPages, 2, rng,
              "DeepSeek-V3 heads, decode at length 300");
}

// Decode on bf16 dot products (heads x positions >= 64K, a bf16 cache):
// 64 heads, latent rank 64 and rope 32 (rows of 96, values the first 64
// of them), one decode token per sequence at lengths 1024 and 2000 (bf16
// path) and 600 (below the threshold: the fp32 kernel), KV splits off and
// on (each split's partial merged like the fp32 kernel's), pages of 16
// scrambled. Held to the derived bound above plus the 1e-2 and
// the cosine; values read with the dense stride (rank) instead of the
// latent row's, or one position dropped at a split boundary, fail it
// (both checked).
TEST_P(CpuMlaAttention, DecodeOnBf16DotsWithinTheDerivedBound) {
  const bool bf16 = std::get<0>(GetParam());
  const Dims m{64, 32, 32, 32, 64};
  const int64_t pageSize = 16, maxPages = 2000 / pageSize + 2, pages = 3 * maxPages;
  std::mt19937 rng(13);
  LatentCache cache(pages, pageSize, m.rank + m.rope, rng);
  const std::vector<int32_t> blocks = scrambledBlocks(3 * maxPages, 29, 3, pages);
  for (int64_t splits : {1, 3})
    expectMatch(m, cache, bf16, /*bf16KvB=*/bf16, {1023, 1999, 599}, {0, 1, 2}, {0, 1, 2},
                {1, 1, 1}, blocks, maxPages, splits, rng,
                std::string(bf16 ? "bf16" : "f32") + " decode, 64 heads, splits " +
                    std::to_string(splits));
}

// The form decision (mlaPlainIsCheaper) on mla-small's dims: rank 512, nope
// 128, v 128, so expanding a cached position costs 512 x 256 multiply-adds
// per head and attending one saves 2 x 512 - 256 = 768. A step of T tokens
// ending at position n - 1 takes the plain form when
// weight / 100 x (n - T) x 131072 < T (n - T / 2) x 768. The bf16 kernels'
// weight 70 sends a 4000-token prompt's last chunk (416 tokens at 3584) to
// the plain form, which hyc_attention_bench measures 2.9x faster there; the
// fp32 kernels' 300 keeps it absorbed. Short steps late in a context stay
// absorbed under both; fresh prefill (n = T) is plain under any weight.
TEST(MlaPlainForm, DecisionFollowsTheScheduleWeight) {
  const hyrt::cpu::Mla m{16, 128, 64, 128, 512, 0.1f};
  auto decide = [&](int64_t T, int64_t n, int64_t weight, int32_t seqs = 1) {
    std::vector<int32_t> pos(static_cast<size_t>(T)), seq(static_cast<size_t>(T), 0),
        tok(static_cast<size_t>(T), 1);
    for (int64_t t = 0; t < T; ++t)
      pos[size_t(t)] = int32_t(n - T + t);
    const hyrt_step_v0 step{T,       seqs,    tok.data(), pos.data(), seq.data(), nullptr,
                            nullptr, nullptr, nullptr,    0,          nullptr,    0,
                            nullptr};
    return hyrt::cpu::mlaPlainIsCheaper(m, &step, weight);
  };
  EXPECT_TRUE(decide(416, 4000, 70));   // 0.7 x 3584 x 131072 = 329M < 416 x 3792 x 768 = 1211M
  EXPECT_FALSE(decide(416, 4000, 300)); // 1409M > 1211M
  EXPECT_TRUE(decide(128, 1024, 70));   // 82M < 94M (128 heads there: plain 1.24x faster)
  EXPECT_FALSE(decide(128, 1024, 90));  // 106M > 94M: the crossover sits between
  EXPECT_FALSE(decide(16, 4000, 70));   // 366M > 16 x 3992 x 768 = 49M
  EXPECT_TRUE(decide(512, 512, 300));   // fresh prefill: nothing cached to expand
  EXPECT_TRUE(decide(1, 1, 1));
  EXPECT_FALSE(decide(512, 512, 0));    // 0: never
  EXPECT_TRUE(decide(16, 4000, -1));    // < 0: always
  EXPECT_FALSE(decide(512, 512, 70, /*seqs=*/2));
}

INSTANTIATE_TEST_SUITE_P(Cache, CpuMlaAttention,
                         ::testing::Combine(::testing::Bool(), hyc::test::allBodies()),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param) ? "bf16" : "f32") + "_" +
                                  hyc::test::bodiesName(std::get<1>(info.param));
                         });

} // namespace
