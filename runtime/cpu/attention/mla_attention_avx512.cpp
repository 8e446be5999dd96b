// AVX-512 (F+BW+VL) blocks of the absorbed MLA kernel (see mla_attention.cpp for the
// math). Query rows are (token, head) pairs of a token block; keys are the
// cached rows [c | k_pe] and values their first `rank` elements.
//
// Per block of up to 32 positions:
// - the block's cache rows are widened to fp32 once (int8 rows dequantized
//   there, code x the row's scale, so everything after reads fp32; zero padded to a
//   multiple of 16), shared by every query row;
// - scores: 4 query rows x 4 positions at a time, 16 accumulators over the
//   row, one transpose-and-add tree (hsum16) gives their 16 scores in one
//   vector, stored [position][query row];
// - the online softmax runs lane-parallel over those vectors (16 query
//   rows per vector), masking positions past a token's own;
// - values: two query rows x up to 8 16-wide slices of o_lat in registers
//   per pass over the block (the block's rows stay in L1/L2).
// The folds through kv_b keep the token block's accumulators in registers
// and load each weight row once per block.
#include "mla_latent_blocks.h"
#include "../tls_pointer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <type_traits>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")

#include "../vec_avx512.h"

namespace hyrt::cpu {

namespace {

// Positions per block: the block's widened rows (16 x 576 floats for
// DeepSeek) stay in L1 while every query row's value pass reads them.
constexpr int64_t kBlock = 16;

inline __m512 widen16(const float *p) { return _mm512_loadu_ps(p); }
inline __m512 widen16(const uint16_t *p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
inline __m512 widen16(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 widen16(const uint16_t *p, __mmask16 m) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
inline __m512 widen16(const int8_t *p, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}

thread_local LatentWork tWork;

/// o[i + r][cols] = alpha o[i + r][cols] + sum_b p[b][i + r] c[b][cols] for
/// the query rows r < rows (<= 4) and NC 16-wide slices from `col`: 4 x NC
/// accumulators, each c slice loaded once for the 4 rows.
template <int NC>
inline void valueSlices(const float *c, int64_t dPad, const float *p, int64_t mPad, int64_t nb,
                        int64_t i, int rows, int64_t col, const float *alpha, float *o,
                        int64_t R) {
  __m512 acc[4][NC];
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < NC; ++k)
      acc[r][k] = r < rows ? _mm512_mul_ps(_mm512_loadu_ps(o + (i + r) * R + col + 16 * k),
                                           _mm512_set1_ps(alpha[i + r]))
                           : _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const float *cb = c + b * dPad + col;
    __m512 v[NC];
    for (int k = 0; k < NC; ++k)
      v[k] = _mm512_loadu_ps(cb + 16 * k);
    // p is zero padded past M (mPad columns), so rows past `rows` add 0.
    for (int r = 0; r < 4; ++r) {
      const __m512 w = _mm512_set1_ps(p[b * mPad + i + r]);
      for (int k = 0; k < NC; ++k)
        acc[r][k] = _mm512_fmadd_ps(w, v[k], acc[r][k]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < NC; ++k)
      _mm512_storeu_ps(o + (i + r) * R + col + 16 * k, acc[r][k]);
}

} // namespace

template <typename T>
bool attendLatentAvx512(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                        const float *qLat, const float *qPe, int64_t t0, int64_t tq,
                        int64_t begin, int64_t end, float *parts) {
  const int64_t H = m.heads, R = m.rank, D = m.rank + m.rope;
  if (R % 16 != 0 || tq < 1 || tq > 64)
    return false;
  const int64_t dPad = (D + 15) / 16 * 16, M = tq * H, mPad = (M + 15) / 16 * 16;
  LatentWork &w = tWork;
  w.q.assign(size_t(mPad * dPad), 0.0f);
  w.c.resize(size_t((kBlock + 3) * dPad));
  w.s.resize(size_t((kBlock + 3) * mPad));
  w.o.assign(size_t(M * R), 0.0f);
  w.stats.resize(size_t(3 * mPad));
  float *const wq = pinned(w.q.data()), *const wc = pinned(w.c.data()),
              *const ws = pinned(w.s.data()), *const wo = pinned(w.o.data());
  float *mx = pinned(w.stats.data()), *sum = mx + mPad, *alpha = sum + mPad;
  std::fill(mx, mx + mPad, -INFINITY);
  std::fill(sum, sum + mPad, 0.0f);
  // Query rows [q_lat | q_pe], zero padded (padding rows score 0, unused).
  packLatentQueries(m, qLat, qPe, t0, M, wq, dPad);
  // Token u sees positions below lastOf[u] (its own included).
  int64_t lastOf[64];
  const int64_t stop = latentStops(step, t0, tq, begin, end, lastOf);
  const int32_t *blocks =
      step->block_tables + int64_t(step->token_seq[t0]) * step->max_pages_per_seq;
  const __m512 vscale = _mm512_set1_ps(m.scale);
  for (int64_t j0 = begin; j0 < stop; j0 += kBlock) {
    const int64_t nb = std::min(kBlock, stop - j0);
    // Widen the block's rows once.
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t pos = j0 + b;
      const int64_t id = int64_t(blocks[pos / l.page]) * l.page + pos % l.page;
      const T *row = l.kRow<T>(id, 0);
      float *cb = wc + b * dPad;
      if constexpr (std::is_same_v<T, int8_t>) {
        const __m512 rs = _mm512_set1_ps(l.kScaleOf<T>(id, 0));
        for (int64_t d = 0; d < dPad; d += 16)
          _mm512_storeu_ps(cb + d, _mm512_mul_ps(widen16(row + d, tailMask(D - d)), rs));
      } else {
        for (int64_t d = 0; d < dPad; d += 16)
          _mm512_storeu_ps(cb + d, widen16(row + d, tailMask(D - d)));
      }
    }
    // Scores [position][query row]: 4 query rows x 4 positions per 16
    // accumulators (8 loads per 16 FMAs), one hsum16 tree for the 16 dots.
    // Positions past nb (up to 3) pair with zero rows (score 0, unused).
    const int64_t nb4 = (nb + 3) / 4 * 4;
    std::fill(wc + nb * dPad, wc + nb4 * dPad, 0.0f);
    for (int64_t i0 = 0; i0 < mPad; i0 += 4) {
      const float *q0 = wq + i0 * dPad;
      for (int64_t b = 0; b < nb4; b += 4) {
        const float *c0 = wc + b * dPad;
        __m512 acc[16];
        for (int g = 0; g < 16; ++g)
          acc[g] = _mm512_setzero_ps();
        for (int64_t d = 0; d < dPad; d += 16) {
          __m512 x[4], q[4];
          for (int r = 0; r < 4; ++r)
            x[r] = _mm512_loadu_ps(c0 + r * dPad + d);
          for (int g = 0; g < 4; ++g)
            q[g] = _mm512_loadu_ps(q0 + g * dPad + d);
          for (int r = 0; r < 4; ++r)
            for (int g = 0; g < 4; ++g)
              acc[r * 4 + g] = _mm512_fmadd_ps(q[g], x[r], acc[r * 4 + g]);
        }
        // Lanes 4r..4r+3: position b + r, query rows i0..i0+3.
        const __m512 sv = _mm512_mul_ps(hsum16(acc), vscale);
        _mm_storeu_ps(ws + (b + 0) * mPad + i0, _mm512_extractf32x4_ps(sv, 0));
        _mm_storeu_ps(ws + (b + 1) * mPad + i0, _mm512_extractf32x4_ps(sv, 1));
        _mm_storeu_ps(ws + (b + 2) * mPad + i0, _mm512_extractf32x4_ps(sv, 2));
        _mm_storeu_ps(ws + (b + 3) * mPad + i0, _mm512_extractf32x4_ps(sv, 3));
      }
    }
    // Positions past a token's own are not scores.
    maskPastOwn(ws, mPad, H, tq, lastOf, j0, nb);
    // Online softmax, lane-parallel over query rows.
    for (int64_t i0 = 0; i0 < mPad; i0 += 16) {
      const __m512 mOld = _mm512_loadu_ps(mx + i0);
      __m512 mNew = mOld;
      for (int64_t b = 0; b < nb; ++b)
        mNew = _mm512_max_ps(mNew, _mm512_loadu_ps(ws + b * mPad + i0));
      // A row with no finite score yet keeps alpha 1 and p 0 (no NaN from
      // -inf - -inf).
      const __mmask16 live = _mm512_cmp_ps_mask(mNew, _mm512_set1_ps(-INFINITY), _CMP_NEQ_OQ);
      const __m512 a = _mm512_mask_blend_ps(live, _mm512_set1_ps(1.0f),
                                            exp512(_mm512_sub_ps(mOld, mNew)));
      __m512 blockSum = _mm512_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        float *sb = ws + b * mPad + i0;
        const __m512 p = _mm512_maskz_mov_ps(live, exp512(_mm512_sub_ps(_mm512_loadu_ps(sb), mNew)));
        _mm512_storeu_ps(sb, p);
        blockSum = _mm512_add_ps(blockSum, p);
      }
      _mm512_storeu_ps(sum + i0, _mm512_fmadd_ps(_mm512_loadu_ps(sum + i0), a, blockSum));
      _mm512_storeu_ps(mx + i0, mNew);
      _mm512_storeu_ps(alpha + i0, a);
    }
    // Values: o_lat rows += p . c over the block, 4 query rows x 64
    // columns at a time (the block's 64-column strip stays in L1).
    for (int64_t col = 0; col < R; col += 64) {
      const bool full = col + 64 <= R;
      for (int64_t i = 0; i < M; i += 4) {
        const int rows = int(std::min<int64_t>(4, M - i));
        if (full)
          valueSlices<4>(wc, dPad, ws, mPad, nb, i, rows, col, alpha,
                         wo, R);
        else
          for (int64_t c = col; c < R; c += 16)
            valueSlices<1>(wc, dPad, ws, mPad, nb, i, rows, c, alpha,
                           wo, R);
      }
    }
  }
  writeLatentPartials(m, tq, wo, mx, sum, parts);
  return true;
}

template bool attendLatentAvx512<float>(const hyrt_step_v0 *, const LayerView &, const Mla &,
                                        const float *, const float *, int64_t, int64_t,
                                        int64_t, int64_t, float *);
template bool attendLatentAvx512<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                           const Mla &, const float *, const float *, int64_t,
                                           int64_t, int64_t, int64_t, float *);
