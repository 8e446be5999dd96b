// Grouped integer brgemm kernels (s8 x u4 / u8 codes with fp16 group scales
// and mins, brgemm.h "Grouped integer kernels") against a scalar reference
// that follows the header's order with std::fma, compared BIT-EXACTLY: every
// m in 1..m_max, groups of 16, 32 and 128, K of 1, 2 and 32 groups, symmetric
// and asymmetric, zero-init / accumulate / bias, code and activation
// extremes. Plus the packer (unpacked back), the quantizer's error bound and
// the descriptor checks. Two-level scales and code books:
// brgemm_grouped_two_level_test.cpp.
#include "codegen_test_util.h"
#include "grouped_test_util.h"

#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace hyc::codegen::test {
namespace {

constexpr int kCols = kGroupedCols;

void check_grid(Isa isa) {
  const int rows =
      make_grouped_brgemm_desc(isa, DataType::u4, 128, 32, false).m_max;
  uint32_t seed = 1;
  for (int bits : {4, 8})
    for (int group : {16, 32, 128})
      for (bool asym : {false, true})
        for (int k : {group, 2 * group, group == 128 ? 4096 : 32 * group}) {
          const Problem p =
              make_problem(grouped(bits, group, 0, asym), k, rows,
                           k == group ? 27 : 32, Fill::random, seed++);
          for (int variant = 0; variant < 4; ++variant) {
            check_kernel(isa, p, variant & 1, variant & 2);
            if (::testing::Test::HasFatalFailure())
              return;
          }
        }
}

void check_extremes(Isa isa) {
  const int rows =
      make_grouped_brgemm_desc(isa, DataType::u8, 128, 32, false).m_max;
  uint32_t seed = 100;
  for (int bits : {4, 8})
    for (bool asym : {false, true})
      for (int group : {32, 128}) {
        const Problem p = make_problem(grouped(bits, group, 0, asym),
                                       2 * group, rows, 32, Fill::extremes,
                                       seed++);
        check_kernel(isa, p, true, true);
        if (::testing::Test::HasFatalFailure())
          return;
      }
}

TEST(BrgemmGroupedAvx512Vnni, BitExactAllRowsGroupsLayouts) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_grid(Isa::avx512_vnni);
}

TEST(BrgemmGroupedAvx512Vnni, BitExactAtCodeAndActivationExtremes) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_extremes(Isa::avx512_vnni);
}

TEST(BrgemmGroupedAvx2, BitExactAllRowsGroupsLayouts) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_grid(Isa::avx2);
}

TEST(BrgemmGroupedAvx2, BitExactAtCodeAndActivationExtremes) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_extremes(Isa::avx2);
}

TEST(BrgemmGroupedAmx, AmxHostsRunTheVnniKernel) {
  const BrgemmDesc d =
      make_grouped_brgemm_desc(Isa::amx, DataType::u4, 4096, 128, true);
  EXPECT_EQ(d.isa, Isa::avx512_vnni);
  EXPECT_GT(d.m_max, 0);
  EXPECT_EQ(validate_brgemm(d), "");
}

TEST(BrgemmGrouped, NamesSayGroupAndAsymmetry) {
  BrgemmDesc d =
      make_grouped_brgemm_desc(Isa::avx512_vnni, DataType::u4, 4096, 128, true);
  EXPECT_EQ(brgemm_name(d), "brgemm_s8u4f32_g128a_6x32x4096_avx512vnni");
  d = make_grouped_brgemm_desc(Isa::avx2, DataType::u8, 512, 32, false, true,
                               Epilogue::bias);
  EXPECT_EQ(brgemm_name(d), "brgemm_s8u8f32_g32_2x32x512_avx2_acc_bias");
  EXPECT_EQ(d.b_layout, BLayout::u8_grouped);
  EXPECT_STREQ(b_layout_name(BLayout::u4_grouped), "u4_grouped");
  EXPECT_STREQ(data_type_name(DataType::u4), "u4");
}

