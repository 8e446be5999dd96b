// Tests for DType conversions: fp16/bf16/fp8 decoding, Q8 formats, and the
// FP8-block and INT8-channel dequantization helpers.
#include "models/io/tensor.h"

#include "test_util.h"

#include <cmath>

namespace hyc::io {
namespace {

using test::asBytes;

TensorView makeView(std::string name, DType dtype, std::vector<int64_t> shape,
                    const std::vector<uint8_t> &bytes) {
  TensorView v;
  v.name = std::move(name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = bytes.data();
  v.nbytes = bytes.size();
  return v;
}

TEST(TensorTest, F16KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
}

TEST(TensorTest, F16AndBF16RoundTripEveryPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float h = f16_to_f32(static_cast<uint16_t>(bits));
    if (!std::isnan(h))
      ASSERT_EQ(f32_to_f16(h), bits) << std::hex << bits;
    float b = bf16_to_f32(static_cast<uint16_t>(bits));
    if (!std::isnan(b))
      ASSERT_EQ(f32_to_bf16(b), bits) << std::hex << bits;
  }
}

TEST(TensorTest, F32ToHalfRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next f16; ties go to even (1).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
}

TEST(TensorTest, F8E4M3DecodesEveryPattern) {
  EXPECT_EQ(f8_e4m3_to_f32(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(f8_e4m3_to_f32(0x80)));
  EXPECT_EQ(f8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  EXPECT_EQ(f8_e4m3_to_f32(0x07), 7.0f / 8 * std::ldexp(1.0f, -6));
  EXPECT_EQ(f8_e4m3_to_f32(0x08), std::ldexp(1.0f, -6)); // smallest normal
  EXPECT_EQ(f8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(f8_e4m3_to_f32(0xB8), -1.0f);
  EXPECT_EQ(f8_e4m3_to_f32(0x7E), 448.0f); // largest finite
  EXPECT_EQ(f8_e4m3_to_f32(0x78), 256.0f); // S.1111.000 is finite
  EXPECT_TRUE(std::isnan(f8_e4m3_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(f8_e4m3_to_f32(0xFF)));
  // Integer formulation: code = e:m; value = (e ? 8 + m : m) * 2^(max(e,1) -
  // 10).
  int nans = 0;
  for (int bits = 0; bits < 256; ++bits) {
    float v = f8_e4m3_to_f32(static_cast<uint8_t>(bits));
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    int e = (bits >> 3) & 0xF, m = bits & 7;
    float want =
        std::ldexp(static_cast<float>(e ? 8 + m : m), std::max(e, 1) - 10);
    ASSERT_EQ(v, bits & 0x80 ? -want : want) << bits;
    ASSERT_EQ(std::signbit(v), bits >= 0x80) << bits;
  }
  EXPECT_EQ(nans, 2);
}

TEST(TensorTest, ToF32ForPlainTypes) {
  std::vector<uint16_t> f16 = {0x3C00, 0xC000};
  std::vector<uint16_t> bf16 = {0x3F80, 0xC040};
  std::vector<int8_t> i8 = {-128, 127};
  std::vector<int32_t> i32 = {-7, 1 << 20};
  std::vector<uint8_t> f8 = {0x38, 0xC0};
  struct Case {
    DType dtype;
    std::vector<uint8_t> bytes;
    std::vector<float> want;
  } cases[] = {{DType::F16, asBytes(f16), {1.0f, -2.0f}},
               {DType::BF16, asBytes(bf16), {1.0f, -3.0f}},
               {DType::I8, asBytes(i8), {-128.0f, 127.0f}},
               {DType::I32, asBytes(i32), {-7.0f, 1048576.0f}},
               {DType::F8_E4M3, f8, {1.0f, -2.0f}}};
  for (const Case &c : cases) {
    auto out = to_f32(makeView("t", c.dtype, {2}, c.bytes));
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(*out, c.want) << dtype_name(c.dtype);
  }
}

TEST(TensorTest, Q8_0Blocks) {
  test::Bytes b;
  for (int block = 0; block < 2; ++block) {
    b.put<uint16_t>(block == 0 ? 0x3800 /*0.5*/ : 0x4000 /*2*/);
    for (int j = 0; j < 32; ++j)
      b.put<int8_t>(static_cast<int8_t>(j - 16));
  }
  auto out = to_f32(makeView("q", DType::Q8_0, {2, 32}, b.data));
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ((*out)[0], -8.0f);
  EXPECT_EQ((*out)[31], 7.5f);
  EXPECT_EQ((*out)[32], -32.0f);
  EXPECT_EQ((*out)[63], 30.0f);
}

TEST(TensorTest, Q8GroupedStraddlesRows) {
  // 3x4 tensor, groups of 6: the first group covers row 0 and half of row 1.
  std::vector<int8_t> q = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> scales = {0.5f, 2.0f};
  auto qb = asBytes(q), sb = asBytes(scales);
  TensorView v = makeView("g", DType::Q8_GROUPED, {3, 4}, qb);
  v.group_size = 6;
  v.group_scales = sb.data();
  auto out = to_f32(v);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ((*out)[5], 3.0f);
  EXPECT_EQ((*out)[6], 14.0f);
  EXPECT_EQ((*out)[11], 24.0f);
}

TEST(TensorTest, ToF32RejectsSizeMismatch) {
  std::vector<uint8_t> bytes(10);
  auto out = to_f32(makeView("w.bad", DType::F32, {3}, bytes));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().find("'w.bad'"), std::string::npos) << out.error();
  EXPECT_NE(out.error().find("expected 12 bytes, found 10"), std::string::npos)
      << out.error();
}

TEST(TensorTest, Fp8BlockDequant) {
  const int64_t n = 130, k = 260;      // partial blocks in both dims
  std::vector<uint8_t> w(n * k, 0x38); // all 1.0
  w[129 * k + 259] = 0xC0;             // -2.0 in the last block
  std::vector<float> s = {1, 2, 3, 4, 5, 6};
  auto sb = asBytes(s);
  auto out = dequant_fp8_block(makeView("w", DType::F8_E4M3, {n, k}, w),
                               makeView("w_scale_inv", DType::F32, {2, 3}, sb));
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ((*out)[0], 1.0f);
  EXPECT_EQ((*out)[127 * k + 255], 2.0f);
  EXPECT_EQ((*out)[127 * k + 256], 3.0f);
  EXPECT_EQ((*out)[128 * k + 0], 4.0f);
  EXPECT_EQ((*out)[128 * k + 128], 5.0f);
  EXPECT_EQ((*out)[129 * k + 259], -12.0f);

  auto bad = dequant_fp8_block(makeView("w", DType::F8_E4M3, {n, k}, w),
                               makeView("w_scale_inv", DType::F32, {3, 2}, sb));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("has shape [3, 2], expected [2, 3]"),
            std::string::npos)
      << bad.error();
}

TEST(TensorTest, Int8ChannelDequant) {
  std::vector<int8_t> w = {1, -2, 3, -4, 5, -6};
  std::vector<float> s = {0.5f, 2.0f};
  auto wb = asBytes(w), sb = asBytes(s);
  for (std::vector<int64_t> scaleShape :
       {std::vector<int64_t>{2}, std::vector<int64_t>{2, 1}}) {
    auto out = dequant_int8_channel(makeView("w", DType::I8, {2, 3}, wb),
                                    makeView("s", DType::F32, scaleShape, sb));
    ASSERT_TRUE(out.ok()) << out.error();
    EXPECT_EQ(*out, (std::vector<float>{0.5f, -1.0f, 1.5f, -8, 10, -12}));
  }
  auto bad = dequant_int8_channel(makeView("w", DType::I8, {2, 3}, wb),
                                  makeView("s", DType::F32, {1, 2}, sb));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("expected [2] or [2, 1]"), std::string::npos)
      << bad.error();
  auto wrongType = dequant_int8_channel(makeView("w", DType::F32, {2, 3}, wb),
                                        makeView("s", DType::F32, {2}, sb));
  EXPECT_FALSE(wrongType.ok());
}

} // namespace
} // namespace hyc::io
