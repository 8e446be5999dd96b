// The driver GEMM against a reference: several row blocks plus a row tail,
// a partial last panel (C is not padded), two threads, bias and int8 scales.
#include "codegen/gemm.h"
#include "codegen_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace hyc::codegen::test {
namespace {

constexpr int64_t kN = 77, kK = 67;

struct Inputs {
  std::vector<float> a, w, bias;
  explicit Inputs(int64_t m) : a(m * kK), w(kN * kK), bias(kN) {
    std::mt19937 rng(7);
    for (float &v : a)
      v = uniform(rng);
    for (float &v : w)
      v = uniform(rng);
    for (float &v : bias)
      v = uniform(rng);
  }
};

// C[m][N] with ldc = N + 3; the 3 spare columns must keep their sentinel.
void expect_sentinels(const std::vector<float> &c, int64_t m, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = kN; j < ldc; ++j)
      ASSERT_EQ(c[i * ldc + j], -7.f) << "wrote past N at " << i << "," << j;
}

// lda > K: rows of A sit lda elements apart (2048 bf16 = 4 KiB exercises
// the driver's re-striding of aliasing rows).
void run_float(Isa isa, DataType t, int64_t m, int64_t lda = kK,
               DataType wt = DataType::f32) {
  if (t == DataType::bf16)
    wt = DataType::bf16;
  Inputs in(m);
  GemmDesc d;
  d.isa = isa;
  d.a_type = t;
  d.b_type = wt;
  d.k = kK;
  d.epilogue = Epilogue::bias;
  d.threads = 2;
  std::string err;
  auto gemm = Gemm::create(d, &err);
  ASSERT_TRUE(gemm) << err;
  std::vector<uint16_t> a16(in.a.size());
  if (t == DataType::bf16)
    for (size_t i = 0; i < in.a.size(); ++i) {
      a16[i] = f32_to_bf16(in.a[i]);
      in.a[i] = bf16_to_f32(a16[i]);
    }
  if (wt == DataType::bf16)
    for (float &v : in.w)
      v = bf16_to_f32(f32_to_bf16(v));
  const PackedB w = wt == DataType::bf16
                        ? pack_b_bf16_from_f32(in.w.data(), kN, kK, kK)
                        : pack_b_f32(in.w.data(), kN, kK, kK);
  const int64_t ldc = kN + 3;
  std::vector<float> c(m * ldc, -7.f);
  const int64_t elem = t == DataType::bf16 ? 2 : 4;
  std::vector<uint8_t> a(m * lda * elem, 0xFF); // NaN outside the rows
  for (int64_t i = 0; i < m; ++i)
    std::memcpy(a.data() + i * lda * elem,
                t == DataType::bf16 ? static_cast<const void *>(&a16[i * kK])
                                    : &in.a[i * kK],
                kK * elem);
  gemm->run(a.data(), lda, w, c.data(), ldc, m, in.bias.data());
  expect_sentinels(c, m, ldc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      double s = in.bias[j], mag = std::fabs(in.bias[j]);
      for (int64_t k = 0; k < kK; ++k) {
        s += double(in.a[i * kK + k]) * in.w[j * kK + k];
        mag += std::fabs(double(in.a[i * kK + k]) * in.w[j * kK + k]);
      }
      ASSERT_NEAR(c[i * ldc + j], s, 1e-5 * mag) << i << "," << j;
    }
}

TEST(Gemm, Bf16RowBlocksAndPanelTail) {
  HYC_REQUIRE_ISA(Isa::avx512_bf16);
  run_float(Isa::avx512_bf16, DataType::bf16, 1);
  run_float(Isa::avx512_bf16, DataType::bf16, 37);
}

TEST(Gemm, Bf16RowStrideOf4KiB) {
  HYC_REQUIRE_ISA(Isa::avx512_bf16);
  run_float(Isa::avx512_bf16, DataType::bf16, 30, 2048);
}

TEST(Gemm, Fp32RowBlocksAndPanelTail) {
  HYC_REQUIRE_ISA(Isa::avx512_core);
  run_float(Isa::avx512_core, DataType::f32, 37);
}

TEST(Gemm, F32ActivationsBf16WeightsOnAvx512Core) {
  HYC_REQUIRE_ISA(Isa::avx512_core);
  run_float(Isa::avx512_core, DataType::f32, 29, kK, DataType::bf16);
  run_float(Isa::avx512_core, DataType::f32, 1, 1024, DataType::bf16);
}

TEST(Gemm, Avx2Fp32RowBlocksAndPanelTail) {
  HYC_REQUIRE_ISA(Isa::avx2);
  run_float(Isa::avx2, DataType::f32, 37);
}

TEST(Gemm, Avx2F32ActivationsBf16Weights) {
  HYC_REQUIRE_ISA(Isa::avx2);
  run_float(Isa::avx2, DataType::f32, 29, kK, DataType::bf16);
  run_float(Isa::avx2, DataType::f32, 1, 1024, DataType::bf16);
}

