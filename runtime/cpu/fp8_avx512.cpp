// AVX-512BW body of the e4m3fn -> bf16 widening (see fp8.h): 32 codes per
// step, the same bits as the portable table.
#include "fp8.h"

#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")

namespace hyrt::cpu {

void f8ToBf16Avx512(const uint8_t *in, uint16_t *out, int64_t n) {
  const __m512i magMask = _mm512_set1_epi16(0x7F);
  const __m512i rebias = _mm512_set1_epi16(120 << 7);
  const __m512i eight = _mm512_set1_epi16(8);
  const __m512i nanMag = _mm512_set1_epi16(0x7F);
  const __m512i quietNan = _mm512_set1_epi16(0x7FC0);
  const __m512i signBit = _mm512_set1_epi16(int16_t(0x8000));
  // bf16 of M * 2^-9 for the subnormal magnitudes M = 0..7 (index = M).
  alignas(64) static const uint16_t kSubnormals[32] = {0x0000, 0x3B00, 0x3B80, 0x3BC0,
                                                       0x3C00, 0x3C20, 0x3C40, 0x3C60};
  const __m512i subnormals = _mm512_load_si512(kSubnormals);
  for (int64_t i = 0; i < n; i += 32) {
    const __mmask32 tail = n - i >= 32 ? ~__mmask32(0) : (__mmask32(1) << (n - i)) - 1;
    const __m512i code = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(tail, in + i));
    const __m512i mag = _mm512_and_si512(code, magMask);
    // Normal codes: exponent + 120, mantissa up 4 bits.
    __m512i v = _mm512_add_epi16(_mm512_slli_epi16(mag, 4), rebias);
    v = _mm512_mask_permutexvar_epi16(v, _mm512_cmplt_epu16_mask(mag, eight), mag,
                                      subnormals);
    v = _mm512_mask_mov_epi16(v, _mm512_cmpeq_epi16_mask(mag, nanMag), quietNan);
    v = _mm512_or_si512(v, _mm512_and_si512(_mm512_slli_epi16(code, 8), signBit));
    _mm512_mask_storeu_epi16(out + i, tail, v);
  }
}

} // namespace hyrt::cpu

#pragma GCC pop_options