template bool attendLatentAvx512<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                         const Mla &, const float *, const float *, int64_t,
                                         int64_t, int64_t, int64_t, float *);

namespace {

/// foldQueryAvx512 for a block of exactly TB tokens, V 16-wide column
/// slices per pass (TB x V <= 16 accumulators in registers). Each pass
/// walks the nope weight rows in order and reads V x 16 contiguous elements
/// of each: a decode token (TB = 1) takes half a 512-wide row per pass, so
/// the head's W_UK streams from memory in long runs instead of one 64-byte
/// line per row per pass, which left a cold decode step waiting on memory.
constexpr int64_t kFoldAhead = 4;

template <int TB, int V, typename W>
void foldQueryBlock(const Mla &m, const float *qNope, const W *wKvB, int64_t h, int64_t t0,
                    float *qLat) {
  const int64_t R = m.rank, H = m.heads;
  const W *wh = wKvB + h * (m.nope + m.v) * R;
  for (int64_t col = 0; col < R; col += 16 * V) {
    __mmask16 k[V];
    for (int v = 0; v < V; ++v)
      k[v] = tailMask(R - col - 16 * v);
    __m512 acc[TB][V];
    for (int u = 0; u < TB; ++u)
      for (int v = 0; v < V; ++v)
        acc[u][v] = _mm512_setzero_ps();
    for (int64_t d = 0; d < m.nope; ++d) {
      const W *wr = wh + d * R + col;
      // Rows a few ahead, one line at a time: the rows are 1-2 KB apart,
      // which the hardware prefetchers follow late or not at all. Into L2
      // (T1): T0 prefetches of DRAM-resident lines hold the L1 miss buffers
      // (bench/README.md, "Decode attention at depth: prefetch into L2";
      // mla-small w8a8 decode: this kernel 1.13-1.26 -> 0.86-0.91 ms per
      // token).
      if (d + kFoldAhead < m.nope)
        for (int64_t b = 0; b < int64_t(sizeof(W)) * 16 * V; b += 64)
          _mm_prefetch(reinterpret_cast<const char *>(wr + kFoldAhead * R) + b, _MM_HINT_T1);
      __m512 w[V];
      for (int v = 0; v < V; ++v)
        w[v] = widen16(wr + 16 * v, k[v]);
      for (int u = 0; u < TB; ++u) {
        const __m512 q = _mm512_set1_ps(qNope[((t0 + u) * H + h) * m.nope + d]);
        for (int v = 0; v < V; ++v)
          acc[u][v] = _mm512_fmadd_ps(q, w[v], acc[u][v]);
      }
    }
    for (int u = 0; u < TB; ++u) {
      float *dst = qLat + ((t0 + u) * H + h) * R + col;
      for (int v = 0; v < V; ++v)
        _mm512_mask_storeu_ps(dst + 16 * v, k[v], acc[u][v]);
    }
  }
}

} // namespace

