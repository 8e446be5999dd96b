// The kernels that took the last ops of optimized artifacts off the
// reference path (hyc-cpu-check-no-reference-kernels): row gathers, column
// copies, the unfused residual add and the standalone KV append. Each only
// moves floats or repeats the reference's single operation per element, so
// each must equal its hyrt_ref_* kernel bit for bit; sizes cross the
// threads' threshold (2^15 elements) so that the split runs too.
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

std::vector<float> randomFloats(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

TEST(CpuCopy, EmbeddingEqualsTheReferenceOutOfRangeIdsIncluded) {
  std::mt19937 rng(1);
  const int64_t vocab = 300, dim = 96;
  std::vector<float> table = randomFloats(size_t(vocab * dim), rng);
  for (int64_t tokens : {1, 7, 700}) { // 700 x 96 rows split across threads
    std::vector<int32_t> ids(static_cast<size_t>(tokens));
    for (int64_t t = 0; t < tokens; ++t)
      ids[size_t(t)] = int32_t((t * 37) % vocab);
    ids[0] = tokens > 1 ? -1 : ids[0];
    ids.back() = tokens > 1 ? int32_t(vocab) : ids.back();
    std::vector<float> want(size_t(tokens * dim), 7.0f), got(want.size(), 7.0f);
    hyrt_ref_embedding(table.data(), vocab, dim, ids.data(), tokens, want.data());
    hyrt_cpu_embedding(table.data(), vocab, dim, ids.data(), tokens, got.data());
    EXPECT_TRUE(sameBits(want, got)) << tokens << " tokens";
  }
}

TEST(CpuCopy, GatherRowsEqualsTheReference) {
  std::mt19937 rng(2);
  const int64_t rows = 900, dim = 64;
  std::vector<float> x = randomFloats(size_t(rows * dim), rng);
  for (int64_t n : {1, 3, 800}) {
    std::vector<int32_t> pick(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r)
      pick[size_t(r)] = int32_t((r * 11 + 5) % rows);
    std::vector<float> want(size_t(n * dim)), got(want.size());
    hyrt_ref_gather_rows(x.data(), pick.data(), n, dim, want.data());
    hyrt_cpu_gather_rows(x.data(), pick.data(), n, dim, got.data());
    EXPECT_TRUE(sameBits(want, got)) << n << " rows";
  }
}

/// A slice (source offset) and a concat's second part (destination offset),
/// as MLA's nope/rope split and latent concat use them.
TEST(CpuCopy, CopyColumnsEqualsTheReferenceForSlicesAndConcats) {
  std::mt19937 rng(3);
  const int64_t rows = 1100, srcStride = 48, dstStride = 80;
  std::vector<float> src = randomFloats(size_t(rows * srcStride), rng);
  for (auto [srcOffset, cols, dstOffset] : {std::tuple{int64_t(0), int64_t(32), int64_t(0)},
                                            std::tuple{int64_t(32), int64_t(16), int64_t(64)},
                                            std::tuple{int64_t(5), int64_t(43), int64_t(37)}}) {
    std::vector<float> want(size_t(rows * dstStride), -3.0f), got(want.size(), -3.0f);
    hyrt_ref_copy_columns(src.data(), srcStride, srcOffset, rows, cols, want.data(), dstStride,
                          dstOffset);
    hyrt_cpu_copy_columns(src.data(), srcStride, srcOffset, rows, cols, got.data(), dstStride,
                          dstOffset);
    EXPECT_TRUE(sameBits(want, got)) << "offset " << srcOffset << ", cols " << cols;
  }
}

TEST(CpuAdd, EqualsTheReferenceAndMayWriteInPlace) {
  std::mt19937 rng(4);
  for (int64_t n : {1, 17, 100003}) {
    std::vector<float> a = randomFloats(size_t(n), rng), b = randomFloats(size_t(n), rng);
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    hyrt_ref_add(a.data(), b.data(), n, want.data());
    hyrt_cpu_add(a.data(), b.data(), n, got.data());
    EXPECT_TRUE(sameBits(want, got)) << n;
    hyrt_cpu_add(a.data(), b.data(), n, a.data());
    EXPECT_TRUE(sameBits(want, a)) << n << " in place";
  }
}

/// One paged layer in one element type, its bytes and scales comparable.
struct Layer {
  std::vector<unsigned char> k, v;
  std::vector<float> kScale, vScale;
  void *kp, *vp;
  float *ksp, *vsp;
  hyrt_kv_cache_v0 kv;
  Layer(int32_t dtype, int64_t pages, int64_t pageSize, int64_t heads, int64_t dk, int64_t dv) {
    const int64_t elem = dtype == HYRT_KV_INT8 ? 1 : dtype == HYRT_KV_BF16 ? 2 : 4;
    const int64_t rows = pages * pageSize * heads;
    k.assign(size_t(rows * dk * elem), 0xA5);
    v.assign(size_t(rows * dv * elem), 0x5A);
    kScale.assign(size_t(rows), -1.0f);
    vScale.assign(size_t(rows), -1.0f);
    kp = k.data();
    vp = v.data();
    ksp = kScale.data();
    vsp = vScale.data();
    const bool int8 = dtype == HYRT_KV_INT8;
    kv = {1,
          pages,
          pageSize,
          heads,
          dk,
          dv,
          &kp,
          dv ? &vp : nullptr,
          dtype,
          int8 ? &ksp : nullptr,
          int8 && dv ? &vsp : nullptr};
  }
};

/// Tokens of two sequences through scattered block tables, every cache
/// element type, with values and without (an MLA latent cache: v_head_dim 0,
/// no value rows): the same bytes and scales as the reference append.
TEST(CpuKvAppend, WritesTheReferenceBytesForEveryCacheType) {
  std::mt19937 rng(5);
  const int64_t pages = 40, pageSize = 4, maxPages = 16;
  std::vector<int32_t> blocks(2 * maxPages);
  for (int64_t i = 0; i < 2 * maxPages; ++i)
    blocks[size_t(i)] = int32_t((i * 7 + 3) % pages);
  // 40 tokens: 30 of sequence 0 at positions 2..31, 10 of sequence 1 at 50..59.
  std::vector<int32_t> positions, seqs, tokens;
  for (int32_t p = 2; p < 32; ++p)
    positions.push_back(p), seqs.push_back(0);
  for (int32_t p = 50; p < 60; ++p)
    positions.push_back(p), seqs.push_back(1);
  const int64_t T = int64_t(positions.size());
  tokens.assign(size_t(T), 9);
  std::vector<int32_t> start = {0, 30}, len = {30, 10}, prefix = {2, 50};
  hyrt_step_v0 step = {T,
                       2,
                       tokens.data(),
                       positions.data(),
                       seqs.data(),
                       start.data(),
                       len.data(),
                       prefix.data(),
                       blocks.data(),
                       maxPages,
                       nullptr,
                       0,
                       nullptr};
  for (int32_t dtype : {HYRT_KV_F32, HYRT_KV_BF16, HYRT_KV_INT8})
    for (auto [heads, dk, dv] : {std::tuple{int64_t(4), int64_t(128), int64_t(128)},
                                 std::tuple{int64_t(1), int64_t(576), int64_t(0)}}) {
      std::vector<float> k = randomFloats(size_t(T * heads * dk), rng),
                         v = randomFloats(size_t(T * heads * dv), rng);
      std::fill(k.begin(), k.begin() + dk, 0.0f); // an all-zero row
      Layer want(dtype, pages, pageSize, heads, dk, dv), got(dtype, pages, pageSize, heads, dk, dv);
      hyrt_ref_kv_cache_append(&want.kv, &step, 0, k.data(), dv ? v.data() : nullptr);
      hyrt_cpu_kv_cache_append(&got.kv, &step, 0, k.data(), dv ? v.data() : nullptr);
      const std::string what = "dtype " + std::to_string(dtype) + ", dk " + std::to_string(dk);
      EXPECT_EQ(want.k, got.k) << what;
      EXPECT_EQ(want.v, got.v) << what;
      EXPECT_TRUE(sameBits(want.kScale, got.kScale)) << what;
      EXPECT_TRUE(sameBits(want.vScale, got.vScale)) << what;
    }
}

} // namespace
