// Peak measurement: Xbyak loops of 24 independent zmm dot/FMA chains per
// thread (12 ymm ones for the avx2 variant's instructions), and a streaming
// read on transparent huge pages (host_peaks.h).
#include "codegen/host_peaks.h"

#include "codegen/pack.h"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hyc::codegen {

namespace {

enum class Op { fma_f32, dot_bf16, dot_u8s8, avx2_fma_f32, avx2_dot_u8s8 };
constexpr int kOps = 5;

/// void loop(int64_t iterations): 24 accumulators, one instruction each per
/// iteration (AVX-512); the AVX2 forms below.
class PeakLoop : public Xbyak::CodeGenerator {
public:
  explicit PeakLoop(Op op) {
    using namespace Xbyak;
    if (op == Op::avx2_fma_f32 || op == Op::avx2_dot_u8s8) {
      avx2(op);
      return;
    }
    for (int r = 0; r < 26; ++r)
      vpxord(Zmm(r), Zmm(r), Zmm(r));
    vpternlogd(zmm30, zmm30, zmm30, 0xFF);
    vpternlogd(zmm31, zmm31, zmm31, 0xFF);
    Label loop;
    L(loop);
    for (int r = 0; r < 24; ++r) {
      if (op == Op::fma_f32)
        vfmadd231ps(Zmm(r), zmm30, zmm31);
      else if (op == Op::dot_bf16)
        vdpbf16ps(Zmm(r), zmm30, zmm31);
      else
        vpdpbusd(Zmm(r), zmm30, zmm31, EvexEncoding);
    }
    dec(rdi);
    jnz(loop);
    vzeroupper();
    ret();
  }

private:
  /// VEX only, 16 ymm registers. FMA: 12 accumulators, one vfmadd231ps
  /// each per iteration. Int8: AVX2 has no u8 x s8 -> s32 dot product; the
  /// shortest exact form is vpmaddubsw (32 products summed in pairs to
  /// int16) then vpmaddwd by int16 ones (pairs to int32) then vpaddd, so
  /// one "instruction" here is that chain of three over 32 multiply-adds
  /// (6 chains: two temporaries each would not fit 12). The avx2 W8A8 and
  /// grouped kernels need at least these three per 32 (plus the sign trick
  /// or the nibble unpack), so none can pass this peak.
  void avx2(Op op) {
    using namespace Xbyak;
    for (int r = 0; r < 16; ++r)
      vpxor(Ymm(r), Ymm(r), Ymm(r));
    vpcmpeqd(ymm14, ymm14, ymm14); // all ones: u8 255 / s8 -1
    vpabsb(ymm15, ymm14);          // bytes 1
    Label loop;
    L(loop);
    if (op == Op::avx2_fma_f32) {
      for (int r = 0; r < 12; ++r)
        vfmadd231ps(Ymm(r), ymm14, ymm15);
    } else {
      // ymm12: int16 ones for vpmaddwd (0x0001 words: bytes 1, 0).
      vpsrlw(ymm12, ymm15, 8);
      for (int c = 0; c < 6; ++c) {
        const Ymm t = Ymm(6 + c);
        vpmaddubsw(t, ymm14, ymm15);
        vpmaddwd(t, t, ymm12);
        vpaddd(Ymm(c), Ymm(c), t);
      }
    }
    dec(rdi);
    jnz(loop);
    vzeroupper();
    ret();
  }
};

/// Instructions (or int8 chains) per iteration of a PeakLoop.
int instructionsPerIteration(Op op) {
  return op == Op::avx2_fma_f32 ? 12 : op == Op::avx2_dot_u8s8 ? 6 : 24;
}

/// uint64_t read(const void *p, int64_t blocks_of_512_bytes): eight independent
/// accumulators, so that only the memory system limits the loads (STREAM's
/// sum kernel, vectorized), each line optionally prefetched `ahead` bytes
/// early as the decode kernels do (codegen/tiles.cpp prefetch_b). With
/// `two_streams` the span's two halves are read interleaved, four lines of
/// each per iteration, as the W8A8 decode kernel walks a panel's two K
/// halves (tiles.h k_streams). `l2`: the prefetch is prefetcht1 (into L2),
/// as the AVX-512 decode bodies' (tiles.h prefetch_b_into_l2).
class ReadLoop : public Xbyak::CodeGenerator {
public:
  static constexpr size_t kBlock = 512;
  /// `ymm`: VEX ymm loads (two per line) for hosts without AVX-512.
  explicit ReadLoop(int ahead, bool two_streams = false, bool ymm = false, bool l2 = false) {
    using namespace Xbyak;
    for (int i = 0; i < 8; ++i) {
      if (ymm)
        vpxor(Ymm(i), Ymm(i), Ymm(i));
      else
        vpxorq(Zmm(i), Zmm(i), Zmm(i));
    }
    if (two_streams) { // rdx = the second half's offset: blocks x 256 bytes
      mov(rdx, rsi);
      shl(rdx, 8);
    }
    Label loop;
    L(loop);
    for (int i = 0; i < 8; ++i) {
      const int line = two_streams ? i % 4 : i;
      const RegExp at = two_streams && i >= 4 ? rdi + rdx + line * 64 : rdi + line * 64;
      if (ahead > 0 && l2)
        prefetcht1(ptr[at + ahead]);
      else if (ahead > 0)
        prefetcht0(ptr[at + ahead]);
      if (ymm) {
        vpaddq(Ymm(i), Ymm(i), ptr[at]);
        vpaddq(Ymm(i), Ymm(i), ptr[at + 32]);
      } else {
        vpaddq(Zmm(i), Zmm(i), ptr[at]);
      }
    }
    add(rdi, int(two_streams ? kBlock / 2 : kBlock));
    dec(rsi);
    jnz(loop);
    // The wrapping sum of every qword read, returned (what the tests check:
    // each byte of the span read exactly once).
    for (int i = 1; i < 8; ++i) {
      if (ymm)
        vpaddq(ymm0, ymm0, Ymm(i));
      else
        vpaddq(zmm0, zmm0, Zmm(i));
    }
    if (!ymm) {
      vextracti64x4(ymm1, zmm0, 1);
      vpaddq(ymm0, ymm0, ymm1);
    }
    vextracti128(xmm1, ymm0, 1);
    vpaddq(xmm0, xmm0, xmm1);
    vpshufd(xmm1, xmm0, 0x4e);
    vpaddq(xmm0, xmm0, xmm1);
    vmovq(rax, xmm0);
    vzeroupper();
    ret();
  }
};

/// Whether the read loops run here, and in which form: zmm where AVX-512
/// executes, ymm on AVX2 hosts.
bool readLoopsRun() { return executes_avx512_fma() || executes_avx2_fma(); }
bool readLoopsYmm() { return !executes_avx512_fma(); }

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Runs body(thread index) on `threads` std::threads and waits for them.
template <typename Body> void onThreads(int threads, Body body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&body, t] { body(t); });
  for (std::thread &th : pool)
    th.join();
}

