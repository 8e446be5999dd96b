// The load-time kernel self-test on real artifacts (docs/artifact.md, "The
// kernel self-test"): it passes on every variant this host runs, for every
// weight precision; HYC_SELFTEST=0 skips it visibly; and a variant library
// whose kernel was made wrong by patching its bytes (vdpbf16ps turned into
// vpdpwssd, a valid instruction that computes something else) is refused,
// naming the kernel, and the next best variant produces the same tokens as
// when it is forced on the honest artifact.
#include "test/e2e/e2e_util.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace hyc::e2e {
namespace {

/// A tiny synthetic Llama checkpoint (no ../shared needed).
const std::string &tinyCheckpoint() {
  static const std::string dir = [] {
    const std::string d = tempDir() + "/selftest-llama-tiny";
    CommandResult r = runHyc({"synth", "--arch", "llama", "--preset", "tiny", "-o", d});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return d;
  }();
  return dir;
}

std::string portable(const std::string &quant) {
  return compileOnce(tinyCheckpoint(), {"--target", "portable", "--quant", quant, "--max-seq-len",
                                        "64", "--max-batch-tokens", "32"});
}

CommandResult runWithEnv(const char *name, const std::string &value,
                         const std::vector<std::string> &args) {
  ::setenv(name, value.c_str(), 1);
  CommandResult r = runHyc(args);
  ::unsetenv(name);
  return r;
}

std::vector<std::string> runArgs(const std::string &art) {
  return {"run", art, "-n", "12", "--ignore-eos", "--print-ids", "--no-stats", "--verbose"};
}

TEST(KernelSelfTestArtifact, PassesOnEveryVariantThisHostRuns) {
  for (const std::string quant : {"f32", "bf16", "w8a8", "fp8"}) {
    const std::string art = portable(quant);
    const VariantSplit split = variantsOf(art);
    ASSERT_FALSE(split.run.empty());
    for (const std::string &isa : split.run) {
      CommandResult r = runWithEnv("HYC_ISA", isa, runArgs(art));
      ASSERT_EQ(r.exit_code, 0) << quant << " " << isa << ": " << r.err;
      const std::regex line("hyc run: kernel self-test " + isa +
                            ": passed: ([0-9]+) kernel famil(y|ies) \\(([0-9]+) kernels?, "
                            "([0-9]+) calls\\) in ([0-9.]+) ms");
      std::smatch m;
      ASSERT_TRUE(std::regex_search(r.err, m, line)) << quant << " " << isa << ": " << r.err;
      EXPECT_GE(std::stoi(m[1]), 1) << r.err;
      EXPECT_GE(std::stoi(m[4]), 3) << r.err;
      EXPECT_LT(std::stod(m[5]), 50.0) << r.err;
      std::printf("%s %s: %s\n", quant.c_str(), isa.c_str(), m[0].str().c_str());
    }
    for (const std::string &s : split.skipped)
      std::printf("%s: self-test not run here: variant %s\n", quant.c_str(), s.c_str());
  }
}

TEST(KernelSelfTestArtifact, HycSelftestZeroSkipsItVisibly) {
  const std::string art = portable("bf16");
  const VariantSplit split = variantsOf(art);
  CommandResult r = runWithEnv("HYC_SELFTEST", "0", runArgs(art));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("kernel self-test " + split.run.back() + ": skipped (HYC_SELFTEST=0)"),
            std::string::npos)
      << r.err;
}

/// File offset of virtual address `vaddr` in ELF file bytes `elf`.
int64_t fileOffset(const std::string &elf, uint64_t vaddr) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof eh);
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, elf.data() + eh.e_phoff + size_t(i) * eh.e_phentsize, sizeof ph);
    if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
      return int64_t(vaddr - ph.p_vaddr + ph.p_offset);
  }
  return -1;
}

std::string disassemble(const std::string &library) {
  const std::string cmd = std::string(HYC_LLVM_OBJDUMP) + " -d '" + library + "'";
  FILE *p = ::popen(cmd.c_str(), "r");
  std::string text;
  char buf[1 << 16];
  while (size_t n = std::fread(buf, 1, sizeof buf, p))
    text.append(buf, n);
  ::pclose(p);
  return text;
}

/// The addresses of `mnemonic` instructions in function `symbol`.
std::vector<uint64_t> instructionsIn(const std::string &disassembly, const std::string &symbol,
                                     const std::string &mnemonic) {
  std::vector<uint64_t> at;
  std::istringstream in(disassembly);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find(">:") != std::string::npos)
      inside = line.find("<" + symbol + ">:") != std::string::npos;
    else if (inside && line.find("\t" + mnemonic + "\t") != std::string::npos)
      at.push_back(std::stoull(line.substr(0, line.find(':')), nullptr, 16));
  }
  return at;
}