namespace {

template <typename W>
void foldQueryAll(const Mla &m, const float *qNope, const W *wKvB, int64_t h, int64_t t0,
                  int64_t t1, float *qLat) {
  // Blocks of up to 8 tokens, each weight row segment loaded once per block.
  for (int64_t t = t0; t < t1; t += 8) {
    switch (std::min<int64_t>(8, t1 - t)) {
    case 1: foldQueryBlock<1, 16>(m, qNope, wKvB, h, t, qLat); break;
    case 2: foldQueryBlock<2, 8>(m, qNope, wKvB, h, t, qLat); break;
    case 3: foldQueryBlock<3, 4>(m, qNope, wKvB, h, t, qLat); break;
    case 4: foldQueryBlock<4, 4>(m, qNope, wKvB, h, t, qLat); break;
    case 5: foldQueryBlock<5, 2>(m, qNope, wKvB, h, t, qLat); break;
    case 6: foldQueryBlock<6, 2>(m, qNope, wKvB, h, t, qLat); break;
    case 7: foldQueryBlock<7, 2>(m, qNope, wKvB, h, t, qLat); break;
    default: foldQueryBlock<8, 2>(m, qNope, wKvB, h, t, qLat); break;
    }
  }
}

} // namespace

void foldQueryAvx512(const Mla &m, const float *qNope, const void *wKvB, bool bf16, int64_t h,
                     int64_t t0, int64_t t1, float *qLat) {
  if (bf16)
    foldQueryAll(m, qNope, static_cast<const uint16_t *>(wKvB), h, t0, t1, qLat);
  else
    foldQueryAll(m, qNope, static_cast<const float *>(wKvB), h, t0, t1, qLat);
}

