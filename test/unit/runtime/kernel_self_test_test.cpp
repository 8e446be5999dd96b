// The load-time kernel self-test (hyrt/artifact/kernel_self_test.h) on
// kernels written here in plain C++ against the brgemm C ABI: honest ones
// pass, and each way of being wrong that a generator bug would produce (a K
// tail dropped, a row written past m, accumulation ignored, products
// rounded) is caught and named. The generated kernels themselves are run
// through it in test/unit/codegen (KernelSelfTest.*) and in artifacts by the
// e2e test kernel_self_test_test.cpp.
#include "hyrt/artifact/kernel_self_test.h"

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

} // namespace
