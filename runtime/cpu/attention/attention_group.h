// Internal to runtime/cpu: the view of one layer of the paged KV cache and
// the GQA-group attention kernels (attention.cpp: portable target clones;
// attention_avx512.cpp: AVX-512 intrinsics for head dims that are multiples
// of 16).
#ifndef HYRT_CPU_ATTENTION_GROUP_H
#define HYRT_CPU_ATTENTION_GROUP_H

#include "hyrt/abi.h"
#include "../host_isa.h"
#include "../thread_pool.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace hyrt::cpu {

/// Shapes and bases of one layer of the cache; rows hold T = float,
/// uint16_t (bf16) or int8_t as the cache's dtype says. A row id is
/// page * page_size * kvHeads + slot: with the head-major pages of abi.h,
/// KV head h's row then starts at element (row + h * page_size) * dim, and
/// row + 1 is the next slot of the same page and head. An int8 row's scale
/// sits at the same index without the dim: kScale[row + h * page_size].
struct LayerView {
  int64_t kvHeads, dk, dv, page, group;
  void *k, *v;
  bool bf16;
  bool int8 = false;
  float *kScale = nullptr, *vScale = nullptr; // int8 only
  /// Elements between value rows when they are not dv apart: MLA's latent
  /// rows read as values (their first rank elements of rank + rope).
  int64_t vStride = 0;
  template <typename T> T *kRow(int64_t row, int64_t kvh) const {
    return static_cast<T *>(k) + (row + kvh * page) * dk;
  }
  template <typename T> T *vRow(int64_t row, int64_t kvh) const {
    return static_cast<T *>(v) + (row + kvh * page) * (vStride ? vStride : dv);
  }
  /// The factor a row's loaded elements are multiplied by: its scale for
  /// int8 rows, 1 (folded away at compile time) for fp32 and bf16 ones.
  template <typename T> float kScaleOf(int64_t row, int64_t kvh) const {
    if constexpr (std::is_same_v<T, int8_t>)
      return kScale[row + kvh * page];
    else
      return 1.0f;
  }
  template <typename T> float vScaleOf(int64_t row, int64_t kvh) const {
    if constexpr (std::is_same_v<T, int8_t>)
      return vScale[row + kvh * page];
    else
      return 1.0f;
  }
};

/// The key pass of the portable group body on AVX2 + FMA
/// (attention_keys_avx2.cpp): scores[g * ns + j] = q_g . k_j * scale (times
/// an int8 row's scale) for token t's positions j < n; false, with nothing
/// written, for shapes it does not take (group not 1, 2, 4 or 8; dk not a
/// multiple of 8). Call only where hostHasAvx2Fma().
bool keyScoresAvx2(const hyrt_step_v0 *step, const LayerView &l, const float *qg, float scale,
                   int64_t t, int64_t kvh, int64_t n, float *scores, int64_t ns);

/// Brings a cache row of `elems` elements into L2 (prefetcht1): T0
/// prefetches of a DRAM-resident cache held the L1 miss buffers and stalled
/// (Zen 4: 14.6-15 -> 18.7-19 GB/s with T1; bench/README.md, "Decode
/// attention at depth: prefetch into L2").
template <typename T> inline void prefetchRowL2(const T *p, int64_t elems) {
  for (int64_t b = 0; b < elems * int64_t(sizeof(T)); b += 64)
    __builtin_prefetch(reinterpret_cast<const char *>(p) + b, 0, 2);
}

/// Calls f with a null pointer of the cache's element type (float,
/// uint16_t for bf16, int8_t), so that one call site instantiates a
/// kernel template for each dtype.
template <typename F> inline decltype(auto) withRowType(const LayerView &l, F f) {
  if (l.int8)
    return f(static_cast<int8_t *>(nullptr));
  if (l.bf16)
    return f(static_cast<uint16_t *>(nullptr));
  return f(static_cast<float *>(nullptr));
}

