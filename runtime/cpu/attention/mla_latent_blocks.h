// Internal to runtime/cpu: the ISA-neutral steps of the absorbed MLA
// attention blocks (mla_attention_avx512.cpp, mla_attention_avx2.cpp): the
// query rows' packing, each token's last position, the causal mask, the
// partials' write-out. Include before a `#pragma GCC target` region, so
// that these inline functions are compiled for the default target.
#ifndef HYRT_CPU_MLA_LATENT_BLOCKS_H
#define HYRT_CPU_MLA_LATENT_BLOCKS_H

#include "mla_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace hyrt::cpu {

/// A thread's buffers for the latent blocks, grown to the largest call seen:
/// query rows, the block's widened rows, scores, o_lat, softmax state.
struct LatentWork {
  std::vector<float> q, c, s, o, stats;
};

/// Query rows [q_lat | q_pe] of tokens t0.. (M = tq x heads rows, `stride`
/// floats apart; the rest of each row and the padding rows are left as
/// they are: zero when the caller zeroed them).
inline void packLatentQueries(const Mla &m, const float *qLat, const float *qPe, int64_t t0,
                              int64_t M, float *wq, int64_t stride) {
  const int64_t H = m.heads, R = m.rank;
  for (int64_t i = 0; i < M; ++i) {
    const int64_t t = t0 + i / H, h = i % H;
    std::memcpy(wq + i * stride, qLat + (t * H + h) * R, sizeof(float) * size_t(R));
    std::memcpy(wq + i * stride + R, qPe + (t * H + h) * m.rope, sizeof(float) * size_t(m.rope));
  }
}

/// lastOf[u]: token t0 + u sees positions below it (its own included,
/// capped at end); returns the furthest of them (at least begin). tq <= 64.
inline int64_t latentStops(const hyrt_step_v0 *step, int64_t t0, int64_t tq, int64_t begin,
                           int64_t end, int64_t lastOf[64]) {
  int64_t stop = begin;
  for (int64_t u = 0; u < tq; ++u) {
    lastOf[u] = std::min<int64_t>(end, int64_t(step->positions[t0 + u]) + 1);
    stop = std::max(stop, lastOf[u]);
  }
  return stop;
}

/// -inf for the scores ([position][query row], rows mPad apart) of the
/// block's positions j0 .. j0 + nb - 1 that are past a token's own.
inline void maskPastOwn(float *ws, int64_t mPad, int64_t heads, int64_t tq,
                        const int64_t lastOf[64], int64_t j0, int64_t nb) {
  for (int64_t u = 0; u < tq; ++u)
    for (int64_t b = std::max<int64_t>(0, lastOf[u] - j0); b < nb; ++b)
      std::fill(ws + b * mPad + u * heads, ws + b * mPad + (u + 1) * heads, -INFINITY);
}

/// Per token [H][R] o_lat, then H maxima, then H sums, into parts (one
/// mlaPartialFloats(m) apart).
inline void writeLatentPartials(const Mla &m, int64_t tq, const float *wo, const float *mx,
                                const float *sum, float *parts) {
  const int64_t H = m.heads, R = m.rank, stride = mlaPartialFloats(m);
  for (int64_t u = 0; u < tq; ++u) {
    float *part = parts + u * stride;
    std::memcpy(part, wo + u * H * R, sizeof(float) * size_t(H * R));
    std::memcpy(part + H * R, mx + u * H, sizeof(float) * size_t(H));
    std::memcpy(part + H * R + H, sum + u * H, sizeof(float) * size_t(H));
  }
}

} // namespace hyrt::cpu

#endif // HYRT_CPU_MLA_LATENT_BLOCKS_H
