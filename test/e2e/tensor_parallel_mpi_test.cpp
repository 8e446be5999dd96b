// Tensor-parallel ranks started by Open MPI's mpirun (issue 14), on this
// machine's loopback. On one machine the ranks meet in shared memory; with
// HYC_TP_RANKS_PER_NODE the runtime takes each block of that many ranks for
// a machine of its own and runs the between-machines path: shared memory
// inside a block, MPI between the blocks' first ranks (here over Open MPI's
// TCP transport on loopback, as between hosts).
#include "test/e2e/tensor_parallel_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace hyc::e2e {
namespace {

bool haveMpirun() { return shell("command -v mpirun >/dev/null 2>&1").second == 0; }

/// The mpirun command line for `np` ranks of `hyc ARGS`, with ranks_per_node
/// (0: leave the runtime to find the machines). Root may launch (CI
/// containers); --oversubscribe lets 4 ranks share 2 cores; the byte
/// transfer layer is TCP (loopback), what ranks on two hosts would use.
std::string mpirunLine(int np, int ranksPerNode, const std::string &args) {
  std::string line = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";
  if (ranksPerNode > 0)
    line += "HYC_TP_RANKS_PER_NODE=" + std::to_string(ranksPerNode) + " ";
  line += "mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo -np " +
          std::to_string(np);
  if (ranksPerNode > 0)
    line += " -x HYC_TP_RANKS_PER_NODE";
  return line + " '" + std::string(HYC_BIN) + "' " + args;
}

/// Greedy ids and logits of `artifact` under mpirun; `err` gets stderr.
Generated generateUnderMpirun(const std::string &artifact, const std::string &tag, int np,
                              int ranksPerNode, int n, std::string *err) {
  Generated g;
  const std::string npy = tempDir() + "/" + tag + ".npy";
  const std::string errPath = tempDir() + "/" + tag + ".err";
  const auto [out, rc] =
      shell("timeout 120 " + mpirunLine(np, ranksPerNode,
                                        "run '" + artifact +
                                            "' --prompt-ids 1,17,42,7,99 -n " +
                                            std::to_string(n) +
                                            " --ignore-eos --print-ids --no-stats --verbose "
                                            "--logits-out '" +
                                            npy + "'") +
            " 2>'" + errPath + "'");
  *err = readFile(errPath);
  EXPECT_EQ(rc, 0) << tag << ": " << out << *err;
  std::istringstream in(out);
  for (int32_t id; in >> id;)
    g.ids.push_back(id);
  EXPECT_TRUE(hyrt::read_npy_f32(npy, &g.logits).ok()) << npy;
  return g;
}

// Ranks on one machine under mpirun take their rank from the launcher
// instead of forking and meet in shared memory; the tokens are one rank's.
TEST(TensorParallelMpi, RanksOnOneMachineMatchOneRank) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun (Debian openmpi-bin) is not installed";
  for (const char *arch : {"llama", "qwen3-moe", "deepseek-v3"}) {
    const std::string ckpt = synth(arch, "tiny", 5);
    const std::string one = compileOnce(ckpt, {"--target", "portable"});
    const std::string two = compileOnce(ckpt, {"--target", "portable", "--tp", "2"});
    const Generated a = generate(one, std::string(arch) + "-mpi-1", 16);
    std::string err;
    const Generated b = generateUnderMpirun(two, std::string(arch) + "-mpi-2", 2, 0, 16, &err);
    EXPECT_EQ(b.ids, a.ids) << arch << ": " << err;
    EXPECT_NE(err.find("over shared memory"), std::string::npos) << err;
  }
}

struct NodesCase {
  const char *arch;
  int ranks, perNode;
  bool ep;
};

