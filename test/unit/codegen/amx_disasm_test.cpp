// The AMX kernels' code checked by disassembly (llvm-mc): the tile loop, the
// K-tail reconfiguration, the per-m tile configurations embedded after the
// code, the epilogues, and the grouped kernels' K step. (brgemm_amx_test.cpp executes them, on an
// emulated tile machine where the host lacks AMX.)
// The AVX-512 BF16 kernel gets the same check, for hosts that cannot run it,
// and the AVX2 kernels are checked for AVX-512 encodings.
#include "codegen/brgemm.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

namespace hyc::codegen {
namespace {

/// Intel-syntax instructions of code[0, size), whitespace collapsed; any
/// llvm-mc complaint (an undecodable byte) becomes an "ERROR: ..." line.
/// With encodings, each line ends in "# encoding: [0x.., ...]".
std::vector<std::string> disassemble(const uint8_t *code, size_t size,
                                     bool encodings = false) {
  char path[] = "/tmp/hyc_disasm_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0)
    return {"ERROR: mkstemp"};
  close(fd);
  {
    std::ofstream out(path);
    char buf[8];
    for (size_t i = 0; i < size; ++i) {
      std::snprintf(buf, sizeof(buf), "0x%02x ", code[i]);
      out << buf;
    }
  }
  const std::string cmd = std::string(HYC_LLVM_MC) +
                          " --disassemble -triple=x86_64-unknown-linux-gnu"
                          " --output-asm-variant=1" +
                          (encodings ? " --show-encoding" : "") +
                          " -mattr=+amx-tile,+amx-bf16,+amx-int8,+avx512f,"
                          "+avx512bw,+avx512dq,+avx512vl,+avx512bf16 " +
                          path + " 2>&1";
  std::vector<std::string> lines;
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof(line), p)) {
      std::string s, l = line;
      bool space = false;
      for (char ch : l) {
        const bool ws = ch == ' ' || ch == '\t' || ch == '\n';
        if (ws) {
          space = !s.empty();
          continue;
        }
        if (space)
          s += ' ';
        space = false;
        s += ch;
      }
      if (s.find("warning") != std::string::npos ||
          s.find("error") != std::string::npos)
        s = "ERROR: " + s;
      if (!s.empty() && s[0] != '.' && s[0] != '#') // '#': fixup notes
        lines.push_back(s);
    }
    pclose(p);
  }
  unlink(path);
  return lines;
}

int count(const std::vector<std::string> &lines, const std::string &what) {
  return int(std::count(lines.begin(), lines.end(), what));
}

/// True when `seq` occurs as consecutive lines (prefix match per line).
bool contains_run(const std::vector<std::string> &lines,
                  const std::vector<std::string> &seq) {
  for (size_t i = 0; i + seq.size() <= lines.size(); ++i) {
    size_t j = 0;
    while (j < seq.size() && lines[i + j].rfind(seq[j], 0) == 0)
      ++j;
    if (j == seq.size())
      return true;
  }
  return false;
}

std::string dump(const std::vector<std::string> &lines, size_t max = 80) {
  std::string s;
  for (size_t i = 0; i < lines.size() && i < max; ++i)
    s += lines[i] + "\n";
  return s;
}

/// The 64-byte ldtilecfg operands embedded after the code, in order.
std::vector<const uint8_t *> tile_configs(const BrgemmKernel &k) {
  std::vector<const uint8_t *> cfgs;
  for (size_t o = (k.text_size() + 63) / 64 * 64; o + 64 <= k.code_size();
       o += 64) {
    const uint8_t *c = k.code() + o;
    if (c[0] == 1 && std::all_of(c + 1, c + 16, [](uint8_t b) { return !b; }))
      cfgs.push_back(c);
  }
  return cfgs;
}
int rows(const uint8_t *cfg, int tile) { return cfg[48 + tile]; }
int colsb(const uint8_t *cfg, int tile) {
  return cfg[16 + 2 * tile] | (cfg[17 + 2 * tile] << 8);
}

class Disassembly : public ::testing::Test {
protected:
  void SetUp() override {
    if (std::string(HYC_LLVM_MC).empty() || access(HYC_LLVM_MC, X_OK) != 0)
      GTEST_SKIP() << "llvm-mc not found (Debian package llvm-22-tools)";
  }
};

