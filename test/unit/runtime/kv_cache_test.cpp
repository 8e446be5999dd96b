// Tests for the paged KV cache manager and the step batch builder.
#include "hyrt/engine/kv_cache.h"
#include "hyrt/reference.h"

#include <gtest/gtest.h>

#include <set>

using hyrt::KvCacheConfig;
using hyrt::KvCacheManager;
using hyrt::SeqChunk;
using hyrt::StepBatch;

namespace {
KvCacheConfig small_config() {
  KvCacheConfig c;
  c.num_layers = 2;
  c.num_pages = 4;
  c.page_size = 2;
  c.num_kv_heads = 1;
  c.k_head_dim = 3;
  c.v_head_dim = 2;
  c.max_pages_per_seq = 3;
  return c;
}
} // namespace

TEST(KvCache, RejectsBadConfig) {
  KvCacheManager m;
  KvCacheConfig c = small_config();
  c.page_size = 0;
  hyrt::Status s = m.init(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("page_size=0"), std::string::npos) << s.message();
}

TEST(KvCache, ViewDescribesPools) {
  KvCacheManager m;
  ASSERT_TRUE(m.init(small_config()).ok());
  hyrt_kv_cache_v0 *kv = m.view();
  EXPECT_EQ(kv->num_layers, 2);
  EXPECT_EQ(kv->num_pages, 4);
  EXPECT_EQ(kv->page_size, 2);
  EXPECT_EQ(kv->k_head_dim, 3);
  EXPECT_EQ(kv->v_head_dim, 2);
  EXPECT_NE(kv->k_layers[1], nullptr);
  EXPECT_NE(kv->v_layers[1], nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kv->k_layers[0]) % 64, 0u);
  KvCacheConfig mla = small_config();
  mla.v_head_dim = 0;
  KvCacheManager m2;
  ASSERT_TRUE(m2.init(mla).ok());
  EXPECT_EQ(m2.view()->v_layers[0], nullptr);
}

// Pages handed out again are zeroed, in every layer's K and V pool, for an
// fp32 and a bf16 cache (2-byte elements: the page stride in bytes halves).
class KvCacheDtype : public ::testing::TestWithParam<int32_t> {};

TEST_P(KvCacheDtype, AllocateFreeAndZeroOnReuse) {
  KvCacheManager m;
  KvCacheConfig c = small_config();
  c.dtype = GetParam();
  ASSERT_TRUE(m.init(c).ok());
  ASSERT_TRUE(m.allocate(7, 3).ok()); // 2 pages
  EXPECT_EQ(m.block_table(7).size(), 2u);
  EXPECT_EQ(m.free_pages(), 2);
  ASSERT_TRUE(m.allocate(7, 4).ok()); // still 2 pages
  EXPECT_EQ(m.free_pages(), 2);
  hyrt_kv_cache_v0 *kv = m.view();
  EXPECT_EQ(kv->dtype, GetParam());
  const int64_t elem = GetParam() == HYRT_KV_BF16 ? 2 : 4;
  // Bytes of one page: page_size x kv heads x head dim elements.
  const int64_t k_page = 2 * 1 * 3 * elem, v_page = 2 * 1 * 2 * elem;
  auto bytes = [](void *base) { return static_cast<unsigned char *>(base); };
  // Dirty every page of the sequence in both layers, then free and reuse.
  for (int32_t p : m.block_table(7))
    for (int64_t l = 0; l < 2; ++l) {
      for (int64_t i = 0; i < k_page; ++i)
        bytes(kv->k_layers[l])[p * k_page + i] = 0x5a;
      for (int64_t i = 0; i < v_page; ++i)
        bytes(kv->v_layers[l])[p * v_page + i] = 0x5a;
    }
  const std::vector<int32_t> old = m.block_table(7);
  ASSERT_TRUE(m.free_sequence(7).ok());
  EXPECT_EQ(m.free_pages(), 4);
  EXPECT_FALSE(m.has_sequence(7));
  ASSERT_TRUE(m.allocate(8, 6).ok()); // three pages
  ASSERT_TRUE(m.allocate(9, 1).ok()); // and the last one
  std::vector<int32_t> pages = m.block_table(8);
  pages.push_back(m.block_table(9)[0]);
  EXPECT_EQ(std::set<int32_t>(pages.begin(), pages.end()).size(), 4u);
  for (int32_t p : pages)
    for (int64_t l = 0; l < 2; ++l) {
      for (int64_t i = 0; i < k_page; ++i)
        ASSERT_EQ(bytes(kv->k_layers[l])[p * k_page + i], 0) << "page " << p;
      for (int64_t i = 0; i < v_page; ++i)
        ASSERT_EQ(bytes(kv->v_layers[l])[p * v_page + i], 0) << "page " << p;
    }
  EXPECT_FALSE(m.allocate(9, 3).ok()); // pool empty
  EXPECT_EQ(old.size(), 2u);
  EXPECT_FALSE(m.free_sequence(99).ok());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KvCacheDtype, ::testing::Values(HYRT_KV_F32, HYRT_KV_BF16),
                         [](const ::testing::TestParamInfo<int32_t> &i) {
                           return std::string(i.param == HYRT_KV_BF16 ? "bf16" : "f32");
                         });

