//===- BenchYardstick.h - decode's share of bandwidth, judged in its moments ===//
//
// This class of host streams memory at 40-50 GB/s in some minutes and 70-85
// in others (and, with a noisy neighbour, 5-10), switching within seconds,
// so a bandwidth read taken between rounds can land in another phase than
// the decode it judges (efficiencies over 100% were printed that way). The
// yardstick here is taken in the same moments as the decode: a short
// streaming read (a 128 MiB window of a 1 GiB huge-page buffer,
// codegen::StreamReader, ~3 ms) before a round's first decode step and
// after every second step. Each segment of steps between two probes is
// judged by their mean; a segment whose two probes disagree by more than
// 20% straddles a phase change and is not judged (counted as skipped). The
// efficiency is the median of the judged segments' ratios. A median above
// 1 is a measurement error (no engine reads faster than a streaming read),
// and is reported as one.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_BENCHYARDSTICK_H
#define HYC_COMPILER_BENCHYARDSTICK_H

#include "codegen/host_peaks.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hyc::compiler {

/// Decode steps between two probes: `steps` steps in `seconds` (the
/// probes' time excluded), the probes before and after them in GB/s.
struct YardstickSegment {
  double before = 0, after = 0;
  double seconds = 0;
  int64_t steps = 0;
};

/// What the probes say about the decode.
struct YardstickJudgement {
  int segments = 0;      ///< judged (probes agreeing, a decode between)
  int skipped = 0;       ///< not judged: their probes disagree (phase change)
  int probes = 0;        ///< probes of the judged segments
  double probeGbs = 0;   ///< median over those probes
  double probeMinGbs = 0, probeMaxGbs = 0;
  double efficiency = 0; ///< median of the judged segments' decode / probe
  double lowest = 0, highest = 0;
  double shareOverOne = 0; ///< of judged segments above 1 (noise)
  bool overOne = false;  ///< the efficiency itself above 1: an error
  /// The host's phases apart (codegen/read_phases.h), when its judged
  /// probes span more than kReadPhaseSpread (max / min): segments whose
  /// probe mean is above the midpoint of the lowest and highest probe are
  /// the fast phase's.
  bool phases = false;
  double phaseSplitGbs = 0;
  int fastSegments = 0, slowSegments = 0;
  double fastEfficiency = 0, slowEfficiency = 0; ///< medians; 0 without segments
};

/// Probes further apart than this (|a - b| / max(a, b)) mark a phase change.
constexpr double kYardstickMaxDisagreement = 0.2;

/// Each segment's decode bandwidth (`bytesPerStep` read per step) over the
/// mean of its two probes; the efficiency is the median of those ratios.
YardstickJudgement judgeSegments(const std::vector<YardstickSegment> &segments,
                                 double bytesPerStep);

class BandwidthYardstick {
public:
  /// Probes with `threads` threads; without AVX-512 (the probe's loop) it
  /// takes no probes and judge() returns segments = 0. The probes read
  /// windows of `region` (the artifact's weights: the bytes the decode
  /// reads, with the same backing) when it holds at least two windows,
  /// else a buffer of their own.
  BandwidthYardstick(int threads, const void *region = nullptr, size_t regionBytes = 0);
  /// Whether the probes read the given region.
  bool readsRegion() const { return readsRegion_; }

  /// A round of `steps` decode steps starts: the probe before it.
  void beginRound(int64_t steps);
  /// Decode step `step` (0-based) of the round took `seconds`; after every
  /// second step and the round's last, a probe closes the segment.
  void afterStep(int64_t step, double seconds);
  /// Forgets the segments so far (a warm-up round).
  void discard() { segments_.clear(); }

  YardstickJudgement judge(double bytesPerStep) const {
    return judgeSegments(segments_, bytesPerStep);
  }

private:
  double probe();

  std::unique_ptr<codegen::StreamReader> reader_;
  bool readsRegion_ = false;
  std::vector<YardstickSegment> segments_;
  YardstickSegment current_;
  int64_t steps_ = 0;
};

} // namespace hyc::compiler

#endif // HYC_COMPILER_BENCHYARDSTICK_H
