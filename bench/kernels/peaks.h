// Host limits measured at start-up of hyc_kernel_bench, so every efficiency
// the benchmark prints is a ratio taken in one run on one machine.
#pragma once

namespace hyc::bench {

struct HostPeaks {
  double fp32_gflops = 0; ///< vfmadd231ps zmm, all threads
  double bf16_gflops = 0; ///< vdpbf16ps zmm (0 when it cannot execute)
  double int8_gops = 0;   ///< vpdpbusd zmm (0 when it cannot execute)
  double read_gbps = 0;   ///< streaming read, transparent huge pages
};

/// Whether vdpbf16ps / vpdpbusd execute here (a forked probe: CPUID may hide
/// ISA extensions the silicon has).
bool executes_bf16();
bool executes_vnni();

/// Measures the peaks with `threads` OpenMP threads (a few seconds).
HostPeaks measure_peaks(int threads);

} // namespace hyc::bench
