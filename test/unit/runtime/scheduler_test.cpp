// Scheduler over the stories260K fixture artifact: batched greedy (and
// seeded sampled) requests give the tokens Engine::generate gives alone,
// more requests than the KV pool holds all finish without leaking pages,
// cancellation frees pages, stop strings cut the text (also across token
// boundaries), max_tokens and stop tokens end requests, bad requests are
// refused at submit.
#include "stories_engine.h"

#include "hyrt/engine/engine.h"
#include "hyrt/engine/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>

namespace {

using hyrt_test::StoriesArtifactOptions;
using hyrt_test::TempDir;

using hyrt_test::Loaded;

void load(Loaded *out, const hyrt::EngineOptions &eo = {},
          const StoriesArtifactOptions &ao = {}) {
  hyrt_test::load_stories(out, ao, eo);
}

/// Prompts of different lengths; the 100-token one needs two prefill chunks
/// of the fixture's max_batch_tokens 64.
std::vector<std::vector<int32_t>> prompts(const hyrt::Artifact &art) {
  const hyrt::Tokenizer &tok = *art.tokenizer();
  std::vector<int32_t> story = tok.encode(
      hyrt_test::read_file(hyrt_test::stories_dir() + "/expected-greedy-256.txt"),
      true);
  std::vector<std::vector<int32_t>> out = {
      tok.encode("Once upon a time", true), tok.encode("The cat", true),
      {story.begin(), story.begin() + 100}, tok.encode("Lily", true),
      {story.begin() + 40, story.begin() + 73}, tok.encode("One day", true)};
  out[4].insert(out[4].begin(), tok.bos_id());
  return out;
}

/// What Engine::generate gives for `prompt` alone.
std::vector<int32_t> alone(hyrt::Engine &engine, const std::vector<int32_t> &prompt,
                           int64_t n, hyrt::SamplerConfig sampler = {}) {
  hyrt::GenerateOptions go;
  go.max_new_tokens = n;
  go.sampler = sampler;
  hyrt::GenerateResult r;
  hyrt::Status s = engine.generate(prompt, go, nullptr, &r);
  EXPECT_TRUE(s.ok()) << s.message();
  return r.tokens;
}

/// Collects the events of every request.
struct Collected {
  std::map<int64_t, std::vector<int32_t>> tokens;
  std::map<int64_t, std::string> text, reason;
  std::map<int64_t, int> finished;
  hyrt::EventCallback callback() {
    return [this](const hyrt::RequestEvent &e) {
      auto &t = tokens[e.request_id];
      t.insert(t.end(), e.tokens.begin(), e.tokens.end());
      text[e.request_id] += e.text;
      if (e.finished) {
        ++finished[e.request_id];
        reason[e.request_id] = e.finish_reason;
      }
    };
  }
};

class SchedulerModes : public ::testing::TestWithParam<bool> {};

TEST_P(SchedulerModes, BatchedGreedyAndSeededEqualAlone) {
  REQUIRE_STORIES();
  Loaded m;
  load(&m);
  const auto ps = prompts(*m.artifact);
  hyrt::SamplerConfig sampled;
  sampled.temperature = 0.9f;
  sampled.top_p = 0.95f;
  sampled.seed = 7;
  std::vector<std::vector<int32_t>> expected;
  for (const auto &p : ps)
    expected.push_back(alone(*m.engine, p, 40));
  expected.push_back(alone(*m.engine, ps[0], 40, sampled));

  hyrt::SchedulerOptions so;
  so.mixed_steps = GetParam();
  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer(), so);
  Collected c;
  std::vector<int64_t> ids;
  for (size_t i = 0; i <= ps.size(); ++i) {
    hyrt::Request r;
    r.prompt = i < ps.size() ? ps[i] : ps[0];
    r.max_tokens = 40;
    if (i == ps.size())
      r.sampler = sampled;
    int64_t id = 0;
    hyrt::Status s = sched.submit(r, c.callback(), &id);
    ASSERT_TRUE(s.ok()) << s.message();
    ids.push_back(id);
  }
  ASSERT_TRUE(sched.run_until_idle().ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(c.tokens[ids[i]], expected[i]) << "request " << i;
    EXPECT_EQ(c.reason[ids[i]], "length");
    EXPECT_EQ(c.finished[ids[i]], 1);
    EXPECT_EQ(c.text[ids[i]],
              m.artifact->tokenizer()->decode_all(
                  [&] {
                    std::vector<int32_t> all = {i < ps.size() ? ps[i].back()
                                                              : ps[0].back()};
                    all.insert(all.end(), expected[i].begin(),
                               expected[i].end());
                    return all;
                  }())
                  .substr(m.artifact->tokenizer()
                              ->decode(i < ps.size() ? ps[i].back()
                                                     : ps[0].back())
                              .size()));
  }
  // 7 requests of up to 40 tokens in fewer steps than one after the other.
  EXPECT_LT(sched.stats().steps, 7 * 40);
  EXPECT_EQ(sched.stats().kv_pages_used, 0);
  sched.clear_prefix_cache(); // its pages are the only ones still held
  EXPECT_EQ(m.engine->kv_cache().free_pages(),
            m.engine->kv_cache().config().num_pages);
}

