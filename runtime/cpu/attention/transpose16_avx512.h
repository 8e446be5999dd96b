// A 16 x 16 dword transpose for the attention kernels that pack key blocks
// by position (attention_bf16_avx512.cpp: bf16 pairs; attention_int8_avx512.cpp:
// int8 quads). Include it only inside an AVX-512F target pragma region; internal
// linkage, as vec_avx512.h.
#ifndef HYRT_CPU_ATTENTION_TRANSPOSE16_AVX512_H
#define HYRT_CPU_ATTENTION_TRANSPOSE16_AVX512_H

#include <immintrin.h>

namespace hyrt::cpu {
namespace {

/// Transposes 16 x 16 dwords: rows in[i] (16 dwords each) into out[j]
/// (dword j of every row).
inline void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // Now r[4g + k] holds, in its 128-bit lane L, column 4L + k of rows
  // 4g .. 4g + 3: column c = 4L + k gathers lane L of r[k], r[4 + k],
  // r[8 + k], r[12 + k].
  for (int k = 0; k < 4; ++k) {
    const __m512i a = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x88);
    const __m512i b = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xdd);
    const __m512i c = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0x88);
    const __m512i d = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0xdd);
    t[k] = _mm512_shuffle_i32x4(a, c, 0x88);      // lane 0 of every group
    t[4 + k] = _mm512_shuffle_i32x4(b, d, 0x88);  // lane 1
    t[8 + k] = _mm512_shuffle_i32x4(a, c, 0xdd);  // lane 2
    t[12 + k] = _mm512_shuffle_i32x4(b, d, 0xdd); // lane 3
  }
  for (int i = 0; i < 16; ++i)
    r[i] = t[i];
}

} // namespace
} // namespace hyrt::cpu

#endif // HYRT_CPU_ATTENTION_TRANSPOSE16_AVX512_H
