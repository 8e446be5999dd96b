// Reference kernels for mixture-of-experts: routing (softmax / sigmoid,
// correction bias, group-limited top-k), permute, grouped matmul, unpermute.
#include "hyrt/reference.h"
#include "moe_route.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

extern "C" void hyrt_ref_moe_route(const float *logits,
                                   const float *correction_bias,
                                   int64_t num_tokens, int64_t num_experts,
                                   int64_t top_k, int32_t scoring,
                                   int64_t n_group, int64_t topk_group,
                                   int32_t group_score, int32_t renormalize,
                                   float routed_scaling_factor, float *weights,
                                   int32_t *ids) {
  hyrt::ref::RouteScratch scratch;
  for (int64_t t = 0; t < num_tokens; ++t)
    hyrt::ref::routeToken(logits + t * num_experts, correction_bias, num_experts,
                          top_k, scoring, n_group, topk_group, group_score,
                          renormalize, routed_scaling_factor, weights + t * top_k,
                          ids + t * top_k, scratch);
}

extern "C" void hyrt_ref_moe_permute(const float *x, const int32_t *ids,
                                     int64_t num_tokens, int64_t dim,
                                     int64_t top_k, int64_t num_experts,
                                     int64_t first_expert, float *out_x,
                                     int32_t *offsets, int32_t *rows) {
  const int64_t pairs = num_tokens * top_k;
  auto local = [&](int64_t i) { return int64_t(ids[i]) - first_expert; };
  std::vector<int64_t> cursor(num_experts + 1, 0);
  for (int64_t i = 0; i < pairs; ++i)
    if (local(i) >= 0 && local(i) < num_experts)
      ++cursor[local(i) + 1];
  for (int64_t e = 0; e < num_experts; ++e)
    cursor[e + 1] += cursor[e];
  for (int64_t e = 0; e <= num_experts; ++e)
    offsets[e] = int32_t(cursor[e]);
  // Pairs with an expert id out of range are dropped (ids are validated by
  // the router, so this only keeps bad input from writing out of bounds).
  for (int64_t i = 0; i < pairs; ++i) {
    if (local(i) < 0 || local(i) >= num_experts)
      continue;
    const int64_t r = cursor[local(i)]++;
    rows[r] = int32_t(i);
    std::memcpy(out_x + r * dim, x + (i / top_k) * dim, sizeof(float) * dim);
  }
  for (int64_t r = offsets[num_experts]; r < pairs; ++r)
    rows[r] = -1;
}

extern "C" void hyrt_ref_moe_grouped_matmul(const float *x, const float *w,
                                            const int32_t *offsets,
                                            int64_t num_rows,
                                            int64_t num_experts, int64_t N,
                                            int64_t K, float *out) {
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e];
    const int64_t end = std::min<int64_t>(offsets[e + 1], num_rows);
    if (end > begin)
      hyrt_ref_matmul(x + begin * K, w + e * N * K, nullptr, end - begin, N, K,
                      out + begin * N);
  }
}

extern "C" void hyrt_ref_moe_grouped_matmul_w8a8(
    const float *x, const int8_t *w_q, const float *w_scale,
    const int32_t *offsets, int64_t num_rows, int64_t num_experts, int64_t N,
    int64_t K, float *out) {
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e];
    const int64_t end = std::min<int64_t>(offsets[e + 1], num_rows);
    if (end > begin)
      hyrt_ref_matmul_w8a8(x + begin * K, w_q + e * N * K, w_scale + e * N,
                           nullptr, end - begin, N, K, out + begin * N);
  }
}

extern "C" void hyrt_ref_moe_grouped_matmul_w8a8_grouped(
    const float *x, const int8_t *w_q, const float *w_scale, const int32_t *offsets,
    int64_t num_rows, int64_t num_experts, int64_t N, int64_t K, int64_t group, float *out) {
  const int64_t groups = (K + group - 1) / group;
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e];
    const int64_t end = std::min<int64_t>(offsets[e + 1], num_rows);
    if (end > begin)
      hyrt_ref_matmul_w8a8_grouped(x + begin * K, w_q + e * N * K, w_scale + e * N * groups,
                                   nullptr, end - begin, N, K, group, out + begin * N);
  }
}

extern "C" void hyrt_ref_moe_grouped_matmul_fp8(const float *x, const uint8_t *codes,
                                                const float *factors, const int32_t *offsets,
                                                int64_t num_rows, int64_t num_experts,
                                                int64_t N, int64_t K, int64_t parts,
                                                float *out) {
  const int64_t factorsPerExpert = parts * ((N / parts + 127) / 128) * ((K + 127) / 128);
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e];
    const int64_t end = std::min<int64_t>(offsets[e + 1], num_rows);
    if (end > begin)
      hyrt_ref_matmul_fp8(x + begin * K, codes + e * N * K, factors + e * factorsPerExpert,
                          nullptr, end - begin, N, K, parts, out + begin * N);
  }
}

extern "C" void hyrt_ref_moe_grouped_matmul_bf16_activations(
    const float *x, const float *w, const int32_t *offsets, int64_t num_rows,
    int64_t num_experts, int64_t N, int64_t K, float *out) {
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = offsets[e];
    const int64_t end = std::min<int64_t>(offsets[e + 1], num_rows);
    if (end > begin)
      hyrt_ref_matmul_bf16_activations(x + begin * K, w + e * N * K, nullptr,
                                       end - begin, N, K, out + begin * N);
  }
}

extern "C" void hyrt_ref_moe_unpermute_add(const float *y, const int32_t *rows,
                                           const float *weights,
                                           int64_t num_tokens, int64_t top_k,
                                           int64_t dim, const float *add0,
                                           const float *add1, float *out) {
  // Sum in slot order j = 0..top_k-1 for every token, whatever the row order.
  const int64_t pairs = num_tokens * top_k;
  std::vector<int64_t> row_of_pair(pairs, -1);
  for (int64_t r = 0; r < pairs; ++r)
    if (rows[r] >= 0 && rows[r] < pairs)
      row_of_pair[rows[r]] = r;
  std::vector<double> acc(dim);
  for (int64_t t = 0; t < num_tokens; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t r = row_of_pair[t * top_k + j];
      if (r < 0)
        continue;
      const double wj = weights[t * top_k + j];
      for (int64_t d = 0; d < dim; ++d)
        acc[d] += wj * double(y[r * dim + d]);
    }
    // The sum is rounded to fp32 before the addends, as an unpermute
    // followed by hyc.add computes it.
    for (int64_t d = 0; d < dim; ++d) {
      float v = float(acc[d]);
      if (add0)
        v = v + add0[t * dim + d];
      if (add1)
        v = v + add1[t * dim + d];
      out[t * dim + d] = v;
    }
  }
}

extern "C" void hyrt_ref_moe_unpermute(const float *y, const int32_t *rows,
                                       const float *weights,
                                       int64_t num_tokens, int64_t top_k,
                                       int64_t dim, float *out) {
  hyrt_ref_moe_unpermute_add(y, rows, weights, num_tokens, top_k, dim, nullptr,
                             nullptr, out);
}
