//===- CpuCostModel.h - the numbers behind CPU schedule decisions -*- C++ -*-===//
//
// hyc-cpu-select-lowering-strategy asks this model how to run each op; the
// model knows the machine (threads, fork/join cost, per-thread compute and
// bandwidth) and nothing about MLIR. Every constant that shapes a schedule
// lives here, with the reason for its value, instead of inside a kernel.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_CPUCOSTMODEL_H
#define HYC_PASSES_CPUCOSTMODEL_H

#include <cstdint>

namespace hyc {

/// What the schedule assumes about the machine the artifact runs on.
struct CpuMachine {
  /// Worker threads an op may use.
  int64_t threads = 1;
  /// One split of an op across the runtime's thread pool (wake + barrier).
  /// On the shared
  /// 2-vCPU hosts this project runs on, a region costs ~10 us once the
  /// second vCPU has to be woken (decode of small models was dominated by
  /// these barriers before GEMMs below the threshold ran serially).
  double forkJoinNs = 10000;
  /// Streaming read bandwidth of one thread on 4 KiB pages (~10 GB/s).
  double bytesPerNsPerThread = 10;
  /// Clock assumed for compute-rate estimates (GHz) and the fraction of a
  /// kernel's peak that small-M block GEMMs reach.
  double ghz = 2.5;
  double kernelEfficiency = 0.5;
};

/// The schedule of one GEMM on generated block kernels.
struct GemmSchedule {
  int64_t tileM = 0, tileN = 32, tileK = 0;
  int64_t threads = 1;
  /// Smallest M*N*K for which the driver forks threads.
  int64_t parallelMinMacs = 0;
};

/// Schedule of an [M, K] x [K, N] GEMM whose kernel has `tileM` rows, does
/// `macsPerCycle` multiply-adds per cycle per thread at peak and reads
/// weights of `weightBits` bits. Threads pay off once the single-thread time
/// (compute or weight streaming, whichever is longer) exceeds the fork/join
/// cost times p/(p-1); weight streaming does not depend on M, so a GEMM
/// whose weights alone take that long is always threaded.
GemmSchedule scheduleGemm(const CpuMachine &machine, int64_t n, int64_t k,
                          int64_t tileM, int64_t macsPerCycle,
                          int64_t weightBits);

/// Rows from which an AMX tile kernel beats the AVX-512 one on the same
/// GEMM. A tile multiply costs the same for 1..16 configured rows, so below
/// 16 rows AMX pays for work it discards and for its tile loads, while the
/// AVX-512 kernel streams the weights at the same rate; SGLang and
/// KTransformers switch in the 4-16 row range. Not yet measured here (no AMX
/// host has run these kernels).
int64_t amxMinRows();

/// Bytes of output from which a GEMM stores C around the caches
/// (non-temporal stores, BrgemmDesc::stream_c). An output that outgrows
/// the caches is written back to memory anyway; plain stores first read
/// every line for ownership, and the lines they allocate push out the
/// weights and activations the kernel still streams. Measured on moe-small's
/// down projection (hyc_moe_bench --stream-down, 2-vCPU EPYC Zen 5): an
/// 8 MB output gains nothing, 16 MB 4-5% of the layer, 32 MB 7%, 64 MB 5-8%.
int64_t streamStoreMinBytes();

/// Threads for decode/extend attention over `rows` (token, head) pairs.
int64_t attentionThreads(const CpuMachine &machine, int64_t rows);

/// KV splits per decode token (flash decoding): enough position ranges for
/// one token's KV heads to occupy every thread, at most 16.
int64_t attentionKvSplits(const CpuMachine &machine, int64_t kvHeads);

} // namespace hyc

#endif // HYC_PASSES_CPUCOSTMODEL_H
