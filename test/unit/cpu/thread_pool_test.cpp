// The runtime's thread pool (runtime/cpu/thread_pool.h): every index of a
// split runs exactly once, nested and concurrent callers complete (inline)
// instead of deadlocking, parked workers wake for the next job, and workers
// are pinned to one CPU each.
#include "runtime/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <sched.h>
#include <set>
#include <thread>
#include <vector>

namespace {

using hyrt::cpu::parallelFor;
using hyrt::cpu::parallelForDynamic;
using hyrt::cpu::kAllThreads;
using hyrt::cpu::ThreadPool;

TEST(ThreadPool, ParallelForVisitsEveryIndexOnce) {
  for (int64_t n : {1, 2, 3, 7, 1000, 4099}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    parallelFor(n, kAllThreads, [&](int64_t i) { seen[size_t(i)].fetch_add(1); });
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(seen[size_t(i)].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, DynamicSplitVisitsEveryIndexOnce) {
  const int64_t n = 513;
  std::vector<std::atomic<int>> seen(n);
  parallelForDynamic(n, kAllThreads, [&](int, int64_t i) { seen[size_t(i)].fetch_add(1); });
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(seen[size_t(i)].load(), 1) << i;
}

TEST(ThreadPool, JobsRunOnSeveralThreadsWhenThePoolHasThem) {
  ThreadPool &pool = ThreadPool::get();
  std::mutex mu;
  std::set<std::thread::id> ids;
  int reportedThreads = 0;
  pool.run(kAllThreads, [&](int, int n) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
    reportedThreads = n;
  });
  EXPECT_EQ(reportedThreads, pool.size());
  EXPECT_EQ(int(ids.size()), pool.size());
  EXPECT_EQ(ids.count(std::this_thread::get_id()), 1u) << "the caller is thread 0";
}

TEST(ThreadPool, WorkersArePinnedToOneCpuEach) {
  ThreadPool &pool = ThreadPool::get();
  if (pool.size() < 2)
    GTEST_SKIP() << "one-thread pool: no workers on this host";
  std::vector<int> cpusOf(size_t(pool.size()), -1);
  pool.run(kAllThreads, [&](int tid, int) {
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    cpusOf[size_t(tid)] = CPU_COUNT(&set);
  });
  for (int t = 1; t < pool.size(); ++t)
    EXPECT_EQ(cpusOf[size_t(t)], 1) << "worker " << t;
}

// The caller runs share 0 unpinned; woken on a worker's CPU it would share
// that CPU with the worker (both shares at half speed). A dispatch moves it
// off (runtime/cpu/thread_pool.cpp moveCallerOffWorkers) and leaves its own
// affinity mask as it was.
TEST(ThreadPool, ACallerOnAWorkersCpuIsMovedOffAndKeepsItsMask) {
  ThreadPool &pool = ThreadPool::get();
  if (pool.size() < 2)
    GTEST_SKIP() << "one-thread pool: no workers on this host";
  std::vector<int> cpuOf(size_t(pool.size()), -1);
  pool.run(kAllThreads, [&](int tid, int) { cpuOf[size_t(tid)] = sched_getcpu(); });
  const int worker = cpuOf[1];
  cpu_set_t own, one, after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(own), &own), 0);
  CPU_ZERO(&one);
  CPU_SET(worker, &one);
  // Five dispatches whose caller sat on the worker's CPU when they began.
  // Without the move every one runs share 0 there; with it, another process
  // taking cpus[0] (parallel tests) could send the caller back before it
  // looks, so one moved dispatch is required, not five.
  int stayed = 0, moved = 0, tries = 0;
  for (; tries < 100 && stayed < 5; ++tries) {
    // Onto the worker's CPU, then the whole mask back: the kernel leaves a
    // running thread where it is.
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    ASSERT_EQ(sched_setaffinity(0, sizeof(own), &own), 0);
    if (sched_getcpu() != worker)
      continue; // moved by the scheduler before the test could look
    ++stayed;
    int callerCpu = -1;
    pool.run(kAllThreads, [&](int tid, int) {
      if (tid == 0)
        callerCpu = sched_getcpu();
    });
    moved += callerCpu != worker;
  }
  ASSERT_GT(stayed, 0) << "the caller never stayed on worker 1's CPU in " << tries << " tries";
  EXPECT_GT(moved, 0) << "all " << stayed << " dispatches ran the caller's share on worker 1's CPU";
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&own, &after)) << "the caller's mask changed";
}

TEST(ThreadPool, NestedSplitsRunInline) {
  std::atomic<int64_t> sum{0};
  parallelFor(8, kAllThreads, [&](int64_t i) {
    parallelFor(100, kAllThreads, [&](int64_t j) { sum.fetch_add(i * 100 + j); });
  });
  const int64_t n = 800;
  EXPECT_EQ(sum.load(), n * (n - 1) / 2);
}

TEST(ThreadPool, ConcurrentCallersBothComplete) {
  auto work = [](std::atomic<int64_t> &sum) {
    for (int rep = 0; rep < 2000; ++rep)
      parallelFor(16, kAllThreads, [&](int64_t i) { sum.fetch_add(i); });
  };
  std::atomic<int64_t> a{0}, b{0};
  std::thread other([&] { work(b); });
  work(a);
  other.join();
  EXPECT_EQ(a.load(), 2000 * 120);
  EXPECT_EQ(b.load(), 2000 * 120);
}

TEST(ThreadPool, ParkedWorkersWakeForTheNextJob) {
  ThreadPool &pool = ThreadPool::get();
  for (int rep = 0; rep < 3; ++rep) {
    // Longer than the spin (HYRT_SPIN_US, 200 us by default): workers park.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::atomic<int> ran{0};
    pool.run(kAllThreads, [&](int, int) { ran.fetch_add(1); });
    EXPECT_EQ(ran.load(), pool.size()) << "round " << rep;
  }
}

} // namespace