TEST_F(Disassembly, AmxBf16TileLoopTailAndConfigs) {
  // K = 4096 + 16: 128 full steps of 32, then a 16-element tail step.
  BrgemmGenResult r = generate_brgemm(make_brgemm_desc(
      Isa::amx, DataType::bf16, DataType::bf16, DataType::f32, 4112));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.kernel->name(), "brgemm_bf16bf16f32_32x32x4112_amx");
  const auto lines = disassemble(r.kernel->code(), r.kernel->text_size());
  for (const std::string &l : lines)
    ASSERT_EQ(l.rfind("ERROR", 0), std::string::npos) << l;
  // Each m loads its main configuration, and its tail one once more.
  EXPECT_EQ(count(lines, "ldtilecfg [rax]"), 64);
  EXPECT_EQ(count(lines, "tilerelease"), 0) << "kernels must not release";
  // Two row tiles (m > 16): A0/A1 x B0/B1 into C0..C3, then advance.
  EXPECT_TRUE(contains_run(
      lines, {"tileloadd tmm4, [rbx + rsi]", "tileloadd tmm6, [r15 + r14]",
              "tileloadd tmm7, [r15 + r14 + 64]", "tdpbf16ps tmm0, tmm4, tmm6",
              "tdpbf16ps tmm1, tmm4, tmm7", "tileloadd tmm5, [r13 + rsi]",
              "tdpbf16ps tmm2, tmm5, tmm6", "tdpbf16ps tmm3, tmm5, tmm7",
              "add rbx, 64", "add r13, 64", "add r15, 2048", "dec r12", "jne"}))
      << dump(lines);
  // m = 17..32 use the second row of tiles, in the loop and in the tail.
  EXPECT_EQ(count(lines, "tdpbf16ps tmm2, tmm5, tmm6"), 2 * 16);
  EXPECT_EQ(count(lines, "tdpbf16ps tmm0, tmm4, tmm6"), 2 * 32);
  // The tail parks C in the stack scratch across ldtilecfg.
  EXPECT_TRUE(
      contains_run(lines, {"tilestored [rsp + r14], tmm0",
                           "tilestored [rsp + r14 + 64], tmm1", "sttilecfg [rsp + 4096]",
                           "lea rax, [rip", "vmovdqu32 zmm0, zmmword ptr [rsp + 4096]",
                           "vpcmpneqd k1, zmm0, zmmword ptr [rax]", "kortestw k1, k1", "je",
                           "ldtilecfg [rax]", "tileloadd tmm0, [rsp + r14]"}))
      << dump(lines, 400);
  // Every ldtilecfg is skipped when the configuration in place (sttilecfg)
  // is already the one wanted: a thread configures once per tile shape.
  EXPECT_EQ(count(lines, "sttilecfg [rsp + 4096]"), count(lines, "ldtilecfg [rax]"));
  EXPECT_EQ(count(lines, "kortestw k1, k1"), count(lines, "ldtilecfg [rax]"));
  EXPECT_EQ(count(lines, "tilestored [rcx + r8], tmm0"), 32);

  const auto cfgs = tile_configs(*r.kernel);
  ASSERT_EQ(cfgs.size(), 64u);
  const uint8_t *m20 = cfgs[2 * 19], *m20_tail = cfgs[2 * 19 + 1];
  EXPECT_EQ(rows(m20, 0), 16);
  EXPECT_EQ(rows(m20, 2), 4);
  EXPECT_EQ(colsb(m20, 3), 64);
  EXPECT_EQ(rows(m20, 5), 4);
  EXPECT_EQ(colsb(m20, 4), 64);
  EXPECT_EQ(rows(m20, 6), 16);
  EXPECT_EQ(colsb(m20, 7), 64);
  EXPECT_EQ(colsb(m20_tail, 4), 32); // 16 bf16 of A per row
  EXPECT_EQ(rows(m20_tail, 7), 8);   // 8 pairs of B
  const uint8_t *m5 = cfgs[2 * 4];
  EXPECT_EQ(rows(m5, 0), 5);
  EXPECT_EQ(rows(m5, 2), 0); // second row of tiles unused
  EXPECT_EQ(colsb(m5, 5), 0);
}

