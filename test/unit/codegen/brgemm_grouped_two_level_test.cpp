// Grouped integer kernels with two-level scales (a super-block's fp16 d and
// dmin times each group's int8 sub-scale and uint8 sub-min, as GGUF
// K-quants and AWQ store them) and with the IQ4_NL code book, against the
// scalar reference of grouped_test_util (brgemm.h's order, std::fma),
// compared BIT-EXACTLY: every m in 1..m_max, u4 and u8, groups of 16 and 32,
// super-blocks of 128 and 256, symmetric and asymmetric, code book one-level
// and two-level, zero-init / accumulate / bias, one and several
// super-blocks, sub-scale / sub-min / code / activation extremes, and each
// GGUF format at its own code range. Plus the two-level packer (unpacked
// back, padding exactly zero), names and the descriptor checks.
#include "amx_trap.h"
#include "codegen_test_util.h"
#include "grouped_test_util.h"

#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace hyc::codegen::test {
namespace {

/// Every two-level format of the grid: u4 and u8, groups of 16 and 32,
/// super-blocks of 128 and 256, symmetric and asymmetric, and the code book
/// (u4, symmetric); then one group per super-block (AWQ's q4z128: a group
/// of 128 whose int32 sums span 32 K quads before their one fold).
std::vector<GroupedFormat> two_level_formats() {
  std::vector<GroupedFormat> out;
  for (int bits : {4, 8})
    for (int group : {16, 32})
      for (int super : {128, 256}) {
        for (bool asym : {false, true})
          out.push_back(grouped(bits, group, super, asym));
        if (bits == 4)
          out.push_back(grouped(bits, group, super, false, Codebook::iq4nl));
      }
  out.push_back(grouped(4, 128, 128, true));
  return out;
}

int rows_of(Isa isa) {
  return make_grouped_brgemm_desc(isa, grouped(4, 32, 256), 256).m_max;
}

/// Every format at K of one and of three super-blocks, all four epilogue
/// variants (a partial panel at the smaller K).
void check_two_level_grid(Isa isa, const KernelRun &run = {}) {
  uint32_t seed = 1000;
  for (const GroupedFormat &f : two_level_formats())
    for (int blocks : {1, 3}) {
      const int k = int(f.super_group) * blocks;
      const Problem p = make_problem(f, k, rows_of(isa), blocks == 1 ? 27 : 32,
                                     Fill::random, seed++);
      for (int variant = 0; variant < 4; ++variant) {
        check_kernel(isa, p, variant & 1, variant & 2, run);
        if (::testing::Test::HasFatalFailure())
          return;
      }
    }
}

void check_two_level_extremes(Isa isa, const KernelRun &run = {}) {
  uint32_t seed = 2000;
  for (const GroupedFormat &f : two_level_formats()) {
    const Problem p = make_problem(f, 2 * int(f.super_group), rows_of(isa), 32,
                                   Fill::extremes, seed++);
    check_kernel(isa, p, true, true, run);
    if (::testing::Test::HasFatalFailure())
      return;
  }
}

/// IQ4_NL: the code book with one-level fp16 scales.
void check_one_level_codebook(Isa isa, const KernelRun &run = {}) {
  uint32_t seed = 3000;
  for (int group : {16, 32})
    for (int k : {group, 2 * group, 32 * group})
      for (Fill fill : {Fill::random, Fill::extremes}) {
        const Problem p =
            make_problem(grouped(4, group, 0, false, Codebook::iq4nl), k,
                         rows_of(isa), k == group ? 21 : 32, fill, seed++);
        for (int variant = 0; variant < 4; ++variant) {
          check_kernel(isa, p, variant & 1, variant & 2, run);
          if (::testing::Test::HasFatalFailure())
            return;
        }
      }
}

/// A GGUF (or AWQ) format at the ranges its blocks store: codes in
/// [code_lo, code_hi], sub-scales in [sc_lo, sc_hi], sub-mins up to m_hi.
struct GgufCase {
  const char *name;
  GroupedFormat f;
  int code_lo, code_hi, sc_lo, sc_hi, m_hi;
};

const GgufCase kGgufCases[] = {
    // 6-bit scales and mins, nibbles.
    {"Q4_K", grouped(4, 32, 256, true), 0, 15, 0, 63, 63},
    // 5-bit codes held as u8.
    {"Q5_K", grouped(8, 32, 256, true), 0, 31, 0, 63, 63},
    // q in 0..63 stored as q + 96, so zero point 128 subtracts q's 32.
    {"Q6_K", grouped(8, 16, 256, false), 96, 159, -128, 127, 0},
    // ls - 32 in -32..31, code book indices.
    {"IQ4_XS", grouped(4, 32, 256, false, Codebook::iq4nl), 0, 15, -32, 31, 0},
    // d = dmin = the group's fp16 scale, sc = 1, m = the zero point.
    {"AWQ", grouped(4, 32, 128, true), 0, 15, 1, 1, 15},
};

void check_gguf_formats(Isa isa, const KernelRun &run = {}) {
  uint32_t seed = 4000;
  for (const GgufCase &c : kGgufCases) {
    SCOPED_TRACE(c.name);
    Problem p = make_problem(c.f, 1024, rows_of(isa), 32, Fill::random, seed++);
    GroupedWeights &w = p.w;
    for (uint8_t &code : w.codes)
      code = uint8_t(c.code_lo + code % (c.code_hi - c.code_lo + 1));
    for (size_t e = 0; e < w.sc.size(); ++e) {
      w.sc[e] = int8_t(c.sc_lo + (uint8_t(w.sc[e]) % (c.sc_hi - c.sc_lo + 1)));
      w.m[e] = c.f.asymmetric ? uint8_t(w.m[e] % (c.m_hi + 1)) : 0;
    }
    if (std::string(c.name) == "AWQ")
      w.dmin = w.d;
    check_kernel(isa, p, false, false, run);
    check_kernel(isa, p, true, true, run);
    if (::testing::Test::HasFatalFailure())
      return;
  }
}

TEST(BrgemmGroupedTwoLevelAvx512Vnni, BitExactAllRowsFormats) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_two_level_grid(Isa::avx512_vnni);
}

