// Tests for the embedding, RMSNorm, RoPE, matmul and elementwise reference
// kernels against hand computations.
#include "hyrt/reference.h"
#include "ref_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using hyrt_test::random_vec;

TEST(RefEmbedding, CopiesRowsAndZeroesInvalidIds) {
  const std::vector<float> table = {0, 1, 10, 11, 20, 21};
  const std::vector<int32_t> ids = {2, 0, -1, 3, 1};
  std::vector<float> out(10, 99.f);
  hyrt_ref_embedding(table.data(), 3, 2, ids.data(), 5, out.data());
  EXPECT_EQ(out, (std::vector<float>{20, 21, 0, 1, 0, 0, 0, 0, 10, 11}));
}

TEST(RefRmsNorm, WithResidualMatchesHandComputation) {
  const std::vector<float> x = {1, 2, 3, -1};
  const std::vector<float> res = {1, 0, -1, 3}; // s = {2, 2, 2, 2} / row
  const std::vector<float> w = {1, 0.5f};
  std::vector<float> out(4), res_out(4);
  hyrt_ref_rms_norm(x.data(), res.data(), w.data(), 2, 2, 0.f, out.data(),
                    res_out.data());
  EXPECT_EQ(res_out, (std::vector<float>{2, 2, 2, 2}));
  // rms of {2,2} is 2, so normalized is {1,1}, then times w.
  EXPECT_FLOAT_EQ(out[0], 1.f);
  EXPECT_FLOAT_EQ(out[1], 0.5f);
  EXPECT_FLOAT_EQ(out[2], 1.f);
  EXPECT_FLOAT_EQ(out[3], 0.5f);
}

TEST(RefRmsNorm, EpsAndNoResidualAndInPlace) {
  std::vector<float> x = {3, 4};
  const std::vector<float> w = {2, 1};
  const float eps = 0.5f;
  // mean(s^2) = 12.5, + eps = 13.
  const float inv = 1.f / std::sqrt(13.f);
  hyrt_ref_rms_norm(x.data(), nullptr, w.data(), 1, 2, eps, x.data(),
                    nullptr);
  EXPECT_NEAR(x[0], 3 * inv * 2, 1e-6);
  EXPECT_NEAR(x[1], 4 * inv, 1e-6);
}

TEST(RefRmsNorm, ResidualOutMayAliasResidual) {
  std::vector<float> x = {1, 1}, res = {2, 3};
  const std::vector<float> w = {1, 1};
  std::vector<float> out(2);
  hyrt_ref_rms_norm(x.data(), res.data(), w.data(), 1, 2, 0.f, out.data(),
                    res.data());
  EXPECT_EQ(res, (std::vector<float>{3, 4}));
  EXPECT_NEAR(out[0], 3 / std::sqrt(12.5f), 1e-6);
}

namespace {
// Two tokens (positions 0 and 3), one head, head_dim 6, rotary_dim 4.
struct RopeCase {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 0.5f, -1, 2, -0.25f, 7, 8};
  std::vector<int32_t> pos = {0, 3};
  std::vector<float> inv_freq = {1.0f, 0.1f};
  std::vector<float> run(int32_t neox, float mscale) {
    std::vector<float> out(12);
    hyrt_ref_rope(x.data(), pos.data(), 2, 1, 6, 4, neox, inv_freq.data(),
                  mscale, out.data());
    return out;
  }
};
} // namespace

TEST(RefRope, NeoxPairsHalves) {
  RopeCase c;
  const std::vector<float> out = c.run(1, 1.f);
  // Position 0: identity.
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(out[i], c.x[i]);
  // Position 3: pairs (0,2) with angle 3, (1,3) with angle 0.3.
  const double c0 = std::cos(3.0), s0 = std::sin(3.0);
  const double c1 = std::cos(0.3), s1 = std::sin(0.3);
  const float *x = &c.x[6];
  EXPECT_NEAR(out[6], x[0] * c0 - x[2] * s0, 1e-6);
  EXPECT_NEAR(out[8], x[0] * s0 + x[2] * c0, 1e-6);
  EXPECT_NEAR(out[7], x[1] * c1 - x[3] * s1, 1e-6);
  EXPECT_NEAR(out[9], x[1] * s1 + x[3] * c1, 1e-6);
  EXPECT_FLOAT_EQ(out[10], 7);
  EXPECT_FLOAT_EQ(out[11], 8);
}