TEST_F(Disassembly, AmxInt8DequantEpilogue) {
  // K = 200: three steps of 64 and a tail of 8 (two quads).
  BrgemmGenResult r = generate_brgemm(
      make_brgemm_desc(Isa::amx, DataType::u8, DataType::s8, DataType::f32, 200,
                       32, /*accumulate=*/true, Epilogue::bias));
  ASSERT_TRUE(r) << r.error;
  const auto lines = disassemble(r.kernel->code(), r.kernel->text_size());
  for (const std::string &l : lines)
    ASSERT_EQ(l.rfind("ERROR", 0), std::string::npos) << l;
  EXPECT_TRUE(contains_run(
      lines, {"tileloadd tmm4, [rbx + rsi]", "tileloadd tmm6, [r15 + r14]",
              "tileloadd tmm7, [r15 + r14 + 64]", "tdpbusd tmm0, tmm4, tmm6",
              "tdpbusd tmm1, tmm4, tmm7"}));
  EXPECT_EQ(count(lines, "tdpbf16ps tmm0, tmm4, tmm6"), 0);
  // int32 tiles go to the scratch; C (f32) is combined in the epilogue:
  // (acc - comp) * b_scale * a_scale + C + bias. comp sits after 50 quads.
  EXPECT_TRUE(contains_run(
      lines, {"vmovdqu32 zmm0, zmmword ptr [rsp]",
              "vpsubd zmm0, zmm0, zmmword ptr [rdx + 6400]",
              "vcvtdq2ps zmm0, zmm0", "vmulps zmm0, zmm0, zmmword ptr [r13]",
              "vmulps zmm0, zmm0, dword ptr [r12]{1to16}",
              "vaddps zmm0, zmm0, zmmword ptr [rax]",
              "vaddps zmm0, zmm0, zmmword ptr [rbx]",
              "vmovups zmmword ptr [rax], zmm0"}))
      << dump(lines, 120);
  EXPECT_EQ(count(lines, "tilestored [rcx + r8], tmm0"), 0);
  const auto cfgs = tile_configs(*r.kernel);
  ASSERT_EQ(cfgs.size(), 64u);
  EXPECT_EQ(colsb(cfgs[1], 4), 8); // m = 1 tail: 8 bytes of A
  EXPECT_EQ(rows(cfgs[1], 6), 2);  // two quads of B
}

TEST_F(Disassembly, AmxGroupedStepsAsWideAsTheGroupAllows) {
  // The tiles hold one group's sums at a time, so a group is tiled in the
  // widest K step dividing it: 16 for groups of 16 and 48, 32 for 32, 64
  // for 128. (Narrower steps give the same bits at up to 4x the tile
  // products; only the configuration and the code tell them apart.)
  struct Case {
    int group, step;
  };
  for (const Case c : {Case{16, 16}, Case{48, 16}, Case{32, 32}, Case{128, 64}}) {
    SCOPED_TRACE("group " + std::to_string(c.group));
    BrgemmGenResult r = generate_brgemm(
        make_grouped_brgemm_desc(Isa::amx, DataType::u4, 3 * c.group, c.group, false));
    ASSERT_TRUE(r) << r.error;
    const auto lines = disassemble(r.kernel->code(), r.kernel->text_size());
    for (const std::string &l : lines)
      ASSERT_EQ(l.rfind("ERROR", 0), std::string::npos) << l;
    // Every m runs group / step products on its first row of tiles per
    // group (the group loop's body), m > 16 as many on the second.
    EXPECT_EQ(count(lines, "tdpbsud tmm0, tmm4, tmm6"), 32 * (c.group / c.step));
    EXPECT_EQ(count(lines, "tdpbsud tmm3, tmm5, tmm7"), 16 * (c.group / c.step));
    EXPECT_EQ(count(lines, "tdpbusd tmm0, tmm4, tmm6"), 0); // A is the signed side
    EXPECT_EQ(count(lines, "tilezero tmm0"), 32);
    const auto cfgs = tile_configs(*r.kernel);
    ASSERT_EQ(cfgs.size(), 32u); // one per m: no K tail
    const uint8_t *m20 = cfgs[19];
    EXPECT_EQ(rows(m20, 0), 16);
    EXPECT_EQ(rows(m20, 2), 4);
    EXPECT_EQ(colsb(m20, 4), c.step);    // step bytes of s8 A per row
    EXPECT_EQ(rows(m20, 6), c.step / 4); // step / 4 quads of B
    EXPECT_EQ(colsb(m20, 6), 64);
    EXPECT_EQ(rows(cfgs[4], 2), 0); // m = 5: the second row of tiles unused
  }
}

TEST_F(Disassembly, AmxTileRelease) {
  JitCode code = generate_amx_tile_release();
  const auto lines = disassemble(code.data(), code.size());
  ASSERT_EQ(lines.size(), 2u) << dump(lines);
  EXPECT_EQ(lines[0], "tilerelease");
  EXPECT_EQ(lines[1], "ret");
}

