// The AVX2 + FMA brgemm kernels (f32 x f32, f32 x bf16, u8 x s8) against the
// reference: all m in 1..m_max, K with remainders of the unroll and of the
// pair/quad (K = 1 included), padded columns, zero-init and accumulate, with
// and without the bias epilogue. The u8 x s8 kernel also against the VNNI
// kernel bit for bit, and at the values where vpmaddubsw would saturate.
#include "brgemm_check.h"
#include "codegen_test_util.h"

#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace hyc::codegen::test {
namespace {

TEST(BrgemmAvx2Fp32, AllRowsKTailsEpilogues) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_brgemm_grid(Isa::avx2, DataType::f32, DataType::f32, DataType::f32,
                    {1, 3, 4, 5, 17, 64}, {32});
}

TEST(BrgemmAvx2Bf16, F32ActivationsBf16WeightsAllRowsKTails) {
  HYC_REQUIRE_ISA(Isa::avx2);
  // Pairs per unrolled iteration: 4, so K = 8 is one iteration, 17 two plus
  // a partial pair, 131 = 16 iterations + 1 pair + a partial pair.
  check_brgemm_grid(Isa::avx2, DataType::f32, DataType::bf16, DataType::f32,
                    {1, 2, 3, 8, 14, 17, 131}, {32});
}

TEST(BrgemmAvx2U8S8, S32ExactAllRowsKTails) {
  HYC_REQUIRE_ISA(Isa::avx2);
  // Quads per unrolled iteration: 4; every K % 4 with and without full
  // iterations before it.
  check_brgemm_grid(Isa::avx2, DataType::u8, DataType::s8, DataType::s32,
                    {1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 70, 130}, {32});
}

TEST(BrgemmAvx2U8S8, F32DequantAllRowsKTailsEpilogues) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_brgemm_grid(Isa::avx2, DataType::u8, DataType::s8, DataType::f32,
                    {1, 2, 3, 16, 67, 256}, {32});
}

TEST(BrgemmAvx2U8S8, LargeKExact) {
  HYC_REQUIRE_ISA(Isa::avx2);
  check_brgemm({Isa::avx2, DataType::u8, DataType::s8, DataType::s32, 32, 4099,
                false, Epilogue::none, 32});
}

/// Runs `kernel` on m rows of A [m][k] (u8) and W [32][k] (s8); C is f32 or
/// s32 by the kernel's c_type, preset to `c_init` (bits) for accumulation.
std::vector<uint32_t> run_u8s8(const BrgemmKernel &kernel, int m,
                               const std::vector<uint8_t> &a, const PackedB &w,
                               const BrgemmPostArgs &post,
                               const std::vector<uint32_t> &c_init) {
  std::vector<uint32_t> c = c_init;
  kernel(a.data(), kernel.desc().k, w.panel(0), c.data(), 32, m, &post);
  return c;
}

// Every product at |q_a| = 128 or 127 times |q_b| = 127, signs chosen so the
// pair sums vpmaddubsw forms reach +-32512 (and would saturate if the kernel
// multiplied the biased u8 values), over the largest K validation allows:
// the int32 sums reach 65536 * 128 * 127.
TEST(BrgemmAvx2U8S8, ExtremeValuesAtMaxKDoNotSaturate) {
  HYC_REQUIRE_ISA(Isa::avx2);
  const int K = 65536;
  BrgemmGenResult gen = generate_brgemm(make_brgemm_desc(
      Isa::avx2, DataType::u8, DataType::s8, DataType::s32, K));
  ASSERT_TRUE(gen) << gen.error;
  const int M = gen.kernel->desc().m_max;
  ASSERT_EQ(M, 4);
  std::vector<uint8_t> a(size_t(M) * K);
  std::vector<int8_t> w(size_t(32) * K);
  for (int k = 0; k < K; ++k) {
    a[0 * size_t(K) + k] = 0;                     // q = -128
    a[1 * size_t(K) + k] = 255;                   // q = 127
    a[2 * size_t(K) + k] = k % 2 ? 0 : 255;       // alternating -128, 127
    a[3 * size_t(K) + k] = (k / 3) % 2 ? 1 : 254; // -127, 126
  }
  for (int n = 0; n < 32; ++n)
    for (int k = 0; k < K; ++k) {
      const int sign = n % 3 == 0 ? 1 : n % 3 == 1 ? -1 : (k % 2 ? -1 : 1);
      w[size_t(n) * K + k] = int8_t(127 * sign);
    }
  const PackedB packed = pack_b_s8(w.data(), 32, K, K);
  const BrgemmPostArgs post;
  const std::vector<uint32_t> c =
      run_u8s8(*gen.kernel, M, a, packed, post, std::vector<uint32_t>(M * 32));
  for (int i = 0; i < M; ++i)
    for (int n = 0; n < 32; ++n) {
      int64_t want = 0;
      for (int k = 0; k < K; ++k)
        want += (int64_t(a[size_t(i) * K + k]) - 128) * w[size_t(n) * K + k];
      ASSERT_EQ(int32_t(c[i * 32 + n]), want) << "at " << i << "," << n;
    }
}

