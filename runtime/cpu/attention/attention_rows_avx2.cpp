// The row-blocked GQA-group attention kernel on AVX2 + FMA, for hosts
// without AVX-512 (and the avx2 variant on any host): the layout and
// semantics of attention_rows_avx512.cpp in 8-lane vectors, for groups of 1,
// 2, 4 or 8 query heads per KV head, head dims multiples of 8, dk up to
// 1024 and dv up to 128.
//
// Why: the portable per-token body reads each cached row once per token
// and per head walks, sums each value row one head at a time through
// memory, and runs no KV splits; on the avx2 variant a 1000-token prompt
// spent 12% of its prefill there at ~96 GFLOP/s (41% of the AVX2 FMA peak)
// and decode attention at 1000 positions read the cache at a third of the
// bandwidth (bench/README.md, "The avx2 variant's attention").
//
// - Keys: R = 8 / G cached rows x G heads per step, eight accumulators over
//   the head dim, one hadd tree to eight scores stored contiguously
//   ([position][head], lane i = head i % G).
// - Softmax on that layout (vec_avx2.h softmaxRows8).
// - Values: each row loaded once per pass feeds HB heads x SC 8-lane slices
//   (at most eight accumulators, so the broadcast weights and the row stay
//   in registers); passes over heads and slices re-read a block of
//   kValueBlock rows from L1/L2, widened to fp32 once per block when more
//   than one pass or token reads it.
// int8 rows: a row's scale multiplies its scores as one vector and its
// weight in the value pass. Rows are prefetched ahead through the block
// table into L2, as in the AVX-512 form.
#include "attention_group.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <immintrin.h>
#include <type_traits>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "../vec_avx2.h"