TEST_F(Disassembly, Avx512Bf16InnerLoop) {
  BrgemmGenResult r = generate_brgemm(make_brgemm_desc(
      Isa::avx512_bf16, DataType::bf16, DataType::bf16, DataType::f32, 256));
  ASSERT_TRUE(r) << r.error;
  const auto lines = disassemble(r.kernel->code(), r.kernel->text_size());
  for (const std::string &l : lines)
    ASSERT_EQ(l.rfind("ERROR", 0), std::string::npos) << l;
  // 14 rows: B in zmm28/29, A pairs broadcast into zmm30/31, 28 accumulators.
  EXPECT_TRUE(contains_run(
      lines, {"vmovups zmm28, zmmword ptr [r15]",
              "vmovups zmm29, zmmword ptr [r15 + 64]", "prefetcht0",
              "prefetcht0", "vpbroadcastd zmm30, dword ptr [rbx]",
              "vdpbf16ps zmm0, zmm28, zmm30", "vdpbf16ps zmm1, zmm29, zmm30",
              "vpbroadcastd zmm31, dword ptr [rbx + rsi]",
              "vdpbf16ps zmm2, zmm28, zmm31"}))
      << dump(lines, 200);
  EXPECT_GT(count(lines, "vdpbf16ps zmm27, zmm29, zmm31"), 0);
}

// The AVX2 kernels must run on hosts without AVX-512, where any EVEX
// instruction (prefix 0x62), zmm, opmask or ymm16-31 register faults; running
// them on an AVX-512 test host would not notice.
TEST_F(Disassembly, Avx2KernelsAreVexOnly) {
  const std::regex high_reg("\\b[xy]mm(1[6-9]|2[0-9]|3[01])\\b");
  const BrgemmDesc descs[] = {
      make_brgemm_desc(Isa::avx2, DataType::f32, DataType::f32, DataType::f32,
                       17, 32, true, Epilogue::bias),
      make_brgemm_desc(Isa::avx2, DataType::f32, DataType::bf16, DataType::f32,
                       17, 32, true, Epilogue::bias),
      make_brgemm_desc(Isa::avx2, DataType::u8, DataType::s8, DataType::f32, 67,
                       32, true, Epilogue::bias),
      make_brgemm_desc(Isa::avx2, DataType::u8, DataType::s8, DataType::s32, 3,
                       32, true),
  };
  for (const BrgemmDesc &d : descs) {
    BrgemmGenResult r = generate_brgemm(d);
    ASSERT_TRUE(r) << r.error;
    SCOPED_TRACE(r.kernel->name());
    const auto lines =
        disassemble(r.kernel->code(), r.kernel->text_size(), true);
    ASSERT_GT(lines.size(), 50u) << dump(lines);
    for (const std::string &l : lines) {
      ASSERT_EQ(l.rfind("ERROR", 0), std::string::npos) << l;
      EXPECT_EQ(l.find("encoding: [0x62"), std::string::npos) << l;
      EXPECT_EQ(l.find("zmm"), std::string::npos) << l;
      EXPECT_EQ(l.find("{k"), std::string::npos) << l;
      EXPECT_FALSE(std::regex_search(l, high_reg)) << l;
    }
  }
}

TEST_F(Disassembly, Avx2U8S8SignTrick) {
  BrgemmGenResult r = generate_brgemm(make_brgemm_desc(
      Isa::avx2, DataType::u8, DataType::s8, DataType::f32, 64));
  ASSERT_TRUE(r) << r.error;
  const auto lines = disassemble(r.kernel->code(), r.kernel->text_size());
  // m = 1 walks the whole panel in one pass: accumulators ymm0-3, the
  // step's four B vectors in ymm4-7, q_a in ymm8, |q_a| in ymm9, int16 ones
  // in ymm15, bytes 0x80 in ymm14; each column vector gets sign, madd, madd,
  // add.
  EXPECT_TRUE(contains_run(
      lines, {"vmovdqu ymm4, ymmword ptr [r15]", "vmovdqu ymm5, ymmword ptr [r15 + 32]",
              "vmovdqu ymm6, ymmword ptr [r15 + 64]", "vmovdqu ymm7, ymmword ptr [r15 + 96]",
              "vpbroadcastd ymm8, dword ptr [rbx]", "vpxor ymm8, ymm8, ymm14",
              "vpabsb ymm9, ymm8", "vpsignb ymm10, ymm4, ymm8",
              "vpmaddubsw ymm10, ymm9, ymm10", "vpmaddwd ymm10, ymm10, ymm15",
              "vpaddd ymm0, ymm0, ymm10", "vpsignb ymm11, ymm5, ymm8",
              "vpmaddubsw ymm11, ymm9, ymm11", "vpmaddwd ymm11, ymm11, ymm15",
              "vpaddd ymm1, ymm1, ymm11"}))
      << dump(lines, 200);
  // m = 2 keeps the two 16-column halves: B in ymm4/5, q_a in ymm6.
  EXPECT_TRUE(contains_run(
      lines, {"vmovdqu ymm4, ymmword ptr [r15]", "vmovdqu ymm5, ymmword ptr [r15 + 32]",
              "vpbroadcastd ymm6, dword ptr [rbx]", "vpxor ymm6, ymm6, ymm14"}))
      << dump(lines, 400);
  // The comp row is never read: the sums are already signed.
  for (const std::string &l : lines)
    EXPECT_EQ(l.find("vpsubd"), std::string::npos) << l;
}

