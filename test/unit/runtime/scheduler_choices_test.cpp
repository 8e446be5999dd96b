// Scheduler over the stories260K fixture: n choices of one request (the
// prompt prefilled once, its full pages shared; greedy choices equal a
// single request; seeded choices distinct and reproducible), log-
// probabilities with every token (and every prompt token when asked,
// equal to the engine's rows), and a TokenConstraint wired in (its
// mask steers, a rejected token is an error, a complete constraint stops).
#include "stories_engine.h"

#include "hyrt/engine/engine.h"
#include "hyrt/engine/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace {

using hyrt_test::Loaded;

/// Events per choice of one request.
struct Choices {
  std::map<int64_t, std::vector<int32_t>> tokens;
  std::map<int64_t, std::vector<hyrt::SampledToken>> logprobs;
  std::map<int64_t, std::string> reason, error;
  hyrt::EventCallback callback() {
    return [this](const hyrt::RequestEvent &e) {
      auto &t = tokens[e.choice];
      t.insert(t.end(), e.tokens.begin(), e.tokens.end());
      auto &l = logprobs[e.choice];
      l.insert(l.end(), e.logprobs.begin(), e.logprobs.end());
      if (e.finished) {
        reason[e.choice] = e.finish_reason;
        error[e.choice] = e.error;
      }
    };
  }
};

std::vector<int32_t> run_one(hyrt::Scheduler &sched, hyrt::Request r,
                             Choices *c = nullptr) {
  Choices local;
  Choices &into = c ? *c : local;
  int64_t id = 0;
  hyrt::Status s = sched.submit(r, into.callback(), &id);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(sched.run_until_idle().ok());
  return into.tokens[0];
}

/// Allows exactly `seq`, in order; complete after it, nothing may follow.
class FixedSequence : public hyrt::TokenConstraint {
public:
  explicit FixedSequence(std::vector<int32_t> seq, bool accept_all = true)
      : seq_(std::move(seq)), accept_all_(accept_all) {}
  void mask(float *logits, int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      if (at_ >= seq_.size() || i != seq_[at_])
        logits[i] = -INFINITY;
  }
  bool accept(int32_t t) override {
    if (!accept_all_ || at_ >= seq_.size() || t != seq_[at_])
      return false;
    ++at_;
    return true;
  }
  bool complete() const override { return at_ == seq_.size(); }
  bool can_continue() const override { return at_ < seq_.size(); }

private:
  std::vector<int32_t> seq_;
  size_t at_ = 0;
  bool accept_all_;
};

class ChoicesModes : public ::testing::TestWithParam<bool> {};

TEST_P(ChoicesModes, GreedyChoicesEqualOneRequestAndPrefillThePromptOnce) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt_test::load_stories(&m);
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  // 37 tokens: two full pages of 16 and a partial one.
  std::vector<int32_t> prompt = tok.encode(
      "Once upon a time there was a little girl named Lily who loved to play "
      "in the park with her big red ball and her dog",
      true);
  ASSERT_GT(prompt.size(), 32u);
  ASSERT_LT(prompt.size(), 48u);
  hyrt::SchedulerOptions so;
  so.prefix_cache = GetParam(); // sharing must not depend on the cache
  hyrt::Scheduler sched(m.engine.get(), &tok, so);
  hyrt::Request r;
  r.prompt = prompt;
  r.max_tokens = 24;
  r.stop_tokens = {tok.eos_id(), tok.bos_id()};
  const std::vector<int32_t> single = run_one(sched, r);
  sched.clear_prefix_cache();
  const int64_t prefilled_before = sched.stats().prompt_tokens;
  r.n = 4;
  Choices c;
  run_one(sched, r, &c);
  ASSERT_EQ(c.tokens.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(c.tokens[i], single) << "choice " << i;
    EXPECT_EQ(c.reason[i], c.reason[0]);
  }
  // Choice 0 prefills the prompt; each other choice only the block
  // holding its last token (the logits of its first token).
  const int64_t ps = m.engine->kv_cache().config().page_size;
  const int64_t L = int64_t(prompt.size()), tail = L - (L - 1) / ps * ps;
  EXPECT_EQ(sched.stats().prompt_tokens - prefilled_before, L + 3 * tail);
  EXPECT_EQ(sched.stats().kv_pages_used, 0);
  sched.clear_prefix_cache();
  EXPECT_EQ(m.engine->kv_cache().free_pages(),
            m.engine->kv_cache().config().num_pages);
}

