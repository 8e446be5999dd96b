// Decode's share of bandwidth against probes taken in its own moments
// (BenchYardstick.h).
#include "compiler/BenchYardstick.h"
#include "codegen/read_phases.h"

#include <algorithm>
#include <cmath>

namespace hyc::compiler {

namespace {

// Four times the largest last-level cache of this class of host (32 MiB
// per CCD on Zen 4/5; Xeons' 60-105 MiB are shared by more cores than a
// bench uses), short enough (2-4 ms) to sit between decode steps.
constexpr size_t kWindowBytes = size_t(128) << 20;
constexpr size_t kBufferBytes = size_t(1) << 30;
constexpr int64_t kStepsPerSegment = 2;

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

YardstickJudgement judgeSegments(const std::vector<YardstickSegment> &segments,
                                 double bytesPerStep) {
  YardstickJudgement j;
  std::vector<double> ratios, probes, means;
  for (const YardstickSegment &s : segments) {
    if (s.before <= 0 || s.after <= 0 || s.seconds <= 0 || s.steps <= 0)
      continue; // no probe could run, or no decode between them
    if (std::fabs(s.before - s.after) > kYardstickMaxDisagreement * std::max(s.before, s.after)) {
      ++j.skipped;
      continue;
    }
    const double decodeGbs = bytesPerStep * double(s.steps) / s.seconds * 1e-9;
    means.push_back(0.5 * (s.before + s.after));
    ratios.push_back(decodeGbs / means.back());
    probes.push_back(s.before);
    probes.push_back(s.after);
  }
  j.segments = int(ratios.size());
  if (j.segments == 0)
    return j;
  j.probes = int(probes.size());
  j.probeGbs = median(probes);
  j.probeMinGbs = *std::min_element(probes.begin(), probes.end());
  j.probeMaxGbs = *std::max_element(probes.begin(), probes.end());
  j.efficiency = median(ratios);
  j.lowest = *std::min_element(ratios.begin(), ratios.end());
  j.highest = *std::max_element(ratios.begin(), ratios.end());
  j.shareOverOne =
      double(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r > 1.0; })) /
      double(ratios.size());
  j.overOne = j.efficiency > 1.0;
  const codegen::ReadPhases phases =
      codegen::split_by_read_phase(means, ratios, j.probeMinGbs, j.probeMaxGbs);
  if (phases.split) {
    j.phases = true;
    j.phaseSplitGbs = phases.at;
    j.fastSegments = int(phases.fast.size()), j.slowSegments = int(phases.slow.size());
    j.fastEfficiency = median(phases.fast); // 0 when empty
    j.slowEfficiency = median(phases.slow);
  }
  return j;
}

BandwidthYardstick::BandwidthYardstick(int threads, const void *region, size_t regionBytes) {
  // The weights first: a buffer of the probe's own can sit on memory the
  // host backs differently (bench/README.md: whole runs probed 5 GB/s
  // while the decode read the weights at 35).
  readsRegion_ = region && regionBytes >= 2 * kWindowBytes;
  reader_ = readsRegion_ ? std::make_unique<codegen::StreamReader>(threads, region, regionBytes)
                         : std::make_unique<codegen::StreamReader>(threads, kBufferBytes);
  if (reader_->read_window_gbps(kWindowBytes) <= 0) { // also warms the code
    reader_.reset();
    readsRegion_ = false;
  }
}

double BandwidthYardstick::probe() {
  return reader_ ? reader_->read_window_gbps(kWindowBytes) : 0;
}

void BandwidthYardstick::beginRound(int64_t steps) {
  steps_ = steps;
  current_ = {};
  current_.before = probe();
}

void BandwidthYardstick::afterStep(int64_t step, double seconds) {
  current_.seconds += seconds;
  ++current_.steps;
  if ((step + 1) % kStepsPerSegment != 0 && step + 1 < steps_)
    return;
  current_.after = probe();
  if (reader_)
    segments_.push_back(current_);
  const double next = current_.after;
  current_ = {};
  current_.before = next;
}

} // namespace hyc::compiler
