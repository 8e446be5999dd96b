// Internal to runtime/cpu: the absorbed MLA kernels (mla_attention.cpp:
// driver and portable bodies; mla_attention_avx512.cpp: AVX-512F blocks).
#ifndef HYRT_CPU_MLA_ATTENTION_H
#define HYRT_CPU_MLA_ATTENTION_H

#include "attention_group.h"

#include <cstdint>

namespace hyrt::cpu {

/// Shapes of one call: heads, q/k nope and rope dims, value dim, latent
/// rank (kv_b is [heads][nope + v][rank]); scale of the scores.
struct Mla {
  int64_t heads, nope, rope, v, rank;
  float scale;
};

/// Whether the plain form is cheaper for this step (one sequence, T new
/// tokens, n positions): expanding the n - T cached latents that are not
/// new costs R (nope + v) multiply-adds per position and head, weighted by
/// weight / 100 (the schedule's: how an expansion multiply-add's time
/// compares with an absorbed attention one's); it saves (2R - nope - v)
/// per attended position and head, about T (n - T/2) of them. Fresh
/// prefill (n = T) always gains. weight < 0: always (tests, benchmarks);
/// 0: never.
bool mlaPlainIsCheaper(const Mla &m, const hyrt_step_v0 *step, int64_t weight);

/// Whether the plain form runs on bf16 dot products here (a bf16 cache and
/// kv_b, AVX-512 BF16, dims the bf16 kernels take), the case the schedule's
/// first weight is for; else fp32 kernels (mla_plain.cpp).
bool plainRunsOnBf16Dots(const LayerView &l, const Mla &m, bool bf16W);

/// Floats of one (token, split) partial: per head the unnormalized o_lat
/// (rank floats), then the heads' running maxima, then their sums.
inline int64_t mlaPartialFloats(const Mla &m) { return m.heads * (m.rank + 2); }

/// Tokens t0 .. t0 + tq - 1 (one sequence, consecutive positions) over
/// cached positions [begin, min(end, p_u + 1)) each, all heads: the
/// partial of token t0 + u goes to parts + u * mlaPartialFloats(m).
/// qLat is [T][heads][rank], qPe [T][heads][rope]. Needs AVX-512F+BW+VL; returns
/// false for shapes it does not take (the caller runs the portable body).
template <typename T>
bool attendLatentAvx512(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                        const float *qLat, const float *qPe, int64_t t0, int64_t tq,
                        int64_t begin, int64_t end, float *parts);
extern template bool attendLatentAvx512<float>(const hyrt_step_v0 *, const LayerView &,
                                               const Mla &, const float *, const float *,
                                               int64_t, int64_t, int64_t, int64_t, float *);
extern template bool attendLatentAvx512<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                                  const Mla &, const float *, const float *,
                                                  int64_t, int64_t, int64_t, int64_t, float *);
extern template bool attendLatentAvx512<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                                const Mla &, const float *, const float *,
                                                int64_t, int64_t, int64_t, int64_t, float *);

/// attendLatentAvx512's contract on AVX2 + FMA (mla_attention_avx2.cpp), for
/// rank and rope multiples of 8 and token blocks up to 64; false for other
/// shapes. Call only where hostHasAvx2Fma().
template <typename T>
bool attendLatentAvx2(const hyrt_step_v0 *step, const LayerView &l, const Mla &m,
                      const float *qLat, const float *qPe, int64_t t0, int64_t tq,
                      int64_t begin, int64_t end, float *parts);
extern template bool attendLatentAvx2<float>(const hyrt_step_v0 *, const LayerView &,
                                             const Mla &, const float *, const float *,
                                             int64_t, int64_t, int64_t, int64_t, float *);
extern template bool attendLatentAvx2<uint16_t>(const hyrt_step_v0 *, const LayerView &,
                                                const Mla &, const float *, const float *,
                                                int64_t, int64_t, int64_t, int64_t, float *);
extern template bool attendLatentAvx2<int8_t>(const hyrt_step_v0 *, const LayerView &,
                                              const Mla &, const float *, const float *,
                                              int64_t, int64_t, int64_t, int64_t, float *);

/// q_lat[t][h] = W_UK[h]^T q_nope[t][h] for tokens [t0, t1) of head h,
/// and out[t][h] = W_UV[h] o_lat[t] * inv[t] for the same: kv_b (fp32, or
/// bf16 rows when `bf16`) in its stored layout, weights loaded once per
/// token block. AVX-512F+BW+VL; foldOutputAvx512 needs rank % 16 == 0.
void foldQueryAvx512(const Mla &m, const float *qNope, const void *wKvB, bool bf16, int64_t h,
                     int64_t t0, int64_t t1, float *qLat);
void foldOutputAvx512(const Mla &m, const float *oLat, int64_t oStride, const float *inv,
                      const void *wKvB, bool bf16, int64_t h, int64_t t0, int64_t t1,
                      float *out);

/// The plain form's expansion for head h: kNope[j] = W_UK[h] c[j] (nope
/// floats at kNope + j * kStride) and v[j] = W_UV[h] c[j] (v floats at
/// v + j * vStride) for the n fp32 latent rows c (rank floats each, rows
/// latStride apart). AVX-512F+BW+VL, rank % 16 == 0.
void expandLatentsAvx512(const Mla &m, const float *latents, int64_t latStride, int64_t n,
                         const void *wKvB, bool bf16, int64_t h, float *kNope, int64_t kStride,
                         float *v, int64_t vStride);

/// expandLatentsAvx512's contract on AVX2 + FMA (mla_expand_avx2.cpp), rank
/// % 8 == 0: the same products, summed in another fp32 order. Call only
/// where hostHasAvx2Fma().
void expandLatentsAvx2(const Mla &m, const float *latents, int64_t latStride, int64_t n,
                       const void *wKvB, bool bf16, int64_t h, float *kNope, int64_t kStride,
                       float *v, int64_t vStride);

/// expandLatentsAvx512 for bf16 latents (rank elements per row, rows
/// latStride apart) and bf16 kv_b, on `vdpbf16ps` (mla_expand_bf16_avx512.cpp):
/// the same products, summed in another fp32 order. AVX-512 BF16 hosts,
/// rank % 32 == 0.
void expandLatentsBf16Dots(const Mla &m, const uint16_t *latents, int64_t latStride, int64_t n,
                           const uint16_t *wKvB, int64_t h, float *kNope, int64_t kStride,
                           float *v, int64_t vStride);
/// The same, each fp32 sum rounded to bf16 (nearest even, hyrt::toBf16) as
/// it is stored: the rows the bf16 attention kernel reads, without an fp32
/// copy of them.
void expandLatentsBf16Dots(const Mla &m, const uint16_t *latents, int64_t latStride, int64_t n,
                           const uint16_t *wKvB, int64_t h, uint16_t *kNope, int64_t kStride,
                           uint16_t *v, int64_t vStride);

/// The plain form for an extend step of one sequence at consecutive
/// positions (mla_plain.cpp); false when it does not apply (the caller runs
/// the absorbed form): on AVX-512F+BW+VL, or on AVX2 + FMA where the
/// row-blocked kernel's AVX2 form takes the expanded heads (rowsAvx2Apply).
bool plainExtend(const hyrt_step_v0 *step, const LayerView &l, const Mla &m, const float *qNope,
                 const float *qPe, const void *wKvB, bool bf16W, float *out, int threads);

} // namespace hyrt::cpu

#endif // HYRT_CPU_MLA_ATTENTION_H