TEST(BrgemmGrouped, RejectsBadDescriptors) {
  const BrgemmDesc good =
      make_grouped_brgemm_desc(Isa::avx512_vnni, DataType::u4, 256, 128, false);
  ASSERT_EQ(validate_brgemm(good), "");
  auto expect_error = [](BrgemmDesc d, const char *part) {
    const std::string e = validate_brgemm(d);
    EXPECT_NE(e.find(part), std::string::npos) << "error: '" << e << "'";
    EXPECT_FALSE(generate_brgemm(d));
  };
  BrgemmDesc d = good;
  d.group = 0;
  expect_error(d, "group 0 must be a positive multiple of 16");
  d.group = 24;
  expect_error(d, "group 24 must be a positive multiple of 16");
  d = good;
  d.k = 320;
  expect_error(d, "group 128 does not divide K=320");
  d = good;
  d.a_type = DataType::u8;
  expect_error(d, "take s8 activations, found A=u8");
  d = good;
  d.n_block = 64;
  expect_error(d, "N block 32, found 64");
  d = good;
  d.isa = Isa::amx;
  expect_error(d, "no amx generator for grouped u4");
  d = good;
  d.isa = Isa::avx512_bf16;
  expect_error(d, "no avx512bf16 generator for grouped u4");
  d = good;
  d.c_type = DataType::s32;
  expect_error(d, "s8 A and f32 C");
  d = good;
  d.b_layout = BLayout::s8_vnni4;
  expect_error(d, "does not match B type u4");
  BrgemmDesc plain = make_brgemm_desc(Isa::avx512_vnni, DataType::u8,
                                      DataType::s8, DataType::f32, 256);
  plain.group = 128;
  expect_error(plain, "ungrouped layout s8_vnni4");
}

TEST(PackGrouped, UnpacksToTheOriginalCodesScalesAndPadding) {
  for (int bits : {4, 8})
    for (bool asym : {false, true}) {
      SCOPED_TRACE("bits=" + std::to_string(bits) + (asym ? " asym" : ""));
      const int n = 45, k = 96, group = 32, groups = k / group;
      std::mt19937 rng(bits * 10 + asym);
      std::vector<uint8_t> codes(size_t(n) * (k + 5));
      std::vector<uint16_t> scales(size_t(n) * groups), mins(scales.size());
      for (uint8_t &c : codes)
        c = uint8_t(rng() % (1u << bits));
      for (size_t i = 0; i < scales.size(); ++i) {
        scales[i] = uint16_t(rng() & 0x7BFF);
        mins[i] = uint16_t(rng() & 0xFBFF);
      }
      const PackedB p =
          pack_b_grouped(codes.data(), n, k, k + 5, bits, group, scales.data(),
                         asym ? mins.data() : nullptr);
      EXPECT_EQ(p.layout,
                bits == 4 ? BLayout::u4_grouped : BLayout::u8_grouped);
      EXPECT_EQ(p.n_panels, 2);
      EXPECT_EQ(p.panel_bytes, grouped_panel_bytes(bits, k, group, asym));
      EXPECT_EQ(p.panel_bytes, groups * (group / 4 * (bits == 4 ? 64 : 128) +
                                         (asym ? 128 : 64)));
      for (int64_t panel = 0; panel < 2; ++panel) {
        const GroupedWeights u = unpack_panel(p, panel);
        for (int c = 0; c < kCols; ++c) {
          const int col = int(panel) * kCols + c;
          for (int kk = 0; kk < k; ++kk) {
            const int want = col < n ? codes[size_t(col) * (k + 5) + kk]
                                     : (asym ? 0 : 1 << (bits - 1));
            ASSERT_EQ(u.codes[size_t(c * k + kk)], want)
                << "col " << col << " k " << kk;
          }
          for (int g = 0; g < groups; ++g) {
            const size_t e = size_t(c * groups + g),
                         src = size_t(col * groups + g);
            EXPECT_EQ(u.scales[e], col < n ? scales[src] : 0) << "col " << col;
            EXPECT_EQ(u.mins[e], col < n && asym ? mins[src] : 0)
                << "col " << col;
          }
        }
      }
    }
}

TEST(PackGrouped, RejectsCodesTooWideAndBadGroups) {
  std::vector<uint8_t> codes(32 * 32, 3);
  std::vector<uint16_t> scales(32, 0x3C00);
  codes[5] = 16;
  EXPECT_THROW(
      pack_b_grouped(codes.data(), 32, 32, 32, 4, 32, scales.data(), nullptr),
      std::invalid_argument);
  EXPECT_NO_THROW(
      pack_b_grouped(codes.data(), 32, 32, 32, 8, 32, scales.data(), nullptr));
  EXPECT_THROW(
      pack_b_grouped(codes.data(), 32, 32, 32, 8, 24, scales.data(), nullptr),
      std::invalid_argument);
  EXPECT_THROW(
      pack_b_grouped(codes.data(), 32, 32, 32, 6, 32, scales.data(), nullptr),
      std::invalid_argument);
}