namespace hyrt::cpu {

namespace {

/// Rows prefetched ahead in the key and value passes: more than the
/// AVX-512 form's 16, for the 8-lane passes spend fewer cycles per row
/// (`HYC_BENCH_AVX2=1 hyc_extend_attention_bench 4000 1 7 16 16 32 8 64`,
/// decode from DRAM, cache GB/s: 16 rows 17.6-17.8, 32 19.7-19.9, 64
/// 18.9-19.5; moe-small's heads the same at every distance).
constexpr int64_t kAheadK = 32, kAheadV = 32;
/// Value rows per block: 64 x 128 fp32 = 32 KiB, an L1's worth.
constexpr int64_t kValueBlock = 64;

/// Tokens t0 .. t0 + tq - 1 of one sequence at consecutive positions, KV
/// head kvh (attendRowsAvx512's contract, split included). SC: 8-lane
/// slices per value pass (dividing dv / 8); HB heads per pass.
template <typename T, int G, int SC>
void attendRows(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                int64_t numHeads, float scale, int64_t t0, int64_t tq, int64_t kvh,
                float *scores, float *out, const KvSplit *split) {
  constexpr int R = 8 / G;
  constexpr int HB = G * SC <= 8 ? G : 8 / SC;
  const int64_t p0 = step->positions[t0], nMax = p0 + tq, dk = l.dk, dv = l.dv;
  // The accumulators' stride per head: the split partials' layout
  // (kvSplitFloats), dv rounded up to 16.
  const int64_t dvPad = kvSplitFloats(l) / G - 2;
  const int64_t j0 = split ? split->begin : 0;
  auto nOf = [&](int64_t u) { return split ? split->end : p0 + u + 1; };
  const int64_t stride = nMax * G + 16; // one token's scores
  const __m256 vscale = _mm256_set1_ps(scale);

  const int64_t *const rows = rowIdsOf(step, l, t0, nMax);

  thread_local std::vector<float> kWideBuf, vWideBuf;
  kWideBuf.resize(size_t(R * dk));
  float *kWide = pinned(kWideBuf.data());

  // Keys: TU tokens x RS rows x G heads per step (TU * RS * G = 8); the
  // tail step repeats its last row in the unused slots. One head (G = 1:
  // MHA, MLA's expanded heads) in an extend block takes token pairs, so
  // that each step loads 2 query and 4 key slices per 8 FMAs rather than 1
  // and 8; otherwise one token.
  const int64_t jStop = nOf(tq - 1);
  const bool widenK = !std::is_same_v<T, float> && tq > 1;
  auto keyPass = [&](auto tokens) {
    constexpr int TU = decltype(tokens)::value, RS = R / TU;
    for (int64_t j = j0; j < jStop; j += RS) {
      const T *kRows[RS];
      // lane u * RS * G + r * G + h: row r's scale x the score scale
      __m256 rowScales = vscale;
      for (int r = 0; r < RS; ++r)
        kRows[r] = l.kRow<T>(rows[j + r < jStop ? j + r : jStop - 1], kvh);
      if constexpr (std::is_same_v<T, int8_t>) {
        alignas(32) float lanes[8];
        for (int i = 0; i < 8; ++i)
          lanes[i] = l.kScaleOf<T>(rows[j + i / G % RS < jStop ? j + i / G % RS : jStop - 1], kvh) *
                     scale;
        rowScales = _mm256_load_ps(lanes);
      }
      // Several tokens read these rows: widen once, not once per token.
      if (widenK)
        for (int r = 0; r < RS; ++r)
          for (int64_t s = 0; s < dk; s += 8)
            _mm256_storeu_ps(kWide + r * dk + s, load8(kRows[r] + s));
      for (int64_t r = j + kAheadK; r < j + kAheadK + RS && r < jStop; ++r)
        prefetchRowL2(l.kRow<T>(rows[r], kvh), dk);
      for (int64_t u = 0; u < tq; u += TU) {
        if (j >= nOf(std::min<int64_t>(u + TU, tq) - 1)) // the pair's later token sees most
          continue;
        const float *qg[TU];
        for (int x = 0; x < TU; ++x)
          qg[x] = q + ((t0 + std::min<int64_t>(u + x, tq - 1)) * numHeads + kvh * G) * dk;
        __m256 acc[8];
        for (int i = 0; i < 8; ++i)
          acc[i] = _mm256_setzero_ps();
        for (int64_t s = 0; s < dk; s += 8) {
          // The query slices once per step (in registers up to 4: 8
          // accumulators + 4 + the row fit the 16 ymm), then RS rows.
          __m256 qs[TU * G];
          for (int x = 0; x < TU; ++x)
            for (int h = 0; h < G; ++h)
              qs[x * G + h] = _mm256_loadu_ps(qg[x] + h * dk + s);
          for (int r = 0; r < RS; ++r) {
            const __m256 k = widenK ? _mm256_loadu_ps(kWide + r * dk + s) : load8(kRows[r] + s);
            for (int x = 0; x < TU; ++x)
              for (int h = 0; h < G; ++h)
                acc[(x * RS + r) * G + h] = _mm256_fmadd_ps(qs[x * G + h], k, acc[(x * RS + r) * G + h]);
          }
        }
        // All lanes stored: lanes past a token's last position land in
        // slots its softmax never reads (a token's stride has 16 floats past
        // every position's scores).
        const __m256 sv = _mm256_mul_ps(sum8(acc), rowScales);
        if constexpr (TU == 1) {
          _mm256_storeu_ps(scores + u * stride + (j - j0) * G, sv);
        } else {
          _mm_storeu_ps(scores + u * stride + (j - j0) * G, _mm256_castps256_ps128(sv));
          if (u + 1 < tq)
            _mm_storeu_ps(scores + (u + 1) * stride + (j - j0) * G, _mm256_extractf128_ps(sv, 1));
        }
      }
    }
  };
  if (G == 1 && tq > 1)
    keyPass(std::integral_constant<int, 2>{});
  else
    keyPass(std::integral_constant<int, 1>{});

  thread_local std::vector<float> sumsBuf, accBuf;
  sumsBuf.resize(size_t(tq * G));
  accBuf.assign(size_t(tq * G * dvPad), 0.0f);
  float *const sums = pinned(sumsBuf.data()), *const accAll = pinned(accBuf.data());
  for (int64_t u = 0; u < tq; ++u)
    softmaxRows8<G>(scores + u * stride, nOf(u) - j0, sums + u * G,
                    split ? split->partial + G * dvPad : nullptr);

  // Values: per block of rows, per token, passes of HB heads x SC slices.
  // Widened when the same elements are read more than once: by several
  // tokens, or by several head passes (slice passes read distinct ones).
  const int64_t slices = dv / 8;
  const bool widenV = !std::is_same_v<T, float> && (tq > 1 || HB < G);
  if (widenV)
    vWideBuf.resize(size_t(kValueBlock * dv));
  float *const vWide = pinned(vWideBuf.data());
  for (int64_t jb = j0; jb < jStop; jb += kValueBlock) {
    const int64_t jbEnd = std::min(jb + kValueBlock, jStop);
    if (widenV)
      for (int64_t j = jb; j < jbEnd; ++j) {
        if (j + kAheadV < jStop)
          prefetchRowL2(l.vRow<T>(rows[j + kAheadV], kvh), dv);
        const T *vr = l.vRow<T>(rows[j], kvh);
        for (int64_t s = 0; s < dv; s += 8)
          _mm256_storeu_ps(&vWide[size_t((j - jb) * dv + s)], load8(vr + s));
      }
    for (int64_t u = 0; u < tq; ++u) {
      const int64_t jEnd = std::min(jbEnd, nOf(u));
      if (jb >= jEnd)
        continue;
      const float *su = scores + u * stride;
      for (int h0 = 0; h0 < G; h0 += HB)
        for (int64_t c0 = 0; c0 < slices; c0 += SC) {
          float *au = accAll + (u * G + h0) * dvPad + 8 * c0;
          __m256 acc[HB * SC];
          for (int h = 0; h < HB; ++h)
            for (int s = 0; s < SC; ++s)
              acc[h * SC + s] = _mm256_loadu_ps(au + h * dvPad + 8 * s);
          // Row j's slices and weights into the accumulators; `widened`:
          // from the block's fp32 copy, else from the cache (prefetched
          // ahead: the first pass is the one that brings them from memory).
          auto rowsInto = [&](auto widened) {
            const bool prefetch = !widened && u == 0 && h0 == 0 && c0 == 0;
            for (int64_t j = jb; j < jEnd; ++j) {
              if (prefetch && j + kAheadV < jStop)
                prefetchRowL2(l.vRow<T>(rows[j + kAheadV], kvh), dv);
              const float vs = l.vScaleOf<T>(rows[j], kvh);
              __m256 w[HB];
              for (int h = 0; h < HB; ++h)
                w[h] = _mm256_set1_ps(su[(j - j0) * G + h0 + h] * vs);
              const float *vw = &vWide[size_t((j - jb) * dv + 8 * c0)];
              const T *vr = l.vRow<T>(rows[j], kvh) + 8 * c0;
              for (int s = 0; s < SC; ++s) {
                const __m256 v = widened ? _mm256_loadu_ps(vw + 8 * s) : load8(vr + 8 * s);
                for (int h = 0; h < HB; ++h)
                  acc[h * SC + s] = _mm256_fmadd_ps(w[h], v, acc[h * SC + s]);
              }
            }
          };
          if (widenV)
            rowsInto(std::true_type{});
          else
            rowsInto(std::false_type{});
          for (int h = 0; h < HB; ++h)
            for (int s = 0; s < SC; ++s)
              _mm256_storeu_ps(au + h * dvPad + 8 * s, acc[h * SC + s]);
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
      const __m256 inv = _mm256_set1_ps(1.0f / sums[size_t(u * G + h)]);
      for (int64_t s = 0; s < dv; s += 8)
        _mm256_storeu_ps(o + s, _mm256_mul_ps(_mm256_loadu_ps(au + s), inv));
    }
}

using RowsFn = void (*)(const hyrt_step_v0 *, const LayerView &, const float *, int64_t, float,
                        int64_t, int64_t, int64_t, float *, float *, const KvSplit *);

/// The value pass's slices per pass. Extend blocks (several tokens): SC =
/// 4 where the group has two heads or more (two broadcast weights share
/// each loaded slice, the block's rows widened once for every pass), 8 for
/// one head. Decode: every head in one pass, SC = 8 / G, so that each
/// element of a row is read once and nothing is widened; but 8 heads take
/// two passes of 4 heads x 2 slices (8 broadcast weights per 8 FMAs ran
/// slower than 4 weights and 2 row slices, widening included: moe-small's
/// heads at 4000 positions 87-89 -> 96 GFLOP/s). Fewer slices where dv / 8
/// is not a multiple.
template <typename T, int G> RowsFn pickSlices(int64_t slices, bool decode) {
  constexpr int perHead = G == 8 ? 2 : 8 / G;
  if (decode && slices % perHead == 0)
    return attendRows<T, G, perHead>;
  constexpr int widest = G == 1 ? 8 : 4;
  if (widest == 8 && slices % 8 == 0)
    return attendRows<T, G, 8>;
  if (slices % 4 == 0)
    return attendRows<T, G, 4>;
  if (slices % 2 == 0)
    return attendRows<T, G, 2>;
  return attendRows<T, G, 1>;
}

} // namespace

void expAvx2(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = laneMask8(n - i);
    _mm256_maskstore_ps(y + i, m, exp256(_mm256_maskload_ps(x + i, m)));
  }
}

bool rowsAvx2Shape(const LayerView &l) {
  return l.dk > 0 && l.dk <= 1024 && l.dk % 8 == 0 && l.dv > 0 && l.dv <= 128 &&
         l.dv % 8 == 0 && !l.vStride &&
         (l.group == 1 || l.group == 2 || l.group == 4 || l.group == 8);
}

template <typename T>
bool attendRowsAvx2(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                    int64_t numHeads, float scale, int64_t t, int64_t tq, int64_t kvh,
                    float *scores, float *out, const KvSplit *split) {
  if (!rowsAvx2Shape(l))
    return false;
  const int64_t slices = l.dv / 8;
  const bool decode = tq == 1;
  const RowsFn fn = l.group == 1   ? pickSlices<T, 1>(slices, decode)
                    : l.group == 2 ? pickSlices<T, 2>(slices, decode)
                    : l.group == 4 ? pickSlices<T, 4>(slices, decode)
                                   : pickSlices<T, 8>(slices, decode);
  fn(step, l, q, numHeads, scale, t, tq, kvh, scores, out, split);
  return true;
}

template bool attendRowsAvx2<float>(const hyrt_step_v0 *, const LayerView &, const float *,
                                    int64_t, float, int64_t, int64_t, int64_t, float *, float *,
                                    const KvSplit *);
template bool attendRowsAvx2<uint16_t>(const hyrt_step_v0 *, const LayerView &, const float *,
                                       int64_t, float, int64_t, int64_t, int64_t, float *,
                                       float *, const KvSplit *);
template bool attendRowsAvx2<int8_t>(const hyrt_step_v0 *, const LayerView &, const float *,
                                     int64_t, float, int64_t, int64_t, int64_t, float *,
                                     float *, const KvSplit *);

} // namespace hyrt::cpu

#pragma GCC pop_options
