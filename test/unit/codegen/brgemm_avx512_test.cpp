// Every AVX-512 (BF16, VNNI, FP32) brgemm kernel against the reference: all
// m in 1..m_max, K with remainders of the unroll and of the pair/quad, N
// blocks of 32 and 64 with padded columns, zero-init and accumulate, with and
// without the bias epilogue. (AVX2 kernels: brgemm_avx2_test.cpp.)
#include "brgemm_check.h"
#include "codegen_test_util.h"

#include "codegen/tiles.h"

#include <gtest/gtest.h>

namespace hyc::codegen::test {
namespace {

TEST(BrgemmAvx512Bf16, AllRowsKTailsNTailsEpilogues) {
  HYC_REQUIRE_ISA(Isa::avx512_bf16);
  // Pairs per unrolled iteration: 4, so K = 8 is one iteration, 17 two plus
  // a partial pair, 131 = 16 iterations + 1 pair + a partial pair.
  check_brgemm_grid(Isa::avx512_bf16, DataType::bf16, DataType::bf16,
                    DataType::f32, {1, 2, 3, 8, 14, 17, 131}, {32, 64});
}

TEST(BrgemmAvx512Vnni, S32ExactAllRowsKTails) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_brgemm_grid(Isa::avx512_vnni, DataType::u8, DataType::s8, DataType::s32,
                    {1, 2, 3, 4, 5, 16, 19, 70, 130}, {32, 64});
}

TEST(BrgemmAvx512Vnni, F32DequantAllRowsKTailsEpilogues) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_brgemm_grid(Isa::avx512_vnni, DataType::u8, DataType::s8, DataType::f32,
                    {3, 16, 67, 256}, {32, 64});
}

TEST(BrgemmAvx512Fp32, AllRowsKTailsEpilogues) {
  HYC_REQUIRE_ISA(Isa::avx512_core);
  check_brgemm_grid(Isa::avx512_core, DataType::f32, DataType::f32,
                    DataType::f32, {1, 3, 4, 5, 17, 64}, {32, 64});
}

TEST(BrgemmAvx512CoreBf16, F32ActivationsBf16WeightsViaFma) {
  HYC_REQUIRE_ISA(Isa::avx512_core);
  check_brgemm_grid(Isa::avx512_core, DataType::f32, DataType::bf16,
                    DataType::f32, {1, 2, 3, 8, 14, 17, 131}, {32, 64});
}

TEST(BrgemmAvx512Bf16, LargeKMatchesReference) {
  HYC_REQUIRE_ISA(Isa::avx512_bf16);
  check_brgemm({Isa::avx512_bf16, DataType::bf16, DataType::bf16, DataType::f32,
                32, 1000, false, Epilogue::none, 32});
}

TEST(BrgemmAvx512Vnni, LargeKExact) {
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  check_brgemm({Isa::avx512_vnni, DataType::u8, DataType::s8, DataType::s32, 32,
                4099, false, Epilogue::none, 32});
}

TEST(Brgemm, OutOfRangeMLeavesCUntouched) {
  HYC_REQUIRE_ISA(Isa::avx512_core);
  BrgemmGenResult r = generate_brgemm(make_brgemm_desc(
      Isa::avx512_core, DataType::f32, DataType::f32, DataType::f32, 8));
  ASSERT_TRUE(r) << r.error;
  float c[32] = {1.f};
  for (int64_t m :
       {int64_t(0), int64_t(-3), int64_t(r.kernel->desc().m_max + 1)})
    (*r.kernel)(nullptr, 8, nullptr, c, 32, m);
  EXPECT_EQ(c[0], 1.f);
}

TEST(Brgemm, NamesFollowTheConvention) {
  BrgemmDesc d = make_brgemm_desc(Isa::avx512_bf16, DataType::bf16,
                                  DataType::bf16, DataType::f32, 4096);
  EXPECT_EQ(brgemm_name(d), "brgemm_bf16bf16f32_14x32x4096_avx512bf16");
  d = make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8,
                       DataType::f32, 512, 64, true, Epilogue::bias);
  EXPECT_EQ(brgemm_name(d), "brgemm_u8s8f32_6x64x512_avx512vnni_acc_bias");
  d = make_brgemm_desc(Isa::amx, DataType::bf16, DataType::bf16, DataType::f32,
                       64);
  EXPECT_EQ(brgemm_name(d), "brgemm_bf16bf16f32_32x32x64_amx");
}

TEST(Brgemm, InvalidDescriptorsSayWhy) {
  BrgemmDesc d = make_brgemm_desc(Isa::avx512_bf16, DataType::bf16,
                                  DataType::bf16, DataType::f32, 64);
  d.m_max = 15;
  EXPECT_NE(validate_brgemm(d).find("m_max=15 outside 1..14"),
            std::string::npos)
      << validate_brgemm(d);
  d = make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8,
                       DataType::s32, 64, 32, false, Epilogue::bias);
  EXPECT_NE(validate_brgemm(d).find("bias epilogue needs f32 C"),
            std::string::npos);
  d = make_brgemm_desc(Isa::amx, DataType::bf16, DataType::bf16, DataType::f32,
                       63);
  EXPECT_NE(validate_brgemm(d).find("K divisible by 2"), std::string::npos);
  d = make_brgemm_desc(Isa::avx2, DataType::bf16, DataType::bf16, DataType::f32,
                       64);
  BrgemmGenResult r = generate_brgemm(d);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("no avx2 generator"), std::string::npos) << r.error;
}

} // namespace
} // namespace hyc::codegen::test