TEST(Fp16, RoundTripsAndRoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) // NaN payloads: skip
      continue;
    ASSERT_EQ(f32_to_f16(f16_to_f32(uint16_t(h))), h) << std::hex << h;
  }
  EXPECT_EQ(f32_to_f16(1.f + std::ldexp(1.f, -11)), 0x3C00); // tie -> even
  EXPECT_EQ(f32_to_f16(1.f + 3 * std::ldexp(1.f, -11)), 0x3C02);
  EXPECT_EQ(f32_to_f16(65519.f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.f), 0x7C00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.f, -25)), 0x0000); // tie -> even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(3.f, -25)), 0x0002);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.f, -24));
}

// Derived bound: scales and mins are rounded up, so the exact quotient is
// inside the code range and round-to-nearest misses by at most half a step.
TEST(QuantizeGrouped, ErrorWithinHalfAScaleAndCodesInRange) {
  const int n = 7, k = 256, group = 32, groups = k / group;
  std::mt19937 rng(7);
  std::vector<float> w(size_t(n) * k);
  for (size_t i = 0; i < w.size(); ++i) {
    const int row = int(i / k);
    w[i] = uniform(rng) * std::ldexp(1.f, row * 3 - 12); // 2^-12 .. 2^6
    if (row == 5)
      w[i] = std::fabs(w[i]) + 3.f; // all positive: negative min
  }
  std::fill(w.begin() + 6 * k, w.begin() + 6 * k + group, 0.f); // zero group
  auto amaxOf = [&](int r, int kk) {
    double m = 0;
    for (int j = kk / group * group; j < (kk / group + 1) * group; ++j)
      m = std::max(m, std::fabs(double(w[size_t(r) * k + j])));
    return m;
  };
  for (int bits : {4, 8})
    for (bool asym : {false, true}) {
      SCOPED_TRACE("bits=" + std::to_string(bits) + (asym ? " asym" : ""));
      std::vector<uint8_t> codes(w.size());
      std::vector<uint16_t> scales(size_t(n) * groups), mins(scales.size());
      quantize_grouped(w.data(), n, k, k, bits, group, asym, codes.data(),
                       scales.data(), mins.data());
      const int zp = 1 << (bits - 1);
      for (int r = 0; r < n; ++r)
        for (int kk = 0; kk < k; ++kk) {
          const size_t e = size_t(r) * k + kk,
                       gi = size_t(r) * groups + kk / group;
          ASSERT_LT(codes[e], 1 << bits);
          const double s = f16_to_f32(scales[gi]);
          const double deq = asym ? s * codes[e] - f16_to_f32(mins[gi])
                                  : s * (int(codes[e]) - zp);
          // Round to nearest: half a step. 4-bit symmetric scales put the
          // largest magnitude on q = -8 (Q4_0's convention), so an element
          // of the other sign as large clamps to q = 7: one step, plus the
          // fp16 rounding of the scale (2^-11 relative, times 8 steps).
          const bool clampable = !asym && bits == 4 && codes[e] == (1 << bits) - 1;
          const double bound =
              clampable ? std::fabs(s) * (1 + 8 * 0x1p-11) : std::fabs(s) / 2;
          ASSERT_LE(std::fabs(double(w[e]) - deq), bound)
              << "w[" << r << "][" << kk << "]=" << w[e] << " scale " << s;
          if (!asym && bits == 4 && w[e] != 0 && std::fabs(double(w[e])) == amaxOf(r, kk))
            EXPECT_EQ(codes[e], 0) << "the largest magnitude is q = -8";
        }
      // The zero group: scale 0, codes at the zero point (0 when asymmetric).
      EXPECT_EQ(scales[size_t(6) * groups], 0);
      EXPECT_EQ(codes[size_t(6) * k], asym ? 0 : zp);
    }
}

TEST(QuantizeGrouped, FeedsTheKernelThroughPackUnchanged) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  // A quantized weight matrix, packed, run: matches the reference on the
  // quantizer's own codes and scales.
  const int k = 256, group = 64;
  std::mt19937 rng(11);
  std::vector<float> w(size_t(kCols) * k);
  for (float &v : w)
    v = uniform(rng);
  for (bool asym : {false, true}) {
    Problem p = make_problem(grouped(4, group, 0, asym), k, 6, 32,
                             Fill::random, 5);
    quantize_grouped(w.data(), kCols, k, k, 4, group, asym, p.w.codes.data(),
                     p.w.scales.data(), p.w.mins.data());
    check_kernel(Isa::avx512_vnni, p, false, false);
  }
}

} // namespace
} // namespace hyc::codegen::test