INSTANTIATE_TEST_SUITE_P(Steps, SchedulerModes, ::testing::Bool(),
                         [](const auto &info) {
                           return info.param ? "mixed" : "separate";
                         });

TEST(Scheduler, MoreRequestsThanThePoolHoldsAllFinishWithoutLeaks) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt::EngineOptions eo;
  eo.page_size = 16;
  eo.num_pages = 12; // a request below needs 4-5 pages: 2-3 run at a time
  load(&m, eo);
  const auto ps = prompts(*m.artifact);
  std::vector<std::vector<int32_t>> expected;
  for (int i = 0; i < 12; ++i)
    expected.push_back(alone(*m.engine, ps[i % 2 ? 1 : 0], 60));
  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  Collected c;
  std::vector<int64_t> ids(12);
  for (int i = 0; i < 12; ++i) {
    hyrt::Request r;
    r.prompt = ps[i % 2 ? 1 : 0];
    r.max_tokens = 60;
    ASSERT_TRUE(sched.submit(r, c.callback(), &ids[i]).ok());
  }
  int64_t peak_running = 0, peak_queued = 0, peak_pages = 0;
  for (int guard = 0; guard < 10000; ++guard) {
    bool worked = false;
    ASSERT_TRUE(sched.step(&worked).ok());
    const hyrt::SchedulerStats st = sched.stats();
    peak_running = std::max(peak_running, st.running);
    peak_queued = std::max(peak_queued, st.queued);
    peak_pages = std::max(peak_pages, st.kv_pages_used);
    if (!worked && st.running == 0 && st.queued == 0)
      break;
  }
  EXPECT_GT(peak_queued, 0) << "the pool should have made requests wait";
  EXPECT_GE(peak_running, 2);
  EXPECT_LE(peak_pages, 12);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(c.tokens[ids[i]], expected[i]) << "request " << i;
    EXPECT_EQ(c.reason[ids[i]], "length");
  }
  EXPECT_EQ(m.engine->kv_cache().num_sequences(), 0);
  EXPECT_EQ(sched.stats().kv_pages_used, 0);
  sched.clear_prefix_cache(); // its pages are the only ones still held
  EXPECT_EQ(m.engine->kv_cache().free_pages(), 12);
}

