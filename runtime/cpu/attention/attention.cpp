// Decode/extend attention over the paged KV cache for optimized artifacts:
// the semantics of hyrt_ref_paged_attention (reference.h) in fp32, with
// (token, kv head) pairs split across the runtime's threads (each item the whole
// GQA group of query heads, so every cached row is loaded once per group)
// and the dot products / value sums vectorized for the host's widest ISA
// (GCC target clones).
#include "hyrt/cpu_kernels.h"

#include "attention_group.h"
#include "../host_isa.h"
#include "../portable_vec.h"
#include "../thread_pool.h"

#include "../../reference/bf16.h"
#include "../../reference/kv_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

using hyrt::cpu::LayerView;
using hyrt::cpu::cacheRow;
using hyrt::cpu::forEachRow;
using hyrt::cpu::kMinSplitRows;
using hyrt::cpu::layerView;

using hyrt::cpu::axpy;
using hyrt::cpu::dot;

/// The query heads of kv head `kvh` (a GQA group) of token t over cached
/// positions [0, p]: each cached key and value row is loaded once for the
/// whole group. Per head, fp32 softmax with the maximum subtracted, then the
/// weighted sum of values (the reference's order of operations per head).
/// `scores` holds group rows of n + 1 floats (the scores, then their sum),
/// `acc` group x dv. int8 rows are dequantized as they are read: the row's
/// scale multiplies its dot products and its weight in the value sum.
template <typename T>
inline __attribute__((always_inline)) void
attendGroupBody(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                int64_t numHeads, float scale, int64_t t, int64_t kvh, float *scores,
                float *acc, float *out) {
  const int64_t n = int64_t(step->positions[t]) + 1, G = l.group, dk = l.dk,
                dv = l.dv;
  const int64_t ns = n + 1; // stride of one head's scores
  const float *qg = q + (t * numHeads + kvh * G) * dk;
  if (!hyrt::cpu::hostHasAvx2Fma() ||
      !hyrt::cpu::keyScoresAvx2(step, l, qg, scale, t, kvh, n, scores, ns))
    forEachRow(step, l, t, n, [&](int64_t j, int64_t row) {
      const T *kr = l.kRow<T>(row, kvh);
      const float rowScale = l.kScaleOf<T>(row, kvh) * scale;
      for (int64_t g = 0; g < G; ++g)
        scores[g * ns + j] = dot(qg + g * dk, kr, dk) * rowScale;
    });
  for (int64_t g = 0; g < G; ++g) {
    float *sg = scores + g * ns;
    float maxScore = -INFINITY;
    for (int64_t j = 0; j < n; ++j) // std::fmax's NaN rule, without its call
      maxScore = sg[j] > maxScore ? sg[j] : maxScore;
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      sg[j] = std::exp(sg[j] - maxScore);
      sum += sg[j];
    }
    sg[n] = sum;
  }
  std::fill(acc, acc + G * dv, 0.0f);
  forEachRow(step, l, t, n, [&](int64_t j, int64_t row) {
    const T *vr = l.vRow<T>(row, kvh);
    const float rowScale = l.vScaleOf<T>(row, kvh);
    for (int64_t g = 0; g < G; ++g)
      axpy(scores[g * ns + j] * rowScale, vr, acc + g * dv, dv);
  });
  for (int64_t g = 0; g < G; ++g) {
    float *o = out + (t * numHeads + kvh * G + g) * dv;
    const float inv = 1.0f / scores[g * ns + n];
    for (int64_t i = 0; i < dv; ++i)
      o[i] = acc[g * dv + i] * inv;
  }
}

/// A thread's buffers for attendGroup, grown to the longest sequence seen
/// (thread_local: the pool's workers persist, so they are reused).
struct GroupScratch {
  std::vector<float> scores, acc;
};
thread_local GroupScratch tScratch;

