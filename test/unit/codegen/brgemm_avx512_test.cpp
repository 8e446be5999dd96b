// Every AVX-512 (BF16, VNNI, FP32) brgemm kernel against the reference: all
// m in 1..m_max, K with remainders of the unroll and of the pair/quad, N
// blocks of 32 and 64 with padded columns, zero-init and accumulate, with and
// without the bias epilogue. (AVX2 kernels: brgemm_avx2_test.cpp.)
#include "brgemm_check.h"
#include "codegen_test_util.h"

#include "codegen/pack.h"
#include "codegen/tiles.h"
#include "codegen/x86/brgemm_jit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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

// Two K streams (codegen/tiles.h k_streams): from K = 512 the VNNI and bf16
// kernels' bodies of up to kTwoStreamMaxRows rows can walk a panel's two K
// halves step by step, so a decode GEMV keeps two weight streams per thread
// in flight; they do when the caller asks (BrgemmPostArgs::k_streams = 2,
// the host's choice: hyrt/support/decode_streams.h), else they walk K in
// order (VNNI) or the halves one after the other (bf16, whose fp32 sums
// must not change with the body). K values: the threshold, a partial unit
// (515, 1027), steps left after the halves (1000: 250 quads = halves of 124
// + 2 left; 1027). Each kernel against the reference for every m in both
// forms; every row of a full block bit-identical to the same row alone in
// either form and with a null post (the batch-invariance contract, which
// fp32 sums break unless every body sums the same way); and the kernel
// really holds the two-stream loop (its code differs from the one-stream
// generation of the same tile). The other fp32 families keep one stream.
namespace {

struct StreamFamily {
  Isa isa;
  DataType a, b;
};

/// Every row of a full block (m_max rows) of `kernel` against the same row
/// alone, with k_streams 2, 1 and a null post (fp32 C; u8 x s8 with scales).
void expect_rows_match_the_block(const StreamFamily &f, const BrgemmKernel &kernel, int K,
                                 int M) {
  std::mt19937 rng{uint32_t(K)};
  const bool int8 = f.a == DataType::u8;
  const int a_elem = int8 ? 1 : 2;
  std::vector<uint8_t> a(size_t(M) * K * a_elem);
  PackedB packed;
  if (int8) {
    std::vector<int8_t> w(size_t(32) * K);
    for (int8_t &v : w)
      v = int8_t(int(rng() % 255) - 127);
    packed = pack_b_s8(w.data(), 32, K, K);
    for (uint8_t &v : a)
      v = uint8_t(rng() & 0xFF);
  } else {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<uint16_t> w(size_t(32) * K);
    for (uint16_t &v : w)
      v = f32_to_bf16(uniform(rng));
    packed = pack_b_bf16(w.data(), 32, K, K);
    for (size_t i = 0; i < a.size(); i += 2) {
      const uint16_t h = f32_to_bf16(uniform(rng));
      std::memcpy(&a[i], &h, 2);
    }
  }
  const std::vector<float> a_scale = dequant_scales(rng, size_t(M)),
                           b_scale = dequant_scales(rng, 32);
  BrgemmPostArgs post;
  post.a_scale = int8 ? a_scale.data() : nullptr;
  post.b_scale = int8 ? b_scale.data() : nullptr;
  std::vector<float> block(size_t(M) * 32), alone(32);
  kernel.fn()(a.data(), K, packed.panel(0), block.data(), 32, M, &post);
  for (int64_t streams : {2, 1, -1}) { // -1: a null post (bf16 only)
    if (streams < 0 && int8)
      continue;
    post.k_streams = streams;
    for (int i = 0; i < M; ++i) {
      post.a_scale = int8 ? a_scale.data() + i : nullptr;
      kernel.fn()(a.data() + size_t(i) * K * a_elem, K, packed.panel(0), alone.data(), 32, 1,
                  streams < 0 ? nullptr : &post);
      ASSERT_EQ(std::memcmp(alone.data(), block.data() + size_t(i) * 32, 32 * 4), 0)
          << "row " << i << " alone (k_streams " << streams
          << ") differs from the row in a block of " << M;
    }
  }
}

} // namespace

