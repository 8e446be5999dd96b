// Helpers of the tensor-parallel end-to-end tests (tensor_parallel_test,
// tensor_parallel_mpi_test): real `hyc` processes, their ids and logits.
#ifndef HYC_TEST_E2E_TENSOR_PARALLEL_UTIL_H
#define HYC_TEST_E2E_TENSOR_PARALLEL_UTIL_H

#include "test/common/compare.h"
#include "test/e2e/e2e_util.h"

#include "hyrt/cli/npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace hyc::e2e {

struct Generated {
  std::vector<int32_t> ids;
  hyrt::NpyArray logits;
};

/// Greedy ids (--print-ids) and every position's logits of one run.
inline Generated generate(const std::string &artifact, const std::string &tag, int n) {
  Generated g;
  const std::string npy = tempDir() + "/" + tag + ".npy";
  CommandResult r = runHycWithin(120, {"run", artifact, "--prompt-ids", "1,17,42,7,99", "-n",
                                       std::to_string(n), "--ignore-eos", "--print-ids",
                                       "--no-stats", "--logits-out", npy});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  for (int32_t id; in >> id;)
    g.ids.push_back(id);
  EXPECT_TRUE(hyrt::read_npy_f32(npy, &g.logits).ok()) << npy;
  return g;
}

inline std::string synth(const std::string &arch, const std::string &preset, int seed) {
  const std::string dir = tempDir() + "/tp-" + arch + "-" + preset + "-" + std::to_string(seed);
  CommandResult s = runHyc({"synth", "--arch", arch, "--preset", preset, "--seed",
                            std::to_string(seed), "-o", dir});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  return dir;
}

/// The largest |a - b| over two runs' logits, and the largest |a|: ranks
/// must agree to fp32 reduction order (tensor_parallel_test explains the
/// bound, 1e-4 of the scale). A NaN or Inf in either run fails.
using LogitGap = hyc::test::GapWithScale;
inline LogitGap logitGap(const Generated &a, const Generated &b) {
  return hyc::test::gapWithScale(a.logits.data, b.logits.data);
}

/// stdout of a shell command and its exit status.
inline std::pair<std::string, int> shell(const std::string &command) {
  std::string out;
  FILE *p = ::popen(command.c_str(), "r");
  if (!p)
    return {"", -1};
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;)
    out.append(buf, n);
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

/// The pids of `pid`'s children (Linux /proc).
inline std::vector<pid_t> childrenOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                   "/children");
  std::vector<pid_t> out;
  for (pid_t c; in >> c;)
    out.push_back(c);
  return out;
}

/// A long generation the failure tests kill a rank of: its stdout piped to
/// the test, its stderr in a file.
struct Generation {
  pid_t pid = -1;
  int out = -1; ///< read end of its stdout
};

/// Starts argv (argv[0] a path) with stdout piped and stderr into errPath.
inline Generation startGeneration(const std::vector<std::string> &argv,
                                  const std::string &errPath) {
  Generation g;
  int fds[2];
  if (::pipe(fds) != 0)
    return g;
  g.pid = ::fork();
  if (g.pid == 0) {
    ::dup2(fds[1], 1);
    const int e = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(e, 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  g.out = fds[0];
  return g;
}

/// Reads its stdout until `ids` ids have arrived (the ranks are in their
/// step loop), or it ends.
inline void awaitIds(const Generation &g, int ids) {
  std::string got;
  char buf[256];
  while (std::count(got.begin(), got.end(), ' ') < ids) {
    const ssize_t n = ::read(g.out, buf, sizeof(buf));
    if (n <= 0)
      break;
    got.append(buf, size_t(n));
  }
}

/// Reads its stdout to the end and reaps it: the seconds that took, and
/// its wait status in `status`.
inline double secondsToExit(Generation &g, int *status) {
  const auto t0 = std::chrono::steady_clock::now();
  char buf[256];
  while (::read(g.out, buf, sizeof(buf)) > 0) {
  }
  ::waitpid(g.pid, status, 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(g.out);
  g.out = -1;
  return seconds;
}

} // namespace hyc::e2e

#endif // HYC_TEST_E2E_TENSOR_PARALLEL_UTIL_H
