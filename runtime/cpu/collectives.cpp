// Tensor- and expert-parallel exchanges for optimized artifacts: the
// results of the hyrt_ref_* versions (runtime/reference/collectives.cpp)
// bit for bit, through the functions the runtime registered in the same
// state (abi.h hyrt_collectives_v0). What differs is the work around the
// exchange: rows packed and unpacked with memcpy across the thread pool, no
// staging copy for a group of one, the returned expert rows summed per
// token (vectorized, tokens across threads), and gathers that move each
// value once through the registered all_gather where the reference reduces
// a buffer of zeros.
#include "hyrt/cpu_kernels.h"
#include "hyrt/reference.h"
#include "thread_pool.h"

#include <algorithm>
#include <cstring>
#include <vector>

using hyrt::cpu::parallelRows;

namespace {

hyrt_collectives_v0 &group() { return *hyrt_collectives_state(); }

/// Whether the registered `fn` can serve a group of `groupSize`; false (and
/// the step marked failed) when the step is lost already or it cannot.
template <typename Fn> bool usable(Fn fn, int64_t groupSize) {
  hyrt_collectives_v0 &g = group();
  if (g.failed != HYRT_COLLECTIVE_OK)
    return false; // the runtime reports the first cause
  if (!fn || g.group_size != groupSize) {
    g.failed = HYRT_COLLECTIVE_NOT_REGISTERED;
    return false;
  }
  ++g.calls;
  return true;
}

/// `status` of a registered call folded into the state; true when it ran.
bool ran(int32_t status) {
  if (status != 0)
    group().failed = HYRT_COLLECTIVE_FAILED;
  return status == 0;
}

bool allGather(const float *in, int64_t n, float *out, int64_t groupSize) {
  hyrt_collectives_v0 &g = group();
  return usable(g.all_gather, groupSize) && ran(g.all_gather(g.ctx, in, n, out));
}

bool allToAll(const float *send, const int64_t *sendCounts, float *recv, int64_t *recvCounts,
              int64_t capacity, int64_t groupSize) {
  hyrt_collectives_v0 &g = group();
  return usable(g.all_to_all_v, groupSize) &&
         ran(g.all_to_all_v(g.ctx, send, sendCounts, recv, recvCounts, capacity));
}

/// At least `n` floats kept by the calling thread: the exchanges run per
/// layer and step, and would otherwise map and fault in megabytes each time.
float *scratch(std::vector<float> &buffer, int64_t n) {
  if (buffer.size() < size_t(n))
    buffer.resize(size_t(n));
  return buffer.data();
}

/// Rank `rank`'s own tokens [first, last): the reference's split.
void ownTokens(int64_t tokens, int64_t groupSize, int64_t rank, int64_t *first, int64_t *last) {
  *first = tokens * rank / groupSize;
  *last = tokens * (rank + 1) / groupSize;
}

void copyFloats(float *dst, const float *src, int64_t n) {
  std::memcpy(dst, src, sizeof(float) * size_t(n));
}

} // namespace

extern "C" void hyrt_cpu_all_reduce_sum(float *data, int64_t n, int64_t group_size) {
  if (group_size == 1)
    return;
  hyrt_collectives_v0 &g = group();
  if (usable(g.all_reduce_sum, group_size))
    ran(g.all_reduce_sum(g.ctx, data, n));
}

extern "C" void hyrt_cpu_all_gather_cols(const float *in, int64_t rows, int64_t cols, float *out,
                                         int64_t group_size, int64_t rank) {
  (void)rank; // the gather places every block by its rank itself
  const int64_t n = group_size, width = cols * n;
  if (n == 1) {
    copyFloats(out, in, rows * cols);
    return;
  }
  // One row (a decode step of one sequence): the gathered blocks are the
  // row already.
  if (rows == 1) {
    allGather(in, cols, out, n);
    return;
  }
  thread_local std::vector<float> gathered;
  float *blocks = scratch(gathered, n * rows * cols); // [rank][rows][cols]
  if (!allGather(in, rows * cols, blocks, n))
    return;
  parallelRows(rows, width, [&](int64_t r) {
    for (int64_t s = 0; s < n; ++s)
      copyFloats(out + r * width + s * cols, blocks + (s * rows + r) * cols, cols);
  });
}

