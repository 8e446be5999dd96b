// hyc_allreduce_bench [--ranks N]: the shared-memory all-reduce (hyrt/
// shm_group.h) between N forked processes (default 2) for 4 KiB .. 64 MiB
// of fp32: median latency over repetitions and the algorithm bandwidth
// (vector bytes / time), and the memcpy bandwidth of one process for
// scale: a 2-rank all-reduce moves each byte about four times through
// memory (copy in, read both slots, write the sum). Then the staged
// all-to-all (expert parallel's token exchange: counts, then the blocks)
// with each rank sending the same bytes, split evenly over the ranks.
// Rank 0 prints.
#include "hyrt/parallel/shm_group.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// The median over `reps` runs of `op` (after two warm-up runs), each
/// started together by a barrier and followed, untimed, by `after`;
/// negative when a collective failed.
template <typename Op, typename After>
double medianSeconds(hyrt::ShmGroup &g, int reps, Op op, After after) {
  std::vector<double> t;
  for (int i = 0; i < reps + 2; ++i) {
    if (!g.barrier().ok())
      return -1;
    const auto t0 = Clock::now();
    if (hyrt::Status s = op(); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return -1;
    }
    if (i >= 2)
      t.push_back(seconds(t0, Clock::now()));
    after();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Repetitions of a `bytes` collective: about 256 MiB moved, 5 .. 2000.
int repsFor(size_t bytes) { return int(std::clamp<size_t>((256u << 20) / bytes, 5, 2000)); }

int runRank(const std::string &name, int rank, int ranks) {
  hyrt::ShmGroupOptions o;
  o.name = name;
  o.rank = rank;
  o.size = ranks;
  o.slot_bytes = 16u << 20;
  o.timeout_s = 30;
  std::unique_ptr<hyrt::ShmGroup> g;
  if (hyrt::Status s = hyrt::ShmGroup::join(o, &g); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  if (rank == 0)
    std::printf("%d ranks, slot %zu MiB, reduce-scatter from %zu KiB\n%10s %12s %12s %12s\n",
                ranks, o.slot_bytes >> 20, o.reduce_scatter_bytes >> 10, "bytes",
                "median us", "GB/s", "memcpy GB/s");
  for (size_t bytes = 4096; bytes <= (64u << 20); bytes *= 4) {
    const size_t n = bytes / sizeof(float);
    std::vector<float> v(n, 1.0f), copy(n);
    const double med = medianSeconds(
        *g, repsFor(bytes), [&] { return g->all_reduce_sum(v.data(), n); },
        [&] { std::fill(v.begin(), v.end(), 1.0f); });
    if (med < 0)
      return 1;
    double copyBest = 1e30;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = Clock::now();
      std::memcpy(copy.data(), v.data(), bytes);
      copyBest = std::min(copyBest, seconds(t0, Clock::now()));
    }
    if (rank == 0)
      std::printf("%10zu %12.1f %12.2f %12.2f\n", bytes, med * 1e6, bytes / med / 1e9,
                  bytes / copyBest / 1e9);
  }
  if (rank == 0)
    std::printf("staged all_to_all_v (bytes sent per rank, split evenly)\n%10s %12s %12s\n",
                "bytes", "median us", "GB/s");
  for (size_t bytes = 4096; bytes <= (64u << 20); bytes *= 4) {
    const size_t n = bytes / sizeof(float);
    std::vector<float> send(n, 1.0f), recv(n + size_t(ranks));
    std::vector<int64_t> counts(static_cast<size_t>(ranks)), got(static_cast<size_t>(ranks));
    for (int d = 0; d < ranks; ++d)
      counts[size_t(d)] = int64_t(n * size_t(d + 1) / size_t(ranks) - n * size_t(d) / size_t(ranks));
    const double med = medianSeconds(
        *g, repsFor(bytes),
        [&] {
          return g->all_to_all_v(send.data(), counts.data(), recv.data(), got.data(),
                                 recv.size());
        },
        [] {});
    if (med < 0)
      return 1;
    if (rank == 0)
      std::printf("%10zu %12.1f %12.2f\n", bytes, med * 1e6, bytes / med / 1e9);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int ranks = 2;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--ranks")
      ranks = std::max(1, std::atoi(argv[i + 1]));
  const std::string name = "/hyc-allreduce-bench-" + std::to_string(getpid());
  std::vector<pid_t> pids;
  for (int r = 1; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0)
      _exit(runRank(name, r, ranks));
    pids.push_back(pid);
  }
  int rc = runRank(name, 0, ranks);
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      rc = 1;
  }
  return rc;
}
