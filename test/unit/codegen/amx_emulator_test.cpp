// The emulated tile machine (amx_tile_machine.h, run through amx_trap.h) on
// hand-written Xbyak snippets: each instruction's semantics against a scalar
// computation, the addressing forms the generators use (SIB stride + disp,
// r8-r15, scale, RIP-relative ldtilecfg), and the cases a CPU refuses. On a
// host with AMX the same snippets run natively and must give the same
// results; checks only the emulator can make (tile contents it zeroes,
// refusals, the SDM's rounding order) skip there.
#include "amx_trap.h"

#include "codegen/brgemm.h"
#include "codegen/pack.h"
#include "codegen_test_util.h"

#include <gtest/gtest.h>
#include <xbyak/xbyak.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

namespace hyc::codegen::test {
namespace {

using namespace Xbyak;
using namespace Xbyak::util;
// Xbyak::util declares tmm0-7 as Zmm; these hide them.
const Tmm tmm0(0), tmm1(1), tmm2(2), tmm3(3), tmm4(4), tmm5(5), tmm6(6),
    tmm7(7);

/// A function assembled by `body` (System V arguments: rdi, rsi, rdx, rcx,
/// r8, r9).
class Snippet : public CodeGenerator {
public:
  explicit Snippet(const std::function<void(CodeGenerator &)> &body)
      : CodeGenerator(4096, DontSetProtectRWE) {
    body(*this);
    ready();
    setProtectModeRE();
  }
  template <class F> F fn() const { return getCode<F>(); }
};

using Fn4 = void (*)(const void *, const void *, const void *, const void *);

/// A palette-1 tile configuration, as ldtilecfg reads it.
struct alignas(64) TileCfg {
  uint8_t bytes[64] = {1};
  TileCfg &set(int tile, int rows, int colsb) {
    bytes[16 + 2 * tile] = uint8_t(colsb);
    bytes[17 + 2 * tile] = uint8_t(colsb >> 8);
    bytes[48 + tile] = uint8_t(rows);
    return *this;
  }
};

TEST(AmxEmulator, TileLoadAndStoreFollowStrideAndDisplacement) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  // tmm1: 5 rows of 20 bytes, read at src + 12 + r * 100, written at
  // dst + r * 70.
  TileCfg cfg;
  cfg.set(1, 5, 20);
  Snippet s([](CodeGenerator &g) {
    g.ldtilecfg(g.ptr[rdi]);
    g.mov(rax, 100);
    g.tileloadd(tmm1, g.ptr[rsi + rax + 12]);
    g.mov(rax, 70);
    g.tilestored(g.ptr[rdx + rax], tmm1);
    g.ret();
  });
  std::vector<uint8_t> src(600), dst(8 * 70, 0xEE);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint8_t(i * 7 + 3);
  ASSERT_EQ(runner.run([&] {
    s.fn<Fn4>()(cfg.bytes, src.data(), dst.data(), nullptr);
  }),
            "");
  for (int r = 0; r < 8; ++r)
    for (int j = 0; j < 70; ++j) {
      const bool stored = r < 5 && j < 20;
      EXPECT_EQ(dst[r * 70 + j], stored ? src[12 + r * 100 + j] : 0xEE)
          << "row " << r << " byte " << j;
    }
  if (runner.way() != AmxWay::emulated)
    return;
  // The load zeroes the rest of each row and the rows past the shape.
  for (int r = 0; r < kAmxMaxRows; ++r)
    for (int j = 0; j < kAmxBytesPerRow; ++j)
      ASSERT_EQ(runner.machine().row(1, r)[j],
                r < 5 && j < 20 ? src[12 + r * 100 + j] : 0)
          << "tmm1 row " << r << " byte " << j;
  EXPECT_EQ(runner.machine().executed(AmxOp::tileloadd), 1u);
  EXPECT_EQ(runner.machine().executed(AmxOp::tilestored), 1u);
}

TEST(AmxEmulator, ExtendedRegistersScaleAndDisplacementForms) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  // Base and index in r8-r15, scale 2 and 8, disp8 < 0 and disp32; r13 as
  // a base (always encoded with a displacement) and r12 as an index; the
  // tileloaddt1 form (a load with a cache hint).
  TileCfg cfg;
  cfg.set(2, 3, 64).set(7, 3, 64);
  Snippet s([](CodeGenerator &g) {
    g.push(r12);
    g.push(r13);
    g.ldtilecfg(g.ptr[rdi]);
    g.mov(r13, rsi);
    g.mov(r12, 40);                              // stride 80 = r12 * 2
    g.tileloadd(tmm2, g.ptr[r13 + r12 * 2 - 8]); // disp8 < 0
    g.mov(r9, rdx);
    g.mov(r11, 16);                                   // stride 128 = r11 * 8
    g.tilestored(g.ptr[r9 + r11 * 8 + 0x1000], tmm2); // disp32
    g.mov(r8, 80);
    g.tileloaddt1(tmm7, g.ptr[r13 + r8 + 0]); // r13, no displacement
    g.tilestored(g.ptr[rcx + r8 * 1], tmm7);
    g.pop(r13);
    g.pop(r12);
    g.ret();
  });
  std::vector<uint8_t> src(400), dst(0x1000 + 3 * 128, 0), dst2(240, 0);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint8_t(i * 13 + 1);
  ASSERT_EQ(runner.run([&] {
    s.fn<Fn4>()(cfg.bytes, src.data() + 8, dst.data(), dst2.data());
  }),
            "");
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 64; ++j) {
      ASSERT_EQ(dst[0x1000 + r * 128 + j], src[r * 80 + j])
          << "row " << r << " byte " << j;
      ASSERT_EQ(dst2[r * 80 + j], src[8 + r * 80 + j])
          << "row " << r << " byte " << j;
    }
}