TEST(BrgemmAvx512, TwoKStreamsForFewRowsMatchTheReferenceAndTheFullBlock) {
  for (const BrgemmTile *t :
       {find_brgemm_tile(Isa::avx512_core, DataType::f32, DataType::f32, 32),
        find_brgemm_tile(Isa::avx512_core, DataType::f32, DataType::bf16, 32)}) {
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->k_streams, 1) << isa_name(t->isa) << " keeps one stream";
  }
  int ran = 0;
  std::string skipped;
  for (const StreamFamily &f : {StreamFamily{Isa::avx512_vnni, DataType::u8, DataType::s8},
                                StreamFamily{Isa::avx512_bf16, DataType::bf16, DataType::bf16}}) {
    SCOPED_TRACE(isa_name(f.isa));
    const BrgemmTile *tile = find_brgemm_tile(f.isa, f.a, f.b, 32);
    ASSERT_NE(tile, nullptr);
    ASSERT_EQ(tile->k_streams, 2);
    std::string note;
    if (!can_run(f.isa, &note)) {
      skipped += std::string(skipped.empty() ? "" : "; ") + note;
      continue;
    }
    ++ran;
    for (int64_t streams : {2, 0})
      for (DataType c : {DataType::f32, DataType::s32}) {
        if (c == DataType::s32 && f.a != DataType::u8)
          continue;
        SCOPED_TRACE("k_streams=" + std::to_string(streams));
        check_brgemm_grid(f.isa, f.a, f.b, c, {512, 515, 1000, 1027}, {32}, {}, streams);
        if (HasFatalFailure())
          return;
      }
    for (int K : {512, 1000, 1027}) {
      SCOPED_TRACE("K=" + std::to_string(K));
      const BrgemmDesc d = make_brgemm_desc(f.isa, f.a, f.b, DataType::f32, K);
      BrgemmGenResult two = generate_brgemm(d);
      ASSERT_TRUE(two) << two.error;
      BrgemmTile one = *tile;
      one.k_streams = 1;
      BrgemmGenResult single = f.isa == Isa::avx512_vnni ? x86::generate_avx512_vnni(d, one)
                                                         : x86::generate_avx512_bf16(d, one);
      ASSERT_TRUE(single) << single.error;
      EXPECT_FALSE(two.kernel->code_size() == single.kernel->code_size() &&
                   std::memcmp(two.kernel->code(), single.kernel->code(),
                               two.kernel->code_size()) == 0)
          << "the table's tile generated the one-stream kernel";
      ASSERT_GT(d.m_max, kTwoStreamMaxRows);
      expect_rows_match_the_block(f, *two.kernel, K, d.m_max);
      if (HasFatalFailure())
        return;
    }
    if (f.a == DataType::u8) {
      // s32 C needs no epilogue operands: a null post takes the one-stream
      // loop (the body must not read through it).
      const int K = 1027, M = 14;
      std::mt19937 rng{7};
      std::vector<int8_t> w(size_t(32) * K);
      for (int8_t &v : w)
        v = int8_t(int(rng() % 255) - 127);
      const PackedB packed = pack_b_s8(w.data(), 32, K, K);
      std::vector<uint8_t> a(size_t(M) * K);
      for (uint8_t &v : a)
        v = uint8_t(rng() & 0xFF);
      std::vector<int32_t> sums(size_t(M) * 32), sum(32);
      BrgemmPostArgs post;
      post.k_streams = 2;
      BrgemmGenResult s32 = generate_brgemm(
          make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8, DataType::s32, K));
      ASSERT_TRUE(s32) << s32.error;
      s32.kernel->fn()(a.data(), K, packed.panel(0), sums.data(), 32, M, &post);
      s32.kernel->fn()(a.data(), K, packed.panel(0), sum.data(), 32, 1, nullptr);
      EXPECT_EQ(std::memcmp(sum.data(), sums.data(), 32 * 4), 0) << "null post, one row";
    }
  }
  if (ran == 0)
    GTEST_SKIP() << skipped;
  if (!skipped.empty())
    std::printf("[ NOTE ] not run here: %s\n", skipped.c_str());
}