// The between-machines path: nodes of `perNode` ranks, MPI between them.
// Same greedy tokens as one rank and logits within fp32 reduction order
// (the same bound as shared-memory ranks: only the order of the sums
// changes, node sums first, then the nodes in order). A node that dropped
// out of the sum, or a leader that did not hand the result to its node,
// moves the logits by O(1) of their scale.
TEST(TensorParallelMpi, RanksOnSeveralNodesMatchOneRank) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun (Debian openmpi-bin) is not installed";
  const NodesCase cases[] = {
      {"llama", 2, 1, false},       // two nodes of one rank: MPI only
      {"qwen3-moe", 2, 1, true},    // expert parallel between nodes
      {"deepseek-v3", 4, 2, false}, // two nodes of two: shared memory, then MPI
  };
  for (const NodesCase &c : cases) {
    const std::string ckpt = synth(c.arch, "tiny", 5);
    const std::string one = compileOnce(ckpt, {"--target", "portable"});
    std::vector<std::string> flags = {"--target", "portable", "--tp", std::to_string(c.ranks)};
    if (c.ep)
      flags.insert(flags.end(), {"--ep", std::to_string(c.ranks)});
    const std::string many = compileOnce(ckpt, flags);
    const std::string tag = std::string(c.arch) + "-nodes-" + std::to_string(c.ranks);
    const Generated a = generate(one, tag + "-1", 16);
    std::string err;
    const Generated b = generateUnderMpirun(many, tag, c.ranks, c.perNode, 16, &err);
    EXPECT_EQ(b.ids, a.ids) << tag << ": " << err;
    const int nodes = c.ranks / c.perNode;
    EXPECT_NE(err.find("Open MPI between " + std::to_string(nodes) + " nodes, shared memory "
                       "inside each (" +
                       std::to_string(c.perNode) + " rank"),
              std::string::npos)
        << err;
    const LogitGap gap = logitGap(a, b);
    std::printf("%s: %d ranks in %d nodes: max |tpN - tp1| %.3g of max |logit| %.3g\n", c.arch,
                c.ranks, nodes, gap.worst, gap.scale);
    EXPECT_GT(gap.scale, 0.1f);
    EXPECT_LE(gap.worst, 1e-4f * gap.scale);
  }
}

// A node layout that does not divide the ranks is refused by name.
TEST(TensorParallelMpi, ANodeSizeThatDoesNotDivideIsRefused) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun (Debian openmpi-bin) is not installed";
  const std::string two =
      compileOnce(synth("llama", "tiny", 5), {"--target", "reference", "--tp", "2"});
  const auto [out, rc] =
      shell("timeout 60 " + mpirunLine(2, 3, "run '" + two + "' -n 4") + " 2>&1");
  EXPECT_NE(rc, 0);
  EXPECT_NE(rc, 124) << "timed out";
  EXPECT_NE(out.find("HYC_TP_RANKS_PER_NODE='3', expected a count of ranks that divides the 2"),
            std::string::npos)
      << out;
}

// A rank on another node that cannot open its artifact stops the job at
// once (MPI_Abort), naming itself and what failed: nobody waits for it.
TEST(TensorParallelMpi, ARankThatCannotStartStopsTheJob) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun (Debian openmpi-bin) is not installed";
  const std::string good =
      compileOnce(synth("llama", "tiny", 5), {"--target", "reference", "--tp", "2"});
  const std::string bad = tempDir() + "/tp-mpi-broken-rank";
  ASSERT_EQ(std::system(("rm -rf '" + bad + "' && cp -r '" + good + "' '" + bad + "' && rm '" +
                         bad + "/ranks/1/weights.bin'")
                            .c_str()),
            0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto [out, rc] = shell("timeout 60 " + mpirunLine(2, 1, "run '" + bad + "' -n 8") +
                               " 2>&1");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0);
  EXPECT_NE(rc, 124) << "timed out";
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(out.find("tensor-parallel rank 1 stops every rank"), std::string::npos) << out;
  EXPECT_NE(out.find("ranks/1/weights.bin: cannot open"), std::string::npos) << out;
}

/// The pid among `parent`'s children whose environment says
/// OMPI_COMM_WORLD_RANK=`rank`, or -1.
pid_t mpiRank(pid_t parent, int rank) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (pid_t c : childrenOf(parent)) {
    std::ifstream in("/proc/" + std::to_string(c) + "/environ", std::ios::binary);
    for (std::string var; std::getline(in, var, '\0');)
      if (var == want)
        return c;
  }
  return -1;
}

