// The runtime's thread pool (runtime/cpu/thread_pool.h): every index of a
// split runs exactly once (static, dynamic and balanced splits; the
// balanced split's StealRanges under racing threads), nested and concurrent callers complete (inline)
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

using hyrt::StealRanges;
using hyrt::cpu::parallelFor;
using hyrt::cpu::parallelForBalanced;
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

TEST(ThreadPool, BalancedSplitVisitsEveryIndexOnce) {
  for (int64_t n : {1, 2, 3, 7, 1000, 4099}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    parallelForBalanced(n, kAllThreads, [&](int64_t i) { seen[size_t(i)].fetch_add(1); });
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(seen[size_t(i)].load(), 1) << "n=" << n << " i=" << i;
  }
  // Nested: the inner split runs inline on one thread, which must still
  // take the other shares' items.
  std::atomic<int64_t> sum{0};
  parallelForBalanced(8, kAllThreads, [&](int64_t i) {
    parallelForBalanced(100, kAllThreads, [&](int64_t j) { sum.fetch_add(i * 100 + j); });
  });
  EXPECT_EQ(sum.load(), int64_t(800) * 799 / 2);
}

// A thread alone walks its own share front to back, then takes the other
// shares' items from their backs, the next share first.
TEST(StealRanges, OwnShareInOrderThenOthersFromTheBack) {
  StealRanges r(10, 3); // shares [0, 3), [3, 6), [6, 10)
  std::vector<int64_t> got;
  for (int64_t i = r.next(1); i >= 0; i = r.next(1))
    got.push_back(i);
  EXPECT_EQ(got, (std::vector<int64_t>{3, 4, 5, 9, 8, 7, 6, 2, 1, 0}));
  EXPECT_EQ(r.next(0), -1);
  EXPECT_EQ(r.next(2), -1);
}

// Real threads racing on the same shares, one of them slowed: every item
// is handed out exactly once (a plain fetch_add on each end would hand the
// last item of a share to both ends or to neither), and the fast threads
// take items of the slow one's share.
TEST(StealRanges, RacingThreadsTakeEveryItemOnce) {
  constexpr int kThreads = 4;
  constexpr int64_t n = 20000;
  int repsWithSteals = 0; // summed: one rep's threads may start late on a loaded host
  for (int rep = 0; rep < 20; ++rep) {
    StealRanges r(n, kThreads);
    std::vector<std::atomic<int>> seen(n);
    std::atomic<int64_t> stolenFromSlow{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int64_t i = r.next(t); i >= 0; i = r.next(t)) {
          seen[size_t(i)].fetch_add(1, std::memory_order_relaxed);
          if (t == 0 && (i & 63) == 0)
            std::this_thread::sleep_for(std::chrono::microseconds(50));
          if (t != 0 && i < n / kThreads)
            stolenFromSlow.fetch_add(1, std::memory_order_relaxed);
        }
      });
    for (std::thread &th : threads)
      th.join();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(seen[size_t(i)].load(), 1) << "rep " << rep << " item " << i;
    repsWithSteals += stolenFromSlow.load() > 0;
  }
  EXPECT_GT(repsWithSteals, 0) << "no thread ever took an item of the slowed thread's share";
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