INSTANTIATE_TEST_SUITE_P(PrefixCache, ChoicesModes, ::testing::Bool(),
                         [](const auto &info) {
                           return info.param ? "cache" : "no_cache";
                         });

TEST(SchedulerChoices, SeededChoicesAreDistinctAndReproducible) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt_test::load_stories(&m);
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  hyrt::Scheduler sched(m.engine.get(), &tok);
  hyrt::Request r;
  r.prompt = tok.encode("Once upon a time", true);
  r.max_tokens = 30;
  r.sampler.temperature = 1.f;
  r.sampler.seed = 5;
  const std::vector<int32_t> single = run_one(sched, r);
  r.n = 3;
  Choices a, b;
  run_one(sched, r, &a);
  run_one(sched, r, &b);
  EXPECT_EQ(a.tokens, b.tokens);      // reproducible
  EXPECT_EQ(a.tokens[0], single);     // choice 0 = the request alone
  EXPECT_NE(a.tokens[0], a.tokens[1]); // distinct streams
  EXPECT_NE(a.tokens[1], a.tokens[2]);
}

TEST(SchedulerChoices, LogprobsComeWithEveryTokenAndMatchTheEngineLogits) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt_test::load_stories(&m);
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  const std::vector<int32_t> prompt = tok.encode("The little dog", true);
  // The first token's logits, from the engine directly.
  std::vector<float> logits;
  const int64_t seq = m.engine->add_sequence();
  ASSERT_TRUE(m.engine->extend(seq, prompt, &logits, false).ok());
  ASSERT_TRUE(m.engine->release(seq).ok());
  const int64_t V = m.engine->vocab_size();
  double mx = -INFINITY, sum = 0;
  for (int64_t i = 0; i < V; ++i)
    mx = std::max(mx, double(logits[size_t(i)]));
  for (int64_t i = 0; i < V; ++i)
    sum += std::exp(double(logits[size_t(i)]) - mx);
  hyrt::Scheduler sched(m.engine.get(), &tok);
  hyrt::Request r;
  r.prompt = prompt;
  r.max_tokens = 8;
  r.logprobs = 5;
  Choices c;
  run_one(sched, r, &c);
  ASSERT_EQ(c.logprobs[0].size(), c.tokens[0].size());
  const hyrt::SampledToken &first = c.logprobs[0][0];
  EXPECT_EQ(first.token, c.tokens[0][0]);
  EXPECT_NEAR(first.logprob,
              double(logits[size_t(first.token)]) - mx - std::log(sum), 1e-5);
  for (const hyrt::SampledToken &t : c.logprobs[0]) {
    ASSERT_EQ(t.top.size(), 5u);
    EXPECT_EQ(t.top[0].token, t.token); // greedy: the best one
    EXPECT_FLOAT_EQ(t.top[0].logprob, t.logprob);
    EXPECT_GE(t.top[0].logprob, t.top[4].logprob);
  }
}

TEST(SchedulerChoices, PromptLogprobsMatchEveryPromptRowOfTheEngine) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt_test::load_stories(&m);
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  // Longer than one step's tokens, so the prompt spans several steps.
  std::string text;
  while (int64_t(tok.encode(text, true).size()) <=
         m.engine->limits().max_batch_tokens + 3)
    text += "The little dog ran to the park. ";
  const std::vector<int32_t> prompt = tok.encode(text, true);
  std::vector<float> rows;
  const int64_t seq = m.engine->add_sequence();
  ASSERT_TRUE(m.engine->extend(seq, prompt, &rows, true).ok());
  ASSERT_TRUE(m.engine->release(seq).ok());
  const int64_t V = m.engine->vocab_size();

  hyrt::Scheduler sched(m.engine.get(), &tok);
  // The same prompt run before: its blocks are in the prefix cache, which
  // a request with prompt logprobs must not take.
  hyrt::Request warm;
  warm.prompt = prompt;
  warm.max_tokens = 2;
  run_one(sched, warm);
  // Another request decodes beside it: the step's rows are mixed.
  Choices other;
  hyrt::Request side;
  side.prompt = tok.encode("Once", true);
  side.max_tokens = 6;
  int64_t side_id = 0;
  ASSERT_TRUE(sched.submit(side, other.callback(), &side_id).ok());
  std::vector<hyrt::SampledToken> got;
  hyrt::Request r;
  r.prompt = prompt;
  r.max_tokens = 3;
  r.logprobs = 2;
  r.prompt_logprobs = true;
  int64_t id = 0;
  ASSERT_TRUE(sched.submit(r, [&](const hyrt::RequestEvent &e) {
                      got.insert(got.end(), e.prompt_logprobs.begin(),
                                 e.prompt_logprobs.end());
                    }, &id).ok());
  ASSERT_TRUE(sched.run_until_idle().ok());
  ASSERT_EQ(got.size(), prompt.size() - 1);
  for (size_t k = 1; k < prompt.size(); ++k) {
    const float *row = &rows[(k - 1) * size_t(V)];
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < V; ++i)
      mx = std::max(mx, double(row[i]));
    for (int64_t i = 0; i < V; ++i)
      sum += std::exp(double(row[i]) - mx);
    const hyrt::SampledToken &t = got[k - 1];
    EXPECT_EQ(t.token, prompt[k]);
    EXPECT_NEAR(t.logprob, double(row[prompt[k]]) - mx - std::log(sum), 1e-4)
        << "position " << k;
    ASSERT_EQ(t.top.size(), 2u);
    EXPECT_NEAR(t.top[0].logprob, -std::log(sum), 1e-4) << "position " << k;
  }
}

