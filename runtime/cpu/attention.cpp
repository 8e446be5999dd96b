// Decode/extend attention over the paged KV cache for optimized artifacts:
// the semantics of hyrt_ref_paged_attention (reference.h) in fp32, with
// (token, head) pairs split across OpenMP threads and the dot products /
// value sums vectorized for the host's widest ISA (GCC target clones).
#include "hyrt/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

__attribute__((target_clones("avx512f", "avx2", "default"))) float
dot(const float *a, const float *b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i)
    acc += a[i] * b[i];
  return acc;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void
axpy(float w, const float *x, float *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] += w * x[i];
}

} // namespace

extern "C" void hyrt_cpu_paged_attention(const hyrt_kv_cache_v0 *kv,
                                         const hyrt_step_v0 *step,
                                         int64_t layer, const float *q,
                                         int64_t num_heads, float scale,
                                         float *out) {
  const int64_t T = step->num_tokens, kvHeads = kv->num_kv_heads;
  const int64_t dk = kv->k_head_dim, dv = kv->v_head_dim, page = kv->page_size;
  const int64_t group = num_heads / kvHeads;
  const float *kBase = kv->k_layers[layer];
  const float *vBase = kv->v_layers[layer];
  // Threads only when there is enough work to pay for the fork/join.
  int64_t work = 0;
  for (int64_t t = 0; t < T; ++t)
    work += (int64_t(step->positions[t]) + 1) * num_heads * (dk + dv);

#pragma omp parallel if (work >= (int64_t(1) << 18))
  {
    std::vector<float> scores;
    std::vector<float> acc(static_cast<size_t>(dv));
#pragma omp for schedule(dynamic, 1)
    for (int64_t th = 0; th < T * num_heads; ++th) {
      const int64_t t = th / num_heads, h = th % num_heads, kvh = h / group;
      const int64_t s = step->token_seq[t];
      const int64_t n = int64_t(step->positions[t]) + 1;
      const int32_t *blocks = step->block_tables + s * step->max_pages_per_seq;
      const float *qh = q + (t * num_heads + h) * dk;
      scores.resize(size_t(n));
      float maxScore = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = int64_t(blocks[j / page]) * page + j % page;
        scores[j] = dot(qh, kBase + (row * kvHeads + kvh) * dk, dk) * scale;
        maxScore = std::fmax(maxScore, scores[j]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        scores[j] = std::exp(scores[j] - maxScore);
        sum += scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = int64_t(blocks[j / page]) * page + j % page;
        axpy(scores[j], vBase + (row * kvHeads + kvh) * dv, acc.data(), dv);
      }
      float *o = out + (t * num_heads + h) * dv;
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < dv; ++i)
        o[i] = acc[i] * inv;
    }
  }
}
