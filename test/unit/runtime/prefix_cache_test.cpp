// Prefix cache: the radix tree's sharing, lookup and LRU eviction over a
// bare KvCacheManager, and the Scheduler with and without it over the
// stories260K fixture (f32, bf16 and int8 KV): greedy outputs are the same,
// hits show the cache was used, a pool smaller than the load evicts without
// corrupting running requests and leaks no page.
#include "stories_engine.h"

#include "hyrt/engine/engine.h"
#include "hyrt/engine/prefix_cache.h"
#include "hyrt/engine/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <algorithm>

namespace {

using hyrt_test::StoriesArtifactOptions;
using hyrt_test::TempDir;

hyrt::KvCacheConfig small_config() {
  hyrt::KvCacheConfig c;
  c.num_layers = 1;
  c.num_pages = 8;
  c.page_size = 4;
  c.num_kv_heads = 1;
  c.k_head_dim = 2;
  c.v_head_dim = 2;
  c.max_pages_per_seq = 8;
  return c;
}

/// Makes sequence `seq` hold `tokens` positions as if a step had computed
/// the ones past its (shared) prefix.
void fill(hyrt::KvCacheManager &kv, int64_t seq, int64_t tokens) {
  ASSERT_TRUE(kv.allocate(seq, tokens).ok());
  ASSERT_TRUE(kv.advance(seq, tokens - kv.seq_length(seq)).ok());
}

TEST(PrefixCache, SharesFullBlocksAndEvictsLeastRecentlyUsedLeavesFirst) {
  hyrt::KvCacheManager kv;
  ASSERT_TRUE(kv.init(small_config()).ok());
  hyrt::PrefixCache cache(&kv);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  fill(kv, 1, 10); // 3 pages, the last one partial
  ASSERT_TRUE(cache.insert(a, kv.block_table(1), 2).ok());
  const std::vector<int32_t> a_pages = kv.block_table(1);
  ASSERT_TRUE(kv.free_sequence(1).ok());
  // The two full blocks outlive their sequence; the partial page is free.
  EXPECT_EQ(kv.free_pages(), 6);
  EXPECT_EQ(cache.cached_pages(), 2);
  EXPECT_EQ(cache.evictable_pages(), 2);

  // Same prefix, other third block: both cached blocks match, capped by
  // max_blocks; a different second block matches only the first.
  EXPECT_EQ(cache.lookup({1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0}, 3),
            (std::vector<int32_t>{a_pages[0], a_pages[1]}));
  EXPECT_EQ(cache.lookup(a, 1), (std::vector<int32_t>{a_pages[0]}));
  EXPECT_EQ(cache.lookup({1, 2, 3, 4, 5, 6, 7, 0}, 2),
            (std::vector<int32_t>{a_pages[0]}));
  // Equal tokens after a different prefix are a different block.
  EXPECT_TRUE(cache.lookup({5, 6, 7, 8}, 1).empty());

  // A sharing sequence pins the pages: nothing is evictable.
  ASSERT_TRUE(kv.share_pages(2, {a_pages[0], a_pages[1]}).ok());
  EXPECT_EQ(kv.seq_length(2), 8);
  EXPECT_EQ(kv.page_refs(a_pages[0]), 2);
  EXPECT_EQ(cache.evictable_pages(), 0);
  EXPECT_EQ(cache.evict(8), 0);
  EXPECT_EQ(cache.lookup(a, 2).size(), 2u);
  ASSERT_TRUE(kv.free_sequence(2).ok());

  // A second branch {1,2,3,4}{9,9,9,9}, used after the first: eviction
  // takes the older leaf {5,6,7,8} first, then the newer one, and only
  // then their parent.
  fill(kv, 3, 8);
  const std::vector<int32_t> b = {1, 2, 3, 4, 9, 9, 9, 9};
  ASSERT_TRUE(kv.share_pages(4, {a_pages[0]}).ok());
  fill(kv, 4, 8);
  ASSERT_TRUE(cache.insert(b, kv.block_table(4), 2).ok());
  const int32_t b_page = kv.block_table(4)[1];
  ASSERT_TRUE(kv.free_sequence(3).ok());
  ASSERT_TRUE(kv.free_sequence(4).ok());
  EXPECT_EQ(cache.cached_pages(), 3);
  EXPECT_EQ(cache.evict(1), 1);
  EXPECT_EQ(kv.page_refs(a_pages[1]), 0) << "the older leaf goes first";
  EXPECT_EQ(cache.lookup(b, 2), (std::vector<int32_t>{a_pages[0], b_page}));
  EXPECT_EQ(cache.evict(1), 1);
  EXPECT_EQ(cache.lookup(b, 2), (std::vector<int32_t>{a_pages[0]}));
  cache.clear();
  EXPECT_EQ(kv.free_pages(), 8);
  EXPECT_EQ(cache.cached_pages(), 0);
}

TEST(PrefixCache, InsertStopsAtABlockCachedOnAnotherPage) {
  hyrt::KvCacheManager kv;
  ASSERT_TRUE(kv.init(small_config()).ok());
  hyrt::PrefixCache cache(&kv);
  const std::vector<int32_t> t = {1, 2, 3, 4, 5, 6, 7, 8};
  fill(kv, 1, 8);
  fill(kv, 2, 8); // computed the same prompt alongside, on its own pages
  ASSERT_TRUE(cache.insert(t, kv.block_table(1), 1).ok());
  ASSERT_TRUE(cache.insert(t, kv.block_table(2), 2).ok());
  // Sequence 2's second page would hang below a page it does not hold.
  EXPECT_EQ(cache.cached_pages(), 1);
  EXPECT_EQ(kv.page_refs(kv.block_table(2)[0]), 1);
  EXPECT_EQ(kv.page_refs(kv.block_table(2)[1]), 1);
}

using hyrt_test::Loaded;

void load(Loaded *out, const std::string &kv_dtype, int64_t num_pages = 0) {
  StoriesArtifactOptions ao;
  ao.edit_manifest = [&](nlohmann::json &m) { m["kv_cache"]["dtype"] = kv_dtype; };
  hyrt::EngineOptions eo;
  eo.page_size = 16;
  eo.num_pages = num_pages;
  hyrt_test::load_stories(out, ao, eo);
}

std::vector<int32_t> story(const hyrt::Artifact &art) {
  return art.tokenizer()->encode(
      hyrt_test::read_file(hyrt_test::stories_dir() + "/expected-greedy-256.txt"),
      true);
}

/// `prefix` tokens of the story (BOS first) followed by `suffix_len`
/// tokens taken from elsewhere in it, different for each `variant`.
std::vector<int32_t> shared_prompt(const std::vector<int32_t> &s, size_t prefix,
                                   size_t variant, size_t suffix_len) {
  std::vector<int32_t> p(s.begin(), s.begin() + int64_t(prefix));
  const size_t from = 100 + 9 * variant;
  p.insert(p.end(), s.begin() + int64_t(from),
           s.begin() + int64_t(from + suffix_len));
  return p;
}

std::vector<int32_t> alone(hyrt::Engine &engine, const std::vector<int32_t> &prompt,
                           int64_t n) {
  hyrt::GenerateOptions go;
  go.max_new_tokens = n;
  hyrt::GenerateResult r;
  hyrt::Status s = engine.generate(prompt, go, nullptr, &r);
  EXPECT_TRUE(s.ok()) << s.message();
  return r.tokens;
}

/// Greedy tokens of `prompt` prefilled in two extend calls split at
/// `split`, as the scheduler does when the first `split` tokens are cached.
std::vector<int32_t> split_greedy(hyrt::Engine &engine,
                                  const std::vector<int32_t> &prompt,
                                  size_t split, int64_t n) {
  const int64_t seq = engine.add_sequence();
  std::vector<float> logits;
  EXPECT_TRUE(engine.extend(seq, {prompt.begin(), prompt.begin() + int64_t(split)},
                            nullptr)
                  .ok());
  EXPECT_TRUE(engine.extend(seq, {prompt.begin() + int64_t(split), prompt.end()},
                            &logits, /*all_rows=*/false)
                  .ok());
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(int32_t(std::max_element(logits.begin(), logits.end()) -
                          logits.begin()));
    if (i + 1 < n)
      EXPECT_TRUE(engine.decode({seq}, {out.back()}, &logits).ok());
  }
  EXPECT_TRUE(engine.release(seq).ok());
  return out;
}

