// The tensor- and expert-parallel exchange kernels (runtime/cpu/
// collectives.cpp) across real ranks: forked processes joined in a
// shared-memory group registered as hyc run --tp registers it
// (hyrt_collectives_v0). On every rank each kernel must give the bits of
// its hyrt_ref_* version on the same inputs, and the column gather must
// hold every rank's block where it belongs. Each rank reports through its
// exit code and a message file. The parent never runs a kernel, so the
// children start with no thread pool (fork copies only the calling thread).
#include "hyrt/abi.h"
#include "hyrt/cpu_kernels.h"
#include "hyrt/parallel/shm_group.h"
#include "hyrt/reference.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using hyrt::RankGroup;
using hyrt::ShmGroup;
using hyrt::ShmGroupOptions;

/// A group name no earlier run can have left behind (seen in a full CTest
/// run after the pids wrapped: hyrt::unique_group_name).
std::string uniqueName() {
  static int n = 0;
  return hyrt::unique_group_name("/hyc-collectives-test-") + "-" + std::to_string(n++);
}

std::string messageFile(const std::string &name, int rank) {
  return "/tmp" + name + "-rank" + std::to_string(rank) + ".txt";
}

std::string readMessage(const std::string &name, int rank) {
  std::ifstream in(messageFile(name, rank));
  std::stringstream s;
  s << in.rdbuf();
  std::remove(messageFile(name, rank).c_str());
  return s.str();
}

/// The group's functions as the runtime registers them (tensor_parallel.cpp).
int32_t allReduce(void *ctx, float *data, int64_t n) {
  return static_cast<RankGroup *>(ctx)->all_reduce_sum(data, size_t(n)).ok() ? 0 : 1;
}
int32_t allToAllV(void *ctx, const float *send, const int64_t *sendCounts, float *recv,
                  int64_t *recvCounts, int64_t capacity) {
  return static_cast<RankGroup *>(ctx)
                 ->all_to_all_v(send, sendCounts, recv, recvCounts, size_t(capacity))
                 .ok()
             ? 0
             : 1;
}
int32_t allGather(void *ctx, const float *in, int64_t n, float *out) {
  return static_cast<RankGroup *>(ctx)->all_gather(in, size_t(n), out).ok() ? 0 : 1;
}

/// Runs check(rank) on `size` forked ranks of one registered group; check
/// returns "" or what went wrong. Expects every rank to pass.
void onRanks(int size, const std::function<std::string(int)> &check) {
  const std::string name = uniqueName();
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      ShmGroupOptions o;
      o.name = name;
      o.rank = r;
      o.size = size;
      o.slot_bytes = 64 << 10; // exchanges longer than a slot take rounds
      o.timeout_s = 30;
      std::unique_ptr<ShmGroup> g;
      std::string why;
      if (hyrt::Status s = ShmGroup::join(o, &g); !s.ok()) {
        why = s.message();
      } else {
        *hyrt_collectives_state() = {allReduce, g.get(), size, 0, 0, allToAllV, allGather};
        why = check(r);
        if (why.empty() && hyrt_collectives_state()->failed != HYRT_COLLECTIVE_OK)
          why = "the step was marked failed";
        if (!g->barrier().ok() && why.empty())
          why = "final barrier failed";
      }
      std::ofstream(messageFile(name, r)) << why;
      g.reset(); // rank 0 unlinks the segment; _exit runs no destructors
      _exit(why.empty() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < size; ++r) {
    int status = 0;
    waitpid(pids[size_t(r)], &status, 0);
    const std::string message = readMessage(name, r); // read (and removed) whatever the outcome
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << ": " << message;
  }
  shm_unlink(name.c_str()); // whatever a failed rank 0 left (ENOENT otherwise)
}

/// Values of mixed magnitude, so that a different order of addition would
/// change bits; `seed` tells ranks and tensors apart.
std::vector<float> data(int seed, size_t n) {
  std::vector<float> v(n);
  uint32_t x = 2654435761u * uint32_t(seed + 1);
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    v[i] = float(int32_t(x % 20001) - 10000) * (i % 5 == 0 ? 1e3f : 1e-3f);
  }
  return v;
}