TEST(AmxEmulator, RipRelativeConfigurationAndStoredConfiguration) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  // sttilecfg writes 64 zero bytes with no configuration (after
  // tilerelease), then the bytes ldtilecfg [rip + cfg] loaded.
  TileCfg want;
  want.set(0, 16, 64).set(3, 1, 4).set(6, 7, 28);
  Snippet s([&](CodeGenerator &g) {
    Label cfg;
    g.tilerelease();
    g.sttilecfg(g.ptr[rdi]);
    g.ldtilecfg(g.ptr[rip + cfg]);
    g.sttilecfg(g.ptr[rsi]);
    g.tilerelease();
    g.ret();
    g.align(64);
    g.L(cfg);
    for (uint8_t b : want.bytes)
      g.db(b);
  });
  uint8_t before[64], after[64];
  std::memset(before, 0x5A, 64);
  std::memset(after, 0x5A, 64);
  ASSERT_EQ(runner.run([&] { s.fn<Fn4>()(before, after, nullptr, nullptr); }),
            "");
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(before[i], 0) << "byte " << i;
    EXPECT_EQ(after[i], want.bytes[i]) << "byte " << i;
  }
}

TEST(AmxEmulator, TileZeroAndTileReleaseClear) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  TileCfg cfg;
  cfg.set(5, 4, 64);
  Snippet s([](CodeGenerator &g) {
    g.ldtilecfg(g.ptr[rdi]);
    g.mov(rax, 64);
    g.tileloadd(tmm5, g.ptr[rsi + rax]);
    g.tilezero(tmm5);
    g.tilestored(g.ptr[rdx + rax], tmm5);
    g.ret();
  });
  std::vector<uint8_t> src(256, 0xAB), dst(256, 0xCD);
  ASSERT_EQ(runner.run([&] {
    s.fn<Fn4>()(cfg.bytes, src.data(), dst.data(), nullptr);
  }),
            "");
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(dst[i], 0) << "byte " << i;
  // The runtime's release code: afterwards no configuration is in place.
  const JitCode release = generate_amx_tile_release();
  ASSERT_EQ(runner.run([&] { release.entry<TileReleaseFn>()(); }), "");
  if (runner.way() == AmxWay::emulated)
    EXPECT_FALSE(runner.machine().configured());
}

/// C[m][n] (3 x 3 fp32) += A (3 rows x 4 pairs) . B (4 pair-rows x 3).
struct Bf16Case {
  uint16_t a[3][8], b[4][6];
  float c[3][3];
};