TEST_F(Disassembly, Avx512DecodeBodiesPrefetchIntoL2) {
  // Bodies of up to kTwoStreamMaxRows rows stream B from DRAM and prefetch
  // it into L2 (prefetcht1); the others reuse a panel from L2 and prefetch
  // into L1 (prefetcht0): tiles.h prefetch_b_into_l2. Bodies are emitted in
  // ascending rows, so every prefetcht1 comes before the first prefetcht0.
  const BrgemmDesc descs[] = {
      make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8, DataType::f32, 2048),
      make_brgemm_desc(Isa::avx512_bf16, DataType::bf16, DataType::bf16, DataType::f32, 2048),
  };
  for (const BrgemmDesc &d : descs) {
    BrgemmGenResult r = generate_brgemm(d);
    ASSERT_TRUE(r) << r.error;
    SCOPED_TRACE(r.kernel->name());
    const auto lines = disassemble(r.kernel->code(), r.kernel->text_size());
    std::vector<size_t> t0, t1;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].rfind("prefetcht0", 0) == 0)
        t0.push_back(i);
      if (lines[i].rfind("prefetcht1", 0) == 0)
        t1.push_back(i);
    }
    ASSERT_FALSE(t1.empty()) << "decode bodies prefetch into L2";
    ASSERT_FALSE(t0.empty()) << "blocks of many rows prefetch into L1";
    EXPECT_LT(t1.back(), t0.front()) << "prefetcht1 only in the bodies of few rows";
  }
}

TEST_F(Disassembly, GroupedDecodeBodiesLeaveTheCodesToTheHardwarePrefetchers) {
  // tiles.h prefetch_b_in_body: the AVX-512 VNNI grouped kernels' bodies of
  // up to kTwoStreamMaxRows rows issue no B prefetch; blocks of more rows
  // prefetch into L1. Bodies are emitted in ascending rows, so every
  // vpdpbusd of bodies 1 .. kTwoStreamMaxRows comes before the first
  // prefetch: per body of m rows, one group's group / 4 K quads (the
  // unrolled loop) of 2 m each.
  auto format = [](int bits, int group, int super, bool asymmetric) {
    GroupedFormat f;
    f.bits = bits, f.group = group, f.super_group = super, f.asymmetric = asymmetric;
    return f;
  };
  const GroupedFormat formats[] = {
      format(4, 32, 0, false),   // Q4_0 / w4a8
      format(4, 32, 0, true),    // Q4_1
      format(8, 32, 0, false),   // Q8_0 / w8a8-g32
      format(8, 16, 256, false), // Q6_K
      format(4, 128, 128, true), // AWQ (q4z128)
  };
  for (const GroupedFormat &f : formats) {
    const BrgemmDesc d = make_grouped_brgemm_desc(Isa::avx512_vnni, f, 2048);
    BrgemmGenResult r = generate_brgemm(d);
    ASSERT_TRUE(r) << r.error;
    SCOPED_TRACE(r.kernel->name());
    ASSERT_GT(d.m_max, kTwoStreamMaxRows);
    const auto lines = disassemble(r.kernel->code(), r.kernel->text_size());
    size_t dots = 0, firstPrefetch = lines.size();
    bool t1 = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      t1 = t1 || lines[i].rfind("prefetcht1", 0) == 0;
      if (firstPrefetch == lines.size() && lines[i].rfind("prefetch", 0) == 0)
        firstPrefetch = i;
      if (firstPrefetch == lines.size() && lines[i].rfind("vpdpbusd", 0) == 0)
        ++dots;
    }
    EXPECT_FALSE(t1) << "no prefetch into L2 anywhere";
    ASSERT_LT(firstPrefetch, lines.size()) << "blocks of many rows prefetch into L1";
    const size_t decodeDots = size_t(f.group / 4 * 2 * (1 + 2 + 3 + 4));
    EXPECT_GE(dots, decodeDots) << "a decode body prefetches";
  }
}

} // namespace
} // namespace hyc::codegen
