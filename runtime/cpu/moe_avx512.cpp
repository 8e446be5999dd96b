// AVX-512 body of the MoE combine (hyrt_cpu_moe_unpermute_add, moe.cpp):
// one token's output row from its top-k expert rows. The same arithmetic as
// the reference, bit for bit: per element a double sum over the slots in
// slot order, each term weight x value (a product of two floats, exact in
// double, so a fused multiply-add rounds it as the reference's separate
// multiply and add do), rounded to fp32, then the addends in fp32.
// Eight doubles per vector instead of the portable body's scalar-width
// loop: moe-small's 512-token prefill spent 25 ms of 446 here.
#include "moe_rows.h"

#include <cstdint>
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f")

#include "vec_avx512.h"

namespace hyrt::cpu {

void unpermuteAddRowAvx512(const float *y, const int64_t *rowOfSlot, const float *weights,
                           int64_t topK, int64_t dim, const float *add0, const float *add1,
                           float *out) {
  for (int64_t d = 0; d < dim; d += 16) {
    const __mmask16 m = tailMask(dim - d);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t j = 0; j < topK; ++j) {
      const int64_t r = rowOfSlot[j];
      if (r < 0)
        continue;
      const __m512d w = _mm512_set1_pd(double(weights[j]));
      const __m512 v = _mm512_maskz_loadu_ps(m, y + r * dim + d);
      lo = _mm512_add_pd(lo, _mm512_mul_pd(w, _mm512_cvtps_pd(_mm512_castps512_ps256(v))));
      hi = _mm512_add_pd(
          hi, _mm512_mul_pd(w, _mm512_cvtps_pd(_mm256_castpd_ps(
                                   _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))));
    }
    __m512 s = _mm512_castpd_ps(_mm512_insertf64x4(
        _mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(lo))),
        _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
    if (add0)
      s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, add0 + d));
    if (add1)
      s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, add1 + d));
    _mm512_mask_storeu_ps(out + d, m, s);
  }
}

} // namespace hyrt::cpu

#pragma GCC pop_options
