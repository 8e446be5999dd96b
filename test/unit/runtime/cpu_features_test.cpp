// Host CPU feature detection agrees with the kernel's /proc/cpuinfo flags,
// and the requirement check names what is missing.
#include "hyrt/artifact/cpu_features.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> flags;
      std::string w;
      while (words >> w)
        flags.insert(w);
      return flags;
    }
  return {};
}

TEST(CpuFeatures, MatchesProcCpuinfo) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 only";
#endif
  const std::set<std::string> flags = proc_cpuinfo_flags();
  if (flags.empty())
    GTEST_SKIP() << "no /proc/cpuinfo flags";
  const std::vector<std::string> &host = hyrt::host_cpu_features();
  EXPECT_TRUE(hyrt::host_has_cpu_feature("sse2"));
  std::string detected;
  for (const std::string &f : host)
    detected += f + " ";
  std::printf("detected: %s\n", detected.c_str());
  for (const std::string &name : hyrt::known_cpu_features()) {
    const bool in_proc = flags.count(name) != 0;
    // AMX additionally needs the per-process permission, which a
    // hypervisor or kernel may refuse although the flag is shown.
    if (name.rfind("amx_", 0) == 0 && in_proc)
      continue;
    EXPECT_EQ(hyrt::host_has_cpu_feature(name), in_proc) << name;
  }
  for (const std::string &f : host)
    EXPECT_NE(std::find(hyrt::known_cpu_features().begin(),
                        hyrt::known_cpu_features().end(), f),
              hyrt::known_cpu_features().end());
}

TEST(CpuFeatures, CheckNamesMissingFeatures) {
  EXPECT_TRUE(hyrt::check_cpu_features({}).ok());
  EXPECT_TRUE(hyrt::check_cpu_features(hyrt::host_cpu_features()).ok());
  hyrt::Status s = hyrt::check_cpu_features({"sse2", "warp_drive"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("this CPU lacks required features: warp_drive "
                              "(unknown to this runtime) (host has: ",
                              0),
            0u)
      << s.message();
  for (const std::string &name : hyrt::known_cpu_features())
    if (!hyrt::host_has_cpu_feature(name)) {
      s = hyrt::check_cpu_features({name});
      EXPECT_NE(s.message().find("lacks required features: " + name),
                std::string::npos)
          << s.message();
    }
}

} // namespace