inline LayerView layerView(const hyrt_kv_cache_v0 *kv, int64_t layer,
                    int64_t numHeads) {
  return {kv->num_kv_heads,
          kv->k_head_dim,
          kv->v_head_dim,
          kv->page_size,
          numHeads / kv->num_kv_heads,
          kv->k_layers[layer],
          kv->v_layers ? kv->v_layers[layer] : nullptr, // none for MLA latents
          kv->dtype == HYRT_KV_BF16,
          kv->dtype == HYRT_KV_INT8,
          kv->dtype == HYRT_KV_INT8 ? kv->k_scale_layers[layer] : nullptr,
          kv->dtype == HYRT_KV_INT8 && kv->v_scale_layers ? kv->v_scale_layers[layer]
                                                          : nullptr};
}

/// Threads for an attention step of `macs` multiply-adds: all of them from
/// 2^18, else the caller alone (waking the workers would cost more).
inline int threadsForAttention(int64_t macs) {
  return macs >= (int64_t(1) << 18) ? kAllThreads : 1;
}

/// A KV split covers at least this many positions: below it the merge and
/// the extra work item cost more than the split saves.
inline constexpr int64_t kMinSplitRows = 256;

/// Cache row of (the sequence of token t, position pos).
inline int64_t cacheRow(const hyrt_step_v0 *step, const LayerView &l, int64_t t,
                 int64_t pos) {
  const int32_t *blocks = step->block_tables +
                          int64_t(step->token_seq[t]) * step->max_pages_per_seq;
  return int64_t(blocks[pos / l.page]) * l.page * l.kvHeads + pos % l.page;
}

/// Calls f(j, row) for the cached positions j in [begin, end) of token t's
/// sequence, page by page (one block-table read and no division per row: a
/// division per position was 19% of a short decode token's bf16 kernel).
template <typename F>
inline __attribute__((always_inline)) void forEachRowIn(const hyrt_step_v0 *step,
                                                        const LayerView &l, int64_t t,
                                                        int64_t begin, int64_t end, F f) {
  const int32_t *blocks = step->block_tables +
                          int64_t(step->token_seq[t]) * step->max_pages_per_seq;
  for (int64_t j = begin; j < end;) {
    const int64_t off = j % l.page,
                  base = int64_t(blocks[j / l.page]) * l.page * l.kvHeads + off,
                  rows = std::min(l.page - off, end - j);
    for (int64_t r = 0; r < rows; ++r)
      f(j + r, base + r);
    j += rows;
  }
}

/// forEachRowIn over positions [0, n).
template <typename F>
inline __attribute__((always_inline)) void
forEachRow(const hyrt_step_v0 *step, const LayerView &l, int64_t t, int64_t n, F f) {
  forEachRowIn(step, l, t, 0, n, f);
}

/// Row ids of token t's cached positions [0, n), page by page (no division
/// per row), in the calling thread's buffer: valid until its next call.
inline int64_t *rowIdsOf(const hyrt_step_v0 *step, const LayerView &l, int64_t t, int64_t n) {
  thread_local std::vector<int64_t> buf;
  buf.resize(size_t(n));
  int64_t *const rows = pinned(buf.data());
  forEachRow(step, l, t, n, [&](int64_t j, int64_t row) { rows[j] = row; });
  return rows;
}

/// The query heads of kv head `kvh` of token t over its cached positions;
/// `scores` holds group rows of n + 1 floats (see
/// attention.cpp for the semantics). attendGroupAvx512 needs dk and dv
/// multiples of 16 and a host with AVX-512F.
template <typename T>
void attendGroupAvx512(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                       int64_t numHeads, float scale, int64_t t, int64_t kvh,
                       float *scores, float *out);
extern template void attendGroupAvx512<float>(const hyrt_step_v0 *, const LayerView &,
                                              const float *, int64_t, float, int64_t,
                                              int64_t, float *, float *);
extern template void attendGroupAvx512<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                                 const float *, int64_t, float, int64_t,
                                                 int64_t, float *, float *);
extern template void attendGroupAvx512<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                               const float *, int64_t, float, int64_t,
                                               int64_t, float *, float *);

