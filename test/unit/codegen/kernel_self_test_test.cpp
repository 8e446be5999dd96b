// The runtime's load-time kernel self-test (runtime/artifact/
// kernel_self_test.cpp, compiled into this test) on every brgemm family the
// generators make, with Ks in every K class the self-test distinguishes:
// its inputs in the packed layouts and its scalar sums agree with the real
// kernels, so an honest artifact is never refused. AMX families run on the
// emulated tile machine where the host lacks AMX (amx_trap.h). A copy of a
// kernel with its accumulation broken (vdpbf16ps -> vpdpwssd) is refused.
#include "amx_trap.h"
#include "grouped_test_util.h"

#include "codegen/brgemm.h"
#include "codegen/tiles.h"
#include "hyrt/artifact/kernel_self_test.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace hyc::codegen::test {
namespace {

/// Generated kernels and the hyc_kernels_v0 table that lists them, as
/// KernelEmitter writes it into a variant library.
struct Table {
  std::vector<std::unique_ptr<BrgemmKernel>> kernels;
  std::vector<std::string> strings; // names, isas, types (stable: reserved)
  std::vector<hyrt_kernel_v0> rows;

  Table() { strings.reserve(4096); }
  void add(Isa isa, DataType a, DataType b, int k, bool acc, Epilogue epi) {
    add_desc(make_brgemm_desc(isa, a, b, DataType::f32, k, 32, acc, epi));
  }
  /// A grouped kernel; the row says `table_group` (a wrong one must fail).
  void add_grouped(Isa isa, DataType b, int k, int group, bool asym, bool acc, Epilogue epi,
                   int table_group = 0) {
    add_desc(make_grouped_brgemm_desc(isa, b, k, group, asym, acc, epi));
    if (table_group)
      rows.back().group = table_group;
  }
  void add_desc(const BrgemmDesc &d) {
    const Isa isa = d.isa;
    const DataType a = d.a_type, b = d.b_type;
    const bool acc = d.accumulate;
    const Epilogue epi = d.epilogue;
    BrgemmGenResult g = generate_brgemm(d);
    ASSERT_TRUE(g) << g.error;
    strings.push_back(g.kernel->name());
    const char *name = strings.back().c_str();
    strings.push_back(std::string(data_type_name(a)) + data_type_name(b) + "f32");
    hyrt_kernel_v0 row{};
    row.name = name;
    row.entry = g.kernel->code();
    row.code_bytes = int64_t(g.kernel->code_size());
    row.isa = isa_name(isa);
    row.types = strings.back().c_str();
    row.b_layout = b_layout_name(d.b_layout);
    row.m_max = d.m_max;
    row.n_block = d.n_block;
    row.k = d.k;
    row.accumulate = acc;
    row.epilogue = epi == Epilogue::bias ? HYRT_KERNEL_EPILOGUE_BIAS : HYRT_KERNEL_EPILOGUE_NONE;
    row.group = d.group;
    row.asymmetric = d.asymmetric;
    row.super_group = d.super_group;
    row.codebook =
        d.codebook == Codebook::iq4nl ? HYRT_KERNEL_CODEBOOK_IQ4NL : HYRT_KERNEL_CODEBOOK_NONE;
    row.stream_c = d.stream_c;
    rows.push_back(row);
    kernels.push_back(std::move(g.kernel));
  }
  hyrt_kernel_table_v0 table() const {
    return {HYRT_KERNEL_TABLE_VERSION, int32_t(rows.size()), rows.data()};
  }
};

struct Family {
  Isa isa;
  DataType a, b;
};

/// Ks with distinct K mod 64 (so each is run): odd, below one unrolled
/// step, whole steps and steps plus tails; AMX takes whole pairs / quads,
/// FP8 whole 128-blocks.
std::vector<int> ks(const Family &f) {
  if (f.b == DataType::f8)
    return {384}; // K mod 64 is always 0: one kernel per family runs
  if (f.isa == Isa::amx)
    return f.a == DataType::u8 ? std::vector<int>{4, 36, 64, 104, 172}
                               : std::vector<int>{2, 34, 64, 102, 172};
  return {1, 7, 36, 64, 105, 173};
}

/// Every family KernelEmitter embeds (its isaInfo table), zero-init and
/// accumulate, with and without bias, at Ks with distinct K mod 64.
void add_families(Table &t, bool amx) {
  static const Family kFamilies[] = {
      {Isa::avx2, DataType::f32, DataType::f32},
      {Isa::avx2, DataType::f32, DataType::bf16},
      {Isa::avx2, DataType::u8, DataType::s8},
      {Isa::avx512_core, DataType::f32, DataType::f32},
      {Isa::avx512_core, DataType::f32, DataType::bf16},
      {Isa::avx512_vnni, DataType::u8, DataType::s8},
      {Isa::avx512_bf16, DataType::bf16, DataType::bf16},
      {Isa::avx512_bf16, DataType::bf16, DataType::f8},
      {Isa::amx, DataType::bf16, DataType::bf16},
      {Isa::amx, DataType::u8, DataType::s8},
  };
  for (const Family &f : kFamilies) {
    if ((f.isa == Isa::amx) != amx || (!amx && !host_supports(f.isa)))
      continue;
    const bool f8 = f.b == DataType::f8;
    for (bool acc : {false, true})
      for (Epilogue epi : {Epilogue::none, Epilogue::bias}) {
        if (f8 && (acc || epi == Epilogue::bias))
          continue; // the bf16 x f8 kernel overwrites C and has no bias
        for (int k : ks(f))
          t.add(f.isa, f.a, f.b, k, acc, epi);
      }
    // Non-temporal C stores (the self-test aligns C rows for them).
    if (f.isa != Isa::avx2 && f.isa != Isa::amx && !f8)
      for (int k : ks(f)) {
        BrgemmDesc d = make_brgemm_desc(f.isa, f.a, f.b, DataType::f32, k);
        d.stream_c = true;
        t.add_desc(d);
      }
  }
  // Grouped integer families (one kernel each: they have no K tails).
  const std::vector<Isa> grouped_isas =
      amx ? std::vector<Isa>{Isa::amx} : std::vector<Isa>{Isa::avx2, Isa::avx512_vnni};
  for (Isa isa : grouped_isas) {
    if (isa != Isa::amx && !host_supports(isa))
      continue;
    for (DataType b : {DataType::u4, DataType::u8})
      for (int group : {32, 128})
        for (bool asym : {false, true})
          for (bool acc : {false, true})
            for (Epilogue epi : {Epilogue::none, Epilogue::bias})
              t.add_grouped(isa, b, 2 * group, group, asym, acc, epi);
    if (isa == Isa::avx512_vnni) { // the grouped kernel's non-temporal store
      BrgemmDesc d = make_grouped_brgemm_desc(isa, DataType::u4, 64, 32, false, false,
                                              Epilogue::none);
      d.stream_c = true;
      t.add_desc(d);
    }
    // Two-level scales and the code book, as GGUF and AWQ weights use them:
    // Q4_K, Q5_K, Q6_K, IQ4_XS, AWQ, IQ4_NL.
    for (const GroupedFormat &f :
         {grouped(4, 32, 256, true), grouped(8, 32, 256, true), grouped(8, 16, 256, false),
          grouped(4, 32, 256, false, Codebook::iq4nl), grouped(4, 32, 128, true),
          grouped(4, 32, 0, false, Codebook::iq4nl)})
      for (bool acc : {false, true})
        for (Epilogue epi : {Epilogue::none, Epilogue::bias})
          t.add_desc(make_grouped_brgemm_desc(isa, f, 2 * int(std::max(f.super_group, f.group)),
                                              acc, epi));
  }
}

TEST(KernelSelfTestGenerated, EveryGeneratedFamilyPasses) {
  if (!host_supports(Isa::avx2))
    GTEST_SKIP() << "no AVX2: no generated kernel runs here";
  Table t;
  add_families(t, /*amx=*/false);
  const hyrt::KernelSelfTestResult r = hyrt::self_test_kernels(t.table());
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_TRUE(r.untested.empty());
  EXPECT_EQ(r.kernels, int(t.rows.size())); // every K is its own K class here
  std::printf("%s\n", hyrt::describe_self_test(r).c_str());
}

TEST(KernelSelfTestGenerated, EveryAmxFamilyPasses) {
  AmxRunner amx;
  HYC_REQUIRE_AMX_RUNNER(amx);
  Table t;
  add_families(t, /*amx=*/true);
  ASSERT_FALSE(t.rows.empty());
  hyrt::KernelSelfTestResult r;
  const hyrt_kernel_table_v0 table = t.table();
  const std::string stopped = amx.run([&] { r = hyrt::self_test_kernels(table); });
  ASSERT_TRUE(stopped.empty()) << stopped;
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(r.kernels, int(t.rows.size()));
  std::printf("[   AMX    ] %s; %llu tile instructions emulated\n%s\n", amx.why().c_str(),
              (unsigned long long)amx.trapped(), hyrt::describe_self_test(r).c_str());
}

// A grouped kernel listed with the wrong group (64-element groups built, 32
// declared) is refused: the self-test packs the group the table states.
// A two-level kernel listed as one-level, and a code book kernel listed
// without its code book, are refused: the self-test packs what the table
// states.
TEST(KernelSelfTestGenerated, AFormatTheTableMisstatesIsRefused) {
  if (!host_supports(Isa::avx2))
    GTEST_SKIP() << "no AVX2 here";
  for (const GroupedFormat &f :
       {grouped(4, 32, 256, true), grouped(4, 32, 0, false, Codebook::iq4nl)}) {
    Table t;
    t.add_desc(make_grouped_brgemm_desc(Isa::avx2, f, 512));
    t.rows.back().super_group = 0;
    t.rows.back().codebook = HYRT_KERNEL_CODEBOOK_NONE;
    const hyrt::KernelSelfTestResult r = hyrt::self_test_kernels(t.table());
    EXPECT_FALSE(r.passed) << t.kernels.back()->name();
    EXPECT_NE(r.failure.find("bit-exact"), std::string::npos) << r.failure;
  }
}

TEST(KernelSelfTestGenerated, AGroupedKernelWithTheWrongGroupIsRefused) {
  if (!host_supports(Isa::avx2))
    GTEST_SKIP() << "no AVX2 here";
  Table t;
  t.add_grouped(Isa::avx2, DataType::u4, 128, 64, false, false, Epilogue::none);
  t.add_grouped(Isa::avx2, DataType::u8, 128, 64, true, false, Epilogue::none, 32);
  const hyrt::KernelSelfTestResult r = hyrt::self_test_kernels(t.table());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_kernel, t.kernels.back()->name());
  EXPECT_NE(r.failure.find("bit-exact"), std::string::npos) << r.failure;
}

