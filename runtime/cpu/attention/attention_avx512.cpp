// The GQA-group attention kernel with AVX-512 intrinsics, for head dims that
// are multiples of 16 (every family hyc builds: 64, 128, 192 with MLA's
// rope part). Same semantics as attendGroup in attention.cpp; what differs
// is where values live: each score is one register chain of FMAs over the
// key row, and each 16-wide slice of a head's output stays in a register
// over all cached positions instead of being loaded and stored per row.
// int8 rows are widened code by code as they are loaded and their scale
// applied once per row (to the key's dot product, to the value's weight):
// code x scale per element, with one multiply per row instead of 16 lanes'.
#include "attention_group.h"

#include <cmath>
#include <immintrin.h>

// Headers first: what they define (std::min, forEachRow) keeps the default
// target, so no AVX-512 copy of a shared inline function can be the one the
// linker keeps for the rest of the library.
#pragma GCC push_options
#pragma GCC target("avx512f")

#include "../vec_avx512.h"

namespace hyrt::cpu {

void expAvx512(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tailMask(n - i);
    _mm512_mask_storeu_ps(y + i, m, exp512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

namespace {
/// 16 cache elements as fp32 (bf16: widen and shift into the high half).
inline __m512 load16(const float *p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t *p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
/// int8: the 16 codes sign-extended and converted (exact); unscaled.
inline __m512 load16(const int8_t *p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
}
} // namespace

template <typename T>
void attendGroupAvx512(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                       int64_t numHeads, float scale, int64_t t, int64_t kvh,
                       float *scores, float *out) {
  const int64_t n = int64_t(step->positions[t]) + 1, G = l.group, dk = l.dk,
                dv = l.dv, ns = n + 1;
  const float *qg = q + (t * numHeads + kvh * G) * dk;

  forEachRow(step, l, t, n, [&](int64_t j, int64_t row) {
    const T *kr = l.kRow<T>(row, kvh);
    const float rowScale = l.kScaleOf<T>(row, kvh) * scale;
    for (int64_t g = 0; g < G; ++g) {
      const float *qh = qg + g * dk;
      __m512 a0 = _mm512_mul_ps(_mm512_loadu_ps(qh), load16(kr));
      __m512 a1 = _mm512_setzero_ps();
      int64_t c = 16; // two chains: dk = 64 is four slices, two per chain
      for (; c + 32 <= dk; c += 32) {
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(qh + c), load16(kr + c), a1);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(qh + c + 16), load16(kr + c + 16), a0);
      }
      if (c < dk)
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(qh + c), load16(kr + c), a1);
      scores[g * ns + j] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) * rowScale;
    }
  });

  // Per head: exponentials in place, their sum after them (at sg[n]).
  for (int64_t g = 0; g < G; ++g)
    softmaxRows<1>(scores + g * ns, n, scores + g * ns + n, nullptr);

  // Up to four 16-wide output slices of one head in registers while the
  // cached values stream past (an L1/L2-resident group's worth of rows).
  for (int64_t g = 0; g < G; ++g) {
    const float *sg = scores + g * ns;
    float *o = out + (t * numHeads + kvh * G + g) * dv;
    const __m512 inv = _mm512_set1_ps(1.0f / sg[n]);
    for (int64_t c0 = 0; c0 < dv; c0 += 64) {
      const int64_t slices = std::min<int64_t>(4, (dv - c0) / 16);
      __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
      forEachRow(step, l, t, n, [&](int64_t j, int64_t row) {
        const T *vr = l.vRow<T>(row, kvh) + c0;
        const __m512 w = _mm512_set1_ps(sg[j] * l.vScaleOf<T>(row, kvh));
        acc0 = _mm512_fmadd_ps(w, load16(vr), acc0);
        if (slices > 1)
          acc1 = _mm512_fmadd_ps(w, load16(vr + 16), acc1);
        if (slices > 2)
          acc2 = _mm512_fmadd_ps(w, load16(vr + 32), acc2);
        if (slices > 3)
          acc3 = _mm512_fmadd_ps(w, load16(vr + 48), acc3);
      });
      _mm512_storeu_ps(o + c0, _mm512_mul_ps(acc0, inv));
      if (slices > 1)
        _mm512_storeu_ps(o + c0 + 16, _mm512_mul_ps(acc1, inv));
      if (slices > 2)
        _mm512_storeu_ps(o + c0 + 32, _mm512_mul_ps(acc2, inv));
      if (slices > 3)
        _mm512_storeu_ps(o + c0 + 48, _mm512_mul_ps(acc3, inv));
    }
  }
}

template void attendGroupAvx512<float>(const hyrt_step_v0 *, const LayerView &,
                                       const float *, int64_t, float, int64_t, int64_t,
                                       float *, float *);
template void attendGroupAvx512<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                          const float *, int64_t, float, int64_t, int64_t,
                                          float *, float *);
template void attendGroupAvx512<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                        const float *, int64_t, float, int64_t, int64_t,
                                        float *, float *);

} // namespace hyrt::cpu

#pragma GCC pop_options
