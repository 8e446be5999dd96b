// Shared-memory collectives between real processes (fork): results against
// the rank-order sum every rank can recompute, the small and the
// reduce-scatter path, pieces longer than a slot, and failure: a rank that
// dies, one that never joins, one whose setup fails. Each rank reports
// through its exit code and a message file the test reads.
#include "hyrt/parallel/shm_group.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using hyrt::ShmGroup;
using hyrt::ShmGroupOptions;
using hyrt::Status;

/// Not the pid alone: a segment an earlier, killed run left can share this
/// run's pid (hyrt::unique_group_name).
std::string uniqueName() {
  static int n = 0;
  return hyrt::unique_group_name("/hyc-shm-test-") + "-" + std::to_string(n++);
}

std::string messageFile(const std::string &name, int rank) {
  return "/tmp" + name + "-rank" + std::to_string(rank) + ".txt";
}

void writeMessage(const std::string &name, int rank, const std::string &text) {
  std::ofstream(messageFile(name, rank)) << text;
}

std::string readMessage(const std::string &name, int rank) {
  std::ifstream in(messageFile(name, rank));
  std::stringstream s;
  s << in.rdbuf();
  std::remove(messageFile(name, rank).c_str());
  return s.str();
}

/// Runs body(rank) in one forked process per rank in `ranks`; returns
/// their exit codes (-signal when killed).
std::vector<int> runRanks(const std::vector<int> &ranks, const std::function<int(int)> &body) {
  std::vector<pid_t> pids;
  for (int r : ranks) {
    const pid_t pid = fork();
    if (pid == 0)
      _exit(body(r));
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
  }
  return codes;
}

/// Rank r's vector of round `round`: values of mixed magnitude, so that
/// a different summation order would change bits.
std::vector<float> rankData(int r, int round, size_t n) {
  std::vector<float> v(n);
  uint32_t x = 2654435761u * uint32_t(r + 1) + 40503u * uint32_t(round + 1);
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    v[i] = float(int32_t(x % 20001) - 10000) * (i % 7 == 0 ? 1e3f : 1e-3f);
  }
  return v;
}

ShmGroupOptions options(const std::string &name, int rank, int size) {
  ShmGroupOptions o;
  o.name = name;
  o.rank = rank;
  o.size = size;
  o.slot_bytes = 64 << 10; // 16384 floats: pieces and both paths below
  o.reduce_scatter_bytes = 16 << 10;
  o.timeout_s = 20;
  return o;
}

struct AllReduceCase {
  int size;
  size_t n;
};

class ShmAllReduce : public ::testing::TestWithParam<AllReduceCase> {};

TEST_P(ShmAllReduce, EveryRankGetsTheRankOrderSumBitForBit) {
  const auto [size, n] = GetParam();
  const std::string name = uniqueName();
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r)
    ranks.push_back(r);
  const std::vector<int> codes = runRanks(ranks, [&](int r) {
    std::unique_ptr<ShmGroup> g;
    if (Status s = ShmGroup::join(options(name, r, size), &g); !s.ok()) {
      writeMessage(name, r, s.message());
      return 2;
    }
    // Several rounds: both buffers, reused.
    for (int round = 0; round < 5; ++round) {
      std::vector<float> data = rankData(r, round, n);
      if (Status s = g->all_reduce_sum(data.data(), n); !s.ok()) {
        writeMessage(name, r, s.message());
        return 3;
      }
      std::vector<float> want = rankData(0, round, n);
      for (int k = 1; k < size; ++k) {
        const std::vector<float> other = rankData(k, round, n);
        for (size_t i = 0; i < n; ++i)
          want[i] += other[i];
      }
      if (std::memcmp(want.data(), data.data(), n * sizeof(float)) != 0) {
        writeMessage(name, r, "round " + std::to_string(round) + ": not the rank-order sum");
        return 4;
      }
    }
    return 0;
  });
  for (int r = 0; r < size; ++r) {
    const std::string message = readMessage(name, r); // read (and removed) whatever the outcome
    EXPECT_EQ(codes[size_t(r)], 0) << "rank " << r << ": " << message;
  }
}

// n = 1000: one small piece; 6000 floats (24 KB): reduce-scatter; 40000:
// three pieces of a 64 KiB slot (the last one small); 3 ranks: uneven parts.
INSTANTIATE_TEST_SUITE_P(Shapes, ShmAllReduce,
                         ::testing::Values(AllReduceCase{2, 1}, AllReduceCase{2, 1000},
                                           AllReduceCase{2, 6000}, AllReduceCase{2, 40000},
                                           AllReduceCase{3, 1000}, AllReduceCase{3, 6001},
                                           AllReduceCase{3, 40000}),
                         [](const auto &info) {
                           return std::to_string(info.param.size) + "ranks_" +
                                  std::to_string(info.param.n);
                         });