extern "C" void hyrt_cpu_moe_dispatch(const float *x, const int32_t *ids, const float *weights,
                                      int64_t num_tokens, int64_t dim, int64_t top_k,
                                      int64_t experts_per_rank, int64_t group_size, int64_t rank,
                                      float *out_rows, int32_t *out_ids, float *out_weights,
                                      int32_t *sent, int32_t *counts) {
  const int64_t k = top_k, width = dim + 2 * k, n = group_size;
  std::fill(out_ids, out_ids + num_tokens * k, -1);
  std::fill(out_weights, out_weights + num_tokens * k, 0.0f);
  std::fill(sent, sent + num_tokens * k, -1);
  int64_t first = 0, last = 0;
  ownTokens(num_tokens, n, rank, &first, &last);
  // Which rows go where (cheap: top_k ids per token and destination), in
  // the reference's order: destination, then token.
  // Kept by the calling thread across calls; the workers read the caller's
  // buffers through these references (a thread_local named inside the
  // lambda would be each worker's own).
  thread_local std::vector<int64_t> callerRowDest;
  std::vector<int64_t> &rowDest = callerRowDest;
  rowDest.clear();
  std::vector<int64_t> sendCounts(size_t(n), 0), recvCounts(size_t(n), 0);
  for (int64_t d = 0; d < n; ++d) {
    const int64_t lo = d * experts_per_rank, hi = lo + experts_per_rank;
    for (int64_t t = first; t < last; ++t) {
      const int32_t *route = ids + t * k;
      if (std::none_of(route, route + k, [&](int32_t e) { return e >= lo && e < hi; }))
        continue; // no expert there (ids out of range are dropped)
      sent[rowDest.size()] = int32_t(t);
      rowDest.push_back(d);
      sendCounts[size_t(d)] += width;
    }
    counts[d] = int32_t(sendCounts[size_t(d)] / width);
  }
  // Each row: [x row | the destination's local expert per slot, or -1 |
  // weight per slot], packed across the threads.
  const int64_t slots = int64_t(rowDest.size());
  thread_local std::vector<float> packed, received;
  float *send = scratch(packed, slots * width);
  parallelRows(slots, width, [&](int64_t s) {
    const int64_t t = sent[s], lo = rowDest[size_t(s)] * experts_per_rank;
    const int64_t hi = lo + experts_per_rank;
    float *p = send + s * width;
    copyFloats(p, x + t * dim, dim);
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = ids[t * k + j];
      const bool here = e >= lo && e < hi;
      p[dim + j] = here ? float(e - lo) : -1.0f;
      p[dim + k + j] = here ? weights[t * k + j] : 0.0f;
    }
  });
  // At most one row per token of every source: T rows.
  const float *recv = send;
  if (n == 1) {
    recvCounts[0] = sendCounts[0];
  } else {
    float *into = scratch(received, num_tokens * width);
    if (!allToAll(send, sendCounts.data(), into, recvCounts.data(), num_tokens * width, n)) {
      std::fill(counts + n, counts + 2 * n, 0);
      return; // the step is lost; the runtime reports why
    }
    recv = into;
  }
  int64_t rows = 0;
  for (int64_t s = 0; s < n; ++s) {
    counts[n + s] = int32_t(recvCounts[size_t(s)] / width);
    rows += counts[n + s];
  }
  // Unused rows zero: kernels that convert every row see no arena garbage.
  std::memset(out_rows + rows * dim, 0, sizeof(float) * size_t((num_tokens - rows) * dim));
  parallelRows(rows, width, [&](int64_t i) {
    const float *p = recv + i * width;
    copyFloats(out_rows + i * dim, p, dim);
    for (int64_t j = 0; j < k; ++j) {
      out_ids[i * k + j] = int32_t(p[dim + j]);
      out_weights[i * k + j] = p[dim + k + j];
    }
  });
}