std::string run_tdpbf16ps(AmxRunner &runner, Bf16Case &t) {
  TileCfg cfg;
  cfg.set(0, 3, 12).set(4, 3, 16).set(6, 4, 12);
  static Snippet s([](CodeGenerator &g) {
    g.ldtilecfg(g.ptr[rdi]);
    g.mov(rax, 16);
    g.tileloadd(tmm4, g.ptr[rsi + rax]);
    g.mov(rax, 12);
    g.tileloadd(tmm6, g.ptr[rdx + rax]);
    g.tileloadd(tmm0, g.ptr[rcx + rax]);
    g.tdpbf16ps(tmm0, tmm4, tmm6);
    g.tilestored(g.ptr[rcx + rax], tmm0);
    g.ret();
  });
  return runner.run([&] { s.fn<Fn4>()(cfg.bytes, t.a, t.b, t.c); });
}

TEST(AmxEmulator, Tdpbf16psMatchesScalarDotProducts) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  // Small integers and halves: every product and sum is exact in fp32, so
  // any order of accumulation gives these numbers.
  std::mt19937 rng(7);
  Bf16Case t;
  for (auto &row : t.a)
    for (uint16_t &v : row)
      v = f32_to_bf16(float(int(rng() % 17) - 8) * 0.5f);
  for (auto &row : t.b)
    for (uint16_t &v : row)
      v = f32_to_bf16(float(int(rng() % 9) - 4));
  for (auto &row : t.c)
    for (float &v : row)
      v = float(int(rng() % 100) - 50);
  const Bf16Case before = t;
  ASSERT_EQ(run_tdpbf16ps(runner, t), "");
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 3; ++n) {
      double want = before.c[m][n];
      for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 2; ++i)
          want += double(bf16_to_f32(before.a[m][2 * k + i])) *
                  bf16_to_f32(before.b[k][2 * n + i]);
      EXPECT_EQ(t.c[m][n], float(want)) << "C[" << m << "][" << n << "]";
    }
}

TEST(AmxEmulator, Tdpbf16psDenormalsAreZero) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  // SDM: input denormals are treated as zero, output denormals flushed.
  Bf16Case t = {};
  t.a[0][0] = 0x0001; // bf16 denormal
  t.b[0][0] = f32_to_bf16(std::ldexp(1.f, 100));
  t.a[1][0] = f32_to_bf16(std::ldexp(1.f, -100));
  t.b[0][0 + 0] = f32_to_bf16(std::ldexp(1.f, 100));
  t.a[2][2] = f32_to_bf16(std::ldexp(1.f, -100));
  t.b[1][2] = f32_to_bf16(std::ldexp(1.f, -30)); // product 2^-130
  ASSERT_EQ(run_tdpbf16ps(runner, t), "");
  EXPECT_EQ(t.c[0][0], 0.f) << "a denormal A element must count as 0";
  EXPECT_EQ(t.c[1][0], 1.f) << "2^-100 * 2^100";
  EXPECT_EQ(t.c[2][1], 0.f) << "a denormal result (2^-130) must flush to 0";
}

TEST(AmxEmulator, Tdpbf16psRoundsInTheSdmOrder) {
  AmxRunner runner;
  HYC_REQUIRE_EMULATED_AMX(runner);
  // The SDM keeps even and odd products in separate fp32 accumulators over
  // k and adds their sum to C at the end: 2^24 + (1 + 1) = 2^24 + 2 exactly.
  // Adding each product to C in turn would give 2^24 (+1 ties to even
  // twice). Hardware may round differently; the SDM leaves it open.
  Bf16Case t = {};
  t.a[0][0] = t.a[0][1] = t.a[0][3] = f32_to_bf16(1.f);
  t.b[0][0] = f32_to_bf16(16777216.f);
  t.b[0][1] = t.b[1][1] = f32_to_bf16(1.f);
  ASSERT_EQ(run_tdpbf16ps(runner, t), "");
  EXPECT_EQ(t.c[0][0], 16777218.f);
}