template <typename T> bool sameBits(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

struct Shape {
  int ranks;
  int64_t rows;
};

class CpuCollectivesRanks : public ::testing::TestWithParam<Shape> {};

// Each rank's [rows][cols] block side by side: the reference's bits, one
// registered call each, and rank s's block at columns [s cols, (s+1) cols).
TEST_P(CpuCollectivesRanks, AllGatherColsPlacesEveryRanksBlock) {
  const auto [n, rows] = GetParam();
  const int64_t cols = 96, width = cols * n;
  onRanks(n, [&](int r) -> std::string {
    const std::vector<float> in = data(r, size_t(rows * cols));
    std::vector<float> want(size_t(rows * width), 7.0f), got(want.size(), 7.0f);
    hyrt_ref_all_gather_cols(in.data(), rows, cols, want.data(), n, r);
    const int64_t before = hyrt_collectives_state()->calls;
    hyrt_cpu_all_gather_cols(in.data(), rows, cols, got.data(), n, r);
    if (hyrt_collectives_state()->calls != before + 1)
      return "not one exchange";
    if (!sameBits(want, got))
      return "not the reference's bits";
    for (int s = 0; s < n; ++s) {
      const std::vector<float> block = data(s, size_t(rows * cols));
      for (int64_t i = 0; i < rows; ++i)
        if (std::memcmp(&got[size_t(i * width + s * cols)], &block[size_t(i * cols)],
                        sizeof(float) * size_t(cols)) != 0)
          return "rank " + std::to_string(s) + "'s row " + std::to_string(i) + " misplaced";
    }
    return "";
  });
}

// The whole expert-parallel round trip: dispatch (routes over n ranks x 2
// experts, top-3, so tokens travel to several ranks and some to none),
// results made from the received rows, undispatch (each token's rows from
// several ranks summed, then every rank's tokens gathered), each against
// the reference; the all-reduce too.
TEST_P(CpuCollectivesRanks, MoeRoundTripAndAllReduceEqualTheReference) {
  const auto [n, T] = GetParam();
  const int64_t dim = 64, k = 3, perRank = 2;
  onRanks(n, [&](int r) -> std::string {
    // Replicated like the hidden state and routes of a real step.
    const std::vector<float> x = data(100, size_t(T * dim));
    const std::vector<float> w = data(101, size_t(T * k));
    std::vector<int32_t> ids(size_t(T * k));
    for (size_t i = 0; i < ids.size(); ++i)
      ids[i] = int32_t((i * 7919 + i / 3) % size_t(n * perRank + 1)) - (i % 11 == 0 ? 1 : 0);
    struct Sent {
      std::vector<float> rows, weights;
      std::vector<int32_t> ids, sent, counts;
    };
    auto dispatch = [&](auto kernel) {
      Sent s{std::vector<float>(size_t(T * dim), 7.0f), std::vector<float>(size_t(T * k), 7.0f),
             std::vector<int32_t>(size_t(T * k), 7), std::vector<int32_t>(size_t(T * k), 7),
             std::vector<int32_t>(size_t(2 * n), 7)};
      kernel(x.data(), ids.data(), w.data(), T, dim, k, perRank, n, r, s.rows.data(), s.ids.data(),
             s.weights.data(), s.sent.data(), s.counts.data());
      return s;
    };
    const Sent want = dispatch(hyrt_ref_moe_dispatch), got = dispatch(hyrt_cpu_moe_dispatch);
    if (!sameBits(want.rows, got.rows) || want.ids != got.ids ||
        !sameBits(want.weights, got.weights) || want.sent != got.sent || want.counts != got.counts)
      return "dispatch differs from the reference";
    // This rank's "expert output" per received row: its row scaled, plus
    // the rank (so the rows summed per token differ in magnitude).
    std::vector<float> results(size_t(T * dim));
    for (size_t i = 0; i < results.size(); ++i)
      results[i] = got.rows[i] * (1.5f + float(r)) + float(r) * 1e4f;
    std::vector<float> back(size_t(T * dim), 7.0f), backRef(back.size(), 7.0f);
    hyrt_ref_moe_undispatch(results.data(), got.sent.data(), got.counts.data(), T, dim, n, r,
                            backRef.data());
    hyrt_cpu_moe_undispatch(results.data(), got.sent.data(), got.counts.data(), T, dim, n, r,
                            back.data());
    if (!sameBits(backRef, back))
      return "undispatch differs from the reference";
    int64_t sent = 0;
    for (int s = 0; s < n; ++s)
      sent += got.counts[size_t(s)];
    const int64_t own = T * (r + 1) / n - T * r / n;
    if (T > n && sent <= own)
      return "vacuous: no token of this rank went to several ranks";
    std::vector<float> sum = data(200 + r, size_t(T * dim)), sumRef = sum;
    hyrt_ref_all_reduce_sum(sumRef.data(), int64_t(sum.size()), n);
    hyrt_cpu_all_reduce_sum(sum.data(), int64_t(sum.size()), n);
    if (!sameBits(sumRef, sum))
      return "all-reduce differs from the reference";
    return "";
  });
}

// 1 row (decode: the gather lands in place), 2 rows over 3 ranks (a rank
// with no token), 700 (rows across threads, exchanges of several slots).
INSTANTIATE_TEST_SUITE_P(Shapes, CpuCollectivesRanks,
                         ::testing::Values(Shape{2, 1}, Shape{3, 2}, Shape{2, 700}, Shape{3, 700}),
                         [](const auto &info) {
                           return std::to_string(info.param.ranks) + "ranks_" +
                                  std::to_string(info.param.rows) + "rows";
                         });

} // namespace
