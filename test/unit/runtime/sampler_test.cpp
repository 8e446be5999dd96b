// Tests for greedy and seeded stochastic sampling.
#include "hyrt/engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using hyrt::Sampler;
using hyrt::SamplerConfig;

TEST(Pcg32, MatchesReferenceStream) {
  // First outputs of the PCG reference pcg32_srandom(42, 54).
  hyrt::Pcg32 rng(42, 54);
  const uint32_t want[] = {0xa15c02b7, 0x7b47f409, 0xba1d3330,
                           0x83d2f293, 0xbfa4784b, 0xcbed606e};
  for (uint32_t w : want)
    EXPECT_EQ(rng.next_u32(), w);
  for (int i = 0; i < 1000; ++i) {
    const double u = rng.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Sampler, ArgmaxTiesGoToLowerId) {
  const std::vector<float> l = {1, 3, 2, 3};
  EXPECT_EQ(hyrt::argmax(l.data(), 4), 1);
  EXPECT_EQ(hyrt::argmax(l.data(), 0), -1);
  Sampler greedy;
  EXPECT_EQ(greedy.sample(l.data(), 4), 1);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDiffers) {
  std::vector<float> l(50);
  for (int i = 0; i < 50; ++i)
    l[i] = std::sin(float(i)) * 2;
  SamplerConfig c;
  c.temperature = 1.f;
  c.seed = 7;
  Sampler a(c), b(c);
  c.seed = 8;
  Sampler other(c);
  int differ = 0;
  for (int i = 0; i < 200; ++i) {
    const int32_t x = a.sample(l.data(), 50);
    EXPECT_EQ(x, b.sample(l.data(), 50));
    differ += x != other.sample(l.data(), 50);
  }
  EXPECT_GT(differ, 50);
}

TEST(Sampler, TopKOneAndTinyTopPAreGreedy) {
  std::vector<float> l = {0.1f, 2.f, 1.9f, -3.f, 2.f};
  SamplerConfig k1;
  k1.temperature = 1.5f;
  k1.top_k = 1;
  SamplerConfig p0;
  p0.temperature = 1.5f;
  p0.top_p = 1e-6f;
  Sampler a(k1), b(p0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(a.sample(l.data(), 5), 1);
    EXPECT_EQ(b.sample(l.data(), 5), 1);
  }
}

namespace {
std::vector<double> frequencies(Sampler &s, const std::vector<float> &l,
                                int draws) {
  std::vector<double> f(l.size(), 0.0);
  for (int i = 0; i < draws; ++i)
    f[s.sample(l.data(), int64_t(l.size()))] += 1.0 / draws;
  return f;
}
} // namespace

TEST(Sampler, FollowsTemperatureSoftmax) {
  const std::vector<float> l = {0.f, 1.f, 2.f, 0.5f};
  for (float temp : {1.f, 0.5f}) {
    SamplerConfig c;
    c.temperature = temp;
    c.seed = 123;
    Sampler s(c);
    const std::vector<double> f = frequencies(s, l, 40000);
    double z = 0;
    for (float x : l)
      z += std::exp(x / temp);
    for (size_t i = 0; i < l.size(); ++i)
      EXPECT_NEAR(f[i], std::exp(l[i] / temp) / z, 0.01) << temp << " " << i;
  }
}

TEST(Sampler, TopKAndTopPRenormalizeTheKeptSet) {
  // Softmax of these logits is {0.5, 0.3, 0.2} (as logs).
  const std::vector<float> l = {std::log(0.5f), std::log(0.3f),
                                std::log(0.2f)};
  SamplerConfig c;
  c.temperature = 1.f;
  c.top_p = 0.7f; // keeps {0, 1}: mass 0.8
  c.seed = 5;
  Sampler p(c);
  std::vector<double> f = frequencies(p, l, 30000);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_NEAR(f[0], 0.625, 0.015);
  c.top_p = 1.f;
  c.top_k = 2;
  Sampler k(c);
  f = frequencies(k, l, 30000);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_NEAR(f[1], 0.375, 0.015);
}

TEST(Sampler, ValidateReportsBadSettings) {
  SamplerConfig c;
  c.top_p = 0.f;
  hyrt::Status s = Sampler(c).validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("top_p=0"), std::string::npos) << s.message();
  EXPECT_TRUE(Sampler().validate().ok());
}