TEST(Scheduler, CancellationFreesPagesAndSparesOthers) {
  REQUIRE_STORIES();
  Loaded m;
  load(&m);
  const auto ps = prompts(*m.artifact);
  const std::vector<int32_t> other = alone(*m.engine, ps[1], 50);
  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  Collected c;
  int64_t victim = 0, queued_victim = 0, keeper = 0, self_cancel = 0;
  hyrt::Request r;
  r.prompt = ps[0];
  r.max_tokens = 200;
  ASSERT_TRUE(sched.submit(r, c.callback(), &victim).ok());
  // Cancels itself from its own callback after 5 tokens.
  hyrt::Scheduler *sp = &sched;
  int64_t *self_id = &self_cancel;
  auto base = c.callback();
  ASSERT_TRUE(sched
                  .submit(r,
                          [&, sp, self_id, base](const hyrt::RequestEvent &e) {
                            base(e);
                            if (c.tokens[e.request_id].size() == 5)
                              sp->cancel(*self_id);
                          },
                          &self_cancel)
                  .ok());
  r.prompt = ps[1];
  r.max_tokens = 50;
  ASSERT_TRUE(sched.submit(r, c.callback(), &keeper).ok());
  ASSERT_TRUE(sched.submit(r, c.callback(), &queued_victim).ok());
  sched.cancel(queued_victim); // before it ever runs
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(sched.step().ok());
  EXPECT_GT(m.engine->kv_cache().num_sequences(), 0);
  sched.cancel(victim);
  ASSERT_TRUE(sched.run_until_idle().ok());
  EXPECT_EQ(c.reason[victim], "cancelled");
  EXPECT_LT(c.tokens[victim].size(), 200u);
  EXPECT_EQ(c.reason[queued_victim], "cancelled");
  EXPECT_TRUE(c.tokens[queued_victim].empty());
  EXPECT_EQ(c.reason[self_cancel], "cancelled");
  EXPECT_LE(c.tokens[self_cancel].size(), 6u);
  EXPECT_EQ(c.tokens[keeper], other);
  EXPECT_EQ(c.reason[keeper], "length");
  EXPECT_EQ(sched.stats().kv_pages_used, 0);
  sched.clear_prefix_cache(); // its pages are the only ones still held
  EXPECT_EQ(m.engine->kv_cache().free_pages(),
            m.engine->kv_cache().config().num_pages);
  EXPECT_EQ(m.engine->kv_cache().num_sequences(), 0);
}

TEST(Scheduler, StopStringsCutTheTextAlsoAcrossTokens) {
  REQUIRE_STORIES();
  Loaded m;
  load(&m);
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  const auto ps = prompts(*m.artifact);
  const std::vector<int32_t> full = alone(*m.engine, ps[0], 60);
  // Pieces of the greedy continuation; a stop string made of the end of
  // piece k and the start of piece k+1 spans a token boundary.
  std::vector<std::string> pieces;
  int32_t prev = ps[0].back();
  for (int32_t t : full) {
    pieces.push_back(tok.decode(prev, t));
    prev = t;
  }
  size_t k = 8;
  while (k + 1 < pieces.size() &&
         (pieces[k].size() < 2 || pieces[k + 1].size() < 2))
    ++k;
  ASSERT_LT(k + 1, pieces.size());
  const std::string stop =
      pieces[k].substr(pieces[k].size() - 2) + pieces[k + 1].substr(0, 2);
  std::string all;
  for (const auto &p : pieces)
    all += p;
  const std::string expected = all.substr(0, all.find(stop));

  hyrt::Scheduler sched(m.engine.get(), &tok);
  Collected c;
  int64_t id = 0, never = 0;
  hyrt::Request r;
  r.prompt = ps[0];
  r.max_tokens = 60;
  r.stop_strings = {"this never appears in a story", stop};
  ASSERT_TRUE(sched.submit(r, c.callback(), &id).ok());
  r.stop_strings = {"zzzz"};
  r.max_tokens = 7;
  ASSERT_TRUE(sched.submit(r, c.callback(), &never).ok());
  ASSERT_TRUE(sched.run_until_idle().ok());
  EXPECT_EQ(c.text[id], expected);
  EXPECT_EQ(c.reason[id], "stop");
  // Ended on the token that completed the stop string.
  size_t needed = 0, covered = 0;
  while (covered < expected.size() + stop.size())
    covered += pieces[needed++].size();
  EXPECT_EQ(c.tokens[id].size(), needed);
  EXPECT_LE(needed, k + 2);
  EXPECT_LT(needed, full.size());
  EXPECT_EQ(c.reason[never], "length");
  EXPECT_EQ(c.tokens[never].size(), 7u);
  EXPECT_EQ(c.text[never], tok.decode_all([&] {
              std::vector<int32_t> v = {ps[0].back()};
              v.insert(v.end(), full.begin(), full.begin() + 7);
              return v;
            }()).substr(tok.decode(ps[0].back()).size()));
}

