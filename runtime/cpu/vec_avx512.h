// 16-lane helpers shared by the AVX-512 kernels (attention, elementwise).
// Include only inside a `#pragma GCC target("avx512f")` region: everything
// here is compiled for that target and has internal linkage, so no AVX-512
// copy of an inline function can replace a portable one at link time.
#ifndef HYRT_CPU_VEC_AVX512_H
#define HYRT_CPU_VEC_AVX512_H

#include <cmath>
#include <cstdint>
#include <immintrin.h>

namespace hyrt::cpu {
namespace {

/// Lanes [0, left) of 16; none for left <= 0.
inline __mmask16 tailMask(int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

/// e^x for 16 lanes: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for
/// an exact n ln2), e^r by the degree-7 Taylor-like polynomial of Cephes'
/// expf (about 1 ulp on that range), then 2^n by vscalefps, which also
/// underflows to denormals and zero as exp does. NaN stays NaN (vmaxps and
/// vminps return their second operand, x, when it is NaN); -inf gives 0.
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.7228f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}


/// e^x for x <= 0 to the precision the bf16 probabilities keep: x = n ln2
/// + r, |r| <= ln2 / 2, e^r by its degree-5 Taylor polynomial (truncation
/// below |r|^6 / 720 = 2.4e-6 relative, far under bf16's 2^-9 = 2e-3),
/// then 2^n by vscalefps; -inf gives 0. Two multiply-adds fewer than the
/// fp32 kernels' exp512, which holds 1 ulp.
inline __m512 expForBf16(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693147181f), x);
  __m512 p = _mm512_set1_ps(1.0f / 120);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

/// 2^x on the lanes of `keep` (0 on the others), for x <= 0 (up to a
/// rounding above) and to the precision the bf16 probabilities keep: x = n
/// + f, |f| <= 1/2, 2^f by a degree-3 minimax polynomial (relative error
/// 7.5e-5 < 2^-13 with its fp32 coefficients, under bf16's 2^-9), 2^n by
/// vscalefps. Four multiply-adds fewer than expForBf16 and no clamp: lanes
/// outside `keep` (masked positions) never reach the result. Only for
/// values whose errors do not compound: each probability's own weight (a
/// rescaling factor applied block after block takes expForBf16).
inline __m512 exp2ForBf16(__mmask16 keep, __m512 x) {
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(0.0551716685f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.242611125f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.693260968f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.999928057f));
  return _mm512_maskz_scalef_ps(keep, p, n);
}

/// hyrt::toBf16 on 16 lanes, bit for bit: round to nearest even on the
/// bits, a NaN kept a quiet NaN.
inline __m256i toBf16x16(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

/// z[i] = sum of the 16 lanes of v[i].
inline __m512 hsum16(const __m512 v[16]) {
  __m512 w[8], x[4];
  for (int k = 0; k < 8; ++k)
    w[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]),
                         _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
  for (int k = 0; k < 4; ++k) {
    const __m512d a = _mm512_castps_pd(w[2 * k]), b = _mm512_castps_pd(w[2 * k + 1]);
    x[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // x[k] lane block L: partial sums of v[4k..4k+3] over lane block L.
  const __m512 y0 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], 0x88),
                                  _mm512_shuffle_f32x4(x[0], x[1], 0xdd));
  const __m512 y1 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], 0x88),
                                  _mm512_shuffle_f32x4(x[2], x[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(y0, y1, 0x88), _mm512_shuffle_f32x4(y0, y1, 0xdd));
}

/// Softmax in place over n positions x G heads ([position][head], lane i is
/// head i % G), unnormalized; sumOf[h] gets head h's sum of exponentials
/// and maxOut[h] (when given) the maximum subtracted.
template <int G> inline void softmaxRows(float *scores, int64_t n, float *sumOf, float *maxOut) {
  const int64_t total = n * G;
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < total; i += 16) {
    const __mmask16 m = tailMask(total - i);
    vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, scores + i));
  }
  alignas(64) float lanes[16], maxOf[G];
  _mm512_store_ps(lanes, vmax);
  for (int h = 0; h < G; ++h) {
    maxOf[h] = -INFINITY;
    for (int i = h; i < 16; i += G)
      maxOf[h] = lanes[i] > maxOf[h] ? lanes[i] : maxOf[h];
  }
  for (int i = 0; i < 16; ++i)
    lanes[i] = maxOf[i % G];
  if (maxOut)
    for (int h = 0; h < G; ++h)
      maxOut[h] = maxOf[h];
  const __m512 maxv = _mm512_load_ps(lanes);
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t i = 0; i < total; i += 16) {
    const __mmask16 m = tailMask(total - i);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, scores + i), maxv));
    _mm512_mask_storeu_ps(scores + i, m, e);
    vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
  }
  _mm512_store_ps(lanes, vsum);
  for (int h = 0; h < G; ++h) {
    sumOf[h] = 0;
    for (int i = h; i < 16; i += G)
      sumOf[h] += lanes[i];
  }
}

} // namespace
} // namespace hyrt::cpu

#endif // HYRT_CPU_VEC_AVX512_H
