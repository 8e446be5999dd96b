// Reference kernels for the paged KV cache: append, extend attention, paged
// (decode) attention and DeepSeek MLA attention on the latent cache.
#include "hyrt/reference.h"

#include "bf16.h"
#include "kv_int8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace {

/// A layer of the cache as fp32 rows of `dim`: the pool itself for an fp32
/// cache; for a bf16 cache, the whole layer widened (exactly) into
/// `shadow`; for an int8 one, dequantized there (code x its row's scale from
/// `scales`, as the kernels compute it). The reference is the semantic
/// baseline of a bf16 or int8 cache too (values rounded once, when
/// appended), so that optimized artifacts can be compared with a reference
/// of the same cache dtype; it is not a fast path.
float *f32Layer(const hyrt_kv_cache_v0 *kv, void *base, const float *scales, int64_t dim,
                std::vector<float> &shadow) {
  if (kv->dtype == HYRT_KV_F32)
    return static_cast<float *>(base);
  if (kv->dtype != HYRT_KV_BF16 && kv->dtype != HYRT_KV_INT8) {
    std::fprintf(stderr, "hyrt reference attention: KV cache dtype %d, expected fp32, "
                         "bf16 or int8 (internal error)\n",
                 int(kv->dtype));
    std::abort();
  }
  const size_t n = size_t(kv->num_pages * kv->num_kv_heads * kv->page_size * dim);
  shadow.resize(n);
  if (kv->dtype == HYRT_KV_INT8) {
    const int8_t *c = static_cast<const int8_t *>(base);
    for (size_t i = 0; i < n; ++i)
      shadow[i] = hyrt::dequantKv(c[i], scales[i / size_t(dim)]);
    return shadow.data();
  }
  const uint16_t *b = static_cast<const uint16_t *>(base);
  for (size_t i = 0; i < n; ++i)
    shadow[i] = hyrt::fromBf16(b[i]);
  return shadow.data();
}

float *kScales(const hyrt_kv_cache_v0 *kv, int64_t layer) {
  return kv->dtype == HYRT_KV_INT8 ? kv->k_scale_layers[layer] : nullptr;
}
float *vScales(const hyrt_kv_cache_v0 *kv, int64_t layer) {
  return kv->dtype == HYRT_KV_INT8 && kv->v_scale_layers ? kv->v_scale_layers[layer] : nullptr;
}

/// Writes n floats to a cache row of the cache's dtype (an int8 row's scale
/// to *scale).
void storeRow(const hyrt_kv_cache_v0 *kv, void *dst, float *scale, const float *src,
              int64_t n) {
  if (kv->dtype == HYRT_KV_INT8) {
    *scale = hyrt::quantizeKvRow(src, n, static_cast<int8_t *>(dst));
    return;
  }
  if (kv->dtype == HYRT_KV_BF16) {
    uint16_t *d = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < n; ++i)
      d[i] = hyrt::toBf16(src[i]);
  } else {
    std::memcpy(dst, src, sizeof(float) * size_t(n));
  }
}

/// Element index of KV head `head`'s row of `pos` in sequence `seq`: pages
/// are head-major ([page][kv head][slot][head_dim], see abi.h).
int64_t cacheHeadRow(const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step, int64_t seq,
                     int64_t pos, int64_t head, int64_t head_dim) {
  const int64_t page =
      step->block_tables[seq * step->max_pages_per_seq + pos / kv->page_size];
  const int64_t slot = pos % kv->page_size;
  return ((page * kv->num_kv_heads + head) * kv->page_size + slot) * head_dim;
}

/// Address of KV head `head`'s row of `pos` in sequence `seq` (fp32 cache).
float *cache_row(float *base, const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step,
                 int64_t seq, int64_t pos, int64_t head, int64_t head_dim) {
  return base + cacheHeadRow(kv, step, seq, pos, head, head_dim);
}

double dot(const float *a, const float *b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i)
    acc += double(a[i]) * double(b[i]);
  return acc;
}

/// In-place stable softmax over scores; returns nothing for an empty list.
void softmax(std::vector<double> &scores) {
  double mx = -std::numeric_limits<double>::infinity();
  for (double s : scores)
    mx = std::max(mx, s);
  double sum = 0.0;
  for (double &s : scores) {
    s = std::exp(s - mx);
    sum += s;
  }
  for (double &s : scores)
    s /= sum;
}