// Non-temporal C stores (vmovntps): the same values as the reference, for
// every m, on aligned rows with untouched columns between them; each family
// whose store the flag changes (the common AVX-512 store, VNNI's dequantizing
// one).
TEST(BrgemmAvx512, StreamCStoresMatchTheReference) {
  struct Family {
    Isa isa;
    DataType a, b;
  };
  const Family families[] = {{Isa::avx512_bf16, DataType::bf16, DataType::bf16},
                             {Isa::avx512_vnni, DataType::u8, DataType::s8},
                             {Isa::avx512_core, DataType::f32, DataType::f32},
                             {Isa::avx512_core, DataType::f32, DataType::bf16}};
  int ran = 0;
  std::string skipped;
  for (const Family &f : families) {
    std::string note;
    if (!can_run(f.isa, &note)) {
      skipped += std::string(skipped.empty() ? "" : "; ") + note;
      continue;
    }
    for (int nb : {32, 64})
      for (int k : {3, 17, 131}) {
        check_brgemm({f.isa, f.a, f.b, DataType::f32, nb, k, false, Epilogue::none, nb - 5,
                      /*stream_c=*/true});
        if (::testing::Test::HasFatalFailure())
          return;
      }
    ++ran;
  }
  if (ran == 0)
    GTEST_SKIP() << skipped;
  if (!skipped.empty()) // visible in the log: which families did not run here
    std::printf("[ partial  ] skipped: %s\n", skipped.c_str());
}

// The flag changes the code: the stream kernel fences its stores (sfence,
// 0F AE F8) before returning; the plain one has no fence. Generation works on
// any x86-64 host.
TEST(Brgemm, StreamCKernelsEndWithAFence) {
  BrgemmDesc d = make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8,
                                  DataType::f32, 64);
  const auto fences = [](const BrgemmDesc &desc) {
    BrgemmGenResult r = generate_brgemm(desc);
    EXPECT_TRUE(r) << r.error;
    const uint8_t *code = r.kernel->code();
    const uint8_t sfence[] = {0x0F, 0xAE, 0xF8};
    return std::search(code, code + r.kernel->text_size(), sfence, sfence + 3) !=
           code + r.kernel->text_size();
  };
  EXPECT_FALSE(fences(d));
  d.stream_c = true;
  EXPECT_TRUE(fences(d));
}

TEST(Brgemm, StreamCIsRefusedWhereStoresAreNotPlain) {
  BrgemmDesc d = make_brgemm_desc(Isa::avx512_vnni, DataType::u8, DataType::s8,
                                  DataType::f32, 64);
  d.stream_c = true;
  EXPECT_EQ(validate_brgemm(d), "");
  EXPECT_EQ(brgemm_name(d), "brgemm_u8s8f32_14x32x64_avx512vnni_nt");
  BrgemmDesc acc = d;
  acc.accumulate = true;
  EXPECT_NE(validate_brgemm(acc).find("without accumulation"), std::string::npos)
      << validate_brgemm(acc);
  BrgemmDesc bias = d;
  bias.epilogue = Epilogue::bias;
  EXPECT_NE(validate_brgemm(bias).find("with bias"), std::string::npos);
  BrgemmDesc s32 = d;
  s32.c_type = DataType::s32;
  EXPECT_NE(validate_brgemm(s32).find("u8s8s32"), std::string::npos);
  BrgemmDesc avx2 = make_brgemm_desc(Isa::avx2, DataType::f32, DataType::f32,
                                     DataType::f32, 64);
  avx2.stream_c = true;
  EXPECT_NE(validate_brgemm(avx2).find("avx2"), std::string::npos);
  BrgemmDesc amx = make_brgemm_desc(Isa::amx, DataType::bf16, DataType::bf16,
                                    DataType::f32, 64);
  amx.stream_c = true;
  EXPECT_FALSE(validate_brgemm(amx).empty());
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
