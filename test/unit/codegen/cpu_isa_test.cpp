// The generators' ISA detection agrees with the kernel's /proc/cpuinfo flags.
#include "codegen/cpu_isa.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace hyc::codegen {
namespace {

std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> flags;
      for (std::string w; words >> w;)
        flags.insert(w);
      return flags;
    }
  return {};
}

TEST(CpuIsa, AgreesWithProcCpuinfo) {
  const std::set<std::string> f = cpuinfo_flags();
  if (f.empty())
    GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  const HostIsa &h = host_isa();
  auto has = [&](const char *name) { return f.count(name) > 0; };
  EXPECT_EQ(h.avx2, has("avx2") && has("fma"));
  EXPECT_EQ(h.avx512_core, has("avx512f") && has("avx512bw") &&
                               has("avx512vl") && has("avx512dq"));
  EXPECT_EQ(h.avx512_vnni, h.avx512_core && has("avx512_vnni"));
  EXPECT_EQ(h.avx512_bf16, h.avx512_core && has("avx512_bf16"));
  if (h.amx_tile)
    EXPECT_TRUE(has("amx_tile"));
  if (!has("amx_tile"))
    EXPECT_FALSE(h.amx_tile);
  EXPECT_EQ(host_supports(Isa::avx512_vnni), h.avx512_vnni);
  EXPECT_EQ(host_supports(Isa::amx), h.amx_bf16 && h.amx_int8);
}

TEST(CpuIsa, NamesAreTheKernelSuffixes) {
  EXPECT_STREQ(isa_name(Isa::avx2), "avx2");
  EXPECT_STREQ(isa_name(Isa::avx512_core), "avx512core");
  EXPECT_STREQ(isa_name(Isa::avx512_vnni), "avx512vnni");
  EXPECT_STREQ(isa_name(Isa::avx512_bf16), "avx512bf16");
  EXPECT_STREQ(isa_name(Isa::amx), "amx");
}

} // namespace
} // namespace hyc::codegen