TEST(ShmGroup, AllGatherPlacesEachRanksVectorAtItsRank) {
  const std::string name = uniqueName();
  const size_t n = 20000; // two pieces
  const std::vector<int> codes = runRanks({0, 1, 2}, [&](int r) {
    std::unique_ptr<ShmGroup> g;
    if (!ShmGroup::join(options(name, r, 3), &g).ok())
      return 2;
    std::vector<float> out(3 * n);
    if (!g->all_gather(rankData(r, 0, n).data(), n, out.data()).ok() || !g->barrier().ok())
      return 3;
    for (int k = 0; k < 3; ++k)
      if (std::memcmp(out.data() + k * n, rankData(k, 0, n).data(), n * sizeof(float)) != 0)
        return 4;
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

/// The blocks of the staged all-to-all test: rank `src` sends rank `dst`
/// `blockSize(src, dst)` floats of rankData(src * 16 + dst), some empty,
/// some longer than a 64 KiB slot (so the exchange takes several rounds).
size_t blockSize(int src, int dst) {
  static const size_t sizes[3][3] = {{5, 0, 20000}, {17000, 3, 0}, {1, 40000, 7}};
  return sizes[src][dst];
}

/// The default all_to_all_v of a RankGroup (through all_gather): a group
/// that forwards everything else to a ShmGroup.
class ThroughAllGather final : public hyrt::RankGroup {
public:
  explicit ThroughAllGather(std::unique_ptr<ShmGroup> g) : g_(std::move(g)) {}
  int rank() const override { return g_->rank(); }
  int size() const override { return g_->size(); }
  Status all_reduce_sum(float *d, size_t n) override { return g_->all_reduce_sum(d, n); }
  Status all_gather(const float *in, size_t n, float *out) override {
    return g_->all_gather(in, n, out);
  }
  Status barrier() override { return g_->barrier(); }
  void abort(const std::string &why) override { g_->abort(why); }
  std::string transport() const override { return "test"; }

private:
  std::unique_ptr<ShmGroup> g_;
};

// Staged all-to-all between three real processes: each rank receives,
// in source order, exactly the blocks addressed to it (bit for bit, with
// their sizes), over two rounds so both buffers are reused; through the
// slots (ShmGroup) and through all_gather (the default, MPI's).
TEST(ShmGroup, AllToAllDeliversEachBlockToItsRank) {
  for (bool viaGather : {false, true}) {
    const std::string name = uniqueName();
    const std::vector<int> codes = runRanks({0, 1, 2}, [&](int r) {
      std::unique_ptr<ShmGroup> shm;
      if (!ShmGroup::join(options(name, r, 3), &shm).ok())
        return 2;
      std::unique_ptr<hyrt::RankGroup> g;
      if (viaGather)
        g = std::make_unique<ThroughAllGather>(std::move(shm));
      else
        g = std::move(shm);
      for (int round = 0; round < 2; ++round) {
        std::vector<float> send;
        int64_t counts[3], got[3] = {-1, -1, -1};
        for (int d = 0; d < 3; ++d) {
          const std::vector<float> b = rankData(r * 16 + d, round, blockSize(r, d));
          send.insert(send.end(), b.begin(), b.end());
          counts[d] = int64_t(b.size());
        }
        std::vector<float> recv(70000, -1.0f);
        if (Status s = g->all_to_all_v(send.data(), counts, recv.data(), got, recv.size());
            !s.ok()) {
          writeMessage(name, r, s.message());
          return 3;
        }
        size_t at = 0;
        for (int src = 0; src < 3; ++src) {
          const std::vector<float> want = rankData(src * 16 + r, round, blockSize(src, r));
          if (got[src] != int64_t(want.size()) ||
              std::memcmp(recv.data() + at, want.data(), want.size() * sizeof(float)) != 0) {
            writeMessage(name, r, "round " + std::to_string(round) + ": block from rank " +
                                      std::to_string(src) + " wrong");
            return 4;
          }
          at += want.size();
        }
      }
      // A receiver whose buffer is too small: every rank fails alike, now.
      int64_t counts[3] = {r == 1 ? 10 : 0, 0, 0}, got[3];
      std::vector<float> send(10, 1.0f), recv(4);
      const Status s = g->all_to_all_v(send.data(), counts, recv.data(), got, recv.size());
      if (s.ok() || s.message().find("rank 0 would receive 10 floats, its buffer holds 4") ==
                        std::string::npos) {
        writeMessage(name, r, "too small a buffer: " + s.message());
        return 5;
      }
      return 0;
    });
    for (int r = 0; r < 3; ++r) {
      const std::string message = readMessage(name, r); // removed whatever the outcome
      EXPECT_EQ(codes[size_t(r)], 0)
          << (viaGather ? "through all_gather" : "through the slots") << ", rank " << r << ": "
          << message;
    }
  }
}

using Clock = std::chrono::steady_clock;

/// Runs `op` in a rank: its message goes to the rank's message file; exit
/// code 0 when it failed within `limit` seconds, 1 otherwise.
int failsWithin(double limit, const std::string &name, int rank,
                const std::function<Status()> &op) {
  const auto t0 = Clock::now();
  const Status s = op();
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  writeMessage(name, rank, s.message());
  return !s.ok() && waited < limit ? 0 : 1;
}

TEST(ShmGroup, ADeadRankIsNamedWithinSecondsNotAtTheTimeout) {
  const std::string name = uniqueName();
  const std::vector<int> codes = runRanks({0, 1}, [&](int r) {
    std::unique_ptr<ShmGroup> g;
    ShmGroupOptions o = options(name, r, 2);
    o.timeout_s = 60;
    if (!ShmGroup::join(o, &g).ok())
      return 2;
    std::vector<float> v(100, 1.0f);
    for (int step = 0;; ++step) {
      if (r == 1 && step == 10)
        raise(SIGKILL); // dies mid-generation, holding its place in the group
      const auto t0 = Clock::now();
      Status s = g->all_reduce_sum(v.data(), v.size());
      if (!s.ok()) {
        const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
        writeMessage(name, r, s.message() + "\nwaited " + std::to_string(waited));
        return waited < 5 ? 5 : 6;
      }
    }
  });
  EXPECT_EQ(codes[1], -SIGKILL);
  const std::string msg = readMessage(name, 0);
  EXPECT_EQ(codes[0], 5) << msg;
  EXPECT_NE(msg.find("rank 1 died while waiting in all_reduce"), std::string::npos) << msg;
}

TEST(ShmGroup, AnAbortReachesEveryWaitingRankWithItsReason) {
  const std::string name = uniqueName();
  const std::vector<int> codes = runRanks({0, 1}, [&](int r) {
    std::unique_ptr<ShmGroup> g;
    ShmGroupOptions o = options(name, r, 2);
    o.timeout_s = 60;
    if (!ShmGroup::join(o, &g).ok())
      return 2;
    if (r == 1) {
      g->abort("cannot map weights.bin");
      usleep(500000); // stays alive: the reason, not its death, ends the wait
      return 0;
    }
    std::vector<float> v(10, 1.0f);
    return failsWithin(5, name, r, [&] { return g->all_reduce_sum(v.data(), v.size()); });
  });
  const std::string msg = readMessage(name, 0);
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << msg;
  EXPECT_NE(msg.find("rank 1 aborted: cannot map weights.bin while waiting in all_reduce"),
            std::string::npos)
      << msg;
}

TEST(ShmGroup, ARankThatNeverJoinsIsNamedAtTheDeadline) {
  const std::string name = uniqueName();
  const std::vector<int> codes = runRanks({0}, [&](int r) {
    std::unique_ptr<ShmGroup> g;
    ShmGroupOptions o = options(name, r, 3);
    o.timeout_s = 1;
    return failsWithin(3, name, r, [&] { return ShmGroup::join(o, &g); });
  });
  const std::string msg = readMessage(name, 0);
  EXPECT_EQ(codes[0], 0) << msg;
  EXPECT_NE(msg.find("ranks 1, 2 did not join within 1 s"), std::string::npos) << msg;
}

TEST(ShmGroup, ASetupFailureOnOneRankStopsTheOthersWithoutAHang) {
  const std::string name = uniqueName();
  const std::vector<int> codes = runRanks({0, 1}, [&](int r) {
    std::unique_ptr<ShmGroup> g;
    ShmGroupOptions o = options(name, r, 2);
    o.timeout_s = 60;
    if (r == 1) {
      o.slot_bytes *= 2; // disagrees with rank 0's segment
      usleep(200000);    // after rank 0 created and sized it
    }
    return failsWithin(5, name, r, [&] { return ShmGroup::join(o, &g); });
  });
  const std::string msg0 = readMessage(name, 0), msg1 = readMessage(name, 1);
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << msg0 << "\n" << msg1;
  EXPECT_NE(msg1.find("rank 1 joined with size 2 and slot_bytes 131072, the group has 2 and "
                      "65536 (ranks disagree on size or slot_bytes)"),
            std::string::npos)
      << msg1;
  EXPECT_NE(msg0.find("rank 1 aborted while joining: rank 1 joined with size 2"),
            std::string::npos)
      << msg0;
}

TEST(ShmGroup, RefusesBadOptionsNamingThem) {
  std::unique_ptr<ShmGroup> g;
  ShmGroupOptions o = options("no-slash", 0, 2);
  EXPECT_NE(ShmGroup::join(o, &g).message().find("name 'no-slash'"), std::string::npos);
  o = options("/x", 2, 2);
  EXPECT_NE(ShmGroup::join(o, &g).message().find("rank 2 of 2"), std::string::npos);
  o = options("/x", 0, 2);
  o.slot_bytes = 100;
  EXPECT_NE(ShmGroup::join(o, &g).message().find("slot_bytes 100"), std::string::npos);
}

} // namespace
