// int8 KV cache rows as bf16 for the bf16 dot-product attention kernels
// (attention_bf16_avx512.cpp, attention_decode_bf16_avx512.cpp; include it
// only after their AVX-512 BF16 target pragma). Every int8 code is exact in bf16
// (8 significant bits hold -128..127), so a widened row is the codes
// themselves; the row's scale is applied to the scores (keys) and to the
// probabilities (values) instead, where each is one multiply per position.
#ifndef HYRT_CPU_ATTENTION_INT8_ROWS_BF16_H
#define HYRT_CPU_ATTENTION_INT8_ROWS_BF16_H

#include <cstdint>
#include <immintrin.h>

namespace hyrt::cpu {

/// dst[0, n) = src[0, n) as bf16; n a multiple of 32.
inline void int8RowToBf16(const int8_t *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 lo = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i))));
    const __m512 hi = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i + 16))));
    _mm512_storeu_si512(dst + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}

} // namespace hyrt::cpu

#endif // HYRT_CPU_ATTENTION_INT8_ROWS_BF16_H