__attribute__((target_clones("avx512f", "avx2", "default"))) void
attendGroupF32(const hyrt_step_v0 *step, const LayerView &l, const float *q,
               int64_t numHeads, float scale, int64_t t, int64_t kvh, float *scores,
               float *acc, float *out) {
  attendGroupBody<float>(step, l, q, numHeads, scale, t, kvh, scores, acc, out);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
attendGroupBf16(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                int64_t numHeads, float scale, int64_t t, int64_t kvh, float *scores,
                float *acc, float *out) {
  attendGroupBody<uint16_t>(step, l, q, numHeads, scale, t, kvh, scores, acc, out);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
attendGroupInt8(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                int64_t numHeads, float scale, int64_t t, int64_t kvh, float *scores,
                float *acc, float *out) {
  attendGroupBody<int8_t>(step, l, q, numHeads, scale, t, kvh, scores, acc, out);
}

using GroupFn = void (*)(const hyrt_step_v0 *, const LayerView &, const float *, int64_t,
                         float, int64_t, int64_t, float *, float *, float *);
GroupFn portableGroupFn(const LayerView &l) {
  return l.int8 ? attendGroupInt8 : l.bf16 ? attendGroupBf16 : attendGroupF32;
}

/// Tokens t .. t + tq - 1 (one sequence, consecutive positions) of KV head
/// kvh: the row-blocked kernel takes them together where it applies; the
/// other kernels take one token at a time.
void attendBlockOf(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                   int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                   GroupScratch &s, float *out) {
  const size_t nMax = size_t(step->positions[t] + tq);
  const bool avx512 = hyrt::cpu::hostHasAvx512();
  // Extend blocks of a bf16 cache: bf16 dot products, where the host has
  // them (prefill attention at twice the fp32 kernel's multiply-adds).
  // Decode tokens too: the cache's bf16 pairs go into the dot products as
  // they are, where the fp32 kernel widens each element first. Extend
  // blocks of an int8 cache take int8 dot products before that, where the
  // host has them (twice the bf16 kernel's multiply-adds per instruction).
  if (tq > 1 && hyrt::cpu::int8DotsApply(l)) {
    hyrt::cpu::attendInt8Dots(step, l, q, numHeads, scale, t, tq, kvh, out);
    return;
  }
  if (hyrt::cpu::bf16DotsApply(l)) {
    if (tq > 1)
      hyrt::cpu::attendBf16Dots(step, l, q, numHeads, scale, t, tq, kvh, out);
    else
      hyrt::cpu::attendDecodeBf16(step, l, q, numHeads, scale, t, kvh, 1, out, nullptr);
    return;
  }
  if (hyrt::cpu::hostHasAvx512BwVl() || hyrt::cpu::rowsAvx2Apply(l)) {
    s.scores.resize(size_t(tq) * (nMax * size_t(l.group) + 16));
    if (hyrt::cpu::withRowType(l, [&](auto *type) {
          using T = std::remove_pointer_t<decltype(type)>;
          return hyrt::cpu::attendRows<T>(step, l, q, numHeads, scale, t, tq, kvh,
                                          s.scores.data(), out);
        }))
      return;
  }
  for (int64_t u = t; u < t + tq; ++u) {
    const size_t n = size_t(step->positions[u]) + 1;
    s.scores.resize(size_t(l.group) * (n + 1));
    if (avx512 && l.dk % 16 == 0 && l.dv % 16 == 0) {
      hyrt::cpu::withRowType(l, [&](auto *type) {
        using T = std::remove_pointer_t<decltype(type)>;
        hyrt::cpu::attendGroupAvx512<T>(step, l, q, numHeads, scale, u, kvh, s.scores.data(),
                                        out);
      });
      continue;
    }
    s.acc.resize(size_t(l.group * l.dv)); // the AVX-512 kernel keeps it in registers
    portableGroupFn(l)(step, l, q, numHeads, scale, u, kvh, s.scores.data(), s.acc.data(), out);
  }
}

/// Writes one cache row: `n` floats of `x` as the cache's elements (int8
/// quantized as hyrt_ref_kv_cache_append does: same codes, same scale).
template <typename RowOf>
void storeRow(const LayerView &l, const float *x, int64_t n, float *scale, RowOf rowOf) {
  if (l.int8) {
    *scale = hyrt::quantizeKvRow(x, n, rowOf(static_cast<int8_t *>(nullptr)));
    return;
  }
  if (l.bf16) {
    uint16_t *r = rowOf(static_cast<uint16_t *>(nullptr));
    for (int64_t i = 0; i < n; ++i)
      r[i] = hyrt::toBf16(x[i]);
    return;
  }
  std::memcpy(rowOf(static_cast<float *>(nullptr)), x, sizeof(float) * size_t(n));
}

/// Writes kv head `kvh` of token t's key (and value, when the layer has
/// values and v is given) at the token's position.
void appendHead(const hyrt_step_v0 *step, const LayerView &l, const float *k,
                const float *v, int64_t t, int64_t kvh) {
  const int64_t row = cacheRow(step, l, t, step->positions[t]);
  const int64_t slot = row + kvh * l.page;
  storeRow(l, k + (t * l.kvHeads + kvh) * l.dk, l.dk, l.int8 ? l.kScale + slot : nullptr,
           [&](auto *type) { return l.kRow<std::remove_pointer_t<decltype(type)>>(row, kvh); });
  if (!v || !l.v || l.dv <= 0)
    return;
  storeRow(l, v + (t * l.kvHeads + kvh) * l.dv, l.dv, l.int8 ? l.vScale + slot : nullptr,
           [&](auto *type) { return l.vRow<std::remove_pointer_t<decltype(type)>>(row, kvh); });
}

/// Threads for the step's attention (threadsForAttention of its work).
int threadsFor(const hyrt_step_v0 *step, const LayerView &l, int64_t numHeads) {
  int64_t work = 0;
  for (int64_t t = 0; t < step->num_tokens; ++t)
    work += (int64_t(step->positions[t]) + 1) * numHeads * (l.dk + l.dv);
  return hyrt::cpu::threadsForAttention(work);
}

/// Tokens per work item in an extend step: each cached row is read once per
/// block from memory; a block's scores (8 x positions x group floats) stay
/// in L2 up to a few thousand positions.
constexpr int64_t kTokenBlock = 8;
constexpr int64_t kTokenBlockOneHead = 16;
/// The same for the bf16 dot-product kernel (attention_bf16_avx512.cpp),
/// whose rows' state is not in registers: its block is longer, and longer
/// still when the step has enough (token block, KV head) items for every
/// thread without it.
constexpr int64_t kBf16TokenBlock = 32;
constexpr int64_t kBf16TokenBlockLong = 64;
constexpr int64_t kInt8TokenBlockLong = 128;
/// Work items per thread below which the longer block is not taken: a few
/// per thread balance the causal triangle's uneven items under dynamic
/// hand-out.
constexpr int64_t kItemsPerThread = 4;

/// A work item: tokens [t0, t0 + count) of one sequence and KV heads
/// [kvh, kvh + heads) (heads > 1 only for a decode token on the bf16 decode
/// kernel); for a split decode token, positions [begin, end) into partial
/// slots slot + x * splits for its KV head kvh + x (-1: unsplit).
struct Item {
  int64_t t0, count, kvh, heads, begin, end, slot, splits;
};

/// One decode token's KV head whose splits' partials are merged after the
/// items ran: `splits` consecutive slots from `slot`.
struct Merge {
  int64_t t, kvh, slot, splits;
};

/// Merges the partial results of one decode token's KV splits into its
/// output rows (the flash-decoding combine): weights e^(m_s - M) per split.
void mergeSplits(const LayerView &l, const float *partials, int64_t splits, int64_t t,
                 int64_t kvh, int64_t numHeads, float *out) {
  const int64_t stride = hyrt::cpu::kvSplitFloats(l), dvPad = stride / l.group - 2;
  for (int64_t h = 0; h < l.group; ++h) {
    float m = -INFINITY;
    for (int64_t s = 0; s < splits; ++s)
      m = std::max(m, partials[s * stride + l.group * dvPad + h]);
    float *o = out + (t * numHeads + kvh * l.group + h) * l.dv;
    std::fill(o, o + l.dv, 0.0f);
    float sum = 0;
    for (int64_t s = 0; s < splits; ++s) {
      const float *p = partials + s * stride;
      const float w = std::exp(p[l.group * dvPad + h] - m);
      sum += w * p[l.group * dvPad + l.group + h];
      for (int64_t d = 0; d < l.dv; ++d)
        o[d] += w * p[h * dvPad + d];
    }
    for (int64_t d = 0; d < l.dv; ++d)
      o[d] /= sum;
  }
}

/// How one decode token of n cached positions is cut into items: `ranges`
/// position ranges times KV-head groups of `heads`. The schedule asks for
/// kvSplits ranges per KV head (kvHeads * kvSplits items per token, enough
/// to occupy every thread). The bf16 decode kernel keeps that many items but
/// trades KV heads for ranges: an item over all of a page's KV heads reads
/// the cache in address order (hyc_extend_attention_bench, moe-small's
/// heads at 4000 positions: bench/README.md), so ranges come first, as many
/// as kMinSplitRows allows, and the heads are grouped to make up the rest.
/// The other kernels take one KV head per item.
struct DecodeCut {
  int64_t ranges, heads;
};
DecodeCut decodeCut(const LayerView &l, int64_t n, int64_t kvSplits, bool sweep) {
  const int64_t target = l.kvHeads * std::max<int64_t>(1, kvSplits);
  if (!sweep) {
    const int64_t ranges = kvSplits > 1 && hyrt::cpu::kvSplitsApply(l)
                               ? std::max<int64_t>(1, std::min(kvSplits, n / kMinSplitRows))
                               : 1;
    return {ranges, 1};
  }
  const int64_t ranges = std::max<int64_t>(1, std::min(target, n / kMinSplitRows));
  const int64_t groups = std::min(l.kvHeads, (target + ranges - 1) / ranges);
  return {ranges, (l.kvHeads + groups - 1) / groups};
}

/// Every (token block, kv head) of the step, first come first served: a
/// block is up to kTokenBlock consecutive tokens of one sequence at
/// consecutive positions (an extend chunk); decode tokens are blocks of one,
/// cut by decodeCut (the schedule's kvSplits) and their splits merged after.
void attendAll(const hyrt_step_v0 *step, const LayerView &l, const float *q,
               int64_t numHeads, float scale, float *out, int64_t kvSplits) {
  const int64_t T = step->num_tokens;
  // The caller's buffers, captured by reference below (a lambda running on
  // a worker would otherwise see that worker's own thread_local instance).
  thread_local std::vector<std::pair<int64_t, int64_t>> callerBlocks;
  thread_local std::vector<Item> callerItems;
  thread_local std::vector<Merge> callerMerges;
  thread_local std::vector<float> callerPartials;
  std::vector<std::pair<int64_t, int64_t>> &blocks = callerBlocks; // (first token, count)
  std::vector<Item> &items = callerItems;
  std::vector<Merge> &merges = callerMerges;
  std::vector<float> &partials = callerPartials;
  blocks.clear();
  // The bf16 dot-product kernel packs each block of cached rows once per
  // token block: longer token blocks amortize it (extend chunk of dense-1b
  // at 4096 positions, hyc_extend_attention_bench: 218 GFLOP/s with 8
  // tokens, 250 with 16, 259 with 32, 263 with 64 when the kernel was
  // slower; after its unrolled calls, 64 tokens give 3-5% over 32 on
  // dense-1b's shape, 1-2% on moe-small's).
  int64_t tokenBlock = kTokenBlock;
  // One head per KV head on the row-blocked kernels: 16 tokens share each
  // widened key and value row (MHA's 16 x 128 heads, 512-token chunk at
  // 1000 positions: AVX2 form 87-92 -> 102-106 GFLOP/s, AVX-512 form 71-74
  // -> 81; at 4000, 93 -> 109 and 63 -> 77; groups of 4 and 8 ran slower
  // with 16 on the AVX2 form).
  if (l.group == 1 && (hyrt::cpu::rowsAvx2Apply(l) || hyrt::cpu::hostHasAvx512BwVl()))
    tokenBlock = kTokenBlockOneHead;
  if (hyrt::cpu::bf16DotsApply(l) || hyrt::cpu::int8DotsApply(l)) {
    const int64_t threads = int64_t(hyrt::cpu::ThreadPool::get().size());
    tokenBlock = T * l.kvHeads >= kItemsPerThread * threads * kBf16TokenBlockLong
                     ? kBf16TokenBlockLong
                     : kBf16TokenBlock;
    // The int8 kernel's per-call costs (packing each block's rows, the
    // query codes) weigh more against its faster dot products: 128 tokens
    // where the items still fill the threads (hyc_extend_attention_bench,
    // moe-small's heads, 512-token chunk: 413 -> 455 GOP/s at 512
    // positions, 635-658 -> 645-663 at 4096).
    if (hyrt::cpu::int8DotsApply(l) &&
        T * l.kvHeads >= kItemsPerThread * threads * kInt8TokenBlockLong)
      tokenBlock = kInt8TokenBlockLong;
  }
  for (int64_t t = 0; t < T; ++t) {
    if (!blocks.empty()) {
      auto &[t0, count] = blocks.back();
      const int64_t last = t0 + count - 1;
      if (count < tokenBlock && step->token_seq[t] == step->token_seq[last] &&
          step->positions[t] == step->positions[last] + 1) {
        ++count;
        continue;
      }
    }
    blocks.push_back({t, 1});
  }
  items.clear();
  merges.clear();
  int64_t slots = 0;
  const bool bf16Dots = hyrt::cpu::bf16DotsApply(l);
  // Latest blocks first: within a sequence a block's cost grows with its
  // positions, so the threads take the costliest items first and finish on
  // the cheapest (first come first served in index order).
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
    const auto [t0, count] = *b;
    if (count > 1) {
      for (int64_t kvh = 0; kvh < l.kvHeads; ++kvh)
        items.push_back({t0, count, kvh, 1, 0, 0, -1, 1});
      continue;
    }
    const int64_t n = int64_t(step->positions[t0]) + 1;
    const auto [ranges, heads] = decodeCut(l, n, kvSplits, bf16Dots);
    for (int64_t kvh = 0; kvh < l.kvHeads; kvh += heads) {
      const int64_t h = std::min(heads, l.kvHeads - kvh);
      if (ranges <= 1) {
        items.push_back({t0, 1, kvh, h, 0, 0, -1, 1});
        continue;
      }
      for (int64_t x = 0; x < h; ++x)
        merges.push_back({t0, kvh + x, slots + x * ranges, ranges});
      for (int64_t s = 0; s < ranges; ++s)
        items.push_back({t0, 1, kvh, h, n * s / ranges, n * (s + 1) / ranges, slots + s, ranges});
      slots += h * ranges;
    }
  }
  const int64_t splitFloats = hyrt::cpu::kvSplitFloats(l);
  partials.resize(size_t(slots * splitFloats));
  hyrt::cpu::parallelForDynamic(
      int64_t(items.size()), threadsFor(step, l, numHeads), [&](int, int64_t i) {
        const Item &it = items[size_t(i)];
        if (bf16Dots && it.count == 1) {
          thread_local std::vector<hyrt::cpu::KvSplit> splits;
          splits.resize(size_t(it.heads));
          for (int64_t x = 0; it.slot >= 0 && x < it.heads; ++x)
            splits[x] = {it.begin, it.end,
                         partials.data() + (it.slot + x * it.splits) * splitFloats};
          hyrt::cpu::attendDecodeBf16(step, l, q, numHeads, scale, it.t0, it.kvh, it.heads, out,
                                      it.slot >= 0 ? splits.data() : nullptr);
          return;
        }
        if (it.slot < 0) {
          attendBlockOf(step, l, q, numHeads, scale, it.t0, it.count, it.kvh, tScratch, out);
          return;
        }
        const hyrt::cpu::KvSplit split{it.begin, it.end, partials.data() + it.slot * splitFloats};
        tScratch.scores.resize(size_t((it.end - it.begin) * l.group + 16 +
                                      (step->positions[it.t0] + 1) * l.group));
        hyrt::cpu::withRowType(l, [&](auto *type) {
          using T = std::remove_pointer_t<decltype(type)>;
          hyrt::cpu::attendRows<T>(step, l, q, numHeads, scale, it.t0, 1, it.kvh,
                                   tScratch.scores.data(), out, &split);
        });
      });
  for (const Merge &m : merges)
    mergeSplits(l, partials.data() + m.slot * splitFloats, m.splits, m.t, m.kvh, numHeads, out);
}

} // namespace

