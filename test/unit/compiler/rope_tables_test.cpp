// RoPE inverse-frequency tables against values computed independently from
// the formulas in transformers' rope utilities (a separate Python
// transcription, double precision; see the numbers' comments).
#include "passes/RopeFrequencies.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hyc {
namespace {

void expectRel(float got, double want, const char *what) {
  EXPECT_NEAR(got, want, 2e-6 * std::fabs(want) + 1e-12) << what;
}

TEST(RopeTables, DefaultIsThetaPowers) {
  RopeTable t = computeRopeTable(10000.0, 8, {});
  ASSERT_EQ(t.inv_freq.size(), 4u);
  expectRel(t.inv_freq[0], 1.0, "i=0");
  expectRel(t.inv_freq[1], 0.1, "i=1");
  expectRel(t.inv_freq[3], 0.001, "i=3");
  EXPECT_EQ(t.mscale, 1.0f);
}

TEST(RopeTables, LinearDividesByFactor) {
  RopeScalingParams s;
  s.kind = "linear";
  s.factor = 4.0;
  RopeTable t = computeRopeTable(10000.0, 8, s);
  expectRel(t.inv_freq[1], 0.025, "i=1");
}

TEST(RopeTables, Llama3SmoothsBetweenWavelengthBands) {
  // theta 500000, dim 32, factor 8, low 1, high 4, original context 64 (the
  // llama3-tiny golden config).
  RopeScalingParams s;
  s.kind = "llama3";
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position = 64;
  RopeTable t = computeRopeTable(500000.0, 32, s);
  ASSERT_EQ(t.inv_freq.size(), 16u);
  expectRel(t.inv_freq[0], 1.0, "high-frequency band is kept");
  expectRel(t.inv_freq[3], 0.010674637535720701, "smoothed band");
  expectRel(t.inv_freq[6], 0.0009115830921521386, "low band / factor");
  expectRel(t.inv_freq[9], 7.78465527393245e-05, "low band / factor");
  expectRel(t.inv_freq[15], 5.677088100759837e-07, "low band / factor");
}

TEST(RopeTables, YarnRampAndAttentionFactor) {
  // DeepSeek-V3's rope_scaling: theta 10000, rope dim 64, factor 40,
  // original 4096, beta_fast 32, beta_slow 1, mscale = mscale_all_dim = 1.
  RopeScalingParams s;
  s.kind = "yarn";
  s.factor = 40.0;
  s.original_max_position = 4096;
  s.beta_fast = 32.0;
  s.beta_slow = 1.0;
  s.mscale = 1.0;
  s.mscale_all_dim = 1.0;
  RopeTable t = computeRopeTable(10000.0, 64, s);
  ASSERT_EQ(t.inv_freq.size(), 32u);
  expectRel(t.inv_freq[0], 1.0, "extrapolated");
  expectRel(t.inv_freq[10], 0.056234132519034905, "ramp start");
  expectRel(t.inv_freq[12], 0.026879360111431223, "inside the ramp");
  expectRel(t.inv_freq[16], 0.0055, "inside the ramp");
  expectRel(t.inv_freq[20], 0.0007905694150420945, "interpolated");
  expectRel(t.inv_freq[31], 3.33380358040831e-06, "interpolated");
  EXPECT_FLOAT_EQ(t.mscale, 1.0f); // mscale / mscale_all_dim cancel
  // Without mscale_all_dim the attention factor is 0.1 ln(40) + 1.
  s.mscale = 0.707;
  s.mscale_all_dim = 0.0;
  EXPECT_NEAR(computeRopeTable(10000.0, 64, s).mscale, 1.3688879454113936, 1e-6);
}

TEST(RopeTables, YarnMscaleIsOneBelowFactorOne) {
  EXPECT_EQ(yarnGetMscale(1.0, 1.0), 1.0);
  EXPECT_NEAR(yarnGetMscale(40.0, 1.0), 1.3688879454113936, 1e-12);
}

} // namespace
} // namespace hyc