TEST(BrgemmGroupedTwoLevelAvx512Vnni, BitExactAtExtremes) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_two_level_extremes(Isa::avx512_vnni);
}

TEST(BrgemmGroupedTwoLevelAvx512Vnni, OneLevelCodebookBitExact) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_one_level_codebook(Isa::avx512_vnni);
}

TEST(BrgemmGroupedTwoLevelAvx512Vnni, GgufFormatsAtTheirRanges) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_gguf_formats(Isa::avx512_vnni);
}

TEST(BrgemmGroupedTwoLevelAvx2, BitExactAllRowsFormats) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_two_level_grid(Isa::avx2);
}

TEST(BrgemmGroupedTwoLevelAvx2, BitExactAtExtremes) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_two_level_extremes(Isa::avx2);
}

TEST(BrgemmGroupedTwoLevelAvx2, OneLevelCodebookBitExact) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_one_level_codebook(Isa::avx2);
}

TEST(BrgemmGroupedTwoLevelAvx2, GgufFormatsAtTheirRanges) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_gguf_formats(Isa::avx2);
}

// AMX (tdpbsud): natively where the host runs AMX, else on the emulated
// tile machine (amx_trap.h).
TEST(BrgemmGroupedTwoLevelAmx, BitExactAllRowsFormats) {
  AmxRunner amx;
  HYC_REQUIRE_AMX_RUNNER(amx);
  check_two_level_grid(Isa::amx, through_amx(amx));
  report_amx(amx);
}

TEST(BrgemmGroupedTwoLevelAmx, BitExactAtExtremes) {
  AmxRunner amx;
  HYC_REQUIRE_AMX_RUNNER(amx);
  check_two_level_extremes(Isa::amx, through_amx(amx));
  report_amx(amx);
}

TEST(BrgemmGroupedTwoLevelAmx, OneLevelCodebookBitExact) {
  AmxRunner amx;
  HYC_REQUIRE_AMX_RUNNER(amx);
  check_one_level_codebook(Isa::amx, through_amx(amx));
  report_amx(amx);
}

TEST(BrgemmGroupedTwoLevelAmx, GgufFormatsAtTheirRanges) {
  AmxRunner amx;
  HYC_REQUIRE_AMX_RUNNER(amx);
  check_gguf_formats(Isa::amx, through_amx(amx));
  report_amx(amx);
}

TEST(BrgemmGroupedTwoLevel, NamesSaySuperGroupAndCodebook) {
  EXPECT_EQ(brgemm_name(make_grouped_brgemm_desc(
                Isa::avx512_vnni, grouped(4, 32, 256, true), 4096)),
            "brgemm_s8u4f32_g32s256a_6x32x4096_avx512vnni");
  EXPECT_EQ(brgemm_name(make_grouped_brgemm_desc(Isa::avx2, grouped(8, 16, 256),
                                                 512, true, Epilogue::bias)),
            "brgemm_s8u8f32_g16s256_2x32x512_avx2_acc_bias");
  EXPECT_EQ(
      brgemm_name(make_grouped_brgemm_desc(
          Isa::avx512_vnni, grouped(4, 32, 0, false, Codebook::iq4nl), 4096)),
      "brgemm_s8u4f32_g32_iq4_6x32x4096_avx512vnni");
  EXPECT_EQ(
      brgemm_name(make_grouped_brgemm_desc(
          Isa::avx512_vnni, grouped(4, 32, 256, false, Codebook::iq4nl), 4096)),
      "brgemm_s8u4f32_g32s256_iq4_6x32x4096_avx512vnni");
  EXPECT_STREQ(codebook_name(Codebook::iq4nl), "iq4nl");
}

