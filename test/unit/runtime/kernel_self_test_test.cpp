// The load-time kernel self-test (hyrt/artifact/kernel_self_test.h) on
// kernels written here in plain C++ against the brgemm C ABI: honest ones
// pass, and each way of being wrong that a generator bug would produce (a K
// tail dropped, a row written past m, accumulation ignored, products
// rounded) is caught and named. The generated kernels themselves are run
// through it in test/unit/codegen (KernelSelfTest.*) and in artifacts by the
// e2e test kernel_self_test_test.cpp.
#include "hyrt/artifact/kernel_self_test.h"
#include "hyrt/support/f16.h"
#include "hyrt/support/iq4nl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace {

struct Post {
  const float *bias, *a_scale, *b_scale;
};

enum Fault { kHonest, kDropKTail, kWriteRowM, kIgnoreAccumulate, kRoundProducts };

/// f32 x f32 over f32_k1 panels, C = (acc ? C : 0) + A.B, with a fault.
template <Fault F, bool Acc>
void f32_kernel(const void *a, int64_t lda, const void *b, void *c, int64_t ldc, int64_t m,
                const Post *) {
  constexpr int K = 70; // what the tables below say (70 % 4 = 2: a tail)
  const float *A = static_cast<const float *>(a), *B = static_cast<const float *>(b);
  float *C = static_cast<float *>(c);
  const int rows = F == kWriteRowM ? int(m) + 1 : int(m);
  const int kEnd = F == kDropKTail ? K - K % 4 : K;
  for (int i = 0; i < rows; ++i)
    for (int n = 0; n < 32; ++n) {
      float s = Acc && F != kIgnoreAccumulate ? C[i * ldc + n] : 0.f;
      for (int k = 0; k < kEnd; ++k) {
        float p = A[i * lda + k] * B[k * 32 + n];
        if (F == kRoundProducts)
          p = float(double(p) * (1 + 1e-6));
        s += p;
      }
      C[i * ldc + n] = s;
    }
}

/// u8 x s8 -> f32 over s8_vnni4 panels with comp: a_scale * b_scale *
/// (sum u8 * s8 - comp).
void u8s8_kernel(const void *a, int64_t lda, const void *b, void *c, int64_t ldc, int64_t m,
                 const Post *post) {
  constexpr int K = 36;
  const uint8_t *A = static_cast<const uint8_t *>(a);
  const int8_t *B = static_cast<const int8_t *>(b);
  int32_t comp[32];
  std::memcpy(comp, B + (K + 3) / 4 * 128, sizeof comp);
  float *C = static_cast<float *>(c);
  for (int i = 0; i < m; ++i)
    for (int n = 0; n < 32; ++n) {
      int32_t s = 0;
      for (int k = 0; k < K; ++k)
        s += int32_t(A[i * lda + k]) * B[((k >> 2) * 32 + n) * 4 + (k & 3)];
      C[i * ldc + n] = float(s - comp[n]) * post->b_scale[n] * post->a_scale[i];
    }
}

/// The grouped kernels' post arguments: a_sum is the fourth pointer.
struct GroupedPost {
  const float *bias, *a_scale, *b_scale;
  const int32_t *a_sum;
};

enum GroupedFault { kHonestGroups, kDropSubScale, kSkipCodebook, kPerRowActScale };

/// s8 x u4 with two-level scales (group 32, super-block 256, K = 512), as
/// GGUF Q4_K (Asym) or IQ4_XS (Book) store them, written from
/// codegen/brgemm.h's order with std::fma; C = A.B.
template <bool Asym, bool Book, GroupedFault F>
void two_level_kernel(const void *a, int64_t lda, const void *b, void *c, int64_t ldc, int64_t m,
                      const GroupedPost *post) {
  constexpr int K = 512, G = 32, S = 256, groups = K / G, per = S / G;
  constexpr int64_t header = Asym ? 128 : 64, codes = G / 4 * 64, group_bytes = codes + 64;
  const int8_t *A = static_cast<const int8_t *>(a);
  const uint8_t *B = static_cast<const uint8_t *>(b);
  float *C = static_cast<float *>(c);
  auto f16 = [](const uint8_t *p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return hyrt::fromF16(h);
  };
  for (int i = 0; i < m; ++i)
    for (int n = 0; n < 32; ++n) {
      float acc = 0.f;
      for (int g = 0; g < groups; ++g) {
        const uint8_t *block = B + g / per * (header + per * group_bytes);
        const uint8_t *grp = block + header + g % per * group_bytes;
        int32_t dot = 0;
        for (int kk = 0; kk < G; ++kk) {
          const uint8_t byte = grp[kk / 4 * 64 + 4 * (n % 16) + kk % 4];
          const int code = n < 16 ? byte & 15 : byte >> 4;
          const int value = Book && F != kSkipCodebook ? hyrt::kIq4nlU8[code] : code;
          dot += int32_t(A[i * lda + g * G + kk]) * value;
        }
        const int sub = F == kDropSubScale ? 1 : int8_t(grp[codes + n]);
        const float scale = f16(block + 2 * n) * float(sub);
        // {sum, A's group scale} pairs (brgemm.h two-level kernels).
        const int32_t sum = post->a_sum[(i * groups + g) * 2];
        float as = 1.f;
        if (F != kPerRowActScale)
          std::memcpy(&as, &post->a_sum[(i * groups + g) * 2 + 1], 4);
        if (Asym) {
          const float min = f16(block + 64 + 2 * n) * float(grp[codes + 32 + n]);
          acc = std::fma(float(dot) * as, scale, acc);
          acc = std::fma(-min, float(sum) * as, acc);
        } else {
          acc = std::fma(float(dot - (Book ? 128 : 8) * sum) * as, scale, acc);
        }
      }
      C[i * ldc + n] = F == kPerRowActScale ? acc * post->a_scale[i] : acc;
    }
}