// The same integer sums and the same float operations in the same order as
// the VNNI kernel: identical bits in C, with accumulation and bias.
TEST(BrgemmAvx2U8S8, MatchesVnniBitForBit) {
  HYC_REQUIRE_ISA(Isa::avx2);
  HYC_REQUIRE_ISA(Isa::avx512_vnni);
  std::mt19937 rng(99);
  for (DataType c_type : {DataType::f32, DataType::s32})
    for (int K : {3, 67, 256})
      for (bool acc : {false, true}) {
        const Epilogue ep =
            c_type == DataType::f32 ? Epilogue::bias : Epilogue::none;
        BrgemmGenResult avx2 = generate_brgemm(make_brgemm_desc(
            Isa::avx2, DataType::u8, DataType::s8, c_type, K, 32, acc, ep));
        BrgemmGenResult vnni = generate_brgemm(
            make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8,
                             c_type, K, 32, acc, ep));
        ASSERT_TRUE(avx2) << avx2.error;
        ASSERT_TRUE(vnni) << vnni.error;
        SCOPED_TRACE(avx2.kernel->name());
        const int M = avx2.kernel->desc().m_max;
        std::vector<uint8_t> a(size_t(M) * K);
        std::vector<int8_t> w(size_t(32) * K);
        for (uint8_t &v : a)
          v = uint8_t(rng() & 0xFF);
        for (int8_t &v : w)
          v = int8_t(int(rng() % 255) - 127);
        const PackedB packed = pack_b_s8(w.data(), 32, K, K);
        std::vector<float> bias(32), a_scale(M), b_scale(32);
        for (float &v : bias)
          v = uniform(rng);
        for (float &v : a_scale)
          v = 0.01f + uniform(rng) * 0.005f;
        for (float &v : b_scale)
          v = 0.01f + uniform(rng) * 0.005f;
        BrgemmPostArgs post;
        post.bias = bias.data();
        post.a_scale = a_scale.data();
        post.b_scale = b_scale.data();
        std::vector<uint32_t> c_init(size_t(M) * 32);
        for (uint32_t &v : c_init) {
          const float f = uniform(rng);
          if (c_type == DataType::f32)
            std::memcpy(&v, &f, 4);
          else
            v = uint32_t(int32_t(f * 100000));
        }
        for (int m = 1; m <= M; ++m)
          ASSERT_EQ(run_u8s8(*avx2.kernel, m, a, packed, post, c_init),
                    run_u8s8(*vnni.kernel, m, a, packed, post, c_init))
              << "m=" << m << " K=" << K;
      }
}