/// One KV split of a decode token (flash decoding): positions [begin, end)
/// and where the partial result goes: [group][16 * ceil(dv / 16) rounded up
/// to the kernel's slice count] unnormalized outputs, then `group` maxima,
/// then `group` sums of exponentials (kvSplitFloats).
struct KvSplit {
  int64_t begin, end;
  float *partial;
};

/// Writes one split's partial result (the layout above) from a kernel's
/// [group][dvPad] unnormalized outputs and `group` sums (the maxima are
/// written by its softmax).
inline void writeSplitPartial(const float *acc, const float *sums, int64_t group, int64_t dvPad,
                              const KvSplit &split) {
  std::copy(acc, acc + group * dvPad, split.partial);
  std::copy(sums, sums + group, split.partial + group * dvPad + group);
}

/// Floats of one split's partial result.
inline int64_t kvSplitFloats(const LayerView &l) {
  const int64_t slices = (l.dv + 15) / 16;
  const int64_t sv = slices <= 1   ? 1
                     : slices <= 2 ? 2
                     : slices <= 4 ? 4
                     : slices <= 8 ? 8
                                   : (slices + 15) / 16 * 16; // dv > 256: MLA's rank
  return l.group * (16 * sv + 2);
}

/// The row-blocked AVX-512F+BW+VL kernel (attention_rows_avx512.cpp) for groups
/// of 1, 2, 4, 8 or 16 heads, dk up to 1024 and dv up to 128, over
/// tokens t .. t + tq - 1 of one sequence at consecutive positions; false
/// (nothing done) for other shapes. `scores` holds
/// tq * ((positions[t] + tq) * group + 16) floats.
template <typename T>
bool attendRowsAvx512(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                      int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                      float *scores, float *out, const KvSplit *split = nullptr);
extern template bool attendRowsAvx512<float>(const hyrt_step_v0 *, const LayerView &,
                                             const float *, int64_t, float, int64_t, int64_t,
                                             int64_t, float *, float *, const KvSplit *);
extern template bool attendRowsAvx512<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                                const float *, int64_t, float, int64_t,
                                                int64_t, int64_t, float *, float *,
                                                const KvSplit *);
extern template bool attendRowsAvx512<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                              const float *, int64_t, float, int64_t,
                                              int64_t, int64_t, float *, float *,
                                              const KvSplit *);

/// The row-blocked kernel's AVX2 + FMA form (attention_rows_avx2.cpp): the
/// contract of attendRowsAvx512 for the shapes rowsAvx2Shape takes (groups
/// of 1, 2, 4 or 8 heads, dk and dv multiples of 8, dk up to 1024, dv up
/// to 128, values not strided); false, nothing done, for others. Call only
/// where hostHasAvx2Fma().
bool rowsAvx2Shape(const LayerView &l);
template <typename T>
bool attendRowsAvx2(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                    int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                    float *scores, float *out, const KvSplit *split = nullptr);
extern template bool attendRowsAvx2<float>(const hyrt_step_v0 *, const LayerView &,
                                           const float *, int64_t, float, int64_t, int64_t,
                                           int64_t, float *, float *, const KvSplit *);
extern template bool attendRowsAvx2<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                              const float *, int64_t, float, int64_t, int64_t,
                                              int64_t, float *, float *, const KvSplit *);
extern template bool attendRowsAvx2<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                            const float *, int64_t, float, int64_t, int64_t,
                                            int64_t, float *, float *, const KvSplit *);

/// Whether the AVX2 form runs this layer where AVX-512 does not: its shape,
/// a host with AVX2 + FMA, and no test pinning the per-token bodies.
inline bool rowsAvx2Apply(const LayerView &l) {
  return !hostHasAvx512BwVl() && avx2AttentionAllowed() &&
         rowsAvx2Shape(l);
}

/// The row-blocked kernel in the host's widest form (AVX-512, else AVX2);
/// false, nothing done, where neither takes the shape.
template <typename T>
inline bool attendRows(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                       int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                       float *scores, float *out, const KvSplit *split = nullptr) {
  if (hostHasAvx512BwVl())
    return attendRowsAvx512<T>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  if (rowsAvx2Apply(l))
    return attendRowsAvx2<T>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  return false;
}

