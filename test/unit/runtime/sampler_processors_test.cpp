// The logit processors in front of the sampler (logit_bias, OpenAI
// presence / frequency penalties, HF repetition penalty, a constraint's
// mask, min_p), the log-probabilities of what was drawn, and the PCG32
// streams that keep the choices of one request apart.
#include "hyrt/engine/sampler.h"
#include "hyrt/engine/token_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

using hyrt::Sampler;
using hyrt::SamplerConfig;
using hyrt::SampledToken;

namespace {

/// log-softmax of `l` / t over the ids in `keep` (all when empty).
std::vector<double> log_softmax(const std::vector<float> &l, double t = 1,
                                std::set<int> keep = {}) {
  double mx = -INFINITY, sum = 0;
  for (size_t i = 0; i < l.size(); ++i)
    if (keep.empty() || keep.count(int(i)))
      mx = std::max(mx, double(l[i]) / t);
  for (size_t i = 0; i < l.size(); ++i)
    if (keep.empty() || keep.count(int(i)))
      sum += std::exp(double(l[i]) / t - mx);
  std::vector<double> out(l.size(), -INFINITY);
  for (size_t i = 0; i < l.size(); ++i)
    if (keep.empty() || keep.count(int(i)))
      out[i] = double(l[i]) / t - mx - std::log(sum);
  return out;
}

/// Allows exactly one token id.
class OnlyToken : public hyrt::TokenConstraint {
public:
  explicit OnlyToken(int32_t id) : id_(id) {}
  void mask(float *logits, int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      if (i != id_)
        logits[i] = -INFINITY;
  }
  bool accept(int32_t t) override { return t == id_; }
  bool complete() const override { return false; }
  bool can_continue() const override { return true; }

private:
  int32_t id_;
};

} // namespace

TEST(SamplerProcessors, LogitBiasAddsToTheRawLogitsAndCanForceAToken) {
  SamplerConfig c;
  c.logit_bias = {{3, 100.f}, {0, -5.f}};
  Sampler s(c);
  std::vector<float> l = {4, 1, 2, -90, 0};
  SampledToken t = s.step(l.data(), 5, nullptr);
  EXPECT_EQ(t.token, 3); // -90 + 100 beats 4 - 5
  EXPECT_FLOAT_EQ(l[3], 10.f);
  EXPECT_FLOAT_EQ(l[0], -1.f);
}

TEST(SamplerProcessors, PresenceAndFrequencyCountGeneratedTokensOnly) {
  SamplerConfig c;
  c.presence_penalty = 0.3f;
  c.frequency_penalty = 0.2f;
  Sampler s(c);
  s.set_prompt({1, 1, 1}); // the prompt does not count (OpenAI)
  std::vector<float> l = {2, 1.95f, 0};
  EXPECT_EQ(s.step(l.data(), 3, nullptr).token, 0); // nothing generated yet
  EXPECT_FLOAT_EQ(l[1], 1.95f);
  l = {2, 1.95f, 0};
  EXPECT_EQ(s.step(l.data(), 3, nullptr).token, 1); // 2 - 0.5 < 1.95
  EXPECT_FLOAT_EQ(l[0], 2.f - (0.3f + 0.2f));
  l = {2, 1.95f, 0};
  s.apply_bias_and_penalties(l.data(), 3);
  EXPECT_FLOAT_EQ(l[0], 2.f - (0.3f + 0.2f));
  EXPECT_FLOAT_EQ(l[1], 1.95f - (0.3f + 0.2f));
  l = {2, 2, 0};
  s.step(l.data(), 3, nullptr); // token 0 again: generated twice now
  l = {2, 2, 0};
  s.apply_bias_and_penalties(l.data(), 3);
  EXPECT_FLOAT_EQ(l[0], 2.f - (0.3f + 2 * 0.2f));
  EXPECT_FLOAT_EQ(l[2], 0.f);
}

TEST(SamplerProcessors, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  SamplerConfig c;
  c.repetition_penalty = 2.f;
  Sampler s(c);
  s.set_prompt({0, 1, 1}); // the prompt counts (HF / vLLM), once per id
  std::vector<float> l = {3, -1, 2.5f, 0.5f};
  EXPECT_EQ(s.step(l.data(), 4, nullptr).token, 2);
  EXPECT_FLOAT_EQ(l[0], 1.5f);
  EXPECT_FLOAT_EQ(l[1], -2.f);
  EXPECT_FLOAT_EQ(l[2], 2.5f);
  l = {3, -1, 2.5f, 0.5f};
  s.apply_bias_and_penalties(l.data(), 4); // 2 was generated
  EXPECT_FLOAT_EQ(l[2], 1.25f);
  EXPECT_FLOAT_EQ(l[3], 0.5f);
}

TEST(SamplerProcessors, ValidateNamesTheBadValue) {
  auto message = [](SamplerConfig c, int64_t vocab = 10) {
    return Sampler(c).validate(vocab).message();
  };
  SamplerConfig c;
  EXPECT_TRUE(Sampler(c).validate(10).ok());
  c.logit_bias = {{10, 1.f}};
  EXPECT_NE(message(c).find("token id 10 outside the vocabulary [0, 10)"),
            std::string::npos);
  c.logit_bias = {{2, 101.f}};
  EXPECT_NE(message(c).find("[-100, 100]"), std::string::npos);
  c = {};
  c.frequency_penalty = 2.5f;
  EXPECT_NE(message(c).find("frequency_penalty: expected a number in [-2, 2], found 2.5"),
            std::string::npos);
  c = {};
  c.repetition_penalty = 0.f;
  EXPECT_NE(message(c).find("repetition_penalty"), std::string::npos);
  c = {};
  c.min_p = 1.5f;
  EXPECT_NE(message(c).find("min_p"), std::string::npos);
}