// Rank 1 of two nodes killed mid-generation: the job ends within 5 s and
// mpirun names rank 1 (the rank left waiting in an MPI collective is
// stopped by the launcher, not by a deadline).
TEST(TensorParallelMpi, KillingARankOnAnotherNodeStopsTheJob) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun (Debian openmpi-bin) is not installed";
  // ~150 tokens/s on the reference kernels: 1000 tokens last seconds.
  const std::string art =
      compileOnce(synth("llama", "small", 3), {"--target", "reference", "--tp", "2"});
  const std::string errPath = tempDir() + "/tp-mpi-kill.err";
  Generation g = startGeneration(
      {"/bin/sh", "-c",
       "exec " + mpirunLine(2, 1, "run '" + art + "' -n 1000 --ignore-eos --print-ids")},
      errPath);
  ASSERT_GE(g.pid, 0);
  awaitIds(g, 20);
  const pid_t rank1 = mpiRank(g.pid, 1);
  ASSERT_GT(rank1, 0) << "rank 1 is not a child of mpirun";
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  int status = 0;
  const double seconds = secondsToExit(g, &status);
  const std::string err = readFile(errPath);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << err;
  EXPECT_LT(seconds, 5.0) << err;
  EXPECT_NE(err.find("process rank 1"), std::string::npos) << err;
  std::printf("the job stopped %.3f s after rank 1 was killed\n", seconds);
}

// `hyc serve` under mpirun on one machine: rank 1 is mpirun's child, not
// rank 0's, so rank 0 watches it by the pid it published in the group.
// Stopped (SIGSTOP) while the server is idle, it turns /health to 503
// naming it, and the job ends non-zero within 5 s (it used to be found only
// at the next request's collective deadline).
TEST(TensorParallelMpi, AStoppedRankUnderServeTurnsHealthTo503AndEndsTheJob) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun (Debian openmpi-bin) is not installed";
  const std::string art =
      compileOnce(synth("llama", "tiny", 5), {"--target", "reference", "--tp", "2"});
  const std::string errPath = tempDir() + "/tp-mpi-serve-stop.err";
  Generation g = startGeneration(
      {"/bin/sh", "-c",
       "exec " + mpirunLine(2, 0, "serve '" + art + "' --port 0 --model-name m")},
      errPath);
  ASSERT_GE(g.pid, 0);
  std::string out, port;
  char buf[512];
  const auto started = std::chrono::steady_clock::now();
  while (port.empty() && std::chrono::steady_clock::now() - started < std::chrono::seconds(60)) {
    const ssize_t n = ::read(g.out, buf, sizeof(buf));
    if (n <= 0)
      break;
    out.append(buf, size_t(n));
    const size_t at = out.find("listening on http://127.0.0.1:");
    if (at != std::string::npos && out.find(' ', at + 30) != std::string::npos)
      port = out.substr(at + 30, out.find_first_not_of("0123456789", at + 30) - at - 30);
  }
  ASSERT_FALSE(port.empty()) << out << readFile(errPath);
  const pid_t rank1 = mpiRank(g.pid, 1);
  ASSERT_GT(rank1, 0) << "rank 1 is not a child of mpirun";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(rank1, SIGSTOP), 0);
  bool saw503 = false;
  while (!saw503 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
    const auto [reply, rc] = shell("timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port +
                                   " && printf \"GET /health HTTP/1.1\\r\\nHost: x\\r\\n"
                                   "Connection: close\\r\\n\\r\\n\" >&3 && cat <&3' 2>/dev/null");
    saw503 = reply.find("HTTP/1.1 503") != std::string::npos &&
             reply.find("rank 1 (pid " + std::to_string(rank1) + ") is stopped") !=
                 std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(g.pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (done == 0) { // never noticed: end the job for the next tests
    ::kill(g.pid, SIGKILL);
    ::waitpid(g.pid, &status, 0);
  }
  ::close(g.out);
  ::kill(rank1, SIGKILL); // if mpirun left it (it should not have)
  ASSERT_NE(done, 0) << "the job did not end within 10 s of rank 1's stop";
  const std::string err = readFile(errPath);
  EXPECT_TRUE(saw503) << "/health never answered 503 naming rank 1: " << err;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << err;
  EXPECT_NE(err.find("rank 1 (pid " + std::to_string(rank1) + ") is stopped"), std::string::npos)
      << err;
  EXPECT_LT(seconds, 5.0) << err;
  std::printf("the served job stopped %.3f s after rank 1 was stopped\n", seconds);
}

} // namespace
} // namespace hyc::e2e