TEST(BrgemmGroupedTwoLevel, RejectsBadDescriptors) {
  const BrgemmDesc good = make_grouped_brgemm_desc(
      Isa::avx512_vnni, grouped(4, 32, 256, true), 512);
  ASSERT_EQ(validate_brgemm(good), "");
  auto expect_error = [](BrgemmDesc d, const char *part) {
    const std::string e = validate_brgemm(d);
    EXPECT_NE(e.find(part), std::string::npos) << "error: '" << e << "'";
    EXPECT_FALSE(generate_brgemm(d));
  };
  BrgemmDesc d = good;
  d.super_group = 48;
  expect_error(d, "super group 48 must be 0 (one-level scales) or a positive "
                  "multiple of group 32");
  d.super_group = -256;
  expect_error(d, "super group -256 must be 0");
  d = good;
  d.k = 384;
  expect_error(d, "super group 256 does not divide K=384");
  d = make_grouped_brgemm_desc(
      Isa::avx2, grouped(8, 32, 256, false, Codebook::iq4nl), 512);
  expect_error(d, "codebook iq4nl looks up 4-bit codes, found 8-bit codes");
  d = make_grouped_brgemm_desc(Isa::avx2,
                               grouped(4, 32, 0, true, Codebook::iq4nl), 512);
  expect_error(d, "codebook iq4nl weights are symmetric (zero point 128), "
                  "found asymmetric");
  BrgemmDesc plain = make_brgemm_desc(Isa::avx512_vnni, DataType::u8,
                                      DataType::s8, DataType::f32, 256);
  plain.super_group = 256;
  expect_error(plain,
               "super group 256 given for the ungrouped layout s8_vnni4");
  plain.super_group = 0;
  plain.codebook = Codebook::iq4nl;
  expect_error(plain, "codebook iq4nl given for the ungrouped layout s8_vnni4");
}

TEST(PackGroupedTwoLevel, PanelBytesFollowTheLayout) {
  // Q4_K: per 256 K, d and dmin (128 bytes), then 8 groups of 8 u4 quads
  // (512 bytes) and their sc / m line (64 bytes).
  EXPECT_EQ(grouped_panel_bytes(grouped(4, 32, 256, true), 512),
            2 * (128 + 8 * (512 + 64)));
  // Q6_K: d only, 16 groups of 4 u8 quads (512 bytes) + 64.
  EXPECT_EQ(grouped_panel_bytes(grouped(8, 16, 256), 256),
            64 + 16 * (512 + 64));
  // One-level formats keep their size, code book or not.
  EXPECT_EQ(grouped_panel_bytes(grouped(4, 32, 0, false, Codebook::iq4nl), 64),
            grouped_panel_bytes(4, 64, 32, false));
}

TEST(PackGroupedTwoLevel, UnpacksToTheOriginalAndPadsWithZeros) {
  for (const GroupedFormat &f : two_level_formats()) {
    SCOPED_TRACE("bits=" + std::to_string(f.bits) + " group " +
                 std::to_string(f.group) + " super " +
                 std::to_string(f.super_group) + (f.asymmetric ? " asym" : "") +
                 (f.codebook == Codebook::iq4nl ? " iq4nl" : ""));
    const int n = 45, k = 2 * int(f.super_group);
    // All 64 columns random; the packer reads the first n.
    GroupedWeights w(f, k, 64);
    std::mt19937 rng(9);
    for (uint8_t &c : w.codes)
      c = uint8_t(rng() % (1u << f.bits));
    for (size_t e = 0; e < w.sc.size(); ++e) {
      w.sc[e] = int8_t(rng());
      w.m[e] = f.asymmetric ? uint8_t(rng()) : 0;
    }
    for (size_t e = 0; e < w.d.size(); ++e) {
      w.d[e] = uint16_t(rng() & 0xFBFF);
      w.dmin[e] = f.asymmetric ? uint16_t(rng() & 0xFBFF) : 0;
    }
    const PackedB p = pack_weights(w, n);
    EXPECT_EQ(p.n_panels, 2);
    EXPECT_EQ(p.super_group, f.super_group);
    EXPECT_EQ(p.codebook, f.codebook);
    EXPECT_EQ(p.panel_bytes, grouped_panel_bytes(f, k));
    for (int64_t panel = 0; panel < 2; ++panel) {
      const GroupedWeights u = unpack_panel(p, panel);
      for (int c = 0; c < kGroupedCols; ++c) {
        const int col = int(panel) * kGroupedCols + c;
        const bool real = col < n;
        for (int kk = 0; kk < k; ++kk)
          ASSERT_EQ(u.codes[size_t(c) * k + kk],
                    real ? w.codes[size_t(col) * k + kk] : w.padding_code())
              << "col " << col << " k " << kk;
        for (int g = 0; g < w.groups(); ++g) {
          const size_t e = size_t(c) * w.groups() + g,
                       s = size_t(col) * w.groups() + g;
          ASSERT_EQ(u.sc[e], real ? w.sc[s] : 0) << "col " << col;
          ASSERT_EQ(u.m[e], real ? w.m[s] : 0) << "col " << col;
        }
        for (int b = 0; b < w.supers(); ++b) {
          const size_t e = size_t(c) * w.supers() + b,
                       s = size_t(col) * w.supers() + b;
          ASSERT_EQ(u.d[e], real ? w.d[s] : 0) << "col " << col;
          ASSERT_EQ(u.dmin[e], real ? w.dmin[s] : 0) << "col " << col;
        }
      }
    }
  }
}