TEST(SamplerProcessors, ConstraintMaskComesAfterBiasAndEverythingMaskedIsMinusOne) {
  SamplerConfig c;
  c.logit_bias = {{1, 100.f}};
  Sampler s(c);
  OnlyToken only2(2);
  std::vector<float> l = {5, 0, -3, 1};
  EXPECT_EQ(s.step(l.data(), 4, &only2).token, 2);
  EXPECT_EQ(l[1], -INFINITY); // the bias did not survive the mask
  // Sampled too: a masked token is never drawn.
  c.temperature = 1.5f;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    c.seed = seed;
    Sampler t(c);
    std::vector<float> m = {5, 0, -3, 1};
    ASSERT_EQ(t.step(m.data(), 4, &only2).token, 2);
  }
  OnlyToken none(99);
  std::vector<float> m = {5, 0, -3, 1};
  EXPECT_EQ(Sampler(c).step(m.data(), 4, &none).token, -1);
  m = {5, 0, -3, 1};
  EXPECT_EQ(Sampler().step(m.data(), 4, &none).token, -1);
}

TEST(SamplerProcessors, MinPDropsTokensBelowAFractionOfTheBest) {
  // Probabilities at T = 1: e^0 : e^-1 : e^-3 relative to the best
  // (1 : 0.37 : 0.05); min_p 0.2 keeps ids 0 and 1 only.
  SamplerConfig c;
  c.temperature = 1.f;
  c.min_p = 0.2f;
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    c.seed = seed;
    Sampler s(c);
    std::vector<float> l = {0, -1, -3};
    seen.insert(s.step(l.data(), 3, nullptr).token);
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
}

TEST(SamplerLogprobs, GreedyIsTheLogSoftmaxOfTheProcessedLogits) {
  SamplerConfig c;
  c.logit_bias = {{4, 2.f}};
  Sampler s(c);
  const std::vector<float> raw = {1.f, 3.f, -2.f, 0.5f, 1.5f};
  std::vector<float> l = raw, processed = raw;
  processed[4] += 2.f;
  SampledToken t = s.step(l.data(), 5, nullptr, /*top_logprobs=*/3);
  const std::vector<double> want = log_softmax(processed);
  EXPECT_EQ(t.token, 4); // 3.5 beats 3
  EXPECT_NEAR(t.logprob, want[4], 1e-6);
  ASSERT_EQ(t.top.size(), 3u);
  const int order[] = {4, 1, 0};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(t.top[size_t(i)].token, order[i]);
    EXPECT_NEAR(t.top[size_t(i)].logprob, want[size_t(order[i])], 1e-6);
  }
  // top_logprobs 0: the token's own only.
  std::vector<float> m = raw;
  SampledToken u = Sampler().step(m.data(), 5, nullptr, 0);
  EXPECT_TRUE(u.top.empty());
  EXPECT_NEAR(u.logprob, log_softmax(raw)[1], 1e-6);
}

TEST(SamplerLogprobs, SampledAreOfTheTruncatedTemperedDistribution) {
  SamplerConfig c;
  c.temperature = 0.5f;
  c.top_k = 2;
  c.seed = 3;
  Sampler s(c);
  const std::vector<float> raw = {1.f, 3.f, -2.f, 2.f};
  std::vector<float> l = raw;
  SampledToken t = s.step(l.data(), 4, nullptr, 4);
  const std::vector<double> want = log_softmax(raw, 0.5, {1, 3});
  ASSERT_TRUE(t.token == 1 || t.token == 3);
  EXPECT_NEAR(t.logprob, want[size_t(t.token)], 1e-6);
  ASSERT_EQ(t.top.size(), 4u);
  EXPECT_EQ(t.top[0].token, 1);
  EXPECT_NEAR(t.top[0].logprob, want[1], 1e-6);
  EXPECT_EQ(t.top[1].token, 3);
  EXPECT_NEAR(t.top[1].logprob, want[3], 1e-6);
  EXPECT_EQ(t.top[2].logprob, -INFINITY); // dropped by top_k
  EXPECT_EQ(t.top[3].logprob, -INFINITY);
  // Untruncated: every token has a finite logprob, summing to 1.
  c.top_k = 0;
  Sampler all(c);
  std::vector<float> m = raw;
  SampledToken u = all.step(m.data(), 4, nullptr, 4);
  double mass = 0;
  for (const auto &x : u.top)
    mass += std::exp(double(x.logprob));
  EXPECT_NEAR(mass, 1.0, 1e-6);
}

TEST(SamplerStreams, ChoicesOfOneSeedDrawDistinctReproducibleStreams) {
  auto draws = [](uint64_t stream) {
    SamplerConfig c;
    c.temperature = 1.f;
    c.seed = 11;
    c.stream = stream;
    Sampler s(c);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) {
      std::vector<float> l(16, 0.f);
      out.push_back(s.sample(l.data(), 16));
    }
    return out;
  };
  EXPECT_EQ(draws(0), draws(0));
  EXPECT_EQ(draws(1), draws(1));
  EXPECT_NE(draws(0), draws(1));
  EXPECT_NE(draws(1), draws(2));
  // Stream 0 is the stream a single request always drew from.
  SamplerConfig c;
  c.temperature = 1.f;
  c.seed = 11;
  hyrt::Pcg32 classic(11);
  Sampler s(c);
  std::vector<float> l(2, 0.f);
  const int32_t first = s.sample(l.data(), 2);
  EXPECT_EQ(first, classic.next_double() * 2 < 1 ? 0 : 1);
}