namespace {

/// dst[i * dstStride + d] = scale_i * sum_r a[i][r] w[d][r] for i < nA,
/// d < nW (scale_i = inv[i], or 1 without inv): U rows x G weight rows per
/// 16 accumulators (each a vector loaded once for the G weight rows, each
/// weight vector widened once for the U rows), one hsum16 for the 16 dots.
/// Rows past nA / nW repeat the last one and are not stored. K % 16 == 0.
/// Each dot's lanes and tree are the same whatever U and G are, so the
/// shapes give the same bits.
template <int U, int G, typename W>
void dotTilesOf(const float *a, int64_t aStride, int64_t nA, const W *w, int64_t nW, int64_t K,
                const float *inv, float *dst, int64_t dstStride) {
  static_assert(U * G == 16, "one hsum16 per tile");
  for (int64_t u0 = 0; u0 < nA; u0 += U) {
    const float *ar[U];
    for (int u = 0; u < U; ++u)
      ar[u] = a + std::min<int64_t>(u0 + u, nA - 1) * aStride;
    for (int64_t d0 = 0; d0 < nW; d0 += G) {
      const W *wr[G];
      for (int g = 0; g < G; ++g)
        wr[g] = w + std::min<int64_t>(d0 + g, nW - 1) * K;
      __m512 acc[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_setzero_ps();
      // The next G weight rows, a line per row per step (the rows are
      // contiguous, so this runs G rows ahead of the loads).
      const bool ahead = d0 + G < nW;
      for (int64_t r = 0; r < K; r += 16) {
        if (ahead && (r * int64_t(sizeof(W))) % 64 == 0)
          for (int g = 0; g < G; ++g)
            _mm_prefetch(reinterpret_cast<const char *>(wr[g] + G * K + r), _MM_HINT_T1);
        __m512 av[U];
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u)
          av[u] = _mm512_loadu_ps(ar[u] + r);
#pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
          const __m512 wv = widen16(wr[g] + r);
#pragma GCC unroll 4
          for (int u = 0; u < U; ++u)
            acc[u * G + g] = _mm512_fmadd_ps(av[u], wv, acc[u * G + g]);
        }
      }
      // Lane u * G + g: row u0 + u, weight row d0 + g.
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, hsum16(acc));
      const int64_t dn = std::min<int64_t>(G, nW - d0);
      for (int64_t u = 0; u < U && u0 + u < nA; ++u) {
        float *o = dst + (u0 + u) * dstStride + d0;
        const float sc = inv ? inv[u0 + u] : 1.0f;
        for (int64_t g = 0; g < dn; ++g)
          o[g] = lanes[u * G + g] * sc;
      }
    }
  }
}