/// Submits `prompts` (greedy, `n` tokens each) and steps until idle;
/// returns the tokens of each, in order.
std::vector<std::vector<int32_t>> serve(hyrt::Scheduler &sched,
                                        const std::vector<std::vector<int32_t>> &prompts,
                                        int64_t n) {
  std::map<int64_t, std::vector<int32_t>> got;
  std::vector<int64_t> ids;
  for (const auto &p : prompts) {
    hyrt::Request r;
    r.prompt = p;
    r.max_tokens = n;
    int64_t id = 0;
    hyrt::Status s = sched.submit(
        r,
        [&](const hyrt::RequestEvent &e) {
          auto &t = got[e.request_id];
          t.insert(t.end(), e.tokens.begin(), e.tokens.end());
        },
        &id);
    EXPECT_TRUE(s.ok()) << s.message();
    ids.push_back(id);
  }
  hyrt::Status s = sched.run_until_idle();
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<std::vector<int32_t>> out;
  for (int64_t id : ids)
    out.push_back(got[id]);
  return out;
}

class PrefixCacheKv : public ::testing::TestWithParam<std::string> {};

TEST_P(PrefixCacheKv, GreedyOutputsEqualWithoutTheCacheAndHitsAreCounted) {
  REQUIRE_STORIES();
  Loaded m;
  load(&m, GetParam());
  const std::vector<int32_t> s = story(*m.artifact);
  // 50 shared tokens: 3 full blocks of 16; then a 20-token suffix each.
  std::vector<std::vector<int32_t>> later;
  for (size_t v = 1; v <= 4; ++v)
    later.push_back(shared_prompt(s, 50, v, 20));
  const std::vector<int32_t> first = shared_prompt(s, 50, 0, 20);
  // Whole prompt in full blocks, cached by its first run.
  const std::vector<int32_t> exact(s.begin(), s.begin() + 48);
  std::vector<std::vector<int32_t>> expected;
  for (const auto &p : later)
    expected.push_back(alone(*m.engine, p, 30));
  const std::vector<int32_t> expected_first = alone(*m.engine, first, 30);
  const std::vector<int32_t> expected_exact = alone(*m.engine, exact, 30);
  // With int8 KV an extend step attends to its own tokens' keys unquantized
  // and to cached ones dequantized, so where a prefill is split changes
  // rounding (enough to flip a token here); with the cache, `exact` is
  // split after its 2 cached blocks.
  const std::vector<int32_t> expected_exact_cached =
      GetParam() == "int8" ? split_greedy(*m.engine, exact, 32, 30) : expected_exact;

  for (bool on : {true, false}) {
    SCOPED_TRACE(on ? "prefix cache on" : "prefix cache off");
    hyrt::SchedulerOptions so;
    so.prefix_cache = on;
    hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer(), so);
    EXPECT_EQ(serve(sched, {first}, 30)[0], expected_first);
    EXPECT_EQ(sched.stats().prefix_hit_tokens, 0);
    // The four share the first one's blocks, in one batch.
    EXPECT_EQ(serve(sched, later, 30), expected);
    EXPECT_EQ(sched.stats().prefix_hit_tokens, on ? 4 * 48 : 0);
    const int64_t prompt_total = 5 * 70;
    EXPECT_EQ(sched.stats().prompt_tokens, prompt_total - (on ? 4 * 48 : 0))
        << "cached tokens must not be recomputed";
    // `exact` is the first 3 blocks of the others, all cached: it takes
    // two and recomputes its last block for the logits, each time.
    EXPECT_EQ(serve(sched, {exact}, 30)[0], on ? expected_exact_cached : expected_exact);
    EXPECT_EQ(serve(sched, {exact}, 30)[0], on ? expected_exact_cached : expected_exact);
    EXPECT_EQ(sched.stats().prefix_hit_tokens, on ? 4 * 48 + 2 * 32 : 0);
    // Idle: only the cache holds pages, and a flush returns them all.
    const hyrt::SchedulerStats st = sched.stats();
    EXPECT_EQ(st.kv_pages_used, 0);
    EXPECT_EQ(m.engine->kv_cache().free_pages(),
              st.kv_pages_total - st.prefix_cached_pages);
    EXPECT_EQ(st.prefix_cached_pages > 0, on);
    sched.clear_prefix_cache();
    EXPECT_EQ(sched.stats().prefix_cached_pages, 0);
    EXPECT_EQ(m.engine->kv_cache().free_pages(), st.kv_pages_total);
  }
}

