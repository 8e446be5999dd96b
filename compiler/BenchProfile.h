//===- BenchProfile.h - `hyc bench --profile`: time per op kind -*- C++ -*-===//
//
// Sums the artifact's own op-kind marks (hyrt/abi.h, hyrt_profile_v0) over
// the steps of one phase and prints them per step, largest first.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_BENCHPROFILE_H
#define HYC_COMPILER_BENCHPROFILE_H

#include "hyrt/abi.h"

#include <cstdint>
#include <map>
#include <string>

namespace hyc::compiler {

/// Seconds and calls per op kind, summed over `steps` steps of one phase.
struct PhaseProfile {
  struct Kind {
    double seconds = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Kind> kinds;
  int64_t steps = 0;

  /// Clears the artifact's counters and turns marking on.
  static void start(hyrt_profile_v0 *p);
  /// Turns marking off and adds what was marked since start() as `steps`
  /// more steps of this phase.
  void stop(hyrt_profile_v0 *p, int64_t stepsDone);
  double totalSeconds() const;
};

/// The table printed under the bench summary: one row per kind, ms per
/// step and share of the phase, for prefill and decode side by side.
void printProfile(const PhaseProfile &prefill, const PhaseProfile &decode);
/// `"profile": {"prefill": {...}, "decode": {...}}` member for --json: per
/// kind, ms per step and calls per step.
std::string profileJson(const PhaseProfile &prefill, const PhaseProfile &decode);

} // namespace hyc::compiler

#endif // HYC_COMPILER_BENCHPROFILE_H
