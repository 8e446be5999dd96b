// This host class's streaming read is bimodal (about 35 and 60 GB/s on AMD
// Zen 4, switching within seconds): a kernel can keep up with the slow phase
// and not the fast one, and a pooled median of its ratios to the read hides
// it. The one rule that tells the phases apart, for `hyc bench`'s yardstick
// (compiler/BenchYardstick.h) and the kernel benches.
#pragma once

#include <cstddef>
#include <vector>

namespace hyc::codegen {

/// Probes spanning more than this (highest / lowest) come from two phases.
inline constexpr double kReadPhaseSpread = 1.3;

/// Ratios (a kernel's rate over its bracketing probes) of the fast and the
/// slow phase: when `highest` > kReadPhaseSpread x `lowest`, each ratio goes
/// to the fast phase when its probes' mean is above the midpoint of the two;
/// otherwise `split` is false and both lists are empty.
struct ReadPhases {
  bool split = false;
  double at = 0; ///< the midpoint, GB/s
  std::vector<double> fast, slow;
};

inline ReadPhases split_by_read_phase(const std::vector<double> &probe_means,
                                      const std::vector<double> &ratios, double lowest,
                                      double highest) {
  ReadPhases p;
  if (!(highest > kReadPhaseSpread * lowest))
    return p;
  p.split = true;
  p.at = 0.5 * (lowest + highest);
  for (size_t i = 0; i < ratios.size() && i < probe_means.size(); ++i)
    (probe_means[i] > p.at ? p.fast : p.slow).push_back(ratios[i]);
  return p;
}

} // namespace hyc::codegen
