// SmoothQuant factors (compiler/SmoothedWeights.h): powers of two nearest
// to max|X|^alpha / max|W|^(1 - alpha), 1 where a channel has no signal,
// clamped exponents.
#include "compiler/SmoothedWeights.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hyc::compiler {
namespace {

TEST(SmoothingFactors, NearestPowerOfTwoOfTheSmoothQuantRatio) {
  // alpha 0.5: sqrt(64 / 4) = 4; sqrt(8 / 0.5) = 4; sqrt(1 / 16) = 1/4;
  // sqrt(3 / 1) = 1.73 -> 2 (log2 0.79 rounds up); sqrt(2.5 / 1) = 1.58 ->
  // 2 (log2 0.66); sqrt(1.9 / 1) = 1.38 -> 1 (log2 0.46 rounds down).
  const std::vector<float> x = {64, 8, 1, 3, 2.5f, 1.9f};
  const std::vector<float> w = {4, 0.5f, 16, 1, 1, 1};
  EXPECT_EQ(smoothingFactors(x, w, 0.5), (std::vector<float>{4, 4, 0.25f, 2, 2, 1}));
  // alpha 1: everything moves into the weights (s = max|X|); alpha 0: s =
  // 1 / max|W|.
  EXPECT_EQ(smoothingFactors({8, 0.25f}, {3, 3}, 1.0), (std::vector<float>{8, 0.25f}));
  EXPECT_EQ(smoothingFactors({8, 8}, {4, 0.125f}, 0.0), (std::vector<float>{0.25f, 8}));
}

TEST(SmoothingFactors, ChannelsWithoutSignalKeepOne) {
  EXPECT_EQ(smoothingFactors({0, 5, NAN, 5}, {1, 0, 1, INFINITY}, 0.5),
            (std::vector<float>{1, 1, 1, 1}));
}

TEST(SmoothingFactors, ExponentsAreClamped) {
  const std::vector<float> s = smoothingFactors({1e30f, 1e-30f}, {1e-30f, 1e30f}, 0.5);
  EXPECT_EQ(s[0], std::ldexp(1.0f, kMaxSmoothExponent));
  EXPECT_EQ(s[1], std::ldexp(1.0f, -kMaxSmoothExponent));
}

} // namespace
} // namespace hyc::compiler
