// The runtime's thread pool (thread_pool.h).
//
// Handshake: the caller publishes the job (function, context), then bumps
// one 32-bit word holding (sequence << 8 | thread count). A worker that sees
// the word change runs the job if its index is below the count and then
// decrements `pending`; the caller runs slice 0 itself and waits for
// `pending` to reach zero. Waiting is a spin on the word (with `pause`)
// for HYRT_SPIN_US, then a futex wait; the wakers issue the futex wake only
// when someone announced that it parked (Dekker-style, sequentially
// consistent flag then re-check on both sides), so a busy pool makes no
// system calls.
#include "thread_pool.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <immintrin.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace hyrt::cpu {

namespace {

constexpr int kMaxThreads = 255; // the count shares the job word with the sequence

void futexWait(std::atomic<uint32_t> *word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT_PRIVATE, expected,
          nullptr, nullptr, 0);
}

void futexWake(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE_PRIVATE, INT_MAX,
          nullptr, nullptr, 0);
}

/// A non-negative integer from the environment; unset gives `fallback`,
/// and so does a malformed value, with a warning naming it (a typo in a
/// thread count must not pass unnoticed).
int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (*end == '\0' && errno == 0 && n >= 0 && n <= INT_MAX)
    return int(n);
  std::fprintf(stderr, "hyrt: %s='%s' is not a non-negative integer; using %d\n", name, v,
               fallback);
  return fallback;
}

/// Spins until pred() or `spin` has passed; true when pred() held.
template <typename Pred> bool spinFor(std::chrono::nanoseconds spin, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (int i = 1;; ++i) {
    if (pred())
      return true;
    _mm_pause();
    if ((i & 255) == 0 && std::chrono::steady_clock::now() >= deadline)
      return pred();
  }
}

thread_local bool tInJob = false;
std::atomic<bool> gForked{false}; // a fork()ed child has no workers

} // namespace

struct ThreadPool::Impl {
  alignas(64) std::atomic<uint32_t> job{0};     // sequence << 8 | threads
  alignas(64) std::atomic<uint32_t> pending{0}; // workers still in the job
  alignas(64) std::atomic<uint32_t> parkedWorkers{0};
  std::atomic<uint32_t> callerParked{0};
  Fn fn = nullptr;
  void *ctx = nullptr;
  std::atomic<bool> stop{false};
  std::mutex busy; // one job at a time; a second caller runs inline
  std::chrono::nanoseconds spin{200000};
  std::vector<int> cpus;
  std::vector<std::thread> workers;
  bool pinned = false; // worker t on cpus[t]; cpus[0] left for the caller
};

ThreadPool &ThreadPool::get() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::ThreadPool() : impl_(new Impl) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        impl_->cpus.push_back(c);
  const int available = impl_->cpus.empty() ? 1 : int(impl_->cpus.size());
  int n = envInt("HYRT_NUM_THREADS", envInt("OMP_NUM_THREADS", available));
  size_ = std::max(1, std::min(n == 0 ? available : n, kMaxThreads));
  impl_->spin = std::chrono::microseconds(envInt("HYRT_SPIN_US", 200));
  const bool pin = envInt("HYRT_PIN", 1) != 0 && int(impl_->cpus.size()) >= size_;
  impl_->pinned = pin && size_ > 1;
  pthread_atfork(nullptr, nullptr, [] { gForked.store(true); });
  for (int t = 1; t < size_; ++t) {
    impl_->workers.emplace_back([this, t] { workerLoop(t); });
    if (pin) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(impl_->cpus[size_t(t)], &one);
      pthread_setaffinity_np(impl_->workers.back().native_handle(), sizeof(one), &one);
    }
  }
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true);
  impl_->job.fetch_add(1u << 8);
  futexWake(&impl_->job);
  for (std::thread &w : impl_->workers)
    w.join();
  delete impl_;
}

namespace {

/// Gives back this thread's AMX tile state (an amx variant's kernels load a
/// tile configuration once per thread and leave it in place). Legal only
/// once the process holds the tile-data permission, which the loader asked
/// for when it chose that variant; a no-op when no tiles were configured.
void releaseAmxTiles() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool permitted = [] {
    constexpr long kArchGetXcompPerm = 0x1022;
    unsigned long long features = 0;
    return syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) == 0 &&
           (features & (1ull << 18)) != 0; // XFEATURE_XTILEDATA
  }();
  if (permitted)
    asm volatile(".byte 0xc4, 0xe2, 0x78, 0x49, 0xc0" ::: "memory"); // tilerelease