double compute_peak(Op op, int threads, double ops_per_instr) {
  PeakLoop code(op);
  auto fn = code.getCode<void (*)(int64_t)>();
  const int64_t iters = 4000000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = now();
    onThreads(threads, [&](int) { fn(iters); });
    const double dt = now() - t0;
    best = std::max(best, threads * iters * double(instructionsPerIteration(op)) *
                              ops_per_instr / dt * 1e-9);
  }
  return best;
}

bool probeInChild(Op op) {
  const pid_t pid = fork();
  if (pid == 0) {
    PeakLoop code(op);
    code.getCode<void (*)(int64_t)>()(1);
    _exit(0);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

/// probeInChild, once per process and instruction: the answer cannot
/// change, and a fork write-protects every page of the parent, so each page
/// a later step writes (an engine's arena, its KV cache) takes a fault
/// again; `hyc bench`, which re-measures the peaks between rounds, measured
/// its prefills with ~16K such faults each (72 MB of mla-small's arena).
bool executes(Op op) {
  static std::once_flag once[kOps];
  static bool answer[kOps];
  const int i = int(op);
  std::call_once(once[i], [&] { answer[i] = probeInChild(op); });
  return answer[i];
}

} // namespace

bool executes_avx512_fma() { return executes(Op::fma_f32); }
bool executes_bf16() { return executes(Op::dot_bf16); }
bool executes_vnni() { return executes(Op::dot_u8s8); }
bool executes_avx2_fma() { return executes(Op::avx2_fma_f32); }

HostPeaks measure_compute_peaks(int threads) {
  HostPeaks p;
  if (executes_avx512_fma())
    p.fp32_gflops = compute_peak(Op::fma_f32, threads, 32);
  if (executes_bf16())
    p.bf16_gflops = compute_peak(Op::dot_bf16, threads, 64);
  if (executes_vnni())
    p.int8_gops = compute_peak(Op::dot_u8s8, threads, 128);
  if (executes_avx2_fma()) {
    p.avx2_fp32_gflops = compute_peak(Op::avx2_fma_f32, threads, 16);
    p.avx2_int8_gops = compute_peak(Op::avx2_dot_u8s8, threads, 64);
  }
  return p;
}

struct StreamReader::Impl {
  Impl(int threads, size_t bytes, const uint8_t *region = nullptr)
      : threads(threads), bytes(bytes), buf(region ? 0 : bytes),
        base(region ? region : buf.data()) {
    // A zero-filled buffer (AlignedBuffer's) is what a host's same-page
    // merging collapses into one page, splitting the huge pages behind it:
    // reads then walk nested page tables every 4 KiB and run at a tenth of
    // the bandwidth. Distinct bytes in every page keep the buffer ordinary.
    if (!region) {
      uint64_t x = 0x9e3779b97f4a7c15ull;
      for (size_t i = 0; i + 8 <= bytes; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        std::memcpy(buf.data() + i, &x, 8);
      }
    }
    cpus = process_cpus();
  }
  int threads;
  size_t bytes;
  AlignedBuffer buf; // 2 MiB aligned, MADV_HUGEPAGE, touched; empty over a region
  const uint8_t *base; // buf's data or the caller's region
  // Four reads, the best of which is the probe: the plain one, one with
  // a software prefetch into L1 and one into L2 (the AVX-512 decode
  // kernels' since the fourteenth session: they read 99-100% of the three
  // other probes in slow minutes), and one reading each thread's share as
  // two interleaved streams with the L1 prefetch. In this host's slow,
  // high-latency phase the hardware prefetchers alone kept fewer lines in
  // flight than the kernels do, and 5 of 20 `hyc bench` runs saw the
  // decode read faster than a plain probe (34 against 28 GB/s); once the
  // W8A8 decode kernel read two streams per thread, it outran both
  // one-stream probes there (decode / probe 104-105%). What a kernel can
  // reach, the yardstick reaches too.
  ReadLoop plain{0, false, readLoopsYmm()}, ahead{4096, false, readLoopsYmm()},
      twoStreams{4096, true, readLoopsYmm()}, aheadL2{4096, false, readLoopsYmm(), true};
  const ReadLoop *loops[4] = {&plain, &ahead, &twoStreams, &aheadL2};
  std::vector<int> cpus; // the process's CPUs: thread t pinned to cpus[t]
  size_t next = 0;       // where the next window starts

  /// Reads [offset, offset + span) with every thread on its contiguous
  /// share, each pinned to its own CPU; GB/s over the span from the first
  /// thread's start to the last one's end, timed inside the threads (thread
  /// creation is not part of the read).
  double read(size_t offset, size_t span, const ReadLoop &code) {
    auto fn = code.getCode<uint64_t (*)(const void *, int64_t)>();
    const size_t part = span / size_t(threads);
    std::vector<double> start(static_cast<size_t>(threads), 0.0);
    std::vector<double> end(static_cast<size_t>(threads), 0.0);
    std::atomic<int> arrived{0};
    onThreads(threads, [&](int t) {
      if (!cpus.empty())
        pin_current_thread(cpus[size_t(t) % cpus.size()]);
      arrived.fetch_add(1);
      while (arrived.load() < threads) // all start together
        std::this_thread::yield();
      start[size_t(t)] = now();
      fn(base + offset + part * size_t(t), int64_t(part / ReadLoop::kBlock));
      end[size_t(t)] = now();
    });
    const double dt = *std::max_element(end.begin(), end.end()) -
                      *std::min_element(start.begin(), start.end());
    return dt > 0 ? double(part * size_t(threads)) / dt * 1e-9 : 0;
  }
};

std::vector<int> process_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        cpus.push_back(c);
  return cpus;
}

