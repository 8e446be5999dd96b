// RoPE for optimized artifacts: the semantics of hyrt_ref_rope
// (reference.h) bit for bit (both use reference/rope_math.h), without its
// costs. The reference takes cos/sin in double for every (token, head,
// pair) although they depend only on (position, pair); here each
// position's table is computed once per process, by the same expressions,
// and reused by every head, every layer and every later step (the double
// sin and cos were ~2% of a 512-token prefill when computed per token and
// layer), and tokens are split across the runtime's threads.
#include "hyrt/cpu_kernels.h"

#include "../reference/rope_math.h"
#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace {

/// cos/sin of every position up to `capacity` for one set of frequencies
/// (their values, not their address: an artifact loaded later may reuse
/// it) and mscale. Entries are filled on first use; a thread that finds an
/// entry being filled by another computes its own copy of the same values.
struct RopeTable {
  std::vector<float> invFreq;
  float mscale;
  int64_t capacity;
  std::unique_ptr<float[]> cs;                    // [position][2 * half]
  std::unique_ptr<std::atomic<uint8_t>[]> state; // 0 empty, 1 filling, 2 ready

  RopeTable(const float *f, int64_t half, float m, int64_t cap)
      : invFreq(f, f + half), mscale(m), capacity(cap), cs(new float[size_t(cap * 2 * half)]),
        state(new std::atomic<uint8_t>[size_t(cap)]) {
    for (int64_t p = 0; p < cap; ++p)
      state[size_t(p)].store(0, std::memory_order_relaxed);
  }
  bool matches(const float *f, int64_t half, float m) const {
    return int64_t(invFreq.size()) == half && mscale == m &&
           std::memcmp(invFreq.data(), f, sizeof(float) * size_t(half)) == 0;
  }
  int64_t half() const { return int64_t(invFreq.size()); }

  /// Position pos's 2 * half values: the table's, or computed into `own`.
  const float *row(int32_t pos, float *own) {
    const int64_t h = half();
    auto fill = [&](float *dst) {
      for (int64_t i = 0; i < h; ++i)
        hyrt::rope::cosSin(float(pos), invFreq[size_t(i)], mscale, dst[2 * i], dst[2 * i + 1]);
    };
    if (pos < 0 || pos >= capacity) {
      fill(own);
      return own;
    }
    std::atomic<uint8_t> &s = state[size_t(pos)];
    float *entry = cs.get() + int64_t(pos) * 2 * h;
    if (s.load(std::memory_order_acquire) == 2)
      return entry;
    uint8_t empty = 0;
    if (s.compare_exchange_strong(empty, 1, std::memory_order_acq_rel)) {
      fill(entry);
      s.store(2, std::memory_order_release);
      return entry;
    }
    fill(own); // another thread is filling it: the same values, computed here
    return own;
  }
};

/// The tables in use: one per frequency set (a model's layers share one;
/// two models in a process get two). A call holds its table while it runs,
/// so a replacement (more positions) never frees one in use.
std::shared_ptr<RopeTable> tableFor(const float *invFreq, int64_t half, float mscale,
                                    int32_t maxPos) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<RopeTable>> tables;
  constexpr size_t kMaxTables = 8;
  std::lock_guard<std::mutex> lock(mutex);
  for (std::shared_ptr<RopeTable> &t : tables)
    if (t->matches(invFreq, half, mscale)) {
      if (maxPos >= t->capacity) // grow to twice what is needed: few regrowths
        t = std::make_shared<RopeTable>(invFreq, half, mscale, 2 * (int64_t(maxPos) + 1));
      return t;
    }
  if (tables.size() >= kMaxTables)
    tables.erase(tables.begin());
  tables.push_back(std::make_shared<RopeTable>(invFreq, half, mscale,
                                               std::max<int64_t>(4096, 2 * (int64_t(maxPos) + 1))));
  return tables.back();
}

} // namespace

extern "C" void hyrt_cpu_rope(const float *x, const int32_t *positions,
                              int64_t num_tokens, int64_t heads, int64_t head_dim,
                              int64_t rotary_dim, int32_t neox, const float *inv_freq,
                              float mscale, float *out) {
  const int64_t half = rotary_dim / 2;
  int32_t maxPos = 0;
  for (int64_t t = 0; t < num_tokens; ++t)
    maxPos = std::max(maxPos, positions[t]);
  const std::shared_ptr<RopeTable> table = tableFor(inv_freq, half, mscale, maxPos);
  // Splitting pays off from a few hundred tokens' worth of pairs.
  hyrt::cpu::parallelFor(
      num_tokens, num_tokens * half >= 4096 ? hyrt::cpu::kAllThreads : 1, [&](int64_t t) {
        thread_local std::vector<float> own;
        own.resize(size_t(2 * half));
        const float *cs = table->row(positions[t], own.data());
        for (int64_t h = 0; h < heads; ++h) {
          const float *xi = x + (t * heads + h) * head_dim;
          float *o = out + (t * heads + h) * head_dim;
          for (int64_t i = rotary_dim; i < head_dim; ++i)
            o[i] = xi[i];
          for (int64_t i = 0; i < half; ++i)
            hyrt::rope::rotatePair(xi, o, i, half, neox != 0, cs[2 * i], cs[2 * i + 1]);
        }
      });
}
