// The MLA plain form's expansion on AVX2 + FMA (hosts without AVX-512, the
// avx2 variant): expandLatentsAvx512's contract in 8-lane vectors, so that
// long extend chunks take the plain form there too (the absorbed form's
// portable bodies ran a 512-token mla-small prompt's attention at 24% of
// its prefill; bench/README.md, "The avx2 variant's attention").
#include "mla_attention.h"

#include <algorithm>
#include <cstdint>
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "../vec_avx2.h"

namespace hyrt::cpu {

namespace {

/// dst[i * dstStride + d] = sum_r a[i][r] w[d][r] for i < nA, d < nW: U
/// rows x G weight rows per eight accumulators (each row vector loaded once
/// for the G weight rows, each weight vector widened once for the U rows),
/// one sum8 tree for the eight dots. Rows past nA / nW repeat the last one
/// and are not stored. K % 8 == 0.
template <int U, int G, typename W>
void dotTiles8(const float *a, int64_t aStride, int64_t nA, const W *w, int64_t nW, int64_t K,
               float *dst, int64_t dstStride) {
  static_assert(U * G == 8, "one sum8 per tile");
  for (int64_t u0 = 0; u0 < nA; u0 += U) {
    const float *ar[U];
    for (int u = 0; u < U; ++u)
      ar[u] = a + std::min<int64_t>(u0 + u, nA - 1) * aStride;
    for (int64_t d0 = 0; d0 < nW; d0 += G) {
      const W *wr[G];
      for (int g = 0; g < G; ++g)
        wr[g] = w + std::min<int64_t>(d0 + g, nW - 1) * K;
      __m256 acc[8];
      for (int i = 0; i < 8; ++i)
        acc[i] = _mm256_setzero_ps();
      for (int64_t r = 0; r < K; r += 8) {
        __m256 av[U];
        for (int u = 0; u < U; ++u)
          av[u] = _mm256_loadu_ps(ar[u] + r);
        for (int g = 0; g < G; ++g) {
          const __m256 wv = load8(wr[g] + r);
          for (int u = 0; u < U; ++u)
            acc[u * G + g] = _mm256_fmadd_ps(av[u], wv, acc[u * G + g]);
        }
      }
      // Lane u * G + g: row u0 + u, weight row d0 + g.
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, sum8(acc));
      const int64_t dn = std::min<int64_t>(G, nW - d0);
      for (int64_t u = 0; u < U && u0 + u < nA; ++u)
        for (int64_t g = 0; g < dn; ++g)
          dst[(u0 + u) * dstStride + d0 + g] = lanes[u * G + g];
    }
  }
}

/// 2 x 4 tiles, or 1 x 8 for a single row (where 2 x 4 would repeat it).
template <typename W>
void dotTiles(const float *a, int64_t aStride, int64_t nA, const W *w, int64_t nW, int64_t K,
              float *dst, int64_t dstStride) {
  if (nA == 1)
    dotTiles8<1, 8>(a, aStride, nA, w, nW, K, dst, dstStride);
  else
    dotTiles8<2, 4>(a, aStride, nA, w, nW, K, dst, dstStride);
}

template <typename W>
void expandAll(const Mla &m, const float *latents, int64_t latStride, int64_t n, const W *w,
               float *kNope, int64_t kStride, float *v, int64_t vStride) {
  dotTiles(latents, latStride, n, w, m.nope, m.rank, kNope, kStride);
  dotTiles(latents, latStride, n, w + m.nope * m.rank, m.v, m.rank, v, vStride);
}

} // namespace

void expandLatentsAvx2(const Mla &m, const float *latents, int64_t latStride, int64_t n,
                       const void *wKvB, bool bf16, int64_t h, float *kNope, int64_t kStride,
                       float *v, int64_t vStride) {
  const int64_t off = h * (m.nope + m.v) * m.rank;
  if (bf16)
    expandAll(m, latents, latStride, n, static_cast<const uint16_t *>(wKvB) + off, kNope,
              kStride, v, vStride);
  else
    expandAll(m, latents, latStride, n, static_cast<const float *>(wKvB) + off, kNope, kStride,
              v, vStride);
}

} // namespace hyrt::cpu

#pragma GCC pop_options
