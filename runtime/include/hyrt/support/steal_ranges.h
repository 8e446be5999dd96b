// Contiguous shares of n items, one per thread, that a thread which
// finishes its own share early may take from the back of another's.
//
// Why: the two hardware threads of one core (this machine class's two
// vCPUs) do not get equal shares of the memory bandwidth, and which one is
// slower changes from moment to moment. A decode GEMV split into two equal
// static halves then ends with one thread idle at the join: in
// `hyc_grouped_decode_bench` with a join after every GEMV (HYC_BENCH_SYNC),
// a thread waited 10-13% of its pass in fast bandwidth phases and up to
// 20-40% in some slow-phase rounds (bench/kernels/README.md). Stealing from
// the back keeps both threads streaming to the end while each still walks
// its own share front to back in memory order (the streams the hardware
// prefetchers and the kernels' software prefetch follow).
//
// Each share is one 64-bit word, front << 32 | back, on its own cache line:
// the owner advances front, a thief lowers back, both by compare-and-swap,
// so every item is handed out exactly once (a plain fetch_add on each end
// could hand the last item to both or to neither). Items are whatever the
// caller makes them (a GEMM's 32-column panels); which thread runs an item
// never changes what it computes.
#ifndef HYRT_SUPPORT_STEAL_RANGES_H
#define HYRT_SUPPORT_STEAL_RANGES_H

#include <atomic>
#include <cstdint>

namespace hyrt {

class StealRanges {
public:
  /// Most shares: a caller with more threads uses this many.
  static constexpr int kMaxShares = 64;

  /// n items (below 2^31) over `shares` shares: share t is items
  /// [n t / shares, n (t + 1) / shares), as a static split gives.
  StealRanges(int64_t n, int shares) : shares_(shares < kMaxShares ? shares : kMaxShares) {
    for (int t = 0; t < shares_; ++t)
      word_[t].v.store(pack(n * t / shares_, n * (t + 1) / shares_), std::memory_order_relaxed);
  }

  int shares() const { return shares_; }

  /// The next item for thread t: the front of its own share, then the back
  /// of the next share (cyclically) that has items left; -1 when none has.
  int64_t next(int t) {
    const int64_t own = takeFront(word_[t].v);
    if (own >= 0)
      return own;
    for (int i = 1; i < shares_; ++i) {
      const int64_t stolen = takeBack(word_[(t + i) % shares_].v);
      if (stolen >= 0)
        return stolen;
    }
    return -1;
  }

private:
  static uint64_t pack(int64_t front, int64_t back) {
    return uint64_t(front) << 32 | uint64_t(back);
  }
  static int64_t frontOf(uint64_t w) { return int64_t(w >> 32); }
  static int64_t backOf(uint64_t w) { return int64_t(w & 0xffffffffu); }

  static int64_t takeFront(std::atomic<uint64_t> &word) {
    uint64_t w = word.load(std::memory_order_relaxed);
    while (frontOf(w) < backOf(w))
      if (word.compare_exchange_weak(w, pack(frontOf(w) + 1, backOf(w)),
                                     std::memory_order_relaxed))
        return frontOf(w);
    return -1;
  }
  static int64_t takeBack(std::atomic<uint64_t> &word) {
    uint64_t w = word.load(std::memory_order_relaxed);
    while (frontOf(w) < backOf(w))
      if (word.compare_exchange_weak(w, pack(frontOf(w), backOf(w) - 1),
                                     std::memory_order_relaxed))
        return backOf(w) - 1;
    return -1;
  }

  struct alignas(64) Word {
    std::atomic<uint64_t> v{0};
  };
  int shares_;
  Word word_[kMaxShares];
};

} // namespace hyrt

#endif // HYRT_SUPPORT_STEAL_RANGES_H