/// The four byte dot products on the same bytes, with accumulators near
/// the int32 limits: each result must equal the scalar sum modulo 2^32.
TEST(AmxEmulator, ByteDotProductsWrapAndSignedness) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  using Emit = void (CodeGenerator::*)(const Tmm &, const Tmm &, const Tmm &);
  struct Op {
    const char *name;
    Emit emit;
    bool a_signed, b_signed;
  };
  const Op ops[] = {{"tdpbusd", &CodeGenerator::tdpbusd, false, true},
                    {"tdpbssd", &CodeGenerator::tdpbssd, true, true},
                    {"tdpbsud", &CodeGenerator::tdpbsud, true, false},
                    {"tdpbuud", &CodeGenerator::tdpbuud, false, false}};
  // C: 2 x 3 dwords, A: 2 rows x 4 quads (16 bytes), B: 4 rows x 3 quads.
  TileCfg cfg;
  cfg.set(1, 2, 12).set(3, 2, 16).set(2, 4, 12);
  uint8_t a[2][16], b[4][12];
  for (int k = 0; k < 16; ++k) {
    a[0][k] = 255; // u8 255 / s8 -1
    a[1][k] = uint8_t(k * 37 + 5);
  }
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 12; ++j)
      b[k][j] = j < 4 ? 0x80 : uint8_t(k * 53 + j * 11); // s8 -128 / u8 128
  for (const Op &op : ops) {
    SCOPED_TRACE(op.name);
    Snippet s([&](CodeGenerator &g) {
      g.ldtilecfg(g.ptr[rdi]);
      g.mov(rax, 16);
      g.tileloadd(tmm3, g.ptr[rsi + rax]);
      g.mov(rax, 12);
      g.tileloadd(tmm2, g.ptr[rdx + rax]);
      g.tileloadd(tmm1, g.ptr[rcx + rax]);
      (g.*op.emit)(tmm1, tmm3, tmm2);
      g.tilestored(g.ptr[rcx + rax], tmm1);
      g.ret();
    });
    int32_t c[2][3] = {{std::numeric_limits<int32_t>::min() + 5,
                        std::numeric_limits<int32_t>::max() - 9, 0},
                       {std::numeric_limits<int32_t>::max(), -7,
                        std::numeric_limits<int32_t>::min()}};
    int32_t want[2][3];
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 3; ++n) {
        int64_t s64 = 0;
        for (int k = 0; k < 16; ++k) {
          const uint8_t x = a[m][k], y = b[k / 4][4 * n + k % 4];
          s64 += int64_t(op.a_signed ? int8_t(x) : x) *
                 (op.b_signed ? int8_t(y) : y);
        }
        want[m][n] = int32_t(uint32_t(c[m][n]) + uint32_t(s64));
      }
    ASSERT_EQ(runner.run([&] { s.fn<Fn4>()(cfg.bytes, a, b, c); }), "");
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 3; ++n)
        EXPECT_EQ(c[m][n], want[m][n]) << "C[" << m << "][" << n << "]";
  }
}

TEST(AmxEmulator, WrongTileStrideIsCaught) {
  AmxRunner runner;
  HYC_REQUIRE_AMX_RUNNER(runner);
  // A B panel row is 128 bytes; loading it with the 64-byte stride a wrong
  // register or constant would give reads other data, and the dot product
  // against the scalar reference shows it.
  TileCfg cfg;
  cfg.set(0, 1, 64).set(4, 1, 16).set(6, 4, 64);
  Snippet s([](CodeGenerator &g) {
    g.ldtilecfg(g.ptr[rdi]);
    g.mov(rax, 0);
    g.tileloadd(tmm4, g.ptr[rsi + rax]);
    g.tileloadd(tmm6, g.ptr[rdx + rcx]); // rcx: the stride under test
    g.tilezero(tmm0);
    g.tdpbusd(tmm0, tmm4, tmm6);
    g.mov(rax, 64);
    g.tilestored(g.ptr[r8 + rax], tmm0);
    g.ret();
  });
  using Fn =
      void (*)(const void *, const void *, const void *, int64_t, void *);
  uint8_t a[16];
  int8_t b[4 * 128];
  for (int i = 0; i < 16; ++i)
    a[i] = uint8_t(3 * i + 1);
  for (int i = 0; i < 4 * 128; ++i)
    b[i] = int8_t(i % 251 - 120);
  int32_t want[16];
  for (int n = 0; n < 16; ++n) {
    want[n] = 0;
    for (int k = 0; k < 16; ++k)
      want[n] += a[k] * b[(k / 4) * 128 + 4 * n + k % 4];
  }
  for (int64_t stride : {128, 64}) {
    int32_t c[16] = {};
    ASSERT_EQ(runner.run([&] { s.fn<Fn>()(cfg.bytes, a, b, stride, c); }), "");
    const bool same = std::memcmp(c, want, sizeof(c)) == 0;
    EXPECT_EQ(same, stride == 128) << "stride " << stride;
  }
}

