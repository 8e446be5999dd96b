// Test helper: one layer of a paged KV cache of random bf16 values, held
// twice, as the bf16 cache the kernels read and widened to fp32 (exactly)
// as the cache the reference reads, so that both see the same numbers.
#ifndef HYC_TEST_UNIT_CPU_KV_CACHE_PAIR_H
#define HYC_TEST_UNIT_CPU_KV_CACHE_PAIR_H

#include "hyrt/abi.h"
#include "runtime/reference/bf16.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace hyc::test {

struct KvCachePair {
  std::vector<float> k, v;
  std::vector<uint16_t> kh, vh;
  void *kp, *vp, *khp, *vhp;
  hyrt_kv_cache_v0 f32, bf16;

  /// Values uniform in [-1, 1), rounded to bf16.
  KvCachePair(int64_t pages, int64_t pageSize, int64_t kvHeads, int64_t dk, int64_t dv,
              std::mt19937 &rng)
      : k(size_t(pages * pageSize * kvHeads * dk)), v(size_t(pages * pageSize * kvHeads * dv)),
        kh(k.size()), vh(v.size()) {
    std::uniform_real_distribution<float> d(-1, 1);
    for (auto [f, h] : {std::pair{&k, &kh}, std::pair{&v, &vh}})
      for (size_t i = 0; i < f->size(); ++i) {
        (*h)[i] = hyrt::toBf16(d(rng));
        (*f)[i] = hyrt::fromBf16((*h)[i]);
      }
    kp = k.data(), vp = v.data(), khp = kh.data(), vhp = vh.data();
    f32 = {1, pages, pageSize, kvHeads, dk, dv, &kp, &vp, HYRT_KV_F32};
    bf16 = {1, pages, pageSize, kvHeads, dk, dv, &khp, &vhp, HYRT_KV_BF16};
  }
  KvCachePair(const KvCachePair &) = delete; // the caches point into this object
  KvCachePair &operator=(const KvCachePair &) = delete;
};

} // namespace hyc::test

#endif // HYC_TEST_UNIT_CPU_KV_CACHE_PAIR_H
