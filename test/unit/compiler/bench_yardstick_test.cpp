// hyc bench's bandwidth judgement: each round's decode against the median
// of its own probes, the median of the paired ratios, and ratios above 1
// flagged (compiler/BenchYardstick.h).
#include "compiler/BenchYardstick.h"

#include <gtest/gtest.h>

using hyc::compiler::judgeRounds;
using hyc::compiler::YardstickRound;

namespace {

// 1 GB per step: a round of `steps` steps in `seconds` decodes at
// steps / seconds GB/s.
constexpr double kGB = 1e9;

TEST(BenchYardstick, EachRoundIsJudgedByItsOwnProbes) {
  // Round 1 in a slow phase (probes ~40 GB/s, decode 36 GB/s), round 2 in
  // a fast one (probes ~80, decode 72): both 90%. Judged against the probes
  // of all rounds pooled (median 60), they would read 60% and 120%.
  std::vector<YardstickRound> rounds = {
      {{39, 40, 41}, 10.0 / 36.0, 10},
      {{79, 80, 81}, 10.0 / 72.0, 10},
  };
  auto j = judgeRounds(rounds, kGB);
  ASSERT_EQ(j.rounds, 2);
  EXPECT_EQ(j.probes, 6);
  EXPECT_NEAR(j.ratios[0], 0.9, 1e-12);
  EXPECT_NEAR(j.ratios[1], 0.9, 1e-12);
  EXPECT_NEAR(j.efficiency, 0.9, 1e-12);
  EXPECT_NEAR(j.probeMinGbs, 39, 1e-12);
  EXPECT_NEAR(j.probeMaxGbs, 81, 1e-12);
  EXPECT_FALSE(j.overOne);
}

TEST(BenchYardstick, MedianOfRatiosResistsOneStalledProbe) {
  // One probe stalled by a neighbour (5 GB/s) in round 2: its median probe
  // stays 50, so the round still reads 80%.
  std::vector<YardstickRound> rounds = {
      {{50, 50, 50}, 1.0 / 40.0, 1},
      {{50, 5, 50}, 1.0 / 40.0, 1},
      {{50, 50, 50}, 1.0 / 45.0, 1},
  };
  auto j = judgeRounds(rounds, kGB);
  EXPECT_NEAR(j.ratios[1], 0.8, 1e-12);
  EXPECT_NEAR(j.efficiency, 0.8, 1e-12);
  EXPECT_NEAR(j.lowest, 0.8, 1e-12);
  EXPECT_NEAR(j.highest, 0.9, 1e-12);
}

TEST(BenchYardstick, ARatioAboveOneIsAMeasurementError) {
  std::vector<YardstickRound> rounds = {
      {{40, 40}, 1.0 / 38.0, 1},
      {{40, 40}, 1.0 / 42.0, 1}, // 105%: flagged
      {{40, 40}, 1.0 / 36.0, 1},
  };
  auto j = judgeRounds(rounds, kGB);
  EXPECT_NEAR(j.efficiency, 0.95, 1e-12);
  EXPECT_NEAR(j.highest, 1.05, 1e-12);
  EXPECT_TRUE(j.overOne);
}

TEST(BenchYardstick, RoundsWithoutProbesOrDecodeAreNotJudged) {
  std::vector<YardstickRound> rounds = {
      {{}, 1.0, 1},       // the probe could not run
      {{40}, 0.0, 0},     // no decode steps
      {{40}, 1.0 / 20.0, 1},
  };
  auto j = judgeRounds(rounds, kGB);
  ASSERT_EQ(j.rounds, 1);
  EXPECT_EQ(j.probes, 1);
  EXPECT_NEAR(j.efficiency, 0.5, 1e-12);
  EXPECT_EQ(judgeRounds({}, kGB).rounds, 0);
}

} // namespace
