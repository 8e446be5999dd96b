//===- host_peaks.h - the host's measured compute and bandwidth limits ----===//
//
// Efficiencies are ratios to limits measured on the same machine in the
// same run (the benchmark machines are shared and swing minute to minute):
// Xbyak loops of 24 independent zmm FMA / dot-product chains per thread
// (12 ymm ones for the avx2 variant's instructions), and
// a streaming read of a huge-page buffer (eight independent accumulators per
// thread, threads pinned to their own CPUs, timed inside the threads;
// bench/bandwidth holds it against a plain C++ read). Used by `hyc bench` and by
// bench/kernels. Threads are std::threads (no OpenMP runtime is started).
//
//===----------------------------------------------------------------------===//
#ifndef HYC_CODEGEN_HOST_PEAKS_H
#define HYC_CODEGEN_HOST_PEAKS_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace hyc::codegen {

struct HostPeaks {
  double fp32_gflops = 0; ///< vfmadd231ps zmm (0 when it cannot execute)
  double bf16_gflops = 0; ///< vdpbf16ps zmm (0 when it cannot execute)
  double int8_gops = 0;   ///< vpdpbusd zmm (0 when it cannot execute)
  /// The avx2 variant's instructions (VEX, ymm): vfmadd231ps, and the
  /// vpmaddubsw + vpmaddwd + vpaddd chain that is AVX2's u8 x s8 dot
  /// product (64 ops per chain of 32 multiply-adds).
  double avx2_fp32_gflops = 0;
  double avx2_int8_gops = 0;
  double read_gbps = 0;   ///< streaming read, transparent huge pages
};

/// Whether vfmadd231ps zmm / vdpbf16ps / vpdpbusd execute here (a forked
/// probe: CPUID may hide ISA extensions the silicon has, or show ones the
/// hypervisor traps).
bool executes_avx512_fma();
bool executes_bf16();
bool executes_vnni();
bool executes_avx2_fma();

/// Peak of each instruction that executes here, with `threads` threads.
HostPeaks measure_compute_peaks(int threads);

/// Best of `reps` streaming reads of a `bytes` buffer (2 MiB aligned,
/// MADV_HUGEPAGE, touched first), with `threads` threads, in GB/s: zmm
/// loads where AVX-512 executes, ymm on AVX2 hosts; 0 on neither.
double measure_read_gbps(int threads, size_t bytes = size_t(1) << 30,
                         int reps = 5);

/// Both.
HostPeaks measure_peaks(int threads);

/// `best` raised to `again` for each instruction: a peak is a maximum
/// (neighbours on a shared host only lower a measurement), so the best of
/// several measurements is the estimate.
void keep_best_peaks(HostPeaks &best, const HostPeaks &again);

/// The best of `tries` measure_compute_peaks (keep_best_peaks): a process's
/// first measurement often runs before the cores have ramped up.
HostPeaks measure_best_compute_peaks(int threads, int tries);

/// Reads a `bytes` buffer (larger than the last-level cache), so that the
/// next call of a kernel under test reads its operands from memory as an
/// artifact's step does (called again, they would come from L3).
void evict_caches(size_t bytes = size_t(512) << 20);

/// The CPUs this process may run on, in order: benchmark thread t is
/// pinned to cpus[t % size] (pin_current_thread), so threads never share a
/// core while there are enough.
std::vector<int> process_cpus();
/// Pins the calling thread to `cpu` (advisory: a failure leaves it free).
void pin_current_thread(int cpu);

/// A streaming-read buffer kept for repeated measurements, so that a
/// benchmark can read the bandwidth right before each run it compares with
/// it (interleaved rounds) without allocating and touching the buffer each
/// time.
class StreamReader {
public:
  explicit StreamReader(int threads, size_t bytes = size_t(1) << 30);
  /// Reads windows of [region, region + bytes) instead of a buffer of its
  /// own (not owned; must outlive the reader): a benchmark probes the very
  /// memory the work it judges reads, with the same backing.
  StreamReader(int threads, const void *region, size_t bytes);
  ~StreamReader();
  StreamReader(const StreamReader &) = delete;
  StreamReader &operator=(const StreamReader &) = delete;
  /// Best of `reps` reads of the whole buffer by each of the four read
  /// loops (plain; with a software prefetch into L1; into L2, as the
  /// decode kernels'; and two interleaved streams per thread with the L1
  /// one, as the W8A8 decode kernel reads), GB/s; 0 without AVX-512.
  double read_gbps(int reps = 2);
  /// The best of four reads of the next `bytes` of the buffer, one per
  /// read loop (windows taken in turn, so a window is never in cache when
  /// the buffer is larger than the caches), GB/s: a short probe to take
  /// between the steps it judges.
  double read_window_gbps(size_t bytes);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// For tests: the wrapping sum of the qwords of [p, p + bytes) as read loop
/// `loop` (0 plain, 1 prefetching into L1, 2 two streams, 3 prefetching
/// into L2; StreamReader's probe is the best of the four; 4-7 the same in
/// ymm, what hosts without AVX-512 probe with) reads them; bytes a multiple
/// of 512. 0 where the loop's instructions do not execute.
uint64_t read_loop_sum(int loop, const void *p, size_t bytes);

} // namespace hyc::codegen

#endif // HYC_CODEGEN_HOST_PEAKS_H