TEST(SchedulerChoices, ConstraintSteersAndStopsWhenComplete) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt_test::load_stories(&m);
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  hyrt::Scheduler sched(m.engine.get(), &tok);
  // Tokens greedy decoding would not pick: the mask must force them.
  const std::vector<int32_t> forced = {tok.encode("zebra", false)[0], 300, 7, 42};
  hyrt::Request r;
  r.prompt = tok.encode("Once upon a time", true);
  r.max_tokens = 20;
  r.constraint = std::make_shared<FixedSequence>(forced);
  r.logprobs = 0;
  Choices c;
  run_one(sched, r, &c);
  EXPECT_EQ(c.tokens[0], forced);
  EXPECT_EQ(c.reason[0], "stop"); // complete and nothing may follow
  // The mask left one token: probability 1.
  for (const hyrt::SampledToken &t : c.logprobs[0])
    EXPECT_FLOAT_EQ(t.logprob, 0.f);

  // n > 1: each choice its own constraint, from the factory.
  r.n = 2;
  r.constraint_factory = [&] { return std::make_shared<FixedSequence>(forced); };
  r.constraint = r.constraint_factory();
  Choices two;
  run_one(sched, r, &two);
  EXPECT_EQ(two.tokens[0], forced);
  EXPECT_EQ(two.tokens[1], forced);
  r.constraint_factory = nullptr;
  int64_t id = 0;
  EXPECT_FALSE(sched.submit(r, nullptr, &id).ok()); // one state for two
}

TEST(SchedulerChoices, RejectedTokenOrEmptyMaskEndsWithAnError) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt_test::load_stories(&m);
  const hyrt::Tokenizer &tok = *m.artifact->tokenizer();
  hyrt::Scheduler sched(m.engine.get(), &tok);
  hyrt::Request r;
  r.prompt = tok.encode("Once upon a time", true);
  r.max_tokens = 5;
  r.constraint = std::make_shared<FixedSequence>(std::vector<int32_t>{9},
                                                 /*accept_all=*/false);
  Choices c;
  run_one(sched, r, &c);
  EXPECT_EQ(c.reason[0], "error");
  EXPECT_NE(c.error[0].find("rejected the sampled token 9"), std::string::npos)
      << c.error[0];
  r.constraint = std::make_shared<FixedSequence>(std::vector<int32_t>{});
  Choices d;
  run_one(sched, r, &d);
  EXPECT_EQ(d.reason[0], "error");
  EXPECT_NE(d.error[0].find("masked out the whole vocabulary"), std::string::npos);
  EXPECT_EQ(sched.stats().kv_pages_used, 0);
}

TEST(SchedulerChoices, SubmitRefusesBadChoicesLogprobsAndBias) {
  REQUIRE_STORIES();
  Loaded m;
  hyrt_test::load_stories(&m);
  hyrt::Scheduler sched(m.engine.get(), m.artifact->tokenizer());
  auto refused = [&](hyrt::Request r, const std::string &what) {
    r.prompt = {1, 2, 3};
    int64_t id = 0;
    hyrt::Status s = sched.submit(r, nullptr, &id);
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  hyrt::Request r;
  r.n = 0;
  refused(r, "n: expected 1 to 16 choices, found 0");
  r.n = 17;
  refused(r, "found 17");
  r = {};
  r.logprobs = 21;
  refused(r, "logprobs: expected -1 (none) to 20, found 21");
  r = {};
  r.sampler.logit_bias = {{int32_t(m.engine->vocab_size()), 1.f}};
  refused(r, "outside the vocabulary");
}

} // namespace
