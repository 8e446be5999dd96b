//===- CpuCostModel.cpp - the numbers behind CPU schedule decisions -------===//

#include "passes/CpuCostModel.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hyc {

GemmSchedule scheduleGemm(const CpuMachine &machine, int64_t n, int64_t k,
                          int64_t tileM, int64_t macsPerCycle,
                          int64_t weightBits) {
  GemmSchedule s;
  s.tileM = tileM;
  s.tileK = k;
  s.threads = std::max<int64_t>(1, machine.threads);
  // Threads only help when there is more than one 32-column panel to share.
  s.threads = std::min<int64_t>(s.threads, (n + s.tileN - 1) / s.tileN);
  if (s.threads <= 1) {
    s.threads = 1;
    s.parallelMinMacs = std::numeric_limits<int64_t>::max();
    return s;
  }
  const double p = double(s.threads);
  const double breakEvenNs = machine.forkJoinNs * p / (p - 1);
  const double weightNs =
      double(n) * double(k) * double(weightBits) / 8 / machine.bytesPerNsPerThread;
  if (weightNs >= breakEvenNs) {
    s.parallelMinMacs = 0;
    return s;
  }
  const double macsPerNs = double(macsPerCycle) * machine.ghz * machine.kernelEfficiency;
  s.parallelMinMacs = int64_t(std::ceil(breakEvenNs * macsPerNs));
  return s;
}

int64_t attentionThreads(const CpuMachine &machine, int64_t rows) {
  return std::max<int64_t>(1, std::min<int64_t>(machine.threads, rows));
}

int64_t amxMinRows() { return 16; }

int64_t streamStoreMinBytes() { return int64_t(16) << 20; }

int64_t attentionKvSplits(const CpuMachine &machine, int64_t kvHeads) {
  // One decode token has kvHeads work items: split each into enough
  // position ranges for every thread to get one (a batch fills the threads
  // with more tokens; the kernel only splits long contexts), at most 16.
  const int64_t heads = std::max<int64_t>(1, kvHeads);
  return std::min<int64_t>(16, std::max<int64_t>(1, (machine.threads + heads - 1) / heads));
}

} // namespace hyc
