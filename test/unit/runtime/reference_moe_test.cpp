// Tests for the MoE reference kernels: routing variants and tie-breaking, and
// permute -> grouped matmul -> unpermute against a direct per-token sum.
#include "hyrt/reference.h"
#include "ref_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

struct Routed {
  std::vector<float> weights;
  std::vector<int32_t> ids;
};

Routed route(const std::vector<float> &logits, const float *bias,
             int64_t experts, int64_t top_k, int32_t scoring,
             int64_t n_group = 1, int64_t topk_group = 1,
             int32_t group_score = 0, int32_t renorm = 0, float scale = 1.f) {
  const int64_t T = int64_t(logits.size()) / experts;
  Routed r{std::vector<float>(T * top_k), std::vector<int32_t>(T * top_k)};
  hyrt_ref_moe_route(logits.data(), bias, T, experts, top_k, scoring, n_group,
                     topk_group, group_score, renorm, scale, r.weights.data(),
                     r.ids.data());
  return r;
}

float logit_of(float p) { return std::log(p / (1 - p)); }
float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

} // namespace

TEST(RefMoeRoute, SoftmaxTopKWeightsRenormAndScale) {
  const std::vector<float> logits = {1, 3, 2, 0};
  double z = 0;
  for (float l : logits)
    z += std::exp(double(l));
  const double p1 = std::exp(3.0) / z, p2 = std::exp(2.0) / z;
  Routed r = route(logits, nullptr, 4, 2, 0);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_NEAR(r.weights[0], p1, 1e-6);
  EXPECT_NEAR(r.weights[1], p2, 1e-6);
  r = route(logits, nullptr, 4, 2, 0, 1, 1, 0, /*renorm=*/1, 2.5f);
  EXPECT_NEAR(r.weights[0], 2.5 * p1 / (p1 + p2), 1e-6);
  EXPECT_NEAR(r.weights[1], 2.5 * p2 / (p1 + p2), 1e-6);
}

TEST(RefMoeRoute, SigmoidBiasChangesSelectionNotWeights) {
  const std::vector<float> logits = {2.f, 1.f, 0.f, -1.f};
  Routed plain = route(logits, nullptr, 4, 2, 1);
  EXPECT_EQ(plain.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_NEAR(plain.weights[0], sigmoid(2.f), 1e-6);
  const std::vector<float> bias = {0.f, 0.f, 0.f, 1.f};
  Routed biased = route(logits, bias.data(), 4, 2, 1);
  // sel = {.88, .73, .5, 1.27}: expert 3 first, then 0.
  EXPECT_EQ(biased.ids, (std::vector<int32_t>{3, 0}));
  EXPECT_NEAR(biased.weights[0], sigmoid(-1.f), 1e-6);
  EXPECT_NEAR(biased.weights[1], sigmoid(2.f), 1e-6);
}

TEST(RefMoeRoute, GroupLimitingChangesResult) {
  // 8 experts in 4 groups of 2 (sigmoid scores shown):
  //   g0 {.95 .05}  g1 {.6 .6}  g2 {.7 .55}  g3 {.1 .1}
  // Plain top-2: experts 0, 4. Max-score groups (top 2): g0, g2 -> 0, 4.
  // Top-2-sum groups: g1 (1.2), g2 (1.25) -> 4, then the 2/3 tie -> 2.
  const std::vector<float> p = {.95f, .05f, .6f, .6f, .7f, .55f, .1f, .1f};
  std::vector<float> logits;
  for (float x : p)
    logits.push_back(logit_of(x));
  EXPECT_EQ(route(logits, nullptr, 8, 2, 1).ids,
            (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(route(logits, nullptr, 8, 2, 1, 4, 2, 0).ids,
            (std::vector<int32_t>{0, 4}));
  Routed g = route(logits, nullptr, 8, 2, 1, 4, 2, /*sum of top 2*/ 1);
  EXPECT_EQ(g.ids, (std::vector<int32_t>{4, 2}));
  EXPECT_NEAR(g.weights[1], 0.6f, 1e-6);
  // With one group kept, only g2 survives: 4 then 5.
  EXPECT_EQ(route(logits, nullptr, 8, 2, 1, 4, 1, 1).ids,
            (std::vector<int32_t>{4, 5}));
}

TEST(RefMoeRoute, GroupSelectionUsesBiasedScores) {
  // The bias lifts g1 above g0 for group choice; weights stay unbiased.
  const std::vector<float> p = {.9f, .8f, .5f, .4f};
  std::vector<float> logits;
  for (float x : p)
    logits.push_back(logit_of(x));
  const std::vector<float> bias = {0.f, 0.f, .5f, .5f};
  Routed r = route(logits, bias.data(), 4, 1, 1, 2, 1, 0);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2}));
  EXPECT_NEAR(r.weights[0], .5f, 1e-6);
}

