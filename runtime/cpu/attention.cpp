// Decode/extend attention over the paged KV cache for optimized artifacts:
// the semantics of hyrt_ref_paged_attention (reference.h) in fp32, with
// (token, head) pairs split across OpenMP threads and the dot products /
// value sums vectorized for the host's widest ISA (GCC target clones).
#include "hyrt/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

/// Shapes and bases of one layer of the cache.
struct LayerView {
  int64_t kvHeads, dk, dv, page, group;
  float *k, *v;
};

LayerView layerView(const hyrt_kv_cache_v0 *kv, int64_t layer,
                    int64_t numHeads) {
  return {kv->num_kv_heads,
          kv->k_head_dim,
          kv->v_head_dim,
          kv->page_size,
          numHeads / kv->num_kv_heads,
          kv->k_layers[layer],
          kv->v_layers[layer]};
}

/// Cache row of (the sequence of token t, position pos).
int64_t cacheRow(const hyrt_step_v0 *step, const LayerView &l, int64_t t,
                 int64_t pos) {
  const int32_t *blocks = step->block_tables +
                          int64_t(step->token_seq[t]) * step->max_pages_per_seq;
  return int64_t(blocks[pos / l.page]) * l.page + pos % l.page;
}

/// Query head h of token t over cached positions [0, p]: fp32 softmax with
/// the maximum subtracted, then the weighted sum of values.
void attendHead(const hyrt_step_v0 *step, const LayerView &l, const float *q,
                int64_t numHeads, float scale, int64_t t, int64_t h,
                std::vector<float> &scores, std::vector<float> &acc,
                float *out) {
  const int64_t kvh = h / l.group, n = int64_t(step->positions[t]) + 1;
  const float *qh = q + (t * numHeads + h) * l.dk;
  scores.resize(size_t(n));
  float maxScore = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t row = cacheRow(step, l, t, j);
    scores[j] = dot(qh, l.k + (row * l.kvHeads + kvh) * l.dk, l.dk) * scale;
    maxScore = std::fmax(maxScore, scores[j]);
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - maxScore);
    sum += scores[j];
  }
  acc.assign(size_t(l.dv), 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t row = cacheRow(step, l, t, j);
    axpy(scores[j], l.v + (row * l.kvHeads + kvh) * l.dv, acc.data(), l.dv);
  }
  float *o = out + (t * numHeads + h) * l.dv;
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < l.dv; ++i)
    o[i] = acc[i] * inv;
}

/// Writes kv head `kvh` of token t's key and value at the token's position.
void appendHead(const hyrt_step_v0 *step, const LayerView &l, const float *k,
                const float *v, int64_t t, int64_t kvh) {
  const int64_t row = cacheRow(step, l, t, step->positions[t]);
  std::memcpy(l.k + (row * l.kvHeads + kvh) * l.dk,
              k + (t * l.kvHeads + kvh) * l.dk, sizeof(float) * size_t(l.dk));
  std::memcpy(l.v + (row * l.kvHeads + kvh) * l.dv,
              v + (t * l.kvHeads + kvh) * l.dv, sizeof(float) * size_t(l.dv));
}

/// Whether the step's attention is worth a fork/join (2^18 multiply-adds).
bool worthThreads(const hyrt_step_v0 *step, const LayerView &l,
                  int64_t numHeads) {
  int64_t work = 0;
  for (int64_t t = 0; t < step->num_tokens; ++t)
    work += (int64_t(step->positions[t]) + 1) * numHeads * (l.dk + l.dv);
  return work >= (int64_t(1) << 18);
}

} // namespace

extern "C" void hyrt_cpu_paged_attention(const hyrt_kv_cache_v0 *kv,
                                         const hyrt_step_v0 *step,
                                         int64_t layer, const float *q,
                                         int64_t num_heads, float scale,
                                         float *out) {
  const LayerView l = layerView(kv, layer, num_heads);
  const int64_t T = step->num_tokens;
#pragma omp parallel if (worthThreads(step, l, num_heads))
  {
    std::vector<float> scores, acc;
#pragma omp for schedule(dynamic, 1)
    for (int64_t th = 0; th < T * num_heads; ++th)
      attendHead(step, l, q, num_heads, scale, th / num_heads, th % num_heads,
                 scores, acc, out);
  }
}

extern "C" void hyrt_cpu_paged_attention_append(
    const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step, int64_t layer,
    const float *k, const float *v, const float *q, int64_t num_heads,
    float scale, float *out) {
  const LayerView l = layerView(kv, layer, num_heads);
  const int64_t T = step->num_tokens;
  // One parallel region for both: the threads write the step's rows, meet at
  // the barrier that ends the first loop (a token may read rows other work
  // items wrote: its own, or in a multi-token step its predecessors'), then
  // attend over (token, query head) as hyrt_cpu_paged_attention does.
#pragma omp parallel if (worthThreads(step, l, num_heads))
  {
#pragma omp for schedule(static)
    for (int64_t tg = 0; tg < T * l.kvHeads; ++tg)
      appendHead(step, l, k, v, tg / l.kvHeads, tg % l.kvHeads);
    std::vector<float> scores, acc;
#pragma omp for schedule(dynamic, 1)
    for (int64_t th = 0; th < T * num_heads; ++th)
      attendHead(step, l, q, num_heads, scale, th / num_heads, th % num_heads,
                 scores, acc, out);
  }
}
