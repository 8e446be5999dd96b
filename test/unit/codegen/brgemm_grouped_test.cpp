// Grouped integer brgemm kernels (s8 x u4 / u8 codes with fp16 group scales
// and mins, brgemm.h "Grouped integer kernels") against a scalar reference
// that follows the header's order with std::fma, compared BIT-EXACTLY: every
// m in 1..m_max, groups of 32 and 128, K of 1, 2 and 32 groups (4096 for
// 128), symmetric and asymmetric, zero-init / accumulate / bias, code and
// activation extremes. Plus the packer (unpacked back), the quantizer's
// error bound and the descriptor checks.
#include "codegen_test_util.h"

#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace hyc::codegen::test {
namespace {

constexpr int kCols = 32;

/// One panel's problem: codes [32][k] (padding columns beyond n_valid hold
/// what the packer puts there), fp16 scales / mins [32][k/group], s8 A with
/// per-token scales and per-group sums.
struct Problem {
  int bits, group, k, n_valid, rows;
  bool asym;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales, mins;
  std::vector<int8_t> a;
  std::vector<int32_t> a_sum;
  std::vector<float> a_scale, bias, c_old;
  int groups() const { return k / group; }
  int zp() const { return asym ? 0 : 1 << (bits - 1); }
};

/// A scalar activation quantizer: q = round(x / s), s = max|x| / 127, and
/// a_sum[m][g] the sum of q over each group.
void quantize_activations(const std::vector<float> &x, Problem &p) {
  p.a.assign(size_t(p.rows) * p.k, 0);
  p.a_sum.assign(size_t(p.rows) * p.groups(), 0);
  p.a_scale.assign(size_t(p.rows), 0.f);
  for (int m = 0; m < p.rows; ++m) {
    float amax = 0.f;
    for (int k = 0; k < p.k; ++k)
      amax = std::max(amax, std::fabs(x[size_t(m) * p.k + k]));
    const float s = amax > 0 ? amax / 127.f : 1.f;
    p.a_scale[size_t(m)] = s;
    for (int k = 0; k < p.k; ++k) {
      const int q = int(std::nearbyint(x[size_t(m) * p.k + k] / s));
      p.a[size_t(m) * p.k + k] = int8_t(std::clamp(q, -127, 127));
      p.a_sum[size_t(m) * p.groups() + k / p.group] += p.a[size_t(m) * p.k + k];
    }
  }
}

enum class Fill { random, extremes };

Problem make_problem(int bits, int group, int k, bool asym, int rows,
                     int n_valid, Fill fill, uint32_t seed) {
  Problem p{bits, group, k,  n_valid, rows, asym, {},
            {},   {},    {}, {},      {},   {},   {}};
  std::mt19937 rng(seed);
  const int top = (1 << bits) - 1;
  p.codes.assign(size_t(kCols) * k, 0);
  p.scales.assign(size_t(kCols) * p.groups(), 0);
  p.mins.assign(size_t(kCols) * p.groups(), 0);
  for (int n = 0; n < kCols; ++n)
    for (int kk = 0; kk < k; ++kk) {
      int code = int(rng() % uint32_t(top + 1));
      if (fill == Fill::extremes) // runs of 0 and top, a few in between
        code = (kk / 3 + n) % 4 == 0 ? int(rng() % uint32_t(top + 1))
                                     : ((kk + n) % 2 ? top : 0);
      p.codes[size_t(n) * k + kk] = uint8_t(n < n_valid ? code : p.zp());
    }
  for (int n = 0; n < n_valid; ++n)
    for (int g = 0; g < p.groups(); ++g) {
      // Mixed signs and magnitudes from 2^-14 to 2^6 (normal fp16).
      const float mag =
          std::ldexp(1.f + float(rng() % 1024) / 1024.f, int(rng() % 21) - 14);
      const size_t e = size_t(n) * p.groups() + g;
      p.scales[e] = f32_to_f16(rng() % 2 ? -mag : mag);
      if (asym)
        p.mins[e] = f32_to_f16(uniform(rng) * 4.f);
    }
  std::vector<float> x(size_t(rows) * k);
  for (float &v : x)
    v = uniform(rng);
  quantize_activations(x, p);
  if (fill == Fill::extremes) // saturated activations, then the row sums
    for (int m = 0; m < rows; ++m) {
      for (int kk = 0; kk < k; ++kk)
        p.a[size_t(m) * k + kk] = (kk + m) % 3 == 0 ? 127 : int8_t(-128);
      for (int g = 0; g < p.groups(); ++g) {
        int32_t s = 0;
        for (int kk = g * group; kk < (g + 1) * group; ++kk)
          s += p.a[size_t(m) * k + kk];
        p.a_sum[size_t(m) * p.groups() + g] = s;
      }
    }
  p.bias.resize(kCols);
  p.c_old.resize(size_t(rows) * kCols);
  for (float &v : p.bias)
    v = uniform(rng);
  for (float &v : p.c_old)
    v = uniform(rng) * 8.f;
  return p;
}

/// brgemm.h's order, element by element, with std::fma for every fused op.
float reference(const Problem &p, int m, int n, bool accumulate, bool bias) {
  float acc = 0.f;
  for (int g = 0; g < p.groups(); ++g) {
    int32_t dot = 0;
    for (int kk = g * p.group; kk < (g + 1) * p.group; ++kk)
      dot += int32_t(p.a[size_t(m) * p.k + kk]) * p.codes[size_t(n) * p.k + kk];
    const int32_t sum = p.a_sum[size_t(m) * p.groups() + g];
    const float scale = f16_to_f32(p.scales[size_t(n) * p.groups() + g]);
    if (!p.asym) {
      acc = std::fma(float(dot - p.zp() * sum), scale, acc);
    } else {
      const float mn = f16_to_f32(p.mins[size_t(n) * p.groups() + g]);
      acc = std::fma(float(dot), scale, acc);
      acc = std::fma(-mn, float(sum), acc);
    }
  }
  float c = acc * p.a_scale[size_t(m)];
  if (accumulate)
    c = p.c_old[size_t(m) * kCols + n] + c;
  if (bias)
    c = c + p.bias[size_t(n)];
  return c;
}

PackedB pack(const Problem &p) {
  return pack_b_grouped(p.codes.data(), p.n_valid, p.k, p.k, p.bits, p.group,
                        p.scales.data(), p.asym ? p.mins.data() : nullptr);
}

/// Runs the kernel for every m in 1..m_max with A ending at a guard page
/// and C inside a wider buffer; every element must equal the reference's
/// bits, every element outside the block must keep its sentinel.
void check_kernel(Isa isa, const Problem &p, bool accumulate, bool bias) {
  const BrgemmDesc desc = make_grouped_brgemm_desc(
      isa, p.bits == 4 ? DataType::u4 : DataType::u8, p.k, p.group, p.asym,
      accumulate, bias ? Epilogue::bias : Epilogue::none);
  ASSERT_EQ(desc.m_max, p.rows);
  BrgemmGenResult gen = generate_brgemm(desc);
  ASSERT_TRUE(gen) << gen.error;
  SCOPED_TRACE(gen.kernel->name() + " n_valid=" + std::to_string(p.n_valid));
  const PackedB packed = pack(p);
  ASSERT_EQ(packed.panel_bytes,
            grouped_panel_bytes(p.bits, p.k, p.group, p.asym));

  const int64_t lda = p.k + 4, ldc = kCols + 7;
  for (int m = 1; m <= desc.m_max; ++m) {
    // The last row ends at the guard page: reading past K faults.
    GuardedBuffer a_buf(size_t((m - 1) * lda + p.k));
    for (int i = 0; i < m; ++i)
      std::memcpy(a_buf.data() + i * lda, &p.a[size_t(i) * p.k], size_t(p.k));
    GuardedBuffer sum_buf(size_t(m) * p.groups() * 4);
    std::memcpy(sum_buf.data(), p.a_sum.data(), size_t(m) * p.groups() * 4);
    std::vector<float> c(size_t(m + 1) * ldc, -777.f);
    for (int i = 0; i < m; ++i)
      for (int n = 0; n < kCols; ++n)
        c[size_t(i) * ldc + n] = p.c_old[size_t(i) * kCols + n];
    BrgemmPostArgs post;
    post.bias = p.bias.data();
    post.a_scale = p.a_scale.data();
    post.a_sum = reinterpret_cast<const int32_t *>(sum_buf.data());
    (*gen.kernel)(a_buf.data(), lda, packed.panel(0), c.data(), ldc, m, &post);
    int bad = 0;
    for (int i = 0; i <= m; ++i)
      for (int n = 0; n < ldc; ++n) {
        const float got = c[size_t(i) * ldc + n];
        const bool inside = i < m && n < kCols;
        const float want =
            inside ? reference(p, i, n, accumulate, bias) : -777.f;
        if (std::memcmp(&got, &want, 4) != 0 && bad++ < 3)
          ADD_FAILURE() << "m=" << m << " C[" << i << "][" << n << "] = " << got
                        << ", expected " << want
                        << (inside ? "" : " (outside the block)");
      }
    ASSERT_EQ(bad, 0) << "m=" << m;
  }
}

struct Shape {
  int bits, group;
  bool asym;
};

void check_grid(Isa isa) {
  const int rows =
      make_grouped_brgemm_desc(isa, DataType::u4, 128, 32, false).m_max;
  uint32_t seed = 1;
  for (int bits : {4, 8})
    for (int group : {32, 128})
      for (bool asym : {false, true})
        for (int k : {group, 2 * group, group == 32 ? 32 * 32 : 4096}) {
          const Problem p =
              make_problem(bits, group, k, asym, rows, k == group ? 27 : 32,
                           Fill::random, seed++);
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
        const Problem p = make_problem(bits, group, 2 * group, asym, rows, 32,
                                       Fill::extremes, seed++);
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

/// The test's own unpacker of one panel: codes [32][k], scales, mins.
void unpack(const PackedB &p, int bits, int64_t panel,
            std::vector<uint8_t> &codes, std::vector<uint16_t> &scales,
            std::vector<uint16_t> &mins) {
  const int64_t groups = p.k / p.group, quad = bits == 4 ? 64 : 128;
  const int64_t codes_bytes = p.group / 4 * quad;
  const int64_t gbytes = codes_bytes + (p.asymmetric ? 128 : 64);
  codes.assign(size_t(kCols * p.k), 0);
  scales.assign(size_t(kCols * groups), 0);
  mins.assign(size_t(kCols * groups), 0);
  const uint8_t *base = p.panel(panel);
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t *src = base + g * gbytes;
    for (int c = 0; c < kCols; ++c) {
      for (int64_t kk = 0; kk < p.group; ++kk) {
        const int64_t q = kk / 4, e = kk % 4;
        uint8_t v;
        if (bits == 8)
          v = src[q * 128 + 4 * c + e];
        else {
          const uint8_t byte = src[q * 64 + 4 * (c % 16) + e];
          v = c < 16 ? byte & 0x0F : byte >> 4;
        }
        codes[size_t(c * p.k + g * p.group + kk)] = v;
      }
      std::memcpy(&scales[size_t(c * groups + g)], src + codes_bytes + 2 * c,
                  2);
      if (p.asymmetric)
        std::memcpy(&mins[size_t(c * groups + g)],
                    src + codes_bytes + 64 + 2 * c, 2);
    }
  }
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
      std::vector<uint8_t> uc;
      std::vector<uint16_t> us, um;
      for (int64_t panel = 0; panel < 2; ++panel) {
        unpack(p, bits, panel, uc, us, um);
        for (int c = 0; c < kCols; ++c) {
          const int col = int(panel) * kCols + c;
          for (int kk = 0; kk < k; ++kk) {
            const int want = col < n ? codes[size_t(col) * (k + 5) + kk]
                                     : (asym ? 0 : 1 << (bits - 1));
            ASSERT_EQ(uc[size_t(c * k + kk)], want)
                << "col " << col << " k " << kk;
          }
          for (int g = 0; g < groups; ++g) {
            const size_t e = size_t(c * groups + g),
                         src = size_t(col * groups + g);
            EXPECT_EQ(us[e], col < n ? scales[src] : 0) << "col " << col;
            EXPECT_EQ(um[e], col < n && asym ? mins[src] : 0) << "col " << col;
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
    Problem p = make_problem(4, group, k, asym, 6, 32, Fill::random, 5);
    quantize_grouped(w.data(), kCols, k, k, 4, group, asym, p.codes.data(),
                     p.scales.data(), p.mins.data());
    check_kernel(Isa::avx512_vnni, p, false, false);
  }
}

} // namespace
} // namespace hyc::codegen::test