// Batch invariance: one row (decode) walks the whole panel in one pass,
// a block of rows walks it as two halves; every row of a full block must
// give the bits it gives alone, with accumulation into C and the bias
// epilogue, for every K tail. The fp32 families would differ in their last
// bits if the one-pass walk summed a column in another order (e.g. the
// even element of a bf16 pair before the odd one).
TEST(BrgemmAvx2, EachRowOfABlockMatchesTheRowAlone) {
  HYC_REQUIRE_ISA(Isa::avx2);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (DataType b : {DataType::f32, DataType::bf16, DataType::s8})
    for (int K : {1, 3, 5, 17, 131, 1000})
      for (bool acc : {false, true}) {
        const DataType a = b == DataType::s8 ? DataType::u8 : DataType::f32;
        BrgemmGenResult g = generate_brgemm(
            make_brgemm_desc(Isa::avx2, a, b, DataType::f32, K, 32, acc, Epilogue::bias));
        ASSERT_TRUE(g) << g.error;
        SCOPED_TRACE(g.kernel->name() + (acc ? " accumulate" : ""));
        const int M = g.kernel->desc().m_max;
        ASSERT_GE(M, 2);
        const size_t aElem = a == DataType::u8 ? 1 : 4;
        std::vector<uint8_t> A(size_t(M) * K * aElem);
        PackedB packed;
        if (b == DataType::s8) {
          std::vector<int8_t> w(size_t(32) * K);
          for (int8_t &v : w)
            v = int8_t(int(rng() % 255) - 127);
          packed = pack_b_s8(w.data(), 32, K, K);
          for (uint8_t &v : A)
            v = uint8_t(rng() & 0xFF);
        } else {
          std::vector<float> w(size_t(32) * K);
          for (float &v : w)
            v = uni(rng);
          packed = b == DataType::bf16 ? pack_b_bf16_from_f32(w.data(), 32, K, K)
                                       : pack_b_f32(w.data(), 32, K, K);
          for (size_t i = 0; i < A.size(); i += 4) {
            const float f = uni(rng);
            std::memcpy(&A[i], &f, 4);
          }
        }
        std::vector<float> bias(32), aScale(M), bScale(32), cInit(size_t(M) * 32);
        for (float &v : bias)
          v = uni(rng);
        for (float &v : aScale)
          v = 0.01f + 0.005f * uni(rng);
        for (float &v : bScale)
          v = 0.01f + 0.005f * uni(rng);
        for (float &v : cInit)
          v = uni(rng);
        BrgemmPostArgs post;
        post.bias = bias.data();
        post.a_scale = b == DataType::s8 ? aScale.data() : nullptr;
        post.b_scale = b == DataType::s8 ? bScale.data() : nullptr;
        std::vector<float> block = cInit;
        g.kernel->fn()(A.data(), K, packed.panel(0), block.data(), 32, M, &post);
        for (int i = 0; i < M; ++i) {
          std::vector<float> alone(cInit.begin() + size_t(i) * 32,
                                   cInit.begin() + size_t(i + 1) * 32);
          post.a_scale = b == DataType::s8 ? aScale.data() + i : nullptr;
          g.kernel->fn()(A.data() + size_t(i) * K * aElem, K, packed.panel(0), alone.data(), 32,
                         1, &post);
          ASSERT_EQ(std::memcmp(alone.data(), block.data() + size_t(i) * 32, 32 * 4), 0)
              << "row " << i << " alone differs from the row in a block of " << M << ", K = " << K;
        }
      }
}

TEST(BrgemmAvx2, NamesAndLimits) {
  BrgemmDesc d = make_brgemm_desc(Isa::avx2, DataType::f32, DataType::bf16,
                                  DataType::f32, 4096);
  EXPECT_EQ(brgemm_name(d), "brgemm_f32bf16f32_4x32x4096_avx2");
  d = make_brgemm_desc(Isa::avx2, DataType::u8, DataType::s8, DataType::f32,
                       512, 32, true, Epilogue::bias);
  EXPECT_EQ(brgemm_name(d), "brgemm_u8s8f32_4x32x512_avx2_acc_bias");
  EXPECT_EQ(validate_brgemm(d), "");
  d = make_brgemm_desc(Isa::avx2, DataType::u8, DataType::s8, DataType::s32,
                       65537);
  EXPECT_NE(validate_brgemm(d).find("K=65537 exceeds 65536"), std::string::npos)
      << validate_brgemm(d);
  d = make_brgemm_desc(Isa::avx2, DataType::f32, DataType::bf16, DataType::f32,
                       64, 64);
  EXPECT_NE(validate_brgemm(d).find("no avx2 generator"), std::string::npos)
      << validate_brgemm(d);
}

} // namespace
} // namespace hyc::codegen::test