// A second turn: the prompt repeats the first request's prompt and answer,
// then adds new text. The first request's answer was fed back into the
// cache (all but its last token), so the second reuses its full blocks,
// not only the first prompt's: 70 prompt + 29 fed answer tokens are 6 full
// blocks (96 tokens) where the prompt alone gives 4 (64).
TEST_P(PrefixCacheKv, AFollowUpTurnReusesTheAnswersBlocks) {
  REQUIRE_STORIES();
  Loaded m;
  load(&m, GetParam());
  const std::vector<int32_t> s = story(*m.artifact);
  const std::vector<int32_t> first = shared_prompt(s, 50, 0, 20);
  const std::vector<int32_t> answer = alone(*m.engine, first, 30);
  ASSERT_EQ(answer.size(), 30u);
  std::vector<int32_t> second = first;
  second.insert(second.end(), answer.begin(), answer.end());
  second.insert(second.end(), s.begin() + 150, s.begin() + 160);
  // With int8 KV, reading cached blocks rounds differently from computing
  // them in the same step (see the test above): the second turn then
  // equals a prefill split after the 96 cached tokens.
  const std::vector<int32_t> expected = GetParam() == "int8"
                                            ? split_greedy(*m.engine, second, 96, 20)
                                            : alone(*m.engine, second, 20);

  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  EXPECT_EQ(serve(sched, {first}, 30)[0], answer);
  EXPECT_EQ(sched.stats().prefix_cached_pages, 6) << "prompt and fed-back answer blocks";
  EXPECT_EQ(serve(sched, {second}, 20)[0], expected);
  EXPECT_EQ(sched.stats().prefix_hit_tokens, 96);
  EXPECT_EQ(sched.stats().prompt_tokens, 70 + int64_t(second.size()) - 96)
      << "the answer's cached blocks must not be recomputed";
  EXPECT_EQ(sched.stats().kv_pages_used, 0);
  sched.clear_prefix_cache();
  EXPECT_EQ(m.engine->kv_cache().free_pages(), m.engine->kv_cache().config().num_pages);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PrefixCacheKv,
                         ::testing::Values("f32", "bf16", "int8"),
                         [](const auto &info) { return info.param; });

