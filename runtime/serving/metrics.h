// Prometheus metrics of `hyc serve`: counters and latency histograms,
// rendered in the text exposition format.
#pragma once

#include "hyrt/engine/scheduler.h"

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace hyrt::serve {

/// A cumulative histogram with fixed second-scale buckets.
class Histogram {
public:
  static constexpr std::array<double, 13> kBounds = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
      0.25,  0.5,    1,     2.5,  5,     10};
  void observe(double seconds);
  /// "<name>_bucket{le=...} n" lines, then _sum and _count.
  std::string render(const std::string &name, const std::string &help) const;

private:
  std::array<uint64_t, kBounds.size() + 1> counts_{};
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// Everything /metrics reports. Thread-safe.
class Metrics {
public:
  /// A request answered with HTTP `status` on `endpoint`.
  void count_response(const std::string &endpoint, int status);
  /// A generation ended: reason, tokens, time to first token and mean time
  /// per output token after the first (negative: not observed).
  void count_finished(const std::string &reason, int64_t prompt_tokens,
                      int64_t completion_tokens, double ttft, double tpot);
  std::string render(const SchedulerStats &s) const;

private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> responses_;
  std::map<std::string, uint64_t> finished_;
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  Histogram ttft_, tpot_;
};

} // namespace hyrt::serve