hyrt_kernel_v0 entry(const char *name, const void *fn, const char *types, const char *layout, int k,
                     int m_max, bool acc) {
  hyrt_kernel_v0 e{};
  e.name = name;
  e.entry = fn;
  e.code_bytes = 0;
  e.isa = "cpp";
  e.types = types;
  e.b_layout = layout;
  e.m_max = m_max;
  e.n_block = 32;
  e.k = k;
  e.accumulate = acc;
  return e;
}

template <class Fn> const void *addr(Fn *fn) { return reinterpret_cast<const void *>(fn); }

hyrt::KernelSelfTestResult run(const std::vector<hyrt_kernel_v0> &kernels) {
  hyrt_kernel_table_v0 table{HYRT_KERNEL_TABLE_VERSION, int32_t(kernels.size()), kernels.data()};
  return hyrt::self_test_kernels(table);
}

TEST(KernelSelfTest, HonestKernelsPass) {
  const auto r =
      run({entry("f32", addr(&f32_kernel<kHonest, false>), "f32f32f32", "f32_k1", 70, 6, false),
           entry("f32_acc", addr(&f32_kernel<kHonest, true>), "f32f32f32", "f32_k1", 70, 6, true),
           entry("u8s8", addr(&u8s8_kernel), "u8s8f32", "s8_vnni4", 36, 5, false)});
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(r.families, 3);
  EXPECT_EQ(r.kernels, 3);
  EXPECT_EQ(r.calls, 9); // m = 1, middle, m_max
  EXPECT_TRUE(r.untested.empty());
  EXPECT_NE(hyrt::describe_self_test(r).find("passed: 3 kernel families"), std::string::npos)
      << hyrt::describe_self_test(r);
}

TEST(KernelSelfTest, ADroppedKTailIsNamed) {
  const auto r = run(
      {entry("f32_ok", addr(&f32_kernel<kHonest, false>), "f32f32f32", "f32_k1", 70, 6, false),
       entry("f32_tail", addr(&f32_kernel<kDropKTail, true>), "f32f32f32", "f32_k1", 70, 6, true)});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_kernel, "f32_tail");
  // The first call (m = 1) already shows it, with the element and error.
  EXPECT_NE(r.failure.find("f32_tail (m=1): C[0]["), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("largest error"), std::string::npos) << r.failure;
  EXPECT_NE(hyrt::describe_self_test(r).find("FAILED"), std::string::npos);
}

TEST(KernelSelfTest, AWriteOutsideTheBlockIsNamed) {
  const auto r = run({entry("f32_row", addr(&f32_kernel<kWriteRowM, false>), "f32f32f32", "f32_k1",
                            70, 6, false)});
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("f32_row (m=1): wrote C[1][0]"), std::string::npos) << r.failure;
}

TEST(KernelSelfTest, IgnoringAccumulateIsCaught) {
  const auto r = run({entry("f32_noacc", addr(&f32_kernel<kIgnoreAccumulate, true>), "f32f32f32",
                            "f32_k1", 70, 6, true)});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_kernel, "f32_noacc");
}

// A relative error of 1e-6 per product is below any loose tolerance, but the
// inputs make every partial sum exact, so the kernel must be too.
TEST(KernelSelfTest, ARoundingErrorIsCaughtWhereSumsAreExact) {
  const auto r = run({entry("f32_round", addr(&f32_kernel<kRoundProducts, false>), "f32f32f32",
                            "f32_k1", 70, 6, false)});
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.failure.find("tolerance 0"), std::string::npos) << r.failure;
}