TEST(KvCache, RejectsUnknownDtype) {
  KvCacheManager m;
  KvCacheConfig c = small_config();
  c.dtype = 7;
  hyrt::Status s = m.init(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dtype 7"), std::string::npos) << s.message();
}

TEST(KvCache, ErrorsNameRequestedAndAvailable) {
  KvCacheManager m;
  ASSERT_TRUE(m.init(small_config()).ok());
  hyrt::Status s = m.allocate(1, 7); // 4 pages > max_pages_per_seq 3
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("needs 4 pages for 7 tokens"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("max_pages_per_seq 3"), std::string::npos);
  EXPECT_FALSE(m.has_sequence(1));
  ASSERT_TRUE(m.allocate(1, 6).ok()); // 3 pages
  s = m.allocate(2, 4);               // 2 pages, 1 left
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exhausted"), std::string::npos);
  EXPECT_NE(s.message().find("requests 2 more pages, 1 of 4 available"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(m.has_sequence(2));
  EXPECT_EQ(m.free_pages(), 1);
}

TEST(KvCache, AdvanceChecksCapacity) {
  KvCacheManager m;
  ASSERT_TRUE(m.init(small_config()).ok());
  ASSERT_TRUE(m.allocate(3, 3).ok());
  EXPECT_TRUE(m.advance(3, 3).ok());
  EXPECT_EQ(m.seq_length(3), 3);
  EXPECT_TRUE(m.advance(3, 1).ok());
  EXPECT_FALSE(m.advance(3, 1).ok()); // 5 > 4 slots
  EXPECT_EQ(m.seq_length(3), 4);
}

TEST(StepBatch, ExtendThenDecode) {
  KvCacheManager m;
  KvCacheConfig c = small_config();
  c.num_pages = 8;
  ASSERT_TRUE(m.init(c).ok());
  StepBatch step;
  ASSERT_TRUE(step.build(m, {{10, {5, 6, 7}}, {20, {8, 9}}}, 16).ok());
  hyrt_step_v0 *s = step.abi();
  EXPECT_EQ(s->num_tokens, 5);
  EXPECT_EQ(s->num_seqs, 2);
  EXPECT_FALSE(step.is_decode());
  EXPECT_EQ(std::vector<int32_t>(s->tokens, s->tokens + 5),
            (std::vector<int32_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(std::vector<int32_t>(s->positions, s->positions + 5),
            (std::vector<int32_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(std::vector<int32_t>(s->token_seq, s->token_seq + 5),
            (std::vector<int32_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(s->seq_token_start[1], 3);
  EXPECT_EQ(s->seq_new_len[0], 3);
  EXPECT_EQ(s->seq_prefix_len[1], 0);
  EXPECT_EQ(s->max_pages_per_seq, 3);
  EXPECT_EQ(s->block_tables[0], m.block_table(10)[0]);
  EXPECT_EQ(s->block_tables[1], m.block_table(10)[1]);
  EXPECT_EQ(s->block_tables[3], m.block_table(20)[0]);
  ASSERT_NE(s->logits, nullptr);
  EXPECT_EQ(std::vector<int32_t>(s->logit_rows, s->logit_rows + s->num_logit_rows),
            (std::vector<int32_t>{0, 1, 2, 3, 4}));
  s->logits[4 * 16 + 3] = 1.f;
  EXPECT_EQ(step.last_logits(1)[3], 1.f);
  ASSERT_TRUE(step.commit(m).ok());
  EXPECT_EQ(m.seq_length(10), 3);

  StepBatch dec;
  ASSERT_TRUE(dec.build(m, {{20, {1}}, {10, {2}}}, 16).ok());
  s = dec.abi();
  EXPECT_TRUE(dec.is_decode());
  EXPECT_EQ(s->positions[0], 2);
  EXPECT_EQ(s->positions[1], 3);
  EXPECT_EQ(s->seq_prefix_len[0], 2);
  EXPECT_EQ(s->seq_prefix_len[1], 3);
  EXPECT_EQ(s->block_tables[0 * 3 + 1], m.block_table(20)[1]);
}

TEST(StepBatch, LastTokenLogitsOnly) {
  KvCacheManager m;
  KvCacheConfig c = small_config();
  c.num_pages = 8;
  ASSERT_TRUE(m.init(c).ok());
  StepBatch step;
  ASSERT_TRUE(step.build(m, {{10, {5, 6, 7}}, {20, {8, 9}}, {30, {4}}}, 16,
                         /*all_logits=*/false)
                  .ok());
  hyrt_step_v0 *s = step.abi();
  // The last token of each sequence: 2 (of 10), 4 (of 20), 5 (of 30).
  EXPECT_EQ(std::vector<int32_t>(s->logit_rows, s->logit_rows + s->num_logit_rows),
            (std::vector<int32_t>{2, 4, 5}));
  ASSERT_NE(s->logits, nullptr);
  s->logits[1 * 16 + 3] = 1.f; // row 1 = token 4 = last of sequence 20
  EXPECT_EQ(step.last_logits(1)[3], 1.f);
  EXPECT_EQ(step.last_logits(0)[3], 0.f);
  EXPECT_EQ(step.num_logit_rows(), 3);
}

TEST(StepBatch, RejectsBadBatchesWithoutAllocating) {
  KvCacheManager m;
  ASSERT_TRUE(m.init(small_config()).ok());
  StepBatch step;
  EXPECT_FALSE(step.build(m, {}, 16).ok());
  EXPECT_FALSE(step.build(m, {{1, {}}}, 16).ok());
  EXPECT_FALSE(step.build(m, {{1, {2}}, {1, {3}}}, 16).ok());
  hyrt::Status s = step.build(m, {{1, {2, 16}}}, 16);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("token id 16 outside [0, 16)"),
            std::string::npos);
  // 3 + 3 pages needed, 4 in the pool: nothing may be allocated.
  s = step.build(m, {{1, {1, 1, 1, 1, 1}}, {2, {1, 1, 1, 1, 1}}}, 16);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("requests 6 more pages, 4 available"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(m.free_pages(), 4);
  EXPECT_EQ(m.num_sequences(), 0);
}

TEST(StepBatch, DrivesReferenceAttentionThroughTheCache) {
  // Two chunks through StepBatch + kv_cache_append + attention equal one
  // chunk with everything in-step.
  KvCacheConfig c = small_config();
  c.num_pages = 8;
  c.num_kv_heads = 1;
  c.k_head_dim = 2;
  c.v_head_dim = 2;
  const std::vector<float> q = {1, 0, 0, 1, 1, 1, -1, 2, 0.5f, 0.5f};
  const std::vector<float> k = {0, 1, 1, 0, 2, 1, 1, 1, -1, 0};
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<float> full(10), split(10);
  {
    KvCacheManager m;
    ASSERT_TRUE(m.init(c).ok());
    StepBatch st;
    ASSERT_TRUE(st.build(m, {{0, {0, 0, 0, 0, 0}}}, 0).ok());
    hyrt_ref_kv_cache_append(m.view(), st.abi(), 1, k.data(), v.data());
    hyrt_ref_attention(m.view(), st.abi(), 1, q.data(), k.data(), v.data(), 1,
                       0.7f, full.data());
  }
  KvCacheManager m;
  ASSERT_TRUE(m.init(c).ok());
  StepBatch a, b;
  ASSERT_TRUE(a.build(m, {{0, {0, 0, 0}}}, 0).ok());
  hyrt_ref_kv_cache_append(m.view(), a.abi(), 1, k.data(), v.data());
  hyrt_ref_attention(m.view(), a.abi(), 1, q.data(), k.data(), v.data(), 1,
                     0.7f, split.data());
  ASSERT_TRUE(a.commit(m).ok());
  ASSERT_TRUE(b.build(m, {{0, {0, 0}}}, 0).ok());
  hyrt_ref_kv_cache_append(m.view(), b.abi(), 1, k.data() + 6, v.data() + 6);
  hyrt_ref_attention(m.view(), b.abi(), 1, q.data() + 6, k.data() + 6,
                     v.data() + 6, 1, 0.7f, split.data() + 6);
  for (int i = 0; i < 10; ++i)
    EXPECT_NEAR(split[i], full[i], 1e-6) << i;
}