extern "C" void hyrt_cpu_paged_attention(const hyrt_kv_cache_v0 *kv,
                                         const hyrt_step_v0 *step,
                                         int64_t layer, const float *q,
                                         int64_t num_heads, float scale,
                                         float *out, int64_t kv_splits) {
  attendAll(step, layerView(kv, layer, num_heads), q, num_heads, scale, out, kv_splits);
}

extern "C" void hyrt_cpu_paged_attention_append(
    const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step, int64_t layer,
    const float *k, const float *v, const float *q, int64_t num_heads,
    float scale, float *out, int64_t kv_splits) {
  const LayerView l = layerView(kv, layer, num_heads);
  // The step's rows first (a token may read rows of its predecessors in a
  // multi-token step): a few KB per token, not worth waking the workers.
  for (int64_t tg = 0; tg < step->num_tokens * l.kvHeads; ++tg)
    appendHead(step, l, k, v, tg / l.kvHeads, tg % l.kvHeads);
  attendAll(step, l, q, num_heads, scale, out, kv_splits);
}

extern "C" void hyrt_cpu_kv_cache_append(hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step,
                                         int64_t layer, const float *k, const float *v) {
  const LayerView l = layerView(kv, layer, kv->num_kv_heads);
  const int64_t rows = step->num_tokens * l.kvHeads;
  hyrt::cpu::parallelRows(rows, l.dk + l.dv, [&](int64_t tg) {
    appendHead(step, l, k, v, tg / l.kvHeads, tg % l.kvHeads);
  });
}
