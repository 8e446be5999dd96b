// Mixture-of-experts routing, permute and combine for optimized artifacts:
// the reference kernels' arithmetic (bit for bit, so routing ids and the
// combined sums never depend on the target), split across the thread pool.
// The expert GEMMs between permute and combine are grouped brgemm drivers
// (gemm.cpp).
#include "hyrt/cpu_kernels.h"
#include "host_isa.h"
#include "moe_rows.h"
#include "thread_pool.h"

#include "../reference/moe_route.h"

#include <algorithm>
#include <cstring>
#include <vector>

using hyrt::cpu::parallelFor;
using hyrt::cpu::parallelRows;

extern "C" void hyrt_cpu_moe_route(const float *logits, const float *correction_bias,
                                   int64_t num_tokens, int64_t num_experts,
                                   int64_t top_k, int32_t scoring, int64_t n_group,
                                   int64_t topk_group, int32_t group_score,
                                   int32_t renormalize, float routed_scaling_factor,
                                   float *weights, int32_t *ids) {
  // Contiguous token ranges per thread; each thread keeps its scratch
  // across calls (the pool's workers persist), so a step allocates nothing.
  const int64_t chunks = std::min<int64_t>(num_tokens, 64);
  parallelFor(chunks, hyrt::cpu::threadsForElements(num_tokens * 16 * num_experts), [&](int64_t c) {
    thread_local hyrt::ref::RouteScratch scratch;
    for (int64_t t = num_tokens * c / chunks; t < num_tokens * (c + 1) / chunks; ++t)
      hyrt::ref::routeToken(logits + t * num_experts, correction_bias, num_experts,
                            top_k, scoring, n_group, topk_group, group_score,
                            renormalize, routed_scaling_factor, weights + t * top_k,
                            ids + t * top_k, scratch);
  });
}

extern "C" void hyrt_cpu_moe_permute(const float *x, const int32_t *ids,
                                     int64_t num_tokens, int64_t dim, int64_t top_k,
                                     int64_t num_experts, int64_t first_expert,
                                     float *out_x, int32_t *offsets, int32_t *rows) {
  // Counting and the stable order are a pass over T * top_k ids (cheap);
  // the row copies are what take time, and go to every thread.
  const int64_t pairs = num_tokens * top_k;
  auto local = [&](int64_t i) { return int64_t(ids[i]) - first_expert; };
  std::fill(offsets, offsets + num_experts + 1, 0);
  for (int64_t i = 0; i < pairs; ++i)
    if (local(i) >= 0 && local(i) < num_experts)
      ++offsets[local(i) + 1];
  for (int64_t e = 0; e < num_experts; ++e)
    offsets[e + 1] += offsets[e];
  thread_local std::vector<int32_t> cursor;
  cursor.assign(offsets, offsets + num_experts);
  // Pairs of other experts (another expert-parallel rank's, or an id out
  // of range) are dropped, as in the reference; the unused rows say so.
  for (int64_t i = 0; i < pairs; ++i)
    if (local(i) >= 0 && local(i) < num_experts)
      rows[cursor[local(i)]++] = int32_t(i);
  for (int64_t r = offsets[num_experts]; r < pairs; ++r)
    rows[r] = -1;
  if (!out_x)
    return;
  parallelRows(offsets[num_experts], dim, [&](int64_t r) {
    std::memcpy(out_x + r * dim, x + (rows[r] / top_k) * dim, sizeof(float) * dim);
  });
}

extern "C" void hyrt_cpu_moe_unpermute_add(const float *y, const int32_t *rows,
                                           const float *weights, int64_t num_tokens,
                                           int64_t top_k, int64_t dim,
                                           const float *add0, const float *add1,
                                           float *out) {
  const int64_t pairs = num_tokens * top_k;
  // The caller's buffer, read by the workers through this reference.
  thread_local std::vector<int64_t> callerRowOfPair;
  std::vector<int64_t> &rowOfPair = callerRowOfPair;
  rowOfPair.assign(size_t(pairs), -1);
  for (int64_t r = 0; r < pairs; ++r)
    if (rows[r] >= 0 && rows[r] < pairs)
      rowOfPair[rows[r]] = r;
  const bool avx512 = hyrt::cpu::hostHasAvx512();
  parallelRows(num_tokens, top_k * dim, [&](int64_t t) {
    if (avx512) {
      hyrt::cpu::unpermuteAddRowAvx512(y, rowOfPair.data() + t * top_k, weights + t * top_k,
                                       top_k, dim, add0 ? add0 + t * dim : nullptr,
                                       add1 ? add1 + t * dim : nullptr, out + t * dim);
      return;
    }
    // The reference's sums: slot order, in double, rounded to fp32 before
    // the addends. Chunks of 256 keep the double accumulators on the stack.
    constexpr int64_t kChunk = 256;
    double acc[kChunk];
    for (int64_t d0 = 0; d0 < dim; d0 += kChunk) {
      const int64_t n = std::min(kChunk, dim - d0);
      for (int64_t d = 0; d < n; ++d)
        acc[d] = 0.0;
      for (int64_t j = 0; j < top_k; ++j) {
        const int64_t r = rowOfPair[t * top_k + j];
        if (r < 0)
          continue;
        const double wj = weights[t * top_k + j];
        const float *yr = y + r * dim + d0;
        for (int64_t d = 0; d < n; ++d)
          acc[d] += wj * double(yr[d]);
      }
      float *o = out + t * dim + d0;
      for (int64_t d = 0; d < n; ++d) {
        float v = float(acc[d]);
        if (add0)
          v = v + add0[t * dim + d0 + d];
        if (add1)
          v = v + add1[t * dim + d0 + d];
        o[d] = v;
      }
    }
  });
}