/// out[0:dv] = sum_j p[j] * values[j][0:dv].
void weighted_sum(const std::vector<double> &p,
                  const std::vector<const float *> &values, int64_t dv,
                  float *out) {
  std::vector<double> acc(dv, 0.0);
  for (size_t j = 0; j < p.size(); ++j)
    for (int64_t d = 0; d < dv; ++d)
      acc[d] += p[j] * double(values[j][d]);
  for (int64_t d = 0; d < dv; ++d)
    out[d] = float(acc[d]);
}

} // namespace

extern "C" void hyrt_ref_kv_cache_append(hyrt_kv_cache_v0 *kv,
                                         const hyrt_step_v0 *step,
                                         int64_t layer, const float *k,
                                         const float *v) {
  const int64_t hkv = kv->num_kv_heads, dk = kv->k_head_dim,
                dv = kv->v_head_dim;
  void *kbase = kv->k_layers[layer];
  void *vbase = kv->v_layers ? kv->v_layers[layer] : nullptr;
  const int64_t elem = kv->dtype == HYRT_KV_INT8 ? 1 : kv->dtype == HYRT_KV_BF16 ? 2 : 4;
  float *ks = kScales(kv, layer), *vs = vScales(kv, layer);
  for (int64_t t = 0; t < step->num_tokens; ++t) {
    const int64_t s = step->token_seq[t], pos = step->positions[t];
    for (int64_t h = 0; h < hkv; ++h) {
      // The row index with dim 1 is the row's scale slot.
      const int64_t row = cacheHeadRow(kv, step, s, pos, h, 1);
      storeRow(kv, static_cast<unsigned char *>(kbase) + row * dk * elem,
               ks ? ks + row : nullptr, k + (t * hkv + h) * dk, dk);
      if (v && vbase && dv > 0)
        storeRow(kv, static_cast<unsigned char *>(vbase) + row * dv * elem,
                 vs ? vs + row : nullptr, v + (t * hkv + h) * dv, dv);
    }
  }
}

extern "C" void hyrt_ref_attention(const hyrt_kv_cache_v0 *kv,
                                   const hyrt_step_v0 *step, int64_t layer,
                                   const float *q, const float *k,
                                   const float *v, int64_t num_heads,
                                   float scale, float *out) {
  const int64_t hkv = kv->num_kv_heads, dk = kv->k_head_dim,
                dv = kv->v_head_dim;
  const int64_t group = num_heads / hkv;
  std::vector<float> kShadow, vShadow;
  float *kbase = f32Layer(kv, kv->k_layers[layer], kScales(kv, layer), dk, kShadow);
  float *vbase = f32Layer(kv, kv->v_layers[layer], vScales(kv, layer), dv, vShadow);
  std::vector<const float *> keys, values;
  std::vector<double> scores;
  for (int64_t t = 0; t < step->num_tokens; ++t) {
    const int64_t s = step->token_seq[t], p = step->positions[t];
    const int64_t first = step->seq_token_start[s];
    const int64_t count = step->seq_new_len[s];
    for (int64_t h = 0; h < num_heads; ++h) {
      const int64_t g = h / group;
      keys.clear();
      values.clear();
      for (int64_t j = 0; j < step->seq_prefix_len[s]; ++j) {
        keys.push_back(cache_row(kbase, kv, step, s, j, g, dk));
        values.push_back(cache_row(vbase, kv, step, s, j, g, dv));
      }
      for (int64_t u = first; u < first + count; ++u) {
        if (step->positions[u] > p)
          continue;
        keys.push_back(k + (u * hkv + g) * dk);
        values.push_back(v + (u * hkv + g) * dv);
      }
      const float *qh = q + (t * num_heads + h) * dk;
      scores.assign(keys.size(), 0.0);
      for (size_t j = 0; j < keys.size(); ++j)
        scores[j] = dot(qh, keys[j], dk) * double(scale);
      softmax(scores);
      weighted_sum(scores, values, dv, out + (t * num_heads + h) * dv);
    }
  }
}