/// Whether this layer's attention takes the bf16 dot-product kernels below:
/// a bf16 cache, or an int8 one (its codes are exact in bf16, its scales
/// applied to the scores and probabilities: int8_rows_bf16.h), dk and dv
/// multiples of 32 up to 256, a host with AVX-512 BF16, and no test
/// pinning the fp32 kernel (fp32AttentionOnly).
inline bool bf16DotsApply(const LayerView &l) {
  return (l.bf16 || (l.int8 && l.v && l.vScale)) && l.dk % 32 == 0 && l.dv % 32 == 0 && l.dk > 0 && l.dv > 0 && l.dk <= 256 &&
         l.dv <= 256 && hostHasAvx512Bf16() && !fp32AttentionOnly();
}

/// Flash attention over bf16 dot products (attention_bf16_avx512.cpp) for
/// tokens t .. t + tq - 1 of one sequence at consecutive positions and KV
/// head kvh of a layer where bf16DotsApply (a precondition): queries
/// (scaled) and probabilities rounded to bf16, products accumulated in fp32.
void attendBf16Dots(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                    int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                    float *out);

/// Whether an int8 cache's extend blocks take the int8 dot-product kernel
/// below: dk and dv multiples of 16 up to 256, a host with AVX-512 VNNI.
inline bool int8DotsApply(const LayerView &l) {
  return l.int8 && l.v && l.vScale && l.kScale && l.dk % 16 == 0 && l.dv % 16 == 0 &&
         l.dk > 0 && l.dv > 0 && l.dk <= 256 && l.dv <= 256 && hostHasAvx512Vnni() &&
         !fp32AttentionOnly() && !int8AttentionDotsOff();
}

/// Flash attention over int8 dot products (attention_int8_avx512.cpp) for
/// tokens t .. t + tq - 1 of one sequence at consecutive positions and KV
/// head kvh of a layer where int8DotsApply (a precondition): the cache's
/// codes against queries quantized per row to int8 and probabilities (times
/// the value rows' scales) per row and 128-position block to uint8, sums in
/// int32.
void attendInt8Dots(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                    int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                    float *out);

/// One decode token (t) over its cached positions, or over one KV split
/// of them into partial results, for KV heads kvh0 .. kvh0 + kvhCount - 1
/// of a layer where bf16DotsApply (a precondition), with bf16 dot products
/// (attention_decode_bf16_avx512.cpp): the numerics of attendBf16Dots.
/// `splits`: null (the whole context, into out) or kvhCount splits, one per
/// KV head, all over the same positions [begin, end).
void attendDecodeBf16(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                      int64_t numHeads, float scale, int64_t t, int64_t kvh0, int64_t kvhCount,
                      float *out, const KvSplit *splits);

/// Whether a decode token of this layer can be split into KV ranges: one
/// of the kernels that write partial results (the bf16 decode kernel, the
/// row-blocked kernel's AVX-512 or AVX2 form) takes its shape.
inline bool kvSplitsApply(const LayerView &l) {
  if (bf16DotsApply(l))
    return true;
  const bool rowsShape = l.dk > 0 && l.dk <= 1024 && l.dv > 0 && l.dv <= 128 &&
                         (l.group == 1 || l.group == 2 || l.group == 4 || l.group == 8 ||
                          l.group == 16);
  return (rowsShape && hostHasAvx512BwVl()) || rowsAvx2Apply(l);
}

/// y = e^x with the kernel's 16-lane exp (AVX-512F hosts only): the
/// softmax's exponential, exposed so that tests can hold it to std::exp.
void expAvx512(const float *x, float *y, int64_t n);
/// The same with the AVX2 row-blocked kernel's 8-lane exp (AVX2 + FMA hosts
/// only).
void expAvx2(const float *x, float *y, int64_t n);

} // namespace hyrt::cpu

#endif // HYRT_CPU_ATTENTION_GROUP_H