TEST(Scheduler, StopTokensEndTheRequestUnreported) {
  REQUIRE_STORIES();
  Loaded m;
  load(&m);
  const auto ps = prompts(*m.artifact);
  const std::vector<int32_t> full = alone(*m.engine, ps[0], 30);
  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  Collected c;
  int64_t id = 0;
  hyrt::Request r;
  r.prompt = ps[0];
  r.max_tokens = 30;
  r.stop_tokens = {full[8]};
  ASSERT_TRUE(sched.submit(r, c.callback(), &id).ok());
  ASSERT_TRUE(sched.run_until_idle().ok());
  const size_t first = size_t(
      std::find(full.begin(), full.end(), full[8]) - full.begin());
  EXPECT_EQ(c.tokens[id],
            std::vector<int32_t>(full.begin(), full.begin() + first));
  EXPECT_EQ(c.reason[id], "stop");
}

TEST(Scheduler, ThreadServesConcurrentSubmitters) {
  REQUIRE_STORIES();
  Loaded m;
  load(&m);
  const auto ps = prompts(*m.artifact);
  std::vector<std::vector<int32_t>> expected;
  for (const auto &p : ps)
    expected.push_back(alone(*m.engine, p, 20));
  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  sched.start();
  std::mutex mu;
  std::condition_variable cv;
  Collected c;
  int done = 0;
  std::vector<std::thread> clients;
  std::vector<int64_t> ids(ps.size());
  for (size_t i = 0; i < ps.size(); ++i)
    clients.emplace_back([&, i] {
      hyrt::Request r;
      r.prompt = ps[i];
      r.max_tokens = 20;
      auto base = c.callback();
      hyrt::Status s = sched.submit(
          r,
          [&, base](const hyrt::RequestEvent &e) {
            std::lock_guard<std::mutex> lock(mu);
            base(e);
            if (e.finished) {
              ++done;
              cv.notify_all();
            }
          },
          &ids[i]);
      EXPECT_TRUE(s.ok()) << s.message();
    });
  for (auto &t : clients)
    t.join();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60),
                            [&] { return done == int(ps.size()); }));
  }
  sched.stop();
  for (size_t i = 0; i < ps.size(); ++i)
    EXPECT_EQ(c.tokens[ids[i]], expected[i]) << "request " << i;
  EXPECT_EQ(sched.stats().kv_pages_used, 0);
  sched.clear_prefix_cache(); // its pages are the only ones still held
  EXPECT_EQ(m.engine->kv_cache().free_pages(),
            m.engine->kv_cache().config().num_pages);
}

TEST(Scheduler, RefusesBadRequestsAtSubmit) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt::EngineOptions eo;
  eo.num_pages = 4; // 64 positions of 16
  load(&m, eo);
  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  int64_t id = 0;
  auto refused = [&](hyrt::Request r, const std::string &needle) {
    hyrt::Status s = sched.submit(r, nullptr, &id);
    EXPECT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  hyrt::Request r;
  refused(r, "empty prompt");
  r.prompt = std::vector<int32_t>(513, 1);
  refused(r, "exceeds max_seq_len 512");
  r.prompt = {1, 512};
  refused(r, "outside the vocabulary [0, 512)");
  r.prompt = {1, 2};
  r.max_tokens = 0;
  refused(r, "max_tokens: expected >= 1, found 0");
  r.max_tokens = 100; // 101 positions: 7 pages of a 4-page pool
  refused(r, "needs 7 KV pages but the pool has only 4");
  r.max_tokens = 10;
  r.sampler.temperature = -1;
  refused(r, "temperature");
  r.sampler.temperature = 0;
  r.stop_strings = {""};
  refused(r, "non-empty");
  EXPECT_EQ(sched.stats().queued, 0);
}

} // namespace