#endif
}

} // namespace

void ThreadPool::workerLoop(int tid) {
  Impl &p = *impl_;
  // The job word's value when the pool was built, not when this thread got
  // to run: a job dispatched before then must not be taken as the baseline.
  uint32_t seen = 0;
  for (;;) {
    if (!spinFor(p.spin, [&] { return p.job.load(std::memory_order_acquire) != seen; })) {
      p.parkedWorkers.fetch_add(1);
      while (p.job.load() == seen)
        futexWait(&p.job, seen);
      p.parkedWorkers.fetch_sub(1);
    }
    seen = p.job.load(std::memory_order_acquire);
    if (p.stop.load()) {
      releaseAmxTiles();
      return;
    }
    const int threads = int(seen & 0xff);
    if (tid >= threads)
      continue; // not in this job: the caller does not wait for us
    tInJob = true;
    p.fn(p.ctx, tid, threads);
    tInJob = false;
    if (p.pending.fetch_sub(1) == 1 && p.callerParked.load())
      futexWake(&p.pending);
  }
}

/// The caller runs share 0 of every job but is not pinned (a pinned
/// caller would hand its one-CPU mask to every thread it creates later).
/// After sleeping (a join, a socket, the bench's probe threads) the kernel
/// may wake it on a worker's CPU and leave it there for milliseconds while
/// that worker spins beside it: both shares then run at half speed. A
/// scratch loop of 4 MB decode GEMVs through the driver read at 65-69% of
/// the probe in the rounds where the caller sat on the worker's CPU for
/// 58-82 of 610 calls, 85-92% in the others. So a dispatch whose caller is
/// on a CPU of this job's workers moves it to cpus[0], which no worker
/// holds, and gives back its own mask at once: the kernel does not move a
/// running thread back, and the mask its later threads inherit is
/// unchanged. sched_getcpu() costs tens of nanoseconds; the move, two
/// syscalls, happens only when needed.
void ThreadPool::moveCallerOffWorkers(int threads) {
  Impl &p = *impl_;
  const int cpu = sched_getcpu();
  bool onWorker = false;
  for (int t = 1; t < threads; ++t)
    onWorker |= cpu == p.cpus[size_t(t)];
  if (!onWorker)
    return;
  cpu_set_t own, first;
  CPU_ZERO(&own);
  if (sched_getaffinity(0, sizeof(own), &own) != 0 || !CPU_ISSET(p.cpus[0], &own))
    return;
  CPU_ZERO(&first);
  CPU_SET(p.cpus[0], &first);
  if (sched_setaffinity(0, sizeof(first), &first) == 0)
    sched_setaffinity(0, sizeof(own), &own);
}

void ThreadPool::dispatch(int threads, Fn fn, void *ctx) {
  threads = std::min(threads, size_);
  Impl &p = *impl_;
  if (threads <= 1 || tInJob || gForked.load(std::memory_order_relaxed) ||
      !p.busy.try_lock()) {
    fn(ctx, 0, 1);
    return;
  }
  p.fn = fn;
  p.ctx = ctx;
  p.pending.store(uint32_t(threads - 1), std::memory_order_relaxed);
  const uint32_t old = p.job.load(std::memory_order_relaxed);
  p.job.store(((old >> 8) + 1) << 8 | uint32_t(threads)); // seq_cst: pairs with parkedWorkers
  if (p.parkedWorkers.load() > 0)
    futexWake(&p.job);

  if (p.pinned)
    moveCallerOffWorkers(threads);
  tInJob = true;
  fn(ctx, 0, threads);
  tInJob = false;

  if (!spinFor(p.spin, [&] { return p.pending.load(std::memory_order_acquire) == 0; })) {
    p.callerParked.store(1);
    for (uint32_t left = p.pending.load(); left != 0; left = p.pending.load())
      futexWait(&p.pending, left);
    p.callerParked.store(0);
  }
  p.busy.unlock();
}

} // namespace hyrt::cpu
