// 8-lane helpers shared by the AVX2 + FMA attention kernels (the portable
// body's key pass, the row-blocked kernel's AVX2 form). Include only inside
// a `#pragma GCC target("avx2,fma")` region: everything here is compiled for
// that target and has internal linkage, so no AVX2 copy of an inline
// function can replace a portable one at link time.
#ifndef HYRT_CPU_VEC_AVX2_H
#define HYRT_CPU_VEC_AVX2_H

#include <cmath>
#include <cstdint>
#include <immintrin.h>

namespace hyrt::cpu {
namespace {

/// Eight cache elements widened to fp32: floats as they are, bf16 by a
/// shift into the high half (exact), int8 codes converted (exact).
inline __m256 load8(const float *p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t *p) {
  const __m256i w =
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
inline __m256 load8(const int8_t *p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
}

/// The eight lane sums of a[0..7] as one vector: lane i is a[i]'s sum.
inline __m256 sum8(const __m256 a[8]) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                       _mm256_permute2f128_ps(u0, u1, 0x31));
}

/// The lane mask of vmaskmovps for lanes [0, left) of 8 (none for left <= 0).
inline __m256i laneMask8(int64_t left) {
  const int64_t n = left < 0 ? 0 : left > 8 ? 8 : left;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// e^x for 8 lanes, to the AVX-512 kernels' exp512 (vec_avx512.h): x = n
/// ln2 + r with |r| <= ln2/2 (ln2 split in two for an exact n ln2), e^r by
/// the degree-7 polynomial of Cephes' expf, then 2^n as two exact powers of
/// two 2^(n >> 1) * 2^(n - (n >> 1)), each a normal float for n in [-151,
/// 128], so results in the denormal range underflow as exp does (x is
/// clamped to [-104, 88.72] first). NaN stays NaN (vminps / vmaxps return
/// x, their second operand, when it is NaN); -inf gives 0.
inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.7228f), x);
  x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1),
                n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/// Softmax in place over n positions x G heads ([position][head], lane i is
/// head i % G, G dividing 8), unnormalized; sumOf[h] gets head h's sum of
/// exponentials and maxOut[h] (when given) the maximum subtracted. The
/// tail of fewer than 8 lanes goes through an 8-float copy padded with
/// -inf (e^-inf = 0 adds nothing).
template <int G> inline void softmaxRows8(float *scores, int64_t n, float *sumOf, float *maxOut) {
  static_assert(8 % G == 0, "a head per lane residue");
  const int64_t total = n * G, body = total / 8 * 8;
  alignas(32) float tail[8], lanes[8], maxOf[G];
  for (int i = 0; i < 8; ++i)
    tail[i] = body + i < total ? scores[body + i] : -INFINITY;
  __m256 vmax = _mm256_load_ps(tail);
  for (int64_t i = 0; i < body; i += 8)
    vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(scores + i));
  _mm256_store_ps(lanes, vmax);
  for (int h = 0; h < G; ++h) {
    maxOf[h] = -INFINITY;
    for (int i = h; i < 8; i += G)
      maxOf[h] = lanes[i] > maxOf[h] ? lanes[i] : maxOf[h];
  }
  for (int i = 0; i < 8; ++i)
    lanes[i] = maxOf[i % G];
  if (maxOut)
    for (int h = 0; h < G; ++h)
      maxOut[h] = maxOf[h];
  const __m256 maxv = _mm256_load_ps(lanes);
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t i = 0; i < body; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(scores + i), maxv));
    _mm256_storeu_ps(scores + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  if (body < total) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_load_ps(tail), maxv));
    _mm256_store_ps(tail, e);
    vsum = _mm256_add_ps(vsum, e);
    for (int64_t i = body; i < total; ++i)
      scores[i] = tail[i - body];
  }
  _mm256_store_ps(lanes, vsum);
  for (int h = 0; h < G; ++h) {
    sumOf[h] = 0;
    for (int i = h; i < 8; i += G)
      sumOf[h] += lanes[i];
  }
}

} // namespace
} // namespace hyrt::cpu

#endif // HYRT_CPU_VEC_AVX2_H