extern "C" void hyrt_cpu_moe_undispatch(const float *results, const int32_t *sent,
                                        const int32_t *counts, int64_t num_tokens, int64_t dim,
                                        int64_t group_size, int64_t rank, float *out) {
  const int64_t n = group_size;
  std::vector<int64_t> sendCounts(size_t(n), 0), recvCounts(size_t(n), 0);
  int64_t returned = 0;
  for (int64_t s = 0; s < n; ++s) {
    sendCounts[size_t(s)] = int64_t(counts[n + s]) * dim;
    returned += counts[s];
  }
  // What comes back: one row per row this rank sent (counts[0..n)), in
  // the order sent; a group of one reads its results where they are.
  const float *back = results;
  if (n > 1) {
    thread_local std::vector<float> returnedRows;
    float *into = scratch(returnedRows, returned * dim);
    if (!allToAll(results, sendCounts.data(), into, recvCounts.data(), returned * dim, n))
      return;
    back = into;
  }
  // Each token's returned rows in the order sent (the reference's order of
  // addition), so tokens can be summed independently across the threads.
  // The caller's buffers, read by the workers through these references.
  thread_local std::vector<int32_t> callerFirstSlot, callerSlotsOfToken;
  std::vector<int32_t> &firstSlot = callerFirstSlot, &slotsOfToken = callerSlotsOfToken;
  firstSlot.assign(size_t(num_tokens) + 1, 0);
  for (int64_t s = 0; s < returned; ++s)
    ++firstSlot[size_t(sent[s]) + 1];
  for (int64_t t = 0; t < num_tokens; ++t)
    firstSlot[size_t(t) + 1] += firstSlot[size_t(t)];
  slotsOfToken.resize(size_t(returned));
  {
    std::vector<int32_t> next(firstSlot.begin(), firstSlot.end() - 1);
    for (int64_t s = 0; s < returned; ++s)
      slotsOfToken[size_t(next[size_t(sent[s])]++)] = int32_t(s);
  }
  // The reference starts each row at -0 (x + -0 is x): the first row
  // copied is the same bits, and a token with no row stays -0.
  parallelRows(num_tokens, dim, [&](int64_t t) {
    float *o = out + t * dim;
    const int32_t b = firstSlot[size_t(t)], e = firstSlot[size_t(t) + 1];
    if (b == e) {
      std::fill(o, o + dim, -0.0f);
      return;
    }
    copyFloats(o, back + int64_t(slotsOfToken[size_t(b)]) * dim, dim);
    for (int32_t i = b + 1; i < e; ++i) {
      const float *r = back + int64_t(slotsOfToken[size_t(i)]) * dim;
#pragma omp simd
      for (int64_t d = 0; d < dim; ++d)
        o[d] += r[d];
    }
  });
  if (n == 1)
    return;
  // Every rank's own tokens to every rank. The reference all-reduces rows
  // that are -0 except on their owner: the same bits as gathering each
  // rank's own rows, which moves T rows instead of N x T. Blocks of equal
  // size for the gather: ceil(T / N) rows from each rank's first token
  // (they end by row T: floor(T s / N) + ceil(T / N) <= T).
  int64_t first = 0, last = 0;
  ownTokens(num_tokens, n, rank, &first, &last);
  const int64_t per = (num_tokens + n - 1) / n;
  if (per == 0)
    return;
  thread_local std::vector<float> gathered;
  float *blocks = scratch(gathered, n * per * dim);
  if (!allGather(out + first * dim, per * dim, blocks, n))
    return;
  for (int64_t s = 0; s < n; ++s) {
    int64_t b = 0, e = 0;
    ownTokens(num_tokens, n, s, &b, &e);
    if (s != rank)
      copyFloats(out + b * dim, blocks + s * per * dim, (e - b) * dim);
  }
}