extern "C" void hyrt_ref_paged_attention(const hyrt_kv_cache_v0 *kv,
                                         const hyrt_step_v0 *step,
                                         int64_t layer, const float *q,
                                         int64_t num_heads, float scale,
                                         float *out) {
  const int64_t hkv = kv->num_kv_heads, dk = kv->k_head_dim,
                dv = kv->v_head_dim;
  const int64_t group = num_heads / hkv;
  std::vector<float> kShadow, vShadow;
  float *kbase = f32Layer(kv, kv->k_layers[layer], kScales(kv, layer), dk, kShadow);
  float *vbase = f32Layer(kv, kv->v_layers[layer], vScales(kv, layer), dv, vShadow);
  std::vector<const float *> values;
  std::vector<double> scores;
  for (int64_t t = 0; t < step->num_tokens; ++t) {
    const int64_t s = step->token_seq[t], p = step->positions[t];
    for (int64_t h = 0; h < num_heads; ++h) {
      const int64_t g = h / group;
      const float *qh = q + (t * num_heads + h) * dk;
      scores.assign(p + 1, 0.0);
      values.assign(p + 1, nullptr);
      for (int64_t j = 0; j <= p; ++j) {
        scores[j] =
            dot(qh, cache_row(kbase, kv, step, s, j, g, dk), dk) *
            double(scale);
        values[j] = cache_row(vbase, kv, step, s, j, g, dv);
      }
      softmax(scores);
      weighted_sum(scores, values, dv, out + (t * num_heads + h) * dv);
    }
  }
}

extern "C" void hyrt_ref_mla_attention(
    const hyrt_kv_cache_v0 *kv, const hyrt_step_v0 *step, int64_t layer,
    const float *q_nope, const float *q_pe, const float *w_kv_b,
    int64_t num_heads, int64_t nope_dim, int64_t rope_dim, int64_t v_dim,
    int64_t kv_lora_rank, float scale, float *out) {
  const int64_t row_dim = kv->k_head_dim; // kv_lora_rank + rope_dim
  const int64_t head_rows = nope_dim + v_dim;
  std::vector<float> shadow;
  float *base = f32Layer(kv, kv->k_layers[layer], kScales(kv, layer), row_dim, shadow);
  // Per sequence, expand every cached latent the step can see into explicit
  // per-head keys and values (the plain, non-absorbed form), then attend.
  std::vector<float> k_nope, values;
  std::vector<const float *> k_pe, value_rows;
  std::vector<double> scores;
  for (int64_t s = 0; s < step->num_seqs; ++s) {
    const int64_t first = step->seq_token_start[s];
    const int64_t count = step->seq_new_len[s];
    int64_t max_pos = -1;
    for (int64_t u = first; u < first + count; ++u)
      max_pos = std::max<int64_t>(max_pos, step->positions[u]);
    const int64_t n = max_pos + 1;
    k_nope.assign(n * num_heads * nope_dim, 0.f);
    values.assign(n * num_heads * v_dim, 0.f);
    k_pe.assign(n, nullptr);
    for (int64_t j = 0; j < n; ++j) {
      const float *row = cache_row(base, kv, step, s, j, 0, row_dim);
      k_pe[j] = row + kv_lora_rank;
      for (int64_t h = 0; h < num_heads; ++h) {
        const float *wh = w_kv_b + h * head_rows * kv_lora_rank;
        for (int64_t d = 0; d < nope_dim; ++d)
          k_nope[(j * num_heads + h) * nope_dim + d] =
              float(dot(wh + d * kv_lora_rank, row, kv_lora_rank));
        for (int64_t d = 0; d < v_dim; ++d)
          values[(j * num_heads + h) * v_dim + d] = float(
              dot(wh + (nope_dim + d) * kv_lora_rank, row, kv_lora_rank));
      }
    }
    for (int64_t t = first; t < first + count; ++t) {
      const int64_t p = step->positions[t];
      for (int64_t h = 0; h < num_heads; ++h) {
        const float *qn = q_nope + (t * num_heads + h) * nope_dim;
        const float *qp = q_pe + (t * num_heads + h) * rope_dim;
        scores.assign(p + 1, 0.0);
        value_rows.assign(p + 1, nullptr);
        for (int64_t j = 0; j <= p; ++j) {
          scores[j] = (dot(qn, &k_nope[(j * num_heads + h) * nope_dim],
                           nope_dim) +
                       dot(qp, k_pe[j], rope_dim)) *
                      double(scale);
          value_rows[j] = &values[(j * num_heads + h) * v_dim];
        }
        softmax(scores);
        weighted_sum(scores, value_rows, v_dim,
                     out + (t * num_heads + h) * v_dim);
      }
    }
  }
}
