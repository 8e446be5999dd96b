// Packing layouts: known elements land where the kernels read them, N and K
// padding is zero, s8 compensation is 128 * column sums, bf16 rounding is
// round-to-nearest-even.
#include "codegen/pack.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace hyc::codegen {
namespace {

TEST(Pack, Bf16RoundsToNearestEven) {
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  auto from_bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xC000);
  // Exactly halfway: ties go to the even neighbour.
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808000u)), 0x3F80); // down to even
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F818000u)), 0x3F82); // up to even
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808001u)), 0x3F81); // above half
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F807FFFu)), 0x3F80); // below half
  // Rounds up into the next binade and to infinity.
  EXPECT_EQ(f32_to_bf16(from_bits(0x3FFFFFFFu)), 0x4000);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F7FFFFFu)), 0x7F80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  const uint16_t nan = f32_to_bf16(from_bits(0x7F800001u)); // signalling NaN
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
  EXPECT_EQ(bits(bf16_to_f32(0x3F81)), 0x3F810000u);
}

TEST(Pack, Bf16Vnni2Layout) {
  const int64_t n = 37, k = 5, ldw = 7; // two panels, odd K, padded rows
  std::vector<uint16_t> w(n * ldw);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < ldw; ++c)
      w[r * ldw + c] = uint16_t(c < k ? 1 + r * 16 + c : 0xFFFF);
  const PackedB p = pack_b_bf16(w.data(), n, k, ldw);
  EXPECT_EQ(p.layout, BLayout::bf16_vnni2);
  EXPECT_EQ(p.n_panels, 2);
  EXPECT_EQ(p.panel_bytes, 3 * 32 * 2 * 2); // ceil(5/2) pairs
  auto at = [&](int64_t panel, int64_t kp, int64_t col, int half) {
    const uint16_t *d = reinterpret_cast<const uint16_t *>(p.panel(panel));
    return d[(kp * 32 + col) * 2 + half];
  };
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t kk = 0; kk < 6; ++kk) {
      const uint16_t want =
          (r < n && kk < k) ? uint16_t(1 + r * 16 + kk) : uint16_t(0);
      EXPECT_EQ(at(r / 32, kk / 2, r % 32, int(kk % 2)), want)
          << "n=" << r << " k=" << kk;
    }
}

TEST(Pack, Bf16FromF32MatchesBitsPacking) {
  const int64_t n = 33, k = 9;
  std::vector<float> w(n * k);
  std::vector<uint16_t> h(n * k);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = std::sin(float(i)) * 3.f;
    h[i] = f32_to_bf16(w[i]);
  }
  const PackedB a = pack_b_bf16_from_f32(w.data(), n, k, k);
  const PackedB b = pack_b_bf16(h.data(), n, k, k);
  ASSERT_EQ(a.data.size(), b.data.size());
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0);
}

TEST(Pack, S8Vnni4LayoutAndCompensation) {
  const int64_t n = 40, k = 10;
  std::vector<int8_t> w(n * k);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      w[r * k + c] = int8_t((r * 7 + c * 3) % 255 - 127);
  const PackedB p = pack_b_s8(w.data(), n, k, k);
  EXPECT_EQ(p.n_panels, 2);
  EXPECT_EQ(packed_comp_offset(k), 3 * 128);
  EXPECT_EQ(p.panel_bytes, 3 * 128 + 128);
  for (int64_t r = 0; r < 64; ++r) {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < 12; ++kk) {
      const int8_t *d = reinterpret_cast<const int8_t *>(p.panel(r / 32));
      const int8_t got = d[((kk / 4) * 32 + r % 32) * 4 + kk % 4];
      const int8_t want = (r < n && kk < k) ? w[r * k + kk] : 0;
      EXPECT_EQ(got, want) << "n=" << r << " k=" << kk;
      sum += want;
    }
    EXPECT_EQ(p.comp(r / 32)[r % 32], 128 * sum) << "n=" << r;
  }
  // A known column: n = 0 holds -127, -124, ..., (k = 0..9).
  int32_t col0 = 0;
  for (int c = 0; c < 10; ++c)
    col0 += (c * 3) % 255 - 127;
  EXPECT_EQ(p.comp(0)[0], 128 * col0);
  EXPECT_EQ(p.comp(1)[31], 0); // padding column
}

TEST(Pack, F32PanelLayout) {
  const int64_t n = 35, k = 3;
  std::vector<float> w(n * k);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(i) + 0.5f;
  const PackedB p = pack_b_f32(w.data(), n, k, k);
  EXPECT_EQ(p.panel_bytes, k * 128);
  const float *d = reinterpret_cast<const float *>(p.panel(1));
  EXPECT_EQ(d[2 * 32 + 1], w[33 * k + 2]);
  EXPECT_EQ(d[0 * 32 + 3], 0.f); // column 35: padding
}

TEST(Pack, QuantizersAreSymmetric) {
  const float w[2][4] = {{0.5f, -1.0f, 0.25f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  int8_t q[8];
  float s[2];
  quantize_s8_per_channel(&w[0][0], 2, 4, 4, q, s);
  EXPECT_FLOAT_EQ(s[0], 1.0f / 127.f);
  EXPECT_EQ(q[0], 64); // 63.5 rounds half to even
  EXPECT_EQ(q[1], -127);
  EXPECT_EQ(q[3], 0);
  EXPECT_EQ(s[1], 1.f); // all-zero row: unit scale, zero codes
  EXPECT_EQ(q[5], 0);

  const float x[4] = {2.f, -1.f, 0.f, 0.5f};
  uint8_t u[4];
  float xs;
  quantize_u8_per_token(x, 1, 4, 4, u, 4, &xs);
  EXPECT_FLOAT_EQ(xs, 2.f / 127.f);
  EXPECT_EQ(u[0], 255);
  EXPECT_EQ(u[2], 128);
  EXPECT_EQ(int(u[1]) - 128, -64); // round(-63.5) to even = -64
}

TEST(Pack, LargeBuffersAreHugePageAligned) {
  AlignedBuffer small(100), big(size_t(3) << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % (size_t(2) << 20), 0u);
  EXPECT_EQ(big.data()[big.size() - 1], 0);
}

} // namespace
} // namespace hyc::codegen
