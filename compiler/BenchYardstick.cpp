// Decode's share of bandwidth against probes taken in its own moments
// (BenchYardstick.h).
#include "compiler/BenchYardstick.h"

#include <algorithm>

namespace hyc::compiler {

namespace {

// Much larger than any last-level cache of this class of host (32 MiB per
// CCD on Zen 4/5, 60-105 MiB on Xeons), short enough (3-7 ms) to sit
// between decode steps: about 8 probes cost a few percent of a round.
constexpr size_t kWindowBytes = size_t(256) << 20;
constexpr size_t kBufferBytes = size_t(1) << 30;
constexpr int64_t kProbesPerRound = 8;

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

BandwidthYardstick::BandwidthYardstick(int threads)
    : reader_(std::make_unique<codegen::StreamReader>(threads, kBufferBytes)) {
  if (reader_->read_window_gbps(kWindowBytes) <= 0) // also warms the code
    reader_.reset();
}

void BandwidthYardstick::probe() {
  if (reader_)
    current_.gbs.push_back(reader_->read_window_gbps(kWindowBytes));
}

void BandwidthYardstick::beginRound(int64_t steps) {
  current_ = {};
  current_.steps = steps;
  every_ = std::max<int64_t>(1, steps / kProbesPerRound);
  probe();
}

void BandwidthYardstick::afterStep(int64_t step) {
  if ((step + 1) % every_ == 0 && step + 1 < current_.steps)
    probe();
}

void BandwidthYardstick::endRound(double decodeSeconds) {
  probe();
  current_.decodeSeconds = decodeSeconds;
  if (reader_)
    rounds_.push_back(current_);
}

YardstickJudgement judgeRounds(const std::vector<YardstickRound> &rounds,
                               double bytesPerStep) {
  YardstickJudgement j;
  std::vector<double> all;
  for (const YardstickRound &r : rounds) {
    const double probe = median(r.gbs);
    if (probe <= 0 || r.decodeSeconds <= 0)
      continue;
    const double decodeGbs = bytesPerStep * double(r.steps) / r.decodeSeconds * 1e-9;
    j.ratios.push_back(decodeGbs / probe);
    all.insert(all.end(), r.gbs.begin(), r.gbs.end());
  }
  j.rounds = int(j.ratios.size());
  if (j.rounds == 0)
    return j;
  j.probes = int(all.size());
  j.probeGbs = median(all);
  j.probeMinGbs = *std::min_element(all.begin(), all.end());
  j.probeMaxGbs = *std::max_element(all.begin(), all.end());
  j.efficiency = median(j.ratios);
  j.lowest = *std::min_element(j.ratios.begin(), j.ratios.end());
  j.highest = *std::max_element(j.ratios.begin(), j.ratios.end());
  j.overOne = j.highest > 1.0;
  return j;
}

} // namespace hyc::compiler