TEST(RefRope, InterleavedPairsAdjacent) {
  RopeCase c;
  const std::vector<float> out = c.run(0, 1.f);
  const double c0 = std::cos(3.0), s0 = std::sin(3.0);
  const double c1 = std::cos(0.3), s1 = std::sin(0.3);
  const float *x = &c.x[6];
  EXPECT_NEAR(out[6], x[0] * c0 - x[1] * s0, 1e-6);
  EXPECT_NEAR(out[7], x[0] * s0 + x[1] * c0, 1e-6);
  EXPECT_NEAR(out[8], x[2] * c1 - x[3] * s1, 1e-6);
  EXPECT_NEAR(out[9], x[2] * s1 + x[3] * c1, 1e-6);
  EXPECT_FLOAT_EQ(out[10], 7);
  EXPECT_FLOAT_EQ(out[11], 8);
  EXPECT_NE(out, c.run(1, 1.f));
}

TEST(RefRope, MscaleScalesCosAndSin) {
  RopeCase c;
  const std::vector<float> a = c.run(0, 1.f), b = c.run(0, 2.f);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(b[i], 2 * a[i], 1e-6);
    EXPECT_NEAR(b[6 + i], 2 * a[6 + i], 1e-5);
  }
  EXPECT_FLOAT_EQ(b[4], 5); // non-rotary dims are copied, not scaled
}

TEST(RefRope, HeadsRotateIndependently) {
  const std::vector<float> x = random_vec(2 * 3 * 8, 5);
  const std::vector<int32_t> pos = {4, 9};
  const std::vector<float> inv = {1.f, 0.5f, 0.25f, 0.125f};
  std::vector<float> all(x.size());
  hyrt_ref_rope(x.data(), pos.data(), 2, 3, 8, 8, 1, inv.data(), 1.f,
                all.data());
  for (int t = 0; t < 2; ++t)
    for (int h = 0; h < 3; ++h) {
      std::vector<float> one(8);
      hyrt_ref_rope(&x[(t * 3 + h) * 8], &pos[t], 1, 1, 8, 8, 1, inv.data(),
                    1.f, one.data());
      for (int i = 0; i < 8; ++i)
        EXPECT_FLOAT_EQ(all[(t * 3 + h) * 8 + i], one[i]);
    }
}

TEST(RefMatmul, HandExampleWithBias) {
  // x [2][3], w [2][3] (N x K)
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> w = {1, 0, -1, 0.5f, 0.5f, 0.5f};
  const std::vector<float> bias = {10, 20};
  std::vector<float> out(4);
  hyrt_ref_matmul(x.data(), w.data(), bias.data(), 2, 2, 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{8, 23, 8, 27.5f}));
  hyrt_ref_matmul(x.data(), w.data(), nullptr, 2, 2, 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{-2, 3, -2, 7.5f}));
}

TEST(RefMatmul, RandomMatchesNaiveForOddM) {
  const int64_t M = 7, N = 5, K = 13;
  const std::vector<float> x = random_vec(M * K, 1), w = random_vec(N * K, 2);
  std::vector<float> out(M * N);
  hyrt_ref_matmul(x.data(), w.data(), nullptr, M, N, K, out.data());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(x[m * K + k]) * w[n * K + k];
      EXPECT_NEAR(out[m * N + n], acc, 1e-5);
    }
}

TEST(RefElementwise, AddAndSiluMul) {
  const std::vector<float> a = {0, 1, -2}, b = {1, 2, 3};
  std::vector<float> out(3);
  hyrt_ref_add(a.data(), b.data(), 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 3, 1}));
  hyrt_ref_silu_mul(a.data(), b.data(), 3, out.data());
  EXPECT_FLOAT_EQ(out[0], 0.f);
  EXPECT_NEAR(out[1], 1 / (1 + std::exp(-1.0)) * 2, 1e-6);
  EXPECT_NEAR(out[2], -2 / (1 + std::exp(2.0)) * 3, 1e-6);
}