void pin_current_thread(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

StreamReader::StreamReader(int threads, size_t bytes) {
  if (!readLoopsRun())
    return;
  const size_t unit = ReadLoop::kBlock * size_t(threads);
  bytes = std::max<size_t>(bytes / unit, 1) * unit;
  impl_ = std::make_unique<Impl>(threads, bytes);
}

StreamReader::StreamReader(int threads, const void *region, size_t bytes) {
  const size_t unit = ReadLoop::kBlock * size_t(threads);
  if (!readLoopsRun() || !region || bytes < unit)
    return;
  impl_ = std::make_unique<Impl>(threads, bytes / unit * unit,
                                 static_cast<const uint8_t *>(region));
}

StreamReader::~StreamReader() = default;

double StreamReader::read_gbps(int reps) {
  if (!impl_)
    return 0;
  double best = 0;
  for (int rep = 0; rep < reps; ++rep)
    for (const ReadLoop *code : impl_->loops)
      best = std::max(best, impl_->read(0, impl_->bytes, *code));
  return best;
}

double StreamReader::read_window_gbps(size_t bytes) {
  if (!impl_)
    return 0;
  const size_t unit = ReadLoop::kBlock * size_t(impl_->threads);
  const size_t span = std::clamp<size_t>(bytes / unit * unit, unit, impl_->bytes);
  double best = 0;
  for (const ReadLoop *code : impl_->loops) { // each its own window
    if (impl_->next + span > impl_->bytes)
      impl_->next = 0;
    best = std::max(best, impl_->read(impl_->next, span, *code));
    impl_->next += span;
  }
  return best;
}

uint64_t read_loop_sum(int loop, const void *p, size_t bytes) {
  static const ReadLoop plain{0}, ahead{4096}, twoStreams{4096, true},
      aheadL2{4096, false, false, true};
  static const ReadLoop plainY{0, false, true}, aheadY{4096, false, true},
      twoStreamsY{4096, true, true}, aheadL2Y{4096, false, true, true};
  const ReadLoop *loops[8] = {&plain,  &ahead,  &twoStreams,  &aheadL2,
                              &plainY, &aheadY, &twoStreamsY, &aheadL2Y};
  if (loop < 0 || loop > 7 || bytes % ReadLoop::kBlock != 0 ||
      (loop < 4 ? !executes_avx512_fma() : !executes_avx2_fma()))
    return 0;
  return loops[loop]->getCode<uint64_t (*)(const void *, int64_t)>()(
      p, int64_t(bytes / ReadLoop::kBlock));
}

double measure_read_gbps(int threads, size_t bytes, int reps) {
  return StreamReader(threads, bytes).read_gbps(reps);
}

void keep_best_peaks(HostPeaks &best, const HostPeaks &again) {
  best.fp32_gflops = std::max(best.fp32_gflops, again.fp32_gflops);
  best.bf16_gflops = std::max(best.bf16_gflops, again.bf16_gflops);
  best.int8_gops = std::max(best.int8_gops, again.int8_gops);
  best.avx2_fp32_gflops = std::max(best.avx2_fp32_gflops, again.avx2_fp32_gflops);
  best.avx2_int8_gops = std::max(best.avx2_int8_gops, again.avx2_int8_gops);
}

HostPeaks measure_best_compute_peaks(int threads, int tries) {
  HostPeaks best = measure_compute_peaks(threads);
  for (int i = 1; i < tries; ++i)
    keep_best_peaks(best, measure_compute_peaks(threads));
  return best;
}

void evict_caches(size_t bytes) {
  static std::vector<uint8_t> big;
  if (big.size() < bytes)
    big.assign(bytes, 1);
  uint64_t acc = 0;
  for (size_t i = 0; i < bytes; i += 64)
    acc += big[i];
  __asm__ __volatile__("" : : "r"(acc)); // keeps the reads
}

HostPeaks measure_peaks(int threads) {
  HostPeaks p = measure_compute_peaks(threads);
  p.read_gbps = measure_read_gbps(threads);
  return p;
}

} // namespace hyc::codegen
