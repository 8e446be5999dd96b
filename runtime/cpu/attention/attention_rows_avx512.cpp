// The GQA-group attention kernel for groups of 1, 2, 4, 8 or 16 query heads
// per KV head and value dims up to 128 (every dense family hyc builds, down
// to stories260K's 8; tails masked), AVX-512F+BW+VL: same semantics as
// attendGroup (attention.cpp), laid out
// so that each cached row is loaded once for the whole group and no loop
// waits on a horizontal sum.
//
// - Scores are stored [position][head] (G per position). The key pass takes
//   R = 16 / G cached rows at a time: 16 accumulators (row, head), one per
//   dot product, over the head dim; one transpose-and-add tree turns the 16
//   into one vector of 16 scores, stored contiguously.
// - Softmax works on that layout directly: lane i holds head i % G.
// - The value pass loads each cached row once and feeds up to 16
//   accumulators (heads x 16-wide slices); with more than 16, heads are
//   split into passes over the rows (L1/L2-resident by then).
// int8 rows (a scale per row) load as codes widened to fp32; each row's
// scale multiplies its R x G scores as one vector (lane r * G + h) and its
// weight in the value pass: the dequantization, once per row rather than
// per element, on the way through registers.
// Rows are prefetched a fixed distance ahead through the block table: a
// KV head's rows are contiguous within a page (head-major pages), but pages
// jump, which the hardware prefetchers do not follow.
#include "attention_group.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <immintrin.h>
#include <type_traits>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")

#include "../vec_avx512.h"