TEST(KernelSelfTestArtifact, AWrongKernelIsRefusedAndTheNextVariantRuns) {
  const std::string art = portable("bf16");
  const VariantSplit split = variantsOf(art);
  if (std::find(split.run.begin(), split.run.end(), "avx512-bf16") == split.run.end())
    GTEST_SKIP() << "this host does not run the avx512-bf16 variant ("
                 << (split.skipped.empty() ? "" : split.skipped.front()) << ")";
  const std::string broken = tempDir() + "/selftest-broken.hyc";
  ASSERT_EQ(
      std::system(("rm -rf '" + broken + "' && cp -r '" + art + "' '" + broken + "'").c_str()), 0);
  const std::string library = broken + "/model.avx512-bf16.so";
  const std::string dis = disassemble(library);
  // The bf16 x bf16 kernel with the smallest K: the one the self-test
  // runs for K mod 64 = 0 (the hidden size, 64, here).
  std::smatch m;
  std::string kernel;
  int bestK = 1 << 30;
  const std::regex header("<(hyc_brgemm_bf16bf16f32_[0-9]+x32x([0-9]+)_avx512bf16)>:");
  for (auto it = std::sregex_iterator(dis.begin(), dis.end(), header); it != std::sregex_iterator();
       ++it)
    if (std::stoi((*it)[2]) % 64 == 0 && std::stoi((*it)[2]) < bestK) {
      bestK = std::stoi((*it)[2]);
      kernel = (*it)[1];
    }
  ASSERT_FALSE(kernel.empty()) << "no avx512bf16 kernel with K a multiple of 64 in " << library;
  const std::vector<uint64_t> dots = instructionsIn(dis, kernel, "vdpbf16ps");
  ASSERT_FALSE(dots.empty()) << kernel;

  // vdpbf16ps is EVEX.F3.0F38.W0 52; EVEX.66.0F38.W0 52 is vpdpwssd (the
  // int16 dot product, AVX512_VNNI, which this host runs): same length,
  // operands and registers, a different sum. The third byte's low two bits
  // are EVEX.pp (10 = F3, 01 = 66).
  std::string bytes = readFile(library);
  for (uint64_t a : dots) {
    const int64_t off = fileOffset(bytes, a);
    ASSERT_GE(off, 0);
    ASSERT_EQ(uint8_t(bytes[size_t(off)]), 0x62);
    ASSERT_EQ(uint8_t(bytes[size_t(off) + 4]), 0x52);
    ASSERT_EQ(uint8_t(bytes[size_t(off) + 2]) & 3, 2);
    bytes[size_t(off) + 2] = char((uint8_t(bytes[size_t(off) + 2]) & ~3) | 1);
  }
  std::ofstream(library, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_EQ(instructionsIn(disassemble(library), kernel, "vpdpwssd"), dots);

  // The patched variant is refused, naming the kernel; avx512 runs.
  CommandResult got = runHyc(runArgs(broken));
  ASSERT_EQ(got.exit_code, 0) << got.err;
  std::printf("%s", got.err.c_str());
  EXPECT_NE(got.err.find("variant avx512-bf16 refused: kernel self-test failed: " + kernel +
                         " (m=1): C["),
            std::string::npos)
      << got.err;
  EXPECT_NE(got.err.find("largest error"), std::string::npos) << got.err;
  EXPECT_NE(got.err.find("hyc run: variant avx512: best of avx2, avx512 that this CPU runs "
                         "(not avx512-bf16 failed its kernel self-test (kernel " +
                         kernel + ")"),
            std::string::npos)
      << got.err;
  EXPECT_NE(got.err.find("kernel self-test avx512-bf16 refused ("), std::string::npos) << got.err;
  EXPECT_NE(got.err.find("avx512: passed"), std::string::npos) << got.err;
  // Its tokens are the avx512 variant's on the honest artifact.
  CommandResult want = runWithEnv("HYC_ISA", "avx512", runArgs(art));
  ASSERT_EQ(want.exit_code, 0) << want.err;
  EXPECT_FALSE(want.out.empty());
  EXPECT_EQ(got.out, want.out);

  // Forced, the broken variant is an error naming the kernel.
  CommandResult forced = runWithEnv("HYC_ISA", "avx512-bf16", runArgs(broken));
  EXPECT_NE(forced.exit_code, 0);
  EXPECT_NE(forced.err.find("variant avx512-bf16 (forced by HYC_ISA) failed its kernel "
                            "self-test: " +
                            kernel),
            std::string::npos)
      << forced.err;
  // Skipped, nothing stops it: the broken variant runs (what the self-test
  // guards against).
  CommandResult skipped = runWithEnv("HYC_SELFTEST", "0", runArgs(broken));
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_NE(skipped.err.find("hyc run: variant avx512-bf16: best of"), std::string::npos)
      << skipped.err;
}

} // namespace
} // namespace hyc::e2e