TEST(PackGroupedTwoLevel, OneLevelCodebookPadsWithScaleZero) {
  const GroupedFormat f = grouped(4, 32, 0, false, Codebook::iq4nl);
  GroupedWeights w(f, 64, kGroupedCols);
  for (size_t i = 0; i < w.codes.size(); ++i)
    w.codes[i] = uint8_t(i % 16);
  std::fill(w.scales.begin(), w.scales.end(), 0x3C00);
  const PackedB p = pack_weights(w, 20);
  const GroupedWeights u = unpack_panel(p, 0);
  EXPECT_EQ(p.codebook, Codebook::iq4nl);
  for (int c = 20; c < kGroupedCols; ++c) {
    EXPECT_EQ(u.codes[size_t(c) * 64], 0) << c;
    EXPECT_EQ(u.scales[size_t(c) * 2], 0) << c;
  }
  EXPECT_EQ(u.codes[64 + 5], w.codes[64 + 5]);
}

/// The message of the std::invalid_argument fn throws ("" if none).
template <class Fn> std::string thrown(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

TEST(PackGroupedTwoLevel, RejectsBadArgumentsNamingThem) {
  const int n = 32, k = 256;
  std::vector<uint8_t> codes(size_t(n) * k, 3);
  std::vector<int8_t> sc(size_t(n) * k / 32, 1);
  std::vector<uint8_t> m(sc.size(), 2);
  std::vector<uint16_t> d(size_t(n), 0x3C00), dmin(d);
  const GroupedFormat q4k = grouped(4, 32, 256, true);
  auto pack = [&](const GroupedFormat &f, const int8_t *s, const uint8_t *mm,
                  const uint16_t *dd, const uint16_t *dm) {
    return thrown([&] {
      pack_b_grouped_two_level(codes.data(), n, k, k, f, s, mm, dd, dm);
    });
  };
  EXPECT_EQ(pack(q4k, sc.data(), m.data(), d.data(), dmin.data()), "");
  EXPECT_EQ(pack(q4k, nullptr, m.data(), d.data(), dmin.data()),
            "sub_scales is null");
  EXPECT_EQ(pack(q4k, sc.data(), m.data(), nullptr, dmin.data()),
            "d_f16 is null");
  EXPECT_EQ(pack(q4k, sc.data(), nullptr, d.data(), dmin.data()),
            "sub_mins is null (the format is asymmetric)");
  EXPECT_EQ(
      pack(grouped(4, 32, 256), sc.data(), nullptr, d.data(), dmin.data()),
      "dmin_f16 is given (the format is symmetric)");
  EXPECT_NE(
      pack(grouped(4, 32, 96, true), sc.data(), m.data(), d.data(), dmin.data())
          .find("super group 96 does not divide K=256"),
      std::string::npos);
  EXPECT_NE(
      pack(grouped(4, 32, 0, true), sc.data(), m.data(), d.data(), dmin.data())
          .find("use pack_b_grouped"),
      std::string::npos);
  EXPECT_NE(pack(grouped(8, 32, 256, false, Codebook::iq4nl), sc.data(),
                 nullptr, d.data(), nullptr)
                .find("looks up 4-bit codes"),
            std::string::npos);
  codes[size_t(5) * k + 7] = 16;
  EXPECT_EQ(pack(q4k, sc.data(), m.data(), d.data(), dmin.data()),
            "code 16 at [5][7] needs more than 4 bits");
  EXPECT_EQ(pack(grouped(8, 32, 256, true), sc.data(), m.data(), d.data(),
                 dmin.data()),
            "");
  std::vector<uint16_t> scales(sc.size(), 0x3C00);
  EXPECT_NE(thrown([&] {
              pack_b_grouped(codes.data(), n, k, k, grouped(8, 32, 256, false),
                             scales.data(), nullptr);
            }).find("use pack_b_grouped_two_level"),
            std::string::npos);
}

} // namespace
} // namespace hyc::codegen::test
