// The runtime's one thread pool: every optimized kernel of an artifact
// splits its work here instead of forking OpenMP threads per op.
//
// Persistent workers, pinned one per CPU of the process's affinity mask
// (the calling thread is worker 0 and is left where the OS put it), wait for
// work by spinning for a short while and then parking on a futex, so the
// back-to-back ops of a step start in well under a microsecond while an
// idle engine costs no CPU. One pool per process today; the scale-out work
// makes it one per NUMA node (a pool owns a CPU set, nothing else assumes a
// single pool).
//
// Size: HYRT_NUM_THREADS, else OMP_NUM_THREADS (what earlier artifacts
// honoured), else the CPUs of the affinity mask. HYRT_PIN=0 leaves workers
// unpinned; HYRT_SPIN_US sets the spin before parking (default 200 us).
#ifndef HYRT_CPU_THREAD_POOL_H
#define HYRT_CPU_THREAD_POOL_H

#include "hyrt/support/steal_ranges.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

namespace hyrt::cpu {

/// maxThreads for "every thread of the pool".
inline constexpr int kAllThreads = 1 << 30;

class ThreadPool {
public:
  /// The process's pool, started on first use.
  static ThreadPool &get();

  /// Threads that run a job, the caller included.
  int size() const { return size_; }

  /// Runs body(tid, n) on n = min(threads, size()) threads (tid 0 is the
  /// caller) and returns when all have finished. Called from inside a job,
  /// or while another thread's job runs, it runs body(0, 1) inline: nesting
  /// never deadlocks and never oversubscribes the cores.
  template <typename Body> void run(int threads, Body &&body) {
    using B = std::remove_reference_t<Body>;
    dispatch(threads, [](void *ctx, int tid, int n) { (*static_cast<B *>(ctx))(tid, n); },
             &body);
  }

  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;
  ~ThreadPool();

private:
  using Fn = void (*)(void *, int, int);
  ThreadPool();
  void dispatch(int threads, Fn fn, void *ctx);
  void moveCallerOffWorkers(int threads);
  void workerLoop(int tid);
  struct Impl;
  Impl *impl_;
  int size_ = 1;
};

/// body(i) for i in [0, n), contiguous chunks of about n / threads items per
/// thread (static split: chunk t is always the same thread's for a given n).
template <typename Body> void parallelFor(int64_t n, int maxThreads, Body &&body) {
  if (n <= 0)
    return;
  ThreadPool &pool = ThreadPool::get();
  const int threads = int(std::min<int64_t>(n, std::min(maxThreads, pool.size())));
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i)
      body(i);
    return;
  }
  pool.run(threads, [&](int tid, int nth) {
    const int64_t begin = n * tid / nth, end = n * (tid + 1) / nth;
    for (int64_t i = begin; i < end; ++i)
      body(i);
  });
}

/// body(i) for i in [0, n): each thread walks the contiguous share a static
/// split would give it, in order, and a thread done with its own share takes
/// items one at a time from the back of another's (hyrt/support/
/// steal_ranges.h: the two hardware threads of a core stream at unequal,
/// shifting rates, and a static split's join waits for the slower one).
/// Items must not care which thread runs them.
template <typename Body> void parallelForBalanced(int64_t n, int maxThreads, Body &&body) {
  if (n <= 0)
    return;
  ThreadPool &pool = ThreadPool::get();
  const int threads = int(std::min<int64_t>(n, std::min(maxThreads, pool.size())));
  if (threads > hyrt::StealRanges::kMaxShares || n >= (int64_t(1) << 31)) {
    parallelFor(n, threads, body);
    return;
  }
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i)
      body(i);
    return;
  }
  hyrt::StealRanges ranges(n, threads);
  // Run inline (a nested or concurrent call), thread 0 walks its share and
  // then takes every other share's items: all n still run once.
  pool.run(threads, [&](int tid, int) {
    for (int64_t i = ranges.next(tid); i >= 0; i = ranges.next(tid))
      body(i);
  });
}

/// body(tid, i) for i in [0, n) handed out one at a time from a shared
/// counter (uneven items: attention rows of different lengths).
template <typename Body> void parallelForDynamic(int64_t n, int maxThreads, Body &&body) {
  if (n <= 0)
    return;
  ThreadPool &pool = ThreadPool::get();
  const int threads = int(std::min<int64_t>(n, std::min(maxThreads, pool.size())));
  std::atomic<int64_t> next{0};
  pool.run(threads, [&](int tid, int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      body(tid, i);
  });
}

/// Elements below which an elementwise split runs on the caller: a split
/// costs a few microseconds of wake-up and barrier, an element of norm or
/// quantize about a nanosecond.
inline constexpr int64_t kParallelMinElements = int64_t(1) << 15;

/// maxThreads for `elements` of elementwise work: every thread from
/// kParallelMinElements, else the caller alone.
inline int threadsForElements(int64_t elements) {
  return elements >= kParallelMinElements ? kAllThreads : 1;
}

/// Rows of `width` elements of an elementwise kernel, split across the pool
/// from kParallelMinElements. A decode step's single row never leaves its
/// thread.
template <typename Body> void parallelRows(int64_t rows, int64_t width, Body &&body) {
  parallelFor(rows, threadsForElements(rows * width), body);
}

} // namespace hyrt::cpu

#endif // HYRT_CPU_THREAD_POOL_H