TEST(PrefixCacheScheduler, PoolPressureEvictsWithoutCorruptingOrLeaking) {
  REQUIRE_STORIES();
  Loaded m;
  // A request below needs 6 pages of 16: two run at a time, and
  // cached blocks of finished ones must be evicted to admit the next.
  load(&m, "f32", /*num_pages=*/14);
  const std::vector<int32_t> s = story(*m.artifact);
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < 12; ++i) {
    // Three families of shared prefixes (35 tokens: 2 full blocks), each
    // request with its own suffix.
    std::vector<int32_t> p = shared_prompt(s, 1, i, 14);
    const size_t family = i % 3;
    p.insert(p.begin() + 1, s.begin() + int64_t(1 + 40 * family),
             s.begin() + int64_t(35 + 40 * family));
    prompts.push_back(p);
  }
  std::vector<std::vector<int32_t>> expected;
  for (const auto &p : prompts)
    expected.push_back(alone(*m.engine, p, 40));

  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  EXPECT_EQ(serve(sched, prompts, 40), expected);
  const hyrt::SchedulerStats st = sched.stats();
  EXPECT_GT(st.prefix_hit_tokens, 0);
  EXPECT_GT(st.prefix_evicted_pages, 0) << "the pool should have forced evictions";
  EXPECT_EQ(st.kv_pages_used, 0);
  EXPECT_EQ(m.engine->kv_cache().num_sequences(), 0);
  EXPECT_EQ(m.engine->kv_cache().free_pages(), 14 - st.prefix_cached_pages);
  sched.clear_prefix_cache();
  EXPECT_EQ(m.engine->kv_cache().free_pages(), 14);
}

} // namespace