/// dotTilesOf in 4 x 4 tiles, or 1 x 16 for a single row (a decode token),
/// where 4 x 4 would repeat the row 4 times (4x the multiply-adds).
template <typename W>
void dotTiles(const float *a, int64_t aStride, int64_t nA, const W *w, int64_t nW, int64_t K,
              const float *inv, float *dst, int64_t dstStride) {
  if (nA == 1)
    dotTilesOf<1, 16>(a, aStride, nA, w, nW, K, inv, dst, dstStride);
  else
    dotTilesOf<4, 4>(a, aStride, nA, w, nW, K, inv, dst, dstStride);
}

} // namespace

void foldOutputAvx512(const Mla &m, const float *oLat, int64_t oStride, const float *inv,
                      const void *wKvB, bool bf16, int64_t h, int64_t t0, int64_t t1,
                      float *out) {
  // out[t][h][d] = inv[t] * W_UV[h][d] . o_lat[t].
  const int64_t R = m.rank, off = (h * (m.nope + m.v) + m.nope) * R;
  float *dst = out + (t0 * m.heads + h) * m.v;
  if (bf16)
    dotTiles(oLat, oStride, t1 - t0, static_cast<const uint16_t *>(wKvB) + off, m.v, R, inv,
             dst, m.heads * m.v);
  else
    dotTiles(oLat, oStride, t1 - t0, static_cast<const float *>(wKvB) + off, m.v, R, inv, dst,
             m.heads * m.v);
}

void expandLatentsAvx512(const Mla &m, const float *latents, int64_t latStride, int64_t n,
                         const void *wKvB, bool bf16, int64_t h, float *kNope, int64_t kStride,
                         float *v, int64_t vStride) {
  const int64_t R = m.rank, off = h * (m.nope + m.v) * R;
  if (bf16) {
    const uint16_t *w = static_cast<const uint16_t *>(wKvB) + off;
    dotTiles(latents, latStride, n, w, m.nope, R, nullptr, kNope, kStride);
    dotTiles(latents, latStride, n, w + m.nope * R, m.v, R, nullptr, v, vStride);
  } else {
    const float *w = static_cast<const float *>(wKvB) + off;
    dotTiles(latents, latStride, n, w, m.nope, R, nullptr, kNope, kStride);
    dotTiles(latents, latStride, n, w + m.nope * R, m.v, R, nullptr, v, vStride);
  }
}

} // namespace hyrt::cpu

#pragma GCC pop_options