TEST(AmxEmulator, RefusesWhatACpuRefuses) {
  AmxRunner runner;
  HYC_REQUIRE_EMULATED_AMX(runner);
  TileCfg good;
  good.set(0, 2, 16).set(1, 2, 16).set(4, 2, 16).set(6, 4, 16);
  TileCfg rows17 = good, colsb65 = good, reserved = good, half = good,
          palette2 = good, tile8 = good;
  rows17.set(2, 17, 64);
  colsb65.set(2, 4, 65);
  reserved.bytes[5] = 1;
  half.set(3, 0, 8);
  palette2.bytes[0] = 2;
  tile8.bytes[32] = 4; // colsb of tmm8
  // rdi: configuration, rsi: 4 KiB of readable memory.
  auto with = [](const std::function<void(CodeGenerator &)> &then) {
    return [then](CodeGenerator &g) {
      g.ldtilecfg(g.ptr[rdi]);
      g.mov(rax, 16);
      then(g);
      g.ret();
    };
  };
  auto config_only = [](CodeGenerator &g) {
    g.ldtilecfg(g.ptr[rdi]);
    g.ret();
  };
  const struct {
    const char *what;
    const TileCfg *cfg;
    std::function<void(CodeGenerator &)> body;
    std::vector<const char *> words;
  } cases[] = {
      {"load before any configuration",
       &good,
       [](CodeGenerator &g) {
         g.tilerelease();
         g.mov(rax, 16);
         g.tileloadd(tmm0, g.ptr[rsi + rax]);
         g.ret();
       },
       {"#UD", "tileloadd tmm0, [rsi+rax*1]", "no tile configuration"}},
      {"rows > 16", &rows17, config_only, {"#GP", "ldtilecfg", "rows=17"}},
      {"colsb > 64", &colsb65, config_only, {"#GP", "colsb=65"}},
      {"reserved byte", &reserved, config_only, {"#GP", "reserved byte 5"}},
      {"rows 0, colsb 8", &half, config_only, {"#GP", "tmm3 has rows=0"}},
      {"palette 2", &palette2, config_only, {"#GP", "palette 2"}},
      {"a ninth tile", &tile8, config_only, {"#GP", "byte 32"}},
      {"unconfigured tile",
       &good,
       with([](CodeGenerator &g) { g.tileloadd(tmm5, g.ptr[rsi + rax]); }),
       {"#UD", "tmm5 is not configured"}},
      {"K mismatch",
       &good,
       with([](CodeGenerator &g) { g.tdpbf16ps(tmm0, tmm4, tmm1); }),
       {"#UD", "tdpbf16ps tmm0, tmm4, tmm1", "K mismatch"}},
      {"M mismatch",
       &good,
       with([](CodeGenerator &g) { g.tdpbusd(tmm6, tmm4, tmm1); }),
       {"#UD", "M mismatch"}},
      {"same tile twice",
       &good,
       with([](CodeGenerator &g) { g.tdpbusd(tmm0, tmm4, tmm4); }),
       {"#UD", "must differ"}},
      {"no SIB byte",
       &good,
       with([](CodeGenerator &g) { // tileloadd tmm0, [rsi]: no SIB
         for (uint8_t b : {0xC4, 0xE2, 0x7B, 0x4B, 0x06})
           g.db(b);
       }),
       {"#UD", "SIB"}},
      {"read past readable memory",
       &good,
       with([](CodeGenerator &g) {
         g.mov(rax, 4096);
         g.tileloadd(tmm0, g.ptr[rsi + rax]); // row 1 is on the guard page
       }),
       {"SIGSEGV", "memory fault", "during tileloadd tmm0"}},
      {"an instruction that is not AMX",
       &good,
       with([](CodeGenerator &g) { g.ud2(); }),
       {"not an AMX instruction"}},
  };
  GuardedBuffer mem(4096);
  for (const auto &c : cases) {
    SCOPED_TRACE(c.what);
    Snippet s(c.body);
    const std::string error = runner.run(
        [&] { s.fn<Fn4>()(c.cfg->bytes, mem.data(), nullptr, nullptr); });
    for (const char *w : c.words)
      EXPECT_NE(error.find(w), std::string::npos)
          << "'" << w << "' not in: " << error;
  }
}

} // namespace
} // namespace hyc::codegen::test
