// AVX-512 bodies of the elementwise row kernels (see elementwise.h for the
// semantics they share with the portable ones).
#include "elementwise.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f")

#include "vec_avx512.h"

namespace hyrt::cpu {

void rmsNormRowAvx512(const float *x, const float *residual, const float *w,
                      int64_t dim, float eps, float *out, float *residual_out) {
  // Pass 1: s = x + residual (stored to residual_out), sum of squares in
  // double as the reference sums (8 lanes per half, so only the order of
  // the additions differs from it).
  __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < dim; i += 16) {
    const __mmask16 m = tailMask(dim - i);
    __m512 s = _mm512_maskz_loadu_ps(m, x + i);
    if (residual)
      s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, residual + i));
    if (residual_out)
      _mm512_mask_storeu_ps(residual_out + i, m, s);
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(s));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    sum0 = _mm512_fmadd_pd(lo, lo, sum0);
    sum1 = _mm512_fmadd_pd(hi, hi, sum1);
  }
  const double sumSq = _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1));
  const __m512 inv = _mm512_set1_ps(float(1.0 / std::sqrt(sumSq / double(dim) + double(eps))));
  // Pass 2: s again (from residual_out, or recomputed: out may alias x only
  // element for element), times inv_rms, times the weight, in the
  // reference's order.
  for (int64_t i = 0; i < dim; i += 16) {
    const __mmask16 m = tailMask(dim - i);
    __m512 s;
    if (residual_out) {
      s = _mm512_maskz_loadu_ps(m, residual_out + i);
    } else {
      s = _mm512_maskz_loadu_ps(m, x + i);
      if (residual)
        s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, residual + i));
    }
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_mul_ps(_mm512_mul_ps(s, inv), _mm512_maskz_loadu_ps(m, w + i)));
  }
}

void siluMulRowAvx512(const float *gate, const float *up, int64_t n, float *out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tailMask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 s = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

void quantizeRowU8Avx512(const float *x, int64_t n, int64_t lda, uint8_t *q,
                         float *scale) {
  const __m512 fltMax = _mm512_set1_ps(FLT_MAX);
  __m512 vmax = _mm512_setzero_ps();
  __mmask16 finite = 0xffff;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tailMask(n - i);
    const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(m, x + i));
    // Ordered compare: NaN lanes are not <= FLT_MAX, nor are infinities.
    finite &= _mm512_cmp_ps_mask(a, fltMax, _CMP_LE_OQ) | __mmask16(~m);
    vmax = _mm512_max_ps(vmax, a);
  }
  if (finite != 0xffff) {
    // A NaN or Inf poisons the row: scale NaN, every element zero (x * 0,
    // with NaN products stored as 0), as the portable body computes.
    *scale = NAN;
    for (int64_t k = 0; k < lda; ++k)
      q[k] = 128;
    return;
  }
  const float amax = _mm512_reduce_max_ps(vmax);
  const float s = amax > 0 ? amax / 127.0f : 1.0f;
  *scale = s;
  const __m512 inv = _mm512_set1_ps(1.0f / s);
  const __m512 lim = _mm512_set1_ps(127.0f), nlim = _mm512_set1_ps(-127.0f);
  const __m512i bias = _mm512_set1_epi32(128);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tailMask(n - i);
    __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_max_ps(_mm512_min_ps(v, lim), nlim);
    const __m512i u = _mm512_add_epi32(_mm512_cvtps_epi32(v), bias);
    _mm512_mask_cvtepi32_storeu_epi8(q + i, m, u);
  }
  for (int64_t k = n; k < lda; ++k)
    q[k] = 128;
}

__attribute__((target("avx512f,avx512bw"))) void u8RowToS8SumsAvx512(uint8_t *q, int64_t n,
                                                                     int64_t lda, int64_t group,
                                                                     int32_t *sums) {
  // Each group's u8 sum from vpsadbw against zero (eight 64-bit partial
  // sums per 64 bytes), less 128 per element: the s8 sum, exact.
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t g0 = 0, g = 0; g0 < n; g0 += group, ++g) {
    const int64_t end = std::min(n, g0 + group);
    __m512i acc = zero;
    for (int64_t k = g0; k < end; k += 64) {
      const __mmask64 m = end - k >= 64 ? ~__mmask64(0) : (__mmask64(1) << (end - k)) - 1;
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(m, q + k), zero));
    }
    sums[g] = int32_t(_mm512_reduce_add_epi64(acc) - 128 * (end - g0));
  }
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  for (int64_t k = 0; k < lda; k += 64) {
    const __mmask64 m = lda - k >= 64 ? ~__mmask64(0) : (__mmask64(1) << (lda - k)) - 1;
    _mm512_mask_storeu_epi8(q + k, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, q + k), flip));
  }
}

} // namespace hyrt::cpu

#pragma GCC pop_options
