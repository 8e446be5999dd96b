//===- BenchYardstick.h - decode's share of bandwidth, judged in its moments ===//
//
// This class of host streams memory at 40-50 GB/s in some minutes and 70-85
// in others, switching within seconds, so a bandwidth read taken between
// rounds can land in another phase than the decode it judges (efficiencies
// over 100% were printed that way). The yardstick here is taken in the same
// moments as the decode: a short streaming read (a 256 MiB window of a
// 1 GiB huge-page buffer, codegen::StreamReader) before a round's decode,
// after every few of its steps and after its last step. Each round's decode
// bandwidth is divided by the median of its own probes, and the efficiency
// is the median of those paired ratios over the rounds. A ratio above 1 is
// a measurement error (no engine reads faster than a streaming read), and
// is reported as one.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_BENCHYARDSTICK_H
#define HYC_COMPILER_BENCHYARDSTICK_H

#include "codegen/host_peaks.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hyc::compiler {

/// One round's probes (GB/s) and its decode: `steps` steps in
/// `decodeSeconds`, the probes' time excluded.
struct YardstickRound {
  std::vector<double> gbs;
  double decodeSeconds = 0;
  int64_t steps = 0;
};

/// What the probes say about the decode.
struct YardstickJudgement {
  int rounds = 0;        ///< rounds judged (those with probes and a decode)
  int probes = 0;        ///< probes taken in them
  double probeGbs = 0;   ///< median over all their probes
  double probeMinGbs = 0, probeMaxGbs = 0;
  double efficiency = 0; ///< median of the rounds' decode / probe ratios
  double lowest = 0, highest = 0;
  std::vector<double> ratios; ///< per judged round
  bool overOne = false;  ///< some ratio above 1: a measurement error
};

/// Each round's decode bandwidth (`bytesPerStep` read per step) over the
/// median of its own probes; the efficiency is the median of those ratios.
YardstickJudgement judgeRounds(const std::vector<YardstickRound> &rounds,
                               double bytesPerStep);

class BandwidthYardstick {
public:
  /// Probes with `threads` threads; without AVX-512 (the probe's loop) it
  /// takes no probes and judge() returns rounds = 0.
  explicit BandwidthYardstick(int threads);

  /// A round of `steps` decode steps starts: the probe before it.
  void beginRound(int64_t steps);
  /// Decode step `step` (0-based) of the round ended: probes every few
  /// steps (about eight per round; the steps are timed without them).
  void afterStep(int64_t step);
  /// The round's decode took `decodeSeconds` (the probes excluded): the
  /// probe after it, and the round is recorded.
  void endRound(double decodeSeconds);
  /// Forgets the rounds so far (a warm-up round).
  void discardRounds() { rounds_.clear(); }

  /// judgeRounds over the rounds recorded.
  YardstickJudgement judge(double bytesPerStep) const {
    return judgeRounds(rounds_, bytesPerStep);
  }

private:
  void probe();

  std::unique_ptr<codegen::StreamReader> reader_;
  std::vector<YardstickRound> rounds_;
  YardstickRound current_;
  int64_t every_ = 1;
};

} // namespace hyc::compiler

#endif // HYC_COMPILER_BENCHYARDSTICK_H