TEST(RefMoeRoute, TiesGoToLowerIndex) {
  EXPECT_EQ(route({1, 1, 1, 1}, nullptr, 4, 2, 0).ids,
            (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(route({0, 2, 2, 1}, nullptr, 4, 3, 1).ids,
            (std::vector<int32_t>{1, 2, 3}));
  // Tied groups: g0 and g1 equal, one kept -> g0.
  EXPECT_EQ(route({0, 1, 1, 0, -5, -5}, nullptr, 6, 1, 0, 3, 1, 0).ids,
            (std::vector<int32_t>{1}));
  // Two tokens route independently.
  EXPECT_EQ(route({0, 1, 5, 0, 3, 3}, nullptr, 3, 1, 0).ids,
            (std::vector<int32_t>{2, 1}));
}

TEST(RefMoe, PermuteGroupedMatmulUnpermuteEqualsDirectSum) {
  const int64_t T = 5, top_k = 2, E = 4, K = 6, N = 3;
  const auto x = hyrt_test::random_vec(T * K, 61);
  const auto w = hyrt_test::random_vec(E * N * K, 62);
  const std::vector<int32_t> ids = {3, 1, 1, 0, 3, 2, 1, 3, 0, 2};
  const auto weights = hyrt_test::random_vec(T * top_k, 63, 0.f, 1.f);

  std::vector<float> px(T * top_k * K), py(T * top_k * N), out(T * N);
  std::vector<int32_t> offsets(E + 1), rows(T * top_k);
  hyrt_ref_moe_permute(x.data(), ids.data(), T, K, top_k, E, 0, px.data(),
                       offsets.data(), rows.data());
  EXPECT_EQ(offsets, (std::vector<int32_t>{0, 2, 5, 7, 10}));
  // Stable in token order: expert 1 gets pairs 1 (t0), 2 (t1), 6 (t3).
  EXPECT_EQ(rows, (std::vector<int32_t>{3, 8, 1, 2, 6, 5, 9, 0, 4, 7}));
  for (int64_t r = 0; r < T * top_k; ++r)
    for (int64_t k = 0; k < K; ++k)
      EXPECT_EQ(px[r * K + k], x[(rows[r] / top_k) * K + k]);
  hyrt_ref_moe_grouped_matmul(px.data(), w.data(), offsets.data(), T * top_k,
                              E, N, K, py.data());
  hyrt_ref_moe_unpermute(py.data(), rows.data(), weights.data(), T, top_k, N,
                         out.data());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0;
      for (int64_t j = 0; j < top_k; ++j) {
        const int64_t e = ids[t * top_k + j];
        double y = 0;
        for (int64_t k = 0; k < K; ++k)
          y += double(x[t * K + k]) * w[(e * N + n) * K + k];
        want += weights[t * top_k + j] * y;
      }
      EXPECT_NEAR(out[t * N + n], want, 1e-5) << t << "," << n;
    }
}

// Expert parallel: a rank holding experts [F, F + E/2) keeps exactly the
// pairs routed to them (local ids, stable order, the unused rows -1), and
// the two ranks' combines sum to the one-rank combine.
TEST(RefMoe, ExpertRangesPartitionThePairs) {
  const int64_t T = 5, top_k = 2, E = 4, K = 6, N = 3, half = E / 2;
  const auto x = hyrt_test::random_vec(T * K, 71);
  const auto w = hyrt_test::random_vec(E * N * K, 72);
  const std::vector<int32_t> ids = {3, 1, 1, 0, 3, 2, 1, 3, 0, 2};
  const auto weights = hyrt_test::random_vec(T * top_k, 73, 0.f, 1.f);
  std::vector<float> whole(T * N), sum(T * N, 0.f);
  {
    std::vector<float> px(T * top_k * K), py(T * top_k * N);
    std::vector<int32_t> offsets(E + 1), rows(T * top_k);
    hyrt_ref_moe_permute(x.data(), ids.data(), T, K, top_k, E, 0, px.data(), offsets.data(),
                         rows.data());
    hyrt_ref_moe_grouped_matmul(px.data(), w.data(), offsets.data(), T * top_k, E, N, K,
                                py.data());
    hyrt_ref_moe_unpermute(py.data(), rows.data(), weights.data(), T, top_k, N, whole.data());
  }
  for (int64_t first : {int64_t(0), half}) {
    std::vector<float> px(T * top_k * K), py(T * top_k * N), part(T * N);
    std::vector<int32_t> offsets(half + 1), rows(T * top_k, 12345);
    hyrt_ref_moe_permute(x.data(), ids.data(), T, K, top_k, half, first, px.data(),
                         offsets.data(), rows.data());
    // Experts 0, 1 take pairs {3, 8} and {1, 2, 6}; experts 2, 3 {5, 9} and {0, 4, 7}.
    const std::vector<int32_t> want =
        first == 0 ? std::vector<int32_t>{3, 8, 1, 2, 6, -1, -1, -1, -1, -1}
                   : std::vector<int32_t>{5, 9, 0, 4, 7, -1, -1, -1, -1, -1};
    EXPECT_EQ(rows, want) << first;
    EXPECT_EQ(offsets, (first == 0 ? std::vector<int32_t>{0, 2, 5}
                                   : std::vector<int32_t>{0, 2, 5}))
        << first;
    hyrt_ref_moe_grouped_matmul(px.data(), w.data() + first * N * K, offsets.data(), T * top_k,
                                half, N, K, py.data());
    hyrt_ref_moe_unpermute(py.data(), rows.data(), weights.data(), T, top_k, N, part.data());
    for (int64_t i = 0; i < T * N; ++i)
      sum[size_t(i)] += part[size_t(i)];
  }
  for (int64_t i = 0; i < T * N; ++i)
    EXPECT_NEAR(sum[size_t(i)], whole[size_t(i)], 1e-5) << i;
}
