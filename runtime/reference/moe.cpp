// Reference kernels for mixture-of-experts: routing (softmax / sigmoid,
// correction bias, group-limited top-k), permute, grouped matmul, unpermute.
#include "hyrt/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

/// Index of the largest value among allowed entries; ties go to the lower
/// index. Returns -1 when nothing is allowed.
int64_t argmax_allowed(const std::vector<double> &v,
                       const std::vector<char> &allowed) {
  int64_t best = -1;
  for (size_t i = 0; i < v.size(); ++i)
    if (allowed[i] && (best < 0 || v[i] > v[best]))
      best = int64_t(i);
  return best;
}

} // namespace

extern "C" void hyrt_ref_moe_route(const float *logits,
                                   const float *correction_bias,
                                   int64_t num_tokens, int64_t num_experts,
                                   int64_t top_k, int32_t scoring,
                                   int64_t n_group, int64_t topk_group,
                                   int32_t group_score, int32_t renormalize,
                                   float routed_scaling_factor, float *weights,
                                   int32_t *ids) {
  const int64_t E = num_experts;
  std::vector<double> scores(E), sel(E), group_scores;
  std::vector<char> allowed(E), group_allowed;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float *l = logits + t * E;
    if (scoring == 0) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t e = 0; e < E; ++e)
        mx = std::max(mx, double(l[e]));
      double sum = 0.0;
      for (int64_t e = 0; e < E; ++e)
        sum += (scores[e] = std::exp(double(l[e]) - mx));
      for (int64_t e = 0; e < E; ++e)
        scores[e] /= sum;
    } else {
      for (int64_t e = 0; e < E; ++e)
        scores[e] = 1.0 / (1.0 + std::exp(-double(l[e])));
    }
    // Scores go through fp32 so that selection and weights see the same
    // values an fp32 implementation would.
    for (int64_t e = 0; e < E; ++e) {
      scores[e] = float(scores[e]);
      sel[e] = correction_bias ? double(float(scores[e] + correction_bias[e]))
                               : scores[e];
    }
    std::fill(allowed.begin(), allowed.end(), 1);
    if (n_group > 1) {
      const int64_t per_group = E / n_group;
      group_scores.assign(n_group, 0.0);
      for (int64_t g = 0; g < n_group; ++g) {
        std::vector<double> members(sel.begin() + g * per_group,
                                    sel.begin() + (g + 1) * per_group);
        std::sort(members.begin(), members.end(), std::greater<double>());
        group_scores[g] = members[0];
        if (group_score == 1 && per_group > 1)
          group_scores[g] += members[1];
      }
      std::vector<char> all_groups(n_group, 1);
      group_allowed.assign(n_group, 0);
      for (int64_t i = 0; i < topk_group && i < n_group; ++i) {
        const int64_t g = argmax_allowed(group_scores, all_groups);
        group_allowed[g] = 1;
        all_groups[g] = 0;
      }
      for (int64_t e = 0; e < E; ++e)
        allowed[e] = group_allowed[e / per_group];
    }
    float *w = weights + t * top_k;
    int32_t *id = ids + t * top_k;
    double sum = 0.0;
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t e = argmax_allowed(sel, allowed);
      if (e < 0) { // top_k exceeds the experts left: pad with weight 0
        id[j] = 0;
        w[j] = 0.f;
        continue;
      }
      allowed[e] = 0;
      id[j] = int32_t(e);
      w[j] = float(scores[e]);
      sum += scores[e];
    }
    for (int64_t j = 0; j < top_k; ++j) {
      double wj = w[j];
      if (renormalize && sum > 0.0)
        wj /= sum;
      w[j] = float(wj * double(routed_scaling_factor));
    }
  }
}

extern "C" void hyrt_ref_moe_permute(const float *x, const int32_t *ids,
                                     int64_t num_tokens, int64_t dim,
                                     int64_t top_k, int64_t num_experts,
                                     float *out_x, int32_t *offsets,
                                     int32_t *rows) {
  const int64_t pairs = num_tokens * top_k;
  std::vector<int64_t> cursor(num_experts + 1, 0);
  for (int64_t i = 0; i < pairs; ++i)
    if (ids[i] >= 0 && ids[i] < num_experts)
      ++cursor[ids[i] + 1];
  for (int64_t e = 0; e < num_experts; ++e)
    cursor[e + 1] += cursor[e];
  for (int64_t e = 0; e <= num_experts; ++e)
    offsets[e] = int32_t(cursor[e]);
  // Pairs with an expert id out of range are dropped (ids are validated by
  // the router, so this only keeps bad input from writing out of bounds).
  for (int64_t i = 0; i < pairs; ++i) {
    if (ids[i] < 0 || ids[i] >= num_experts)
      continue;
    const int64_t r = cursor[ids[i]]++;
    rows[r] = int32_t(i);
    std::memcpy(out_x + r * dim, x + (i / top_k) * dim, sizeof(float) * dim);
  }
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
