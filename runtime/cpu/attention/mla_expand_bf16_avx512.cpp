// The MLA plain form's expansion over bf16 dot products (AVX-512 BF16):
// when the latent cache and kv_b are both bf16, kNope[j] = W_UK[h] c[j] and
// v[j] = W_UV[h] c[j] take `vdpbf16ps` on the stored bf16 pairs, half the
// instructions of widening both to fp32 for FMAs (mla_attention_avx512.cpp
// dotTiles). The products are exact either way; only the order of the
// fp32 additions differs (the tests' fp32-accumulation allowance).
#include "mla_attention.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")

#include "../vec_avx512.h"

namespace hyrt::cpu {

namespace {

/// A tile's 16 sums (lanes 4u + g: row u, weight row g) into dst rows u <
/// nu, columns g < ng: fp32 as they are, or rounded to bf16 as
/// hyrt::toBf16 rounds (toBf16x16, bit for bit).
inline void storeTile(float *dst, int64_t stride, __m512 sums, int64_t nu, int64_t ng) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sums);
  for (int64_t u = 0; u < nu; ++u)
    std::memcpy(dst + u * stride, lanes + 4 * u, sizeof(float) * size_t(ng));
}
inline void storeTile(uint16_t *dst, int64_t stride, __m512 sums, int64_t nu, int64_t ng) {
  alignas(32) uint16_t lanes[16];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), toBf16x16(sums));
  for (int64_t u = 0; u < nu; ++u)
    std::memcpy(dst + u * stride, lanes + 4 * u, sizeof(uint16_t) * size_t(ng));
}

/// dst[i * dstStride + d] = sum_r a[i][r] w[d][r] for i < nA, d < nW:
/// 4 rows x 4 weight rows per 16 accumulators, one hsum16 for the 16 dots.
/// Rows past nA / nW repeat the last one and are not stored. K % 32 == 0.
/// Out: float, or uint16_t for sums rounded to bf16.
template <typename Out>
void dotTilesBf16(const uint16_t *a, int64_t aStride, int64_t nA, const uint16_t *w,
                  int64_t nW, int64_t K, Out *dst, int64_t dstStride) {
  for (int64_t u0 = 0; u0 < nA; u0 += 4) {
    const uint16_t *ar[4];
    for (int u = 0; u < 4; ++u)
      ar[u] = a + std::min<int64_t>(u0 + u, nA - 1) * aStride;
    for (int64_t d0 = 0; d0 < nW; d0 += 4) {
      const uint16_t *wr[4];
      for (int g = 0; g < 4; ++g)
        wr[g] = w + std::min<int64_t>(d0 + g, nW - 1) * K;
      __m512 acc[16];
      for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_setzero_ps();
      const bool ahead = d0 + 4 < nW; // the next 4 weight rows, a line per row per step
      for (int64_t r = 0; r < K; r += 32) {
        if (ahead)
          for (int g = 0; g < 4; ++g)
            _mm_prefetch(reinterpret_cast<const char *>(wr[g] + 4 * K + r), _MM_HINT_T0);
        __m512bh av[4], wv[4];
        for (int u = 0; u < 4; ++u)
          av[u] = (__m512bh)_mm512_loadu_si512(ar[u] + r);
        for (int g = 0; g < 4; ++g)
          wv[g] = (__m512bh)_mm512_loadu_si512(wr[g] + r);
        for (int u = 0; u < 4; ++u)
          for (int g = 0; g < 4; ++g)
            acc[u * 4 + g] = _mm512_dpbf16_ps(acc[u * 4 + g], av[u], wv[g]);
      }
      // lanes 4u..4u+3: row u0 + u, weight rows d0..d0+3
      storeTile(dst + u0 * dstStride + d0, dstStride, hsum16(acc),
                std::min<int64_t>(4, nA - u0), std::min<int64_t>(4, nW - d0));
    }
  }
}

} // namespace

namespace {

template <typename Out>
void expand(const Mla &m, const uint16_t *latents, int64_t latStride, int64_t n,
            const uint16_t *wKvB, int64_t h, Out *kNope, int64_t kStride, Out *v,
            int64_t vStride) {
  const uint16_t *w = wKvB + h * (m.nope + m.v) * m.rank;
  dotTilesBf16(latents, latStride, n, w, m.nope, m.rank, kNope, kStride);
  dotTilesBf16(latents, latStride, n, w + m.nope * m.rank, m.v, m.rank, v, vStride);
}

} // namespace

void expandLatentsBf16Dots(const Mla &m, const uint16_t *latents, int64_t latStride, int64_t n,
                           const uint16_t *wKvB, int64_t h, float *kNope, int64_t kStride,
                           float *v, int64_t vStride) {
  expand(m, latents, latStride, n, wKvB, h, kNope, kStride, v, vStride);
}

void expandLatentsBf16Dots(const Mla &m, const uint16_t *latents, int64_t latStride, int64_t n,
                           const uint16_t *wKvB, int64_t h, uint16_t *kNope, int64_t kStride,
                           uint16_t *v, int64_t vStride) {
  expand(m, latents, latStride, n, wKvB, h, kNope, kStride, v, vStride);
}

} // namespace hyrt::cpu

#pragma GCC pop_options
