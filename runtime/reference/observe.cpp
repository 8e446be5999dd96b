// The activation observers of a calibration build (abi.h, hyrt_observe_v0).
// Like the profiler (profile.cpp), this state lives in each artifact's own
// copy of hyrt_reference, and the generated code exports `hyc_observe_v0`
// (returning hyrt_observe_state()) only when it observes something, so
// serving artifacts carry none of it.
#include "hyrt/abi.h"

#include <cmath>
#include <deque>
#include <vector>

namespace {

/// Slot storage; a deque keeps each slot's maxima at a stable address while
/// later slots appear, and `table` is the C view handed to the runtime.
struct Observers {
  std::deque<std::vector<float>> maxima;
  std::vector<hyrt_observer_v0> table;
  hyrt_observe_v0 view = {0, nullptr};
};

Observers &observers() {
  static Observers o;
  return o;
}

} // namespace

extern "C" void hyrt_ref_observe_absmax(const float *x, int64_t rows, int64_t cols,
                                        int64_t slot, const char *feeds) {
  Observers &o = observers();
  if (slot < 0)
    return;
  while (int64_t(o.table.size()) <= slot) {
    o.maxima.emplace_back();
    o.table.push_back({nullptr, 0, 0, nullptr});
  }
  hyrt_observer_v0 &entry = o.table[size_t(slot)];
  std::vector<float> &m = o.maxima[size_t(slot)];
  if (entry.channels != cols) {
    // First call (or a slot reused at another width, which the compiler
    // never emits): start over at this width.
    m.assign(size_t(cols), 0.0f);
    entry = {feeds, cols, 0, m.data()};
  }
  for (int64_t t = 0; t < rows; ++t) {
    const float *row = x + t * cols;
    for (int64_t j = 0; j < cols; ++j) {
      // NaN compares false and leaves the maximum as it was.
      const float a = std::fabs(row[j]);
      if (a > entry.absmax[j])
        entry.absmax[j] = a;
    }
  }
  entry.rows += rows;
  o.view = {int32_t(o.table.size()), o.table.data()};
}

extern "C" hyrt_observe_v0 *hyrt_observe_state(void) {
  return &observers().view;
}
