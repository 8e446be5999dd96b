// Pieces of the int8 dot-product attention kernels (attention_int8_avx512.cpp
// for extend blocks, attention_decode_bf16_avx512.cpp's int8 cache path):
// `vpdpbusd` with tied accumulators, probabilities to uint8 codes, value
// rows packed in 4-position quads and the output's un-permute. Include only
// inside an AVX-512 F/BW/VNNI target pragma region; internal linkage, as
// vec_avx512.h.
#ifndef HYRT_CPU_ATTENTION_INT8_DOTS_AVX512_H
#define HYRT_CPU_ATTENTION_INT8_DOTS_AVX512_H

#include <cstdint>
#include <immintrin.h>

namespace hyrt::cpu {
namespace {

/// acc[y] += the four u8 x s8 products of each dword lane of a[y] and b
/// (`vpdpbusd`), or of a and b[y] (dpbusd4By): four accumulators, tied to
/// their registers in one asm. GCC 12 compiles the intrinsic in these loops
/// to a copy of most accumulators per instruction (and a spill), which cost
/// the extend kernel 7%.
inline void dpbusd4(__m512i (&acc)[4], const __m512i (&a)[4], __m512i b) {
  asm("vpdpbusd %4, %5, %0\n\t"
      "vpdpbusd %4, %6, %1\n\t"
      "vpdpbusd %4, %7, %2\n\t"
      "vpdpbusd %4, %8, %3"
      : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3])
      : "v"(b), "v"(a[0]), "v"(a[1]), "v"(a[2]), "v"(a[3]));
}
inline void dpbusd4By(__m512i (&acc)[4], __m512i a, const __m512i (&b)[4]) {
  asm("vpdpbusd %5, %4, %0\n\t"
      "vpdpbusd %6, %4, %1\n\t"
      "vpdpbusd %7, %4, %2\n\t"
      "vpdpbusd %8, %4, %3"
      : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3])
      : "v"(a), "v"(b[0]), "v"(b[1]), "v"(b[2]), "v"(b[3]));
}

/// acc[x][y] = the sum over slots a < n of codes[x][a] (four uint8
/// probabilities, broadcast) times the value quads at quads[a * stride + 16
/// y] (`vpdpbusd`): four rows' (or heads') int32 sums over 64 dims, the
/// P x V of the extend kernel and of the decode path. Each caller joins them
/// with its fp32 output.
inline void sumValueQuads(const uint32_t *const codes[4], int64_t n, const uint32_t *quads,
                          int64_t stride, __m512i (&acc)[4][4]) {
  // Unrolled by pragma: as loops, GCC keeps such arrays in memory too.
#pragma GCC unroll 4
  for (int x = 0; x < 4; ++x)
#pragma GCC unroll 4
    for (int y = 0; y < 4; ++y)
      acc[x][y] = _mm512_setzero_si512();
  for (int64_t a = 0; a < n; ++a) {
    __m512i v[4];
#pragma GCC unroll 4
    for (int y = 0; y < 4; ++y)
      v[y] = _mm512_load_si512(&quads[a * stride + 16 * y]);
#pragma GCC unroll 4
    for (int x = 0; x < 4; ++x)
      dpbusd4By(acc[x], _mm512_set1_epi32(int(codes[x][a])), v);
  }
}

/// The position quad a probability code slot holds (probabilityCodes64's
/// order, per 64 positions: slot 4 L + m holds quad 4 m + L).
constexpr int64_t quadOfSlot(int64_t a) { return a / 16 * 16 + (a % 4) * 4 + (a % 16) / 4; }