// W8A8 through the driver, every output against two derived bounds: the
// quantized reference in the kernel's dequantization order (the same int8
// values, an exact int32 sum, then convert, * w_scale, * a_scale, + bias;
// only contraction or reassociation by the compiler can differ: within
// 6 u (|P| + |bias|), P = acc * ws * as, u = 2^-24), and the float product
// it approximates (each operand within half a step, widened by 2^-14 for
// the fp32 rounding of x / scale).
void run_int8(Isa isa) {
  constexpr double u = 0x1p-24, halfStep = 0.5 + 0x1p-14;
  const int64_t m = 33;
  Inputs in(m);
  std::vector<int8_t> wq(kN * kK);
  std::vector<float> ws(kN), as(m);
  quantize_s8_per_channel(in.w.data(), kN, kK, kK, wq.data(), ws.data());
  std::vector<uint8_t> aq(m * kK);
  quantize_u8_per_token(in.a.data(), m, kK, kK, aq.data(), kK, as.data());
  const PackedB w = pack_b_s8(wq.data(), kN, kK, kK);

  GemmDesc d;
  d.isa = isa;
  d.a_type = DataType::u8;
  d.b_type = DataType::s8;
  d.k = kK;
  d.epilogue = Epilogue::bias;
  d.threads = 2;
  std::string err;
  auto gemm = Gemm::create(d, &err);
  ASSERT_TRUE(gemm) << err;
  const int64_t ldc = kN + 3;
  std::vector<float> c(m * ldc, -7.f);
  gemm->run(aq.data(), kK, w, c.data(), ldc, m, in.bias.data(), as.data(),
            ws.data());
  expect_sentinels(c, m, ldc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      int64_t acc = 0;
      double exact = in.bias[j], quantError = 0, products = 0;
      const double ea = as[i] * halfStep, ew = ws[j] * halfStep;
      for (int64_t k = 0; k < kK; ++k) {
        acc += (int64_t(aq[i * kK + k]) - 128) * wq[j * kK + k];
        const double x = in.a[i * kK + k], y = in.w[j * kK + k];
        exact += x * y;
        products += std::fabs(x * y);
        quantError += std::fabs(x) * ew + std::fabs(y) * ea + ea * ew;
      }
      const double rescale =
          6 * u * (std::fabs(double(acc) * ws[j] * as[i]) + std::fabs(in.bias[j])) + 1e-37;
      float want = float(acc);
      want *= ws[j];
      want *= as[i];
      want += in.bias[j];
      ASSERT_NEAR(c[i * ldc + j], want, rescale) << i << "," << j;
      // And W8A8 stays close to the float product it approximates.
      ASSERT_NEAR(c[i * ldc + j], exact, quantError + rescale + 0x1p-40 * products)
          << i << "," << j;
    }
}

TEST(Gemm, Int8W8A8MatchesQuantizedReferenceAndFloat) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  run_int8(Isa::avx512_vnni);
}

TEST(Gemm, Avx2Int8W8A8MatchesQuantizedReferenceAndFloat) {
  HYC_REQUIRE_ISA(Isa::avx2);
  run_int8(Isa::avx2);
}

TEST(Gemm, RunRejectsMismatchedOperands) {
  GemmDesc d;
  d.isa = Isa::avx512_vnni;
  d.a_type = DataType::u8;
  d.b_type = DataType::s8;
  d.k = 64;
  std::string err;
  auto gemm = Gemm::create(d, &err);
  ASSERT_TRUE(gemm) << err;
  std::vector<int8_t> wq(40 * 64, 1);
  std::vector<uint8_t> a(2 * 64, 128);
  std::vector<float> c(2 * 40), s(40, 1.f);
  const PackedB w = pack_b_s8(wq.data(), 40, 64, 64);
  EXPECT_FALSE(gemm->run(a.data(), 64, w, c.data(), 40, 2, nullptr, nullptr,
                         s.data(), &err));
  EXPECT_NE(err.find("needs a_scale and b_scale"), std::string::npos) << err;
  const PackedB w_other_k = pack_b_s8(wq.data(), 40, 60, 64);
  EXPECT_FALSE(gemm->run(a.data(), 64, w_other_k, c.data(), 40, 2, nullptr,
                         s.data(), s.data(), &err));
  EXPECT_NE(err.find("K=60"), std::string::npos) << err;
  EXPECT_FALSE(gemm->run(a.data(), 32, w, c.data(), 40, 2, nullptr, s.data(),
                         s.data(), &err));
  EXPECT_NE(err.find("lda=32"), std::string::npos) << err;
}

TEST(Gemm, RejectsUnsupportedTypes) {
  GemmDesc d;
  d.isa = Isa::avx512_vnni;
  d.a_type = DataType::bf16;
  d.k = 64;
  std::string err;
  EXPECT_FALSE(Gemm::create(d, &err));
  EXPECT_NE(err.find("no avx512vnni generator"), std::string::npos) << err;
}

} // namespace
} // namespace hyc::codegen::test