namespace hyrt::cpu {

namespace {

inline __m512 load16(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load16(const uint16_t *p, __mmask16 m) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
inline __m512 load16(const int8_t *p, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}
inline __m512 load16(const float *p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t *p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

// Rows prefetched ahead in the key and value passes (through the block
// table, so across pages). Measured on a 2-vCPU Xeon with the cache in DRAM
// (n = 4000, bf16, dense-1b heads): 0.87 ms per layer with value prefetch
// inside a page only, 0.57-0.63 from 8 to 32 rows ahead across pages.
constexpr int64_t kAheadK = 16, kAheadV = 16;

/// Tokens t0 .. t0 + tq - 1 of one sequence at consecutive positions (a
/// decode token is tq = 1; an extend step's tokens come in blocks), KV head
/// kvh. Token u sees positions [0, p0 + u]. Each block of cached rows comes
/// from memory once and serves every token of the block from L1.
/// With `split` (tq = 1 only) the token sees positions [begin, end) and the
/// result is a partial one: unnormalized output, maximum and sum per head.
template <typename T, int G, int SV>
void attendRows(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                int64_t numHeads, float scale, int64_t t0, int64_t tq, int64_t kvh,
                float *scores, float *out, const KvSplit *split) {
  constexpr int R = 16 / G;
  constexpr int HB = G * SV <= 16 ? G : 16 / SV; // heads per value pass
  constexpr int64_t kValueBlock = 64, dvPad = 16 * SV; // accumulator stride
  const int64_t p0 = step->positions[t0], nMax = p0 + tq, dk = l.dk, dv = l.dv;
  // SV slices cover dv (16 * (SV - 1) < dv <= 16 * SV); lanes past dv are
  // masked off on load and store.
  __mmask16 vMask[SV];
  for (int s = 0; s < SV; ++s)
    vMask[s] = dv > 16 * s ? tailMask(dv - 16 * s) : __mmask16(0);
  // Positions [j0, nOf(u)) of token u; scores are stored from j0 on.
  const int64_t j0 = split ? split->begin : 0;
  auto nOf = [&](int64_t u) { return split ? split->end : p0 + u + 1; };
  const int64_t stride = nMax * G + 16; // one token's scores
  const __m512 vscale = _mm512_set1_ps(scale);

  const int64_t *const rows = rowIdsOf(step, l, t0, nMax);

  const int64_t dkPad = (dk + 15) / 16 * 16;
  thread_local std::vector<float> kWideBuf, vWideBuf;
  kWideBuf.resize(size_t(R * dkPad));
  float *kWide = pinned(kWideBuf.data());

  // Keys: R rows x G heads per block; the tail block repeats its last row
  // in the unused slots and stores only the valid lanes.
  const int64_t jStop = nOf(tq - 1); // the last token sees the most rows
  for (int64_t j = j0; j < jStop; j += R) {
    const T *kRows[R];
    __m512 rowScales = vscale; // lane r * G + h: row r's scale x the score scale
    for (int r = 0; r < R; ++r)
      kRows[r] = l.kRow<T>(rows[j + r < jStop ? j + r : jStop - 1], kvh);
    if constexpr (std::is_same_v<T, int8_t>) {
      alignas(64) float lanes[16];
      for (int r = 0; r < R; ++r)
        for (int h = 0; h < G; ++h)
          lanes[r * G + h] = l.kScaleOf<T>(rows[j + r < jStop ? j + r : jStop - 1], kvh) * scale;
      rowScales = _mm512_load_ps(lanes);
    }
    // Several tokens read these rows: widen bf16 once (zero padded to the
    // 16-lane step), not once per token.
    const float *kr[R];
    if (std::is_same_v<T, float> || tq == 1) {
      for (int r = 0; r < R; ++r)
        kr[r] = reinterpret_cast<const float *>(kRows[r]);
    } else {
      for (int r = 0; r < R; ++r) {
        float *dst = kWide + r * dkPad;
        for (int64_t s = 0; s < dk; s += 16)
          _mm512_storeu_ps(dst + s, load16(kRows[r] + s, tailMask(dk - s)));
        kr[r] = dst;
      }
    }
    for (int64_t r = j + kAheadK; r < j + kAheadK + R && r < jStop; ++r)
      prefetchRowL2(l.kRow<T>(rows[r], kvh), dk);
    for (int64_t u = 0; u < tq; ++u) {
      const int64_t n = nOf(u);
      if (j >= n)
        continue;
      const float *qg = q + ((t0 + u) * numHeads + kvh * G) * dk;
      __m512 acc[16];
      for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_setzero_ps();
      for (int64_t s = 0; s < dk; s += 16) {
        const __mmask16 m = tailMask(dk - s); // zero lanes past dk on both sides
        for (int r = 0; r < R; ++r) {
          const __m512 k = std::is_same_v<T, float> || tq > 1
                               ? load16(kr[r] + s, m)
                               : load16(reinterpret_cast<const T *>(kr[r]) + s, m);
          for (int h = 0; h < G; ++h)
            acc[r * G + h] =
                _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, qg + h * dk + s), k, acc[r * G + h]);
        }
      }
      const int64_t valid = (n - j < R ? n - j : R) * G;
      _mm512_mask_storeu_ps(scores + u * stride + (j - j0) * G, tailMask(valid),
                            _mm512_mul_ps(hsum16(acc), rowScales));
    }
  }

  // The thread's buffers through pinned pointers (tls_pointer.h).
  thread_local std::vector<float> sumsBuf, accBuf;
  sumsBuf.resize(size_t(tq * G));
  accBuf.assign(size_t(tq * G * dvPad), 0.0f);
  float *const sums = pinned(sumsBuf.data()), *const accAll = pinned(accBuf.data());
  for (int64_t u = 0; u < tq; ++u)
    softmaxRows<G>(scores + u * stride, nOf(u) - j0, sums + u * G,
                   split ? split->partial + G * dvPad : nullptr);

  // Values, kValueBlock rows at a time (L1-resident for the block's other
  // tokens): per token, HB heads x SV slices of accumulators per pass.
  // A decode token whose heads do not fit one pass (G x SV > 16) takes
  // every head in each pass over SP of the slices instead: each element is
  // read once and nothing is widened (moe-small's 8 heads x 128:
  // bench/README.md, "The avx2 variant's attention"). Otherwise bf16 value
  // rows read by several passes (tokens, or head groups when G > HB) are
  // widened once per block.
  constexpr int SP = G >= 16 ? 1 : 16 / G; // slices per all-heads pass
  const bool allHeads = tq == 1 && G * SV > 16 && SV % SP == 0;
  const bool widenV = !std::is_same_v<T, float> && (tq > 1 || (G > HB && !allHeads));
  if (widenV)
    vWideBuf.resize(size_t(kValueBlock * dvPad));
  float *const vWide = pinned(vWideBuf.data());
  for (int64_t jb = j0; jb < jStop; jb += kValueBlock) {
    if (widenV)
      for (int64_t j = jb; j < std::min(jb + kValueBlock, jStop); ++j) {
        const T *vr = l.vRow<T>(rows[j], kvh);
        for (int sl = 0; sl < SV; ++sl)
          _mm512_storeu_ps(&vWide[size_t((j - jb) * dvPad + 16 * sl)],
                           load16(vr + 16 * sl, vMask[sl]));
      }
    for (int64_t u = 0; u < tq; ++u) {
      const int64_t jEnd = std::min(jb + kValueBlock, nOf(u));
      if (jb >= jEnd)
        continue;
      const float *su = scores + u * stride;
      if constexpr (G * SP == 16) {
        if (allHeads) {
          for (int c0 = 0; c0 < SV; c0 += SP) {
            __m512 acc[G * SP];
            for (int h = 0; h < G; ++h)
              for (int s = 0; s < SP; ++s)
                acc[h * SP + s] = _mm512_loadu_ps(accAll + h * dvPad + 16 * (c0 + s));
            for (int64_t j = jb; j < jEnd; ++j) {
              if (c0 == 0 && j + kAheadV < jStop)
                prefetchRowL2(l.vRow<T>(rows[j + kAheadV], kvh), dv);
              const T *vr = l.vRow<T>(rows[j], kvh);
              __m512 v[SP];
              for (int s = 0; s < SP; ++s)
                v[s] = load16(vr + 16 * (c0 + s), vMask[c0 + s]);
              const float vs = l.vScaleOf<T>(rows[j], kvh);
              for (int h = 0; h < G; ++h) {
                const __m512 w = _mm512_set1_ps(su[(j - j0) * G + h] * vs);
                for (int s = 0; s < SP; ++s)
                  acc[h * SP + s] = _mm512_fmadd_ps(w, v[s], acc[h * SP + s]);
              }
            }
            for (int h = 0; h < G; ++h)
              for (int s = 0; s < SP; ++s)
                _mm512_storeu_ps(accAll + h * dvPad + 16 * (c0 + s), acc[h * SP + s]);
          }
          continue;
        }
      }
      for (int h0 = 0; h0 < G; h0 += HB) {
        float *au = accAll + (u * G + h0) * dvPad;
        __m512 acc[HB * SV];
        for (int i = 0; i < HB * SV; ++i)
          acc[i] = _mm512_loadu_ps(au + 16 * i);
        for (int64_t j = jb; j < jEnd; ++j) {
          if (u == 0 && h0 == 0 && j + kAheadV < jStop)
            prefetchRowL2(l.vRow<T>(rows[j + kAheadV], kvh), dv);
          __m512 v[SV];
          if (widenV) {
            const float *vw = &vWide[size_t((j - jb) * dvPad)];
            for (int s = 0; s < SV; ++s)
              v[s] = _mm512_loadu_ps(vw + 16 * s);
          } else {
            const T *vr = l.vRow<T>(rows[j], kvh);
            for (int s = 0; s < SV; ++s)
              v[s] = load16(vr + 16 * s, vMask[s]);
          }
          const float vs = l.vScaleOf<T>(rows[j], kvh);
          for (int h = 0; h < HB; ++h) {
            const __m512 w = _mm512_set1_ps(su[(j - j0) * G + h0 + h] * vs);
            for (int s = 0; s < SV; ++s)
              acc[h * SV + s] = _mm512_fmadd_ps(w, v[s], acc[h * SV + s]);
          }
        }
        for (int i = 0; i < HB * SV; ++i)
          _mm512_storeu_ps(au + 16 * i, acc[i]);
      }
    }
  }
  if (split) {
    writeSplitPartial(accAll, sums, G, dvPad, *split);
    return;
  }
  for (int64_t u = 0; u < tq; ++u)
    for (int h = 0; h < G; ++h) {
      const float *au = accAll + (u * G + h) * dvPad;
      float *o = out + ((t0 + u) * numHeads + kvh * G + h) * dv;
      const __m512 inv = _mm512_set1_ps(1.0f / sums[size_t(u * G + h)]);
      for (int s = 0; s < SV; ++s)
        _mm512_mask_storeu_ps(o + 16 * s, vMask[s],
                              _mm512_mul_ps(_mm512_loadu_ps(au + 16 * s), inv));
    }
}

template <typename T, int G>
bool dispatchSv(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                float *scores, float *out, const KvSplit *split) {
  // Value widths up to 128 in power-of-two slice counts (masked tails).
  if (l.dv <= 0 || l.dv > 128)
    return false;
  if (l.dv <= 16)
    attendRows<T, G, 1>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  else if (l.dv <= 32)
    attendRows<T, G, 2>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  else if (l.dv <= 64)
    attendRows<T, G, 4>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  else
    attendRows<T, G, 8>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  return true;
}

} // namespace

template <typename T>
bool attendRowsAvx512(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                      int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                      float *scores, float *out, const KvSplit *split) {
  if (l.dk <= 0 || l.dk > 1024)
    return false;
  switch (l.group) {
  case 1:
    return dispatchSv<T, 1>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  case 2:
    return dispatchSv<T, 2>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  case 4:
    return dispatchSv<T, 4>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  case 8:
    return dispatchSv<T, 8>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  case 16:
    return dispatchSv<T, 16>(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  default:
    return false;
  }
}

template bool attendRowsAvx512<float>(const hyrt_step_v0 *, const LayerView &, const float *,
                                      int64_t, float, int64_t, int64_t, int64_t, float *,
                                      float *, const KvSplit *);
template bool attendRowsAvx512<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                         const float *, int64_t, float, int64_t, int64_t,
                                         int64_t, float *, float *, const KvSplit *);
template bool attendRowsAvx512<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                       const float *, int64_t, float, int64_t, int64_t,
                                       int64_t, float *, float *, const KvSplit *);

} // namespace hyrt::cpu

#pragma GCC pop_options