/// A query row (src x scale, dk a multiple of 16) as int8 codes, 4 per
/// dword at dst, with one scale *qs: the largest magnitude maps to 127; a
/// zero row is scale 0, codes 0. *qc = 128 x the codes' sum: the term a key
/// offset by 128 to vpdpbusd's unsigned operand adds to every dot product.
inline void quantizeQueryRow(const float *src, float scale, int64_t dk, uint32_t *dst, float *qs,
                             int32_t *qc) {
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 amax = _mm512_setzero_ps();
  for (int64_t d = 0; d < dk; d += 16)
    amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_mul_ps(_mm512_loadu_ps(src + d), vscale)));
  const float m = _mm512_reduce_max_ps(amax);
  const __m512 inv = _mm512_set1_ps(m > 0 ? 127.0f / m : 0.0f);
  __m512i sum = _mm512_setzero_si512();
  for (int64_t d = 0; d < dk; d += 16) {
    const __m512i c = _mm512_cvtps_epi32(
        _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(src + d), vscale), inv));
    sum = _mm512_add_epi32(sum, c);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + d / 4), _mm512_cvtepi32_epi8(c));
  }
  *qs = m / 127.0f;
  *qc = 128 * _mm512_reduce_add_epi32(sum);
}

/// 64 weighted probabilities w[0..3] (positions 16 y + lane) as uint8 codes
/// round(w x inv) by two saturating packs: within each 128-bit lane they
/// leave dword 4 L + m holding positions 16 m + 4 L .. + 3 (quadOfSlot).
inline __m512i probabilityCodes64(const __m512 w[4], __m512 inv) {
  __m512i c[4];
  for (int y = 0; y < 4; ++y)
    c[y] = _mm512_cvtps_epi32(_mm512_mul_ps(w[y], inv));
  return _mm512_packus_epi16(_mm512_packus_epi32(c[0], c[1]), _mm512_packus_epi32(c[2], c[3]));
}

/// 255 / top (0 for top 0) without a division: rcp14 and one Newton step
/// (relative error below 2^-27, so codes stay <= 255 after rounding).
inline __m512 codeFactor(float top) {
  if (!(top > 0))
    return _mm512_setzero_ps();
  const __m512 vt = _mm512_set1_ps(top), r = _mm512_rcp14_ps(vt);
  return _mm512_mul_ps(_mm512_set1_ps(255.0f),
                       _mm512_mul_ps(r, _mm512_fnmadd_ps(vt, r, _mm512_set1_ps(2.0f))));
}

/// Value rows r0..r3 (the quad's 4 positions; `bytes` of each row from dim
/// c on, at most 64) interleaved per dim into 4 vectors of dword quads at
/// dst: dim 16 L + 4 k + i of the 64 sits in vector k, lane 4 L + i.
inline void packValueQuad(const int8_t *r0, const int8_t *r1, const int8_t *r2,
                          const int8_t *r3, __mmask64 bytes, uint32_t *dst) {
  const __m512i a = _mm512_maskz_loadu_epi8(bytes, r0), b = _mm512_maskz_loadu_epi8(bytes, r1),
                c = _mm512_maskz_loadu_epi8(bytes, r2), d = _mm512_maskz_loadu_epi8(bytes, r3);
  const __m512i lo01 = _mm512_unpacklo_epi8(a, b), hi01 = _mm512_unpackhi_epi8(a, b),
                lo23 = _mm512_unpacklo_epi8(c, d), hi23 = _mm512_unpackhi_epi8(c, d);
  _mm512_store_si512(dst, _mm512_unpacklo_epi16(lo01, lo23));
  _mm512_store_si512(dst + 16, _mm512_unpackhi_epi16(lo01, lo23));
  _mm512_store_si512(dst + 32, _mm512_unpacklo_epi16(hi01, hi23));
  _mm512_store_si512(dst + 48, _mm512_unpackhi_epi16(hi01, hi23));
}

/// Output dims 16 k .. 16 k + 15 of a 64-dim chunk `o` in packValueQuad's
/// order, times f.
inline __m512 unpermutedQuads(const float *o, int k, __m512 f) {
  alignas(64) static const int32_t perm[64] = {
      0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, //
      4,  5,  6,  7,  20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55, //
      8,  9,  10, 11, 24, 25, 26, 27, 40, 41, 42, 43, 56, 57, 58, 59, //
      12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63};
  return _mm512_mul_ps(_mm512_i32gather_ps(_mm512_load_si512(perm + 16 * k), o, 4), f);
}

} // namespace
} // namespace hyrt::cpu

#endif // HYRT_CPU_ATTENTION_INT8_DOTS_AVX512_H
