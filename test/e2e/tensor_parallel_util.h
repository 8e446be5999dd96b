// Helpers of the tensor-parallel end-to-end tests (tensor_parallel_test,
// tensor_parallel_mpi_test): real `hyc` processes, their ids and logits.
#ifndef HYC_TEST_E2E_TENSOR_PARALLEL_UTIL_H
#define HYC_TEST_E2E_TENSOR_PARALLEL_UTIL_H

#include "test/e2e/e2e_util.h"

#include "hyrt/npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/types.h>
#include <sys/wait.h>
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
/// bound, 1e-4 of the scale).
struct LogitGap {
  float worst = 0, scale = 0;
};
inline LogitGap logitGap(const Generated &a, const Generated &b) {
  LogitGap g;
  EXPECT_EQ(a.logits.data.size(), b.logits.data.size());
  EXPECT_FALSE(a.logits.data.empty());
  for (size_t i = 0; i < a.logits.data.size() && i < b.logits.data.size(); ++i) {
    g.scale = std::max(g.scale, std::fabs(a.logits.data[i]));
    g.worst = std::max(g.worst, std::fabs(a.logits.data[i] - b.logits.data[i]));
  }
  return g;
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

} // namespace hyc::e2e

#endif // HYC_TEST_E2E_TENSOR_PARALLEL_UTIL_H
