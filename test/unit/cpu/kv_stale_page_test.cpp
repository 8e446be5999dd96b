// Pages are zeroed when handed out: a sequence that reuses pages a freed
// sequence filled with garbage (int8 codes of 127 and NaN scales, the kind
// of stale bits that turned into outliers after ~1500 tokens in a deployed
// int8 cache) sees only zeros before it writes, and its attention equals
// bit for bit the same steps run on a cache that was never used.
#include "hyrt/cpu_kernels.h"
#include "hyrt/engine/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

hyrt::KvCacheConfig int8Config() {
  hyrt::KvCacheConfig c;
  c.num_layers = 1;
  c.num_pages = 6;
  c.page_size = 8;
  c.num_kv_heads = 2;
  c.k_head_dim = 16;
  c.v_head_dim = 16;
  c.max_pages_per_seq = 6;
  c.dtype = HYRT_KV_INT8;
  c.huge_pages = false;
  return c;
}

/// Fills every page of the cache, codes and scales, with garbage.
void poison(hyrt_kv_cache_v0 *kv) {
  const int64_t rows = kv->num_pages * kv->num_kv_heads * kv->page_size;
  std::memset(kv->k_layers[0], 0x7f, size_t(rows * kv->k_head_dim));
  std::memset(kv->v_layers[0], 0x81, size_t(rows * kv->v_head_dim));
  std::fill_n(kv->k_scale_layers[0], rows, std::numeric_limits<float>::quiet_NaN());
  std::fill_n(kv->v_scale_layers[0], rows, 1e30f);
}

/// Rows of sequence `seq`'s pages that hold no token yet are all zero:
/// the codes and the scales of every KV head.
::testing::AssertionResult unwrittenRowsAreZero(hyrt::KvCacheManager &m, int64_t seq) {
  const hyrt_kv_cache_v0 *kv = m.view();
  const auto &pages = m.block_table(seq);
  for (size_t i = 0; i < pages.size(); ++i)
    for (int64_t h = 0; h < kv->num_kv_heads; ++h)
      for (int64_t slot = 0; slot < kv->page_size; ++slot) {
        if (int64_t(i) * kv->page_size + slot < m.seq_length(seq))
          continue;
        const int64_t row = (pages[i] * kv->num_kv_heads + h) * kv->page_size + slot;
        const int8_t *k = static_cast<const int8_t *>(kv->k_layers[0]) + row * kv->k_head_dim;
        const int8_t *v = static_cast<const int8_t *>(kv->v_layers[0]) + row * kv->v_head_dim;
        bool zero = kv->k_scale_layers[0][row] == 0.0f && kv->v_scale_layers[0][row] == 0.0f;
        for (int64_t d = 0; d < kv->k_head_dim; ++d)
          zero = zero && k[d] == 0;
        for (int64_t d = 0; d < kv->v_head_dim; ++d)
          zero = zero && v[d] == 0;
        if (!zero)
          return ::testing::AssertionFailure()
                 << "stale data in page " << pages[i] << ", head " << h << ", slot " << slot;
      }
  return ::testing::AssertionSuccess();
}

/// Prefill of `n` tokens then one decode token for sequence `seq` (fused
/// append + attention, as the artifacts run them); returns every output.
std::vector<float> prefillAndDecode(hyrt::KvCacheManager &m, int64_t seq, int64_t n,
                                    uint32_t seed) {
  const hyrt_kv_cache_v0 *kv = m.view();
  const int64_t heads = 4, dk = kv->k_head_dim, dv = kv->v_head_dim, hkv = kv->num_kv_heads;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> outs;
  for (auto [first, count] : {std::pair<int64_t, int64_t>{0, n}, {n, 1}}) {
    EXPECT_TRUE(m.allocate(seq, first + count).ok());
    std::vector<int32_t> tokens(size_t(count), 1), positions(static_cast<size_t>(count)),
        tokenSeq(size_t(count), 0), start = {0}, len = {int32_t(count)},
        prefix = {int32_t(first)}, blocks(m.block_table(seq));
    blocks.resize(size_t(kv->num_pages), 0);
    for (int64_t t = 0; t < count; ++t)
      positions[size_t(t)] = int32_t(first + t);
    hyrt_step_v0 step{count, 1, tokens.data(), positions.data(), tokenSeq.data(), start.data(),
                      len.data(), prefix.data(), blocks.data(), kv->num_pages, nullptr, 0,
                      nullptr};
    std::vector<float> k(static_cast<size_t>(count * hkv * dk)), v(size_t(count * hkv * dv)),
        q(size_t(count * heads * dk)), o(size_t(count * heads * dv));
    for (auto *x : {&k, &v, &q})
      for (float &e : *x)
        e = d(rng);
    hyrt_cpu_paged_attention_append(kv, &step, 0, k.data(), v.data(), q.data(), heads, 0.25f,
                                    o.data(), 1);
    EXPECT_TRUE(m.advance(seq, count).ok());
    outs.insert(outs.end(), o.begin(), o.end());
  }
  return outs;
}

TEST(KvCacheInt8, ReusedPagesShowNothingStale) {
  hyrt::KvCacheManager used, fresh;
  ASSERT_TRUE(used.init(int8Config()).ok());
  ASSERT_TRUE(fresh.init(int8Config()).ok());
  // Sequence 1 takes every page, the whole pool is filled with garbage,
  // and sequence 1 is freed: sequence 2 gets the same pages back.
  ASSERT_TRUE(used.allocate(1, 6 * 8).ok());
  poison(used.view());
  ASSERT_TRUE(used.free_sequence(1).ok());
  ASSERT_TRUE(used.allocate(2, 13).ok());
  EXPECT_TRUE(unwrittenRowsAreZero(used, 2));
  const std::vector<float> got = prefillAndDecode(used, 2, 13, 42);
  // The decode token's page (the second) was handed out with the prefill;
  // its later slots are still unwritten.
  EXPECT_TRUE(unwrittenRowsAreZero(used, 2));
  ASSERT_TRUE(fresh.allocate(2, 13).ok());
  const std::vector<float> want = prefillAndDecode(fresh, 2, 13, 42);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << "element " << i;
    ASSERT_EQ(got[i], want[i]) << "element " << i;
  }
}

} // namespace
