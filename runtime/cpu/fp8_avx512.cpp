// AVX-512BW body of the e4m3fn -> bf16 widening (see fp8.h): 64 codes per
// step in the byte domain where the host has VBMI, 32 per step as words
// otherwise and for the tail; the same bits as the portable table.
#include "fp8.h"

#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")

namespace hyrt::cpu {

namespace {

constexpr int64_t kPrefetchBytes = 4096;

/// 64 codes per step in the byte domain (AVX-512 VBMI): each code's bf16
/// high and low bytes computed 64 at a time, the subnormals and NaN taken
/// from two small tables by one masked byte permute each, and the bytes
/// interleaved into words by two two-source permutes. t = (code + 1) & 0x7F
/// is 0 for NaN and 1 + M for the subnormal magnitudes M = 0..7, >= 9 for
/// every normal one.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) int64_t
widenBytes(const uint8_t *in, uint16_t *out, int64_t n) {
  alignas(64) static const uint8_t kHi[64] = {0x7F, 0x00, 0x3B, 0x3B, 0x3B,
                                              0x3C, 0x3C, 0x3C, 0x3C};
  alignas(64) static const uint8_t kLo[64] = {0xC0, 0x00, 0x00, 0x80, 0xC0,
                                              0x00, 0x20, 0x40, 0x60};
  // Words of the first / second 32 codes: low byte lo[i], high byte hi[i]
  // (index 64 + i selects the second source).
  struct alignas(64) Interleave {
    uint8_t v[2][64];
  };
  static const Interleave kInterleave = [] {
    Interleave t{};
    for (int half = 0; half < 2; ++half)
      for (int i = 0; i < 32; ++i) {
        t.v[half][2 * i] = uint8_t(32 * half + i);
        t.v[half][2 * i + 1] = uint8_t(64 + 32 * half + i);
      }
    return t;
  }();
  const __m512i hiTable = _mm512_load_si512(kHi), loTable = _mm512_load_si512(kLo);
  const __m512i inter0 = _mm512_load_si512(kInterleave.v[0]);
  const __m512i inter1 = _mm512_load_si512(kInterleave.v[1]);
  const __m512i one = _mm512_set1_epi8(1), mag = _mm512_set1_epi8(0x7F);
  const __m512i nine = _mm512_set1_epi8(9), loMask = _mm512_set1_epi8(int8_t(0xF0));
  const __m512i seven = _mm512_set1_epi8(7), rebias = _mm512_set1_epi8(0x3C);
  const __m512i sign = _mm512_set1_epi8(int8_t(0x80));
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    // The GEMM widens a thread's panels in memory order, 4 KiB blocks
    // back to back: fetch one block ahead (the hardware prefetchers alone
    // left decode at a third of the streaming bandwidth; the int8 kernels
    // prefetch their weights the same distance ahead).
    _mm_prefetch(reinterpret_cast<const char *>(in + i + kPrefetchBytes), _MM_HINT_T0);
    const __m512i b = _mm512_loadu_si512(in + i);
    const __mmask64 special =
        _mm512_cmplt_epu8_mask(_mm512_and_si512(_mm512_add_epi8(b, one), mag), nine);
    const __m512i t = _mm512_and_si512(_mm512_add_epi8(b, one), mag);
    // Normal codes: bf16 = (mag << 4) + (120 << 7), as bytes.
    __m512i lo = _mm512_and_si512(_mm512_slli_epi16(b, 4), loMask);
    __m512i hi = _mm512_add_epi8(_mm512_and_si512(_mm512_srli_epi16(b, 4), seven), rebias);
    // Real FP8 weights rarely hold a subnormal or zero code (a block's
    // scale maps its largest weight to 448; a weight below 2^-6 / 448 of
    // it is ~1e-4 of a Gaussian's mass): skip the permutes when none of
    // the 64 is one.
    if (special) {
      lo = _mm512_mask_permutexvar_epi8(lo, special, t, loTable);
      hi = _mm512_mask_permutexvar_epi8(hi, special, t, hiTable);
    }
    hi = _mm512_ternarylogic_epi32(hi, b, sign, 0xF8); // hi | (b & sign)
    _mm512_storeu_si512(out + i, _mm512_permutex2var_epi8(lo, inter0, hi));
    _mm512_storeu_si512(out + i + 32, _mm512_permutex2var_epi8(lo, inter1, hi));
  }
  return i;
}

} // namespace

void f8ToBf16Avx512(const uint8_t *in, uint16_t *out, int64_t n) {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  const int64_t done = vbmi ? widenBytes(in, out, n) : 0;
  in += done, out += done, n -= done;
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