TEST(KernelSelfTest, WhatItCannotRunIsListedNotFailed) {
  auto odd = entry("mystery", addr(&u8s8_kernel), "f16f16f32", "f16_vnni2", 32, 4, false);
  const auto r = run({odd});
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.kernels, 0);
  ASSERT_EQ(r.untested.size(), 1u);
  EXPECT_EQ(r.untested[0], "mystery");
  hyrt_kernel_table_v0 future{HYRT_KERNEL_TABLE_VERSION + 1, 1, &odd};
  const auto f = hyrt::self_test_kernels(future);
  EXPECT_TRUE(f.passed);
  ASSERT_EQ(f.untested.size(), 1u);
  EXPECT_NE(f.untested[0].find("version " + std::to_string(HYRT_KERNEL_TABLE_VERSION + 1)),
            std::string::npos)
      << f.untested[0];
}

// One kernel per family and K class: a second kernel with the same K mod 64
// and a larger K is not run; another K class is.
TEST(KernelSelfTest, OneKernelPerFamilyAndKClass) {
  // f32_kernel hardcodes K = 70: the K = 134 entry would fail if it ran.
  const auto r = run(
      {entry("k70", addr(&f32_kernel<kHonest, false>), "f32f32f32", "f32_k1", 70, 6, false),
       entry("k134", addr(&f32_kernel<kDropKTail, false>), "f32f32f32", "f32_k1", 134, 6, false)});
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(r.kernels, 1);
  const auto r2 =
      run({entry("k70", addr(&f32_kernel<kHonest, false>), "f32f32f32", "f32_k1", 70, 6, false),
           entry("k71", addr(&f32_kernel<kHonest, false>), "f32f32f32", "f32_k1", 71, 6, false)});
  EXPECT_EQ(r2.kernels, 2);
  EXPECT_FALSE(r2.passed); // the K = 70 body run as K = 71 misses a term
  EXPECT_EQ(r2.failed_kernel, "k71");
}

hyrt_kernel_v0 two_level_entry(const char *name, const void *fn, bool asym, bool book) {
  hyrt_kernel_v0 e = entry(name, fn, "s8u4f32", "u4_grouped", 512, 4, false);
  e.group = 32;
  e.asymmetric = asym;
  e.super_group = 256;
  e.codebook = book ? HYRT_KERNEL_CODEBOOK_IQ4NL : HYRT_KERNEL_CODEBOOK_NONE;
  return e;
}

// Two-level scales (Q4_K) and the code book (IQ4_XS): honest kernels pass,
// one that drops the sub-scales or skips the code book is caught bit-exactly.
TEST(KernelSelfTest, TwoLevelAndCodebookKernelsAreCheckedBitExactly) {
  const auto r = run(
      {two_level_entry("q4k", addr(&two_level_kernel<true, false, kHonestGroups>), true, false),
       two_level_entry("iq4xs", addr(&two_level_kernel<false, true, kHonestGroups>), false, true)});
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(r.families, 2);
  EXPECT_NE(hyrt::describe_self_test(r).find("g32s256a"), std::string::npos)
      << hyrt::describe_self_test(r);
  const auto sub = run({two_level_entry(
      "q4k_nosub", addr(&two_level_kernel<true, false, kDropSubScale>), true, false)});
  EXPECT_FALSE(sub.passed);
  EXPECT_NE(sub.failure.find("q4k_nosub (m=1)"), std::string::npos) << sub.failure;
  const auto book = run({two_level_entry(
      "iq4xs_nobook", addr(&two_level_kernel<false, true, kSkipCodebook>), false, true)});
  EXPECT_FALSE(book.passed);
  EXPECT_NE(book.failure.find("bit-exact"), std::string::npos) << book.failure;
  // One scale per row instead of A's per-group scales (the one-level
  // kernels' epilogue): caught.
  const auto row = run({two_level_entry(
      "q4k_rowscale", addr(&two_level_kernel<true, false, kPerRowActScale>), true, false)});
  EXPECT_FALSE(row.passed);
  EXPECT_NE(row.failure.find("q4k_rowscale (m=1)"), std::string::npos) << row.failure;
}

// A code book on u8 codes, or a super-block that does not divide K, is no
// kernel this runtime can test: listed, not failed.
TEST(KernelSelfTest, ImpossibleGroupedFormatsAreListedNotRun) {
  auto u8_book =
      two_level_entry("u8_book", addr(&two_level_kernel<false, true, kHonestGroups>), false, true);
  u8_book.types = "s8u8f32";
  u8_book.b_layout = "u8_grouped";
  auto bad_super = two_level_entry("bad_super", addr(&two_level_kernel<true, false, kHonestGroups>),
                                   true, false);
  bad_super.super_group = 96;
  const auto r = run({u8_book, bad_super});
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.kernels, 0);
  EXPECT_EQ(r.untested.size(), 2u);
}

} // namespace
