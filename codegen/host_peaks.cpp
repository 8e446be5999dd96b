// Peak measurement: Xbyak loops of 24 independent zmm dot/FMA chains per
// thread, and a streaming read on transparent huge pages (host_peaks.h).
#include "codegen/host_peaks.h"

#include "codegen/pack.h"

#include <xbyak/xbyak.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace hyc::codegen {

namespace {

enum class Op { fma_f32, dot_bf16, dot_u8s8 };

/// void loop(int64_t iterations): 24 accumulators, one instruction each per
/// iteration.
class PeakLoop : public Xbyak::CodeGenerator {
public:
  explicit PeakLoop(Op op) {
    using namespace Xbyak;
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
};

/// void read(const void *p, int64_t blocks_of_256_bytes).
class ReadLoop : public Xbyak::CodeGenerator {
public:
  ReadLoop() {
    using namespace Xbyak;
    Label loop;
    L(loop);
    for (int i = 0; i < 4; ++i)
      vpaddq(Zmm(i), Zmm(i), ptr[rdi + i * 64]);
    add(rdi, 256);
    dec(rsi);
    jnz(loop);
    vzeroupper();
    ret();
  }
};

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
    best = std::max(best, threads * iters * 24.0 * ops_per_instr / dt * 1e-9);
  }
  return best;
}

bool executes(Op op) {
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

} // namespace

bool executes_avx512_fma() { return executes(Op::fma_f32); }
bool executes_bf16() { return executes(Op::dot_bf16); }
bool executes_vnni() { return executes(Op::dot_u8s8); }

HostPeaks measure_compute_peaks(int threads) {
  HostPeaks p;
  if (executes_avx512_fma())
    p.fp32_gflops = compute_peak(Op::fma_f32, threads, 32);
  if (executes_bf16())
    p.bf16_gflops = compute_peak(Op::dot_bf16, threads, 64);
  if (executes_vnni())
    p.int8_gops = compute_peak(Op::dot_u8s8, threads, 128);
  return p;
}

struct StreamReader::Impl {
  Impl(int threads, size_t bytes) : threads(threads), bytes(bytes), buf(bytes) {}
  int threads;
  size_t bytes;
  AlignedBuffer buf; // 2 MiB aligned, MADV_HUGEPAGE, touched
  ReadLoop code;
};

StreamReader::StreamReader(int threads, size_t bytes) {
  if (!executes_avx512_fma())
    return;
  bytes = std::max<size_t>(bytes / (256 * size_t(threads)), 1) * 256 * threads;
  impl_ = std::make_unique<Impl>(threads, bytes);
}

StreamReader::~StreamReader() = default;

double StreamReader::read_gbps(int reps) {
  if (!impl_)
    return 0;
  auto fn = impl_->code.getCode<void (*)(const void *, int64_t)>();
  double best = 0;
  const size_t part = impl_->bytes / impl_->threads;
  for (int rep = 0; rep < reps; ++rep) {
    const double t0 = now();
    onThreads(impl_->threads, [&](int t) {
      fn(impl_->buf.data() + part * t, int64_t(part / 256));
    });
    best = std::max(best, impl_->bytes / (now() - t0) * 1e-9);
  }
  return best;
}

double measure_read_gbps(int threads, size_t bytes, int reps) {
  return StreamReader(threads, bytes).read_gbps(reps);
}

void keep_best_peaks(HostPeaks &best, const HostPeaks &again) {
  best.fp32_gflops = std::max(best.fp32_gflops, again.fp32_gflops);
  best.bf16_gflops = std::max(best.bf16_gflops, again.bf16_gflops);
  best.int8_gops = std::max(best.int8_gops, again.int8_gops);
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