// A copy of a generated kernel with every vdpbf16ps turned into vpdpwssd
// (EVEX.pp F3 -> 66: same operands, integer sums) is refused by name.
TEST(KernelSelfTestGenerated, ABrokenCopyOfAKernelIsRefused) {
  if (!host_supports(Isa::avx512_bf16))
    GTEST_SKIP() << "no AVX512_BF16 here";
  Table t;
  t.add(Isa::avx512_bf16, DataType::bf16, DataType::bf16, 64, false, Epilogue::none);
  const BrgemmKernel &k = *t.kernels.front();
  void *mem =
      ::mmap(nullptr, k.code_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  uint8_t *code = static_cast<uint8_t *>(mem);
  std::memcpy(code, k.code(), k.code_size());
  int patched = 0;
  for (size_t i = 0; i + 6 <= k.text_size(); ++i)
    // EVEX 62 P0 P1 P2 52 modrm with map 0F38, W0, pp = F3: vdpbf16ps zmm.
    if (code[i] == 0x62 && (code[i + 1] & 3) == 2 && (code[i + 2] & 0x87) == 0x06 &&
        code[i + 4] == 0x52 && (code[i + 5] & 0xC0) == 0xC0) {
      code[i + 2] = uint8_t((code[i + 2] & ~3) | 1);
      ++patched;
    }
  ASSERT_GT(patched, 0);
  ASSERT_EQ(::mprotect(mem, k.code_size(), PROT_READ | PROT_EXEC), 0);
  t.rows.front().entry = code;
  const hyrt::KernelSelfTestResult r = hyrt::self_test_kernels(t.table());
  ::munmap(mem, k.code_size());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_kernel, k.name());
  EXPECT_NE(r.failure.find(k.name() + " (m=1): C[0]["), std::string::npos) << r.failure;
}

} // namespace
} // namespace hyc::codegen::test
