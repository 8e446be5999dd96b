// The absorbed MLA kernel's attention on AVX2 + FMA (hosts without AVX-512,
// the avx2 variant): attendLatentAvx512's blocks in 8-lane vectors (see
// mla_attention.cpp for the math, mla_attention_avx512.cpp for the layout).
//
// Why: the portable body computes each (head, position) score as its own
// dot product and each head's value sums through memory; on the avx2
// variant mla-small's decode at 4000 positions spent 15 ms of a 37.5 ms step
// there (bench/README.md, "The avx2 variant's attention").
//
// Per block of up to 16 positions: the rows widened to fp32 once (int8
// dequantized there), scores 4 query rows x 2 positions per eight
// accumulators and one sum8 tree, the online softmax lane-parallel over 8
// query rows, values 4 query rows x 16 columns per pass over the block.
#include "mla_latent_blocks.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <type_traits>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "../vec_avx2.h"

namespace hyrt::cpu {

namespace {

/// Positions per block: the block's widened rows (16 x 576 floats for
/// DeepSeek) stay in L1/L2 while every query row's value pass reads them.
constexpr int64_t kBlock = 16;

thread_local LatentWork tWork;

/// o[i + r][cols] = alpha o[i + r][cols] + sum_b p[b][i + r] c[b][cols] for
/// the query rows r < rows (<= 4) and NC 8-wide slices from `col`: 4 x NC
/// accumulators, each c slice loaded once for the 4 rows.
template <int NC>
inline void valueSlices(const float *c, int64_t dPad, const float *p, int64_t mPad, int64_t nb,
                        int64_t i, int rows, int64_t col, const float *alpha, float *o,
                        int64_t R) {
  __m256 acc[4][NC];
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < NC; ++k)
      acc[r][k] = r < rows ? _mm256_mul_ps(_mm256_loadu_ps(o + (i + r) * R + col + 8 * k),
                                           _mm256_set1_ps(alpha[i + r]))
                           : _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const float *cb = c + b * dPad + col;
    __m256 v[NC];
    for (int k = 0; k < NC; ++k)
      v[k] = _mm256_loadu_ps(cb + 8 * k);
    // p is zero padded past M (mPad columns), so rows past `rows` add 0.
    for (int r = 0; r < 4; ++r) {
      const __m256 w = _mm256_set1_ps(p[b * mPad + i + r]);
      for (int k = 0; k < NC; ++k)
        acc[r][k] = _mm256_fmadd_ps(w, v[k], acc[r][k]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < NC; ++k)
      _mm256_storeu_ps(o + (i + r) * R + col + 8 * k, acc[r][k]);
}

} // namespace

template <typename T>
bool attendLatentAvx2(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                      const float *qLat, const float *qPe, int64_t t0, int64_t tq,
                      int64_t begin, int64_t end, float *parts) {
  const int64_t H = m.heads, R = m.rank, D = m.rank + m.rope;
  if (R % 8 != 0 || m.rope % 8 != 0 || tq < 1 || tq > 64)
    return false;
  // Query rows padded to whole 8-lane vectors of the softmax.
  const int64_t M = tq * H, mPad = (M + 7) / 8 * 8;
  LatentWork &w = tWork;
  w.q.assign(size_t(mPad * D), 0.0f);
  w.c.resize(size_t((kBlock + 1) * D));
  w.s.resize(size_t((kBlock + 1) * mPad));
  w.o.assign(size_t(M * R), 0.0f);
  w.stats.resize(size_t(3 * mPad));
  float *const wq = pinned(w.q.data()), *const wc = pinned(w.c.data()),
              *const ws = pinned(w.s.data()), *const wo = pinned(w.o.data());
  float *mx = pinned(w.stats.data()), *sum = mx + mPad, *alpha = sum + mPad;
  std::fill(mx, mx + mPad, -INFINITY);
  std::fill(sum, sum + mPad, 0.0f);
  // Query rows [q_lat | q_pe]; padding rows stay zero (score 0, unused).
  packLatentQueries(m, qLat, qPe, t0, M, wq, D);
  // Token u sees positions below lastOf[u] (its own included).
  int64_t lastOf[64];
  const int64_t stop = latentStops(step, t0, tq, begin, end, lastOf);
  const int32_t *blocks =
      step->block_tables + int64_t(step->token_seq[t0]) * step->max_pages_per_seq;
  const __m256 vscale = _mm256_set1_ps(m.scale);
  for (int64_t j0 = begin; j0 < stop; j0 += kBlock) {
    const int64_t nb = std::min(kBlock, stop - j0);
    // Widen the block's rows once; an odd count gets a zero row (score 0,
    // unused).
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t pos = j0 + b;
      const int64_t id = int64_t(blocks[pos / l.page]) * l.page + pos % l.page;
      const T *row = l.kRow<T>(id, 0);
      float *cb = wc + b * D;
      if constexpr (std::is_same_v<T, int8_t>) {
        const __m256 rs = _mm256_set1_ps(l.kScaleOf<T>(id, 0));
        for (int64_t d = 0; d < D; d += 8)
          _mm256_storeu_ps(cb + d, _mm256_mul_ps(load8(row + d), rs));
      } else {
        for (int64_t d = 0; d < D; d += 8)
          _mm256_storeu_ps(cb + d, load8(row + d));
      }
    }
    const int64_t nb2 = (nb + 1) / 2 * 2;
    std::fill(wc + nb * D, wc + nb2 * D, 0.0f);
    // Scores [position][query row]: 4 query rows x 2 positions per eight
    // accumulators (6 loads per 8 FMAs), one sum8 tree for the 8 dots.
    for (int64_t i0 = 0; i0 < mPad; i0 += 4) {
      const float *q0 = wq + i0 * D;
      for (int64_t b = 0; b < nb2; b += 2) {
        const float *c0 = wc + b * D;
        __m256 acc[8];
        for (int g = 0; g < 8; ++g)
          acc[g] = _mm256_setzero_ps();
        for (int64_t d = 0; d < D; d += 8) {
          const __m256 x0 = _mm256_loadu_ps(c0 + d), x1 = _mm256_loadu_ps(c0 + D + d);
          for (int g = 0; g < 4; ++g) {
            const __m256 q = _mm256_loadu_ps(q0 + g * D + d);
            acc[g] = _mm256_fmadd_ps(q, x0, acc[g]);
            acc[4 + g] = _mm256_fmadd_ps(q, x1, acc[4 + g]);
          }
        }
        // Lanes 4r..4r+3: position b + r, query rows i0..i0+3.
        const __m256 sv = _mm256_mul_ps(sum8(acc), vscale);
        _mm_storeu_ps(ws + b * mPad + i0, _mm256_castps256_ps128(sv));
        _mm_storeu_ps(ws + (b + 1) * mPad + i0, _mm256_extractf128_ps(sv, 1));
      }
    }
    // Positions past a token's own are not scores.
    maskPastOwn(ws, mPad, H, tq, lastOf, j0, nb);
    // Online softmax, lane-parallel over query rows.
    for (int64_t i0 = 0; i0 < mPad; i0 += 8) {
      const __m256 mOld = _mm256_loadu_ps(mx + i0);
      __m256 mNew = mOld;
      for (int64_t b = 0; b < nb; ++b)
        mNew = _mm256_max_ps(mNew, _mm256_loadu_ps(ws + b * mPad + i0));
      // A row with no finite score yet keeps alpha 1 and p 0 (no NaN from
      // -inf - -inf).
      const __m256 live = _mm256_cmp_ps(mNew, _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ);
      const __m256 a = _mm256_blendv_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(mOld, mNew)),
                                        live);
      __m256 blockSum = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        float *sb = ws + b * mPad + i0;
        const __m256 p = _mm256_and_ps(live, exp256(_mm256_sub_ps(_mm256_loadu_ps(sb), mNew)));
        _mm256_storeu_ps(sb, p);
        blockSum = _mm256_add_ps(blockSum, p);
      }
      _mm256_storeu_ps(sum + i0, _mm256_fmadd_ps(_mm256_loadu_ps(sum + i0), a, blockSum));
      _mm256_storeu_ps(mx + i0, mNew);
      _mm256_storeu_ps(alpha + i0, a);
    }
    // Values: o_lat rows += p . c over the block, 4 query rows x 16
    // columns at a time.
    for (int64_t col = 0; col < R; col += 16) {
      const bool full = col + 16 <= R;
      for (int64_t i = 0; i < M; i += 4) {
        const int rows = int(std::min<int64_t>(4, M - i));
        if (full)
          valueSlices<2>(wc, D, ws, mPad, nb, i, rows, col, alpha, wo, R);
        else
          valueSlices<1>(wc, D, ws, mPad, nb, i, rows, col, alpha, wo, R);
      }
    }
  }
  writeLatentPartials(m, tq, wo, mx, sum, parts);
  return true;
}

template bool attendLatentAvx2<float>(const hyrt_step_v0 *, const LayerView &, const Mla &,
                                      const float *, const float *, int64_t, int64_t, int64_t,
                                      int64_t, float *);
template bool attendLatentAvx2<uint16_t>(const hyrt_step_v0 *, const LayerView &, const Mla &,
                                         const float *, const float *, int64_t, int64_t,
                                         int64_t, int64_t, float *);
template bool attendLatentAvx2<int8_t>(const hyrt_step_v0 *, const LayerView &, const Mla &,
                                       const float *, const float *, int64_t, int64_t, int64_t,
                                       int64_t, float *);

} // namespace hyrt::cpu

#pragma GCC pop_options
