// The artifact's side of tensor-parallel collectives (abi.h,
// hyrt_collectives_v0), reference versions: the state the runtime registers
// its functions in (through the exported hyc_collectives_v0(), as for the
// profile, profile.cpp), and the plain exchanges a reference artifact calls
// (optimized ones call runtime/cpu/collectives.cpp, which reads the same
// state). The gathers go through the all-reduce, zeros included: the
// simplest form that is exact, kept as the baseline.
#include "hyrt/abi.h"
#include "hyrt/reference.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace {
hyrt_collectives_v0 state = {nullptr, nullptr, 1, HYRT_COLLECTIVE_OK, 0, nullptr, nullptr};

/// The registered all_to_all_v, or false (and `failed` set) when the step
/// is lost already or nothing of this group size is registered.
bool allToAll(const float *send, const int64_t *sendCounts, float *recv, int64_t *recvCounts,
              int64_t capacity, int64_t groupSize) {
  if (state.failed != HYRT_COLLECTIVE_OK)
    return false;
  if (!state.all_to_all_v || state.group_size != groupSize) {
    state.failed = HYRT_COLLECTIVE_NOT_REGISTERED;
    return false;
  }
  ++state.calls;
  if (state.all_to_all_v(state.ctx, send, sendCounts, recv, recvCounts, capacity) != 0) {
    state.failed = HYRT_COLLECTIVE_FAILED;
    return false;
  }
  return true;
}

/// A buffer of at least `n` floats that lives with the calling thread: the
/// exchange runs per MoE layer and step, and would otherwise map and fault
/// in megabytes each time.
float *scratch(std::vector<float> &buffer, int64_t n) {
  if (buffer.size() < size_t(n))
    buffer.resize(size_t(n));
  return buffer.data();
}

/// Rank `rank`'s own tokens: [first, last).
void ownTokens(int64_t tokens, int64_t groupSize, int64_t rank, int64_t *first, int64_t *last) {
  *first = tokens * rank / groupSize;
  *last = tokens * (rank + 1) / groupSize;
}
} // namespace

extern "C" hyrt_collectives_v0 *hyrt_collectives_state(void) { return &state; }

extern "C" void hyrt_ref_all_gather_cols(const float *in, int64_t rows, int64_t cols,
                                         float *out, int64_t group_size, int64_t rank) {
  const int64_t width = cols * group_size;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      out[r * width + c] =
          c >= rank * cols && c < (rank + 1) * cols ? in[r * cols + c - rank * cols] : 0.0f;
  hyrt_ref_all_reduce_sum(out, rows * width, group_size);
}

extern "C" void hyrt_ref_all_reduce_sum(float *data, int64_t n, int64_t group_size) {
  if (group_size == 1)
    return;
  if (state.failed != HYRT_COLLECTIVE_OK)
    return; // the step is lost already; the runtime reports the first cause
  if (!state.all_reduce_sum || state.group_size != group_size) {
    state.failed = HYRT_COLLECTIVE_NOT_REGISTERED;
    return;
  }
  ++state.calls;
  if (state.all_reduce_sum(state.ctx, data, n) != 0)
    state.failed = HYRT_COLLECTIVE_FAILED;
}

extern "C" void hyrt_ref_moe_dispatch(const float *x, const int32_t *ids, const float *weights,
                                      int64_t num_tokens, int64_t dim, int64_t top_k,
                                      int64_t experts_per_rank, int64_t group_size,
                                      int64_t rank, float *out_rows, int32_t *out_ids,
                                      float *out_weights, int32_t *sent, int32_t *counts) {
  const int64_t k = top_k, width = dim + 2 * k, n = group_size;
  for (int64_t i = 0; i < num_tokens * k; ++i) {
    out_ids[i] = -1;
    out_weights[i] = 0.0f;
    sent[i] = -1;
  }
  int64_t first = 0, last = 0;
  ownTokens(num_tokens, n, rank, &first, &last);
  // Each own token once per destination that holds one of its experts:
  // [row | the destination's local expert per slot, or -1 | weight per slot].
  thread_local std::vector<float> send, received;
  send.clear(); // keeps its capacity from the last call
  send.reserve(size_t((last - first) * n * width));
  std::vector<int64_t> sendCounts(static_cast<size_t>(n), 0),
      recvCounts(static_cast<size_t>(n), 0);
  int64_t slot = 0;
  for (int64_t d = 0; d < n; ++d) {
    const int64_t lo = d * experts_per_rank, hi = lo + experts_per_rank;
    for (int64_t t = first; t < last; ++t) {
      const int32_t *route = ids + t * k;
      if (std::none_of(route, route + k, [&](int32_t e) { return e >= lo && e < hi; }))
        continue; // no expert there (ids out of range are dropped)
      send.insert(send.end(), x + t * dim, x + (t + 1) * dim);
      for (int64_t j = 0; j < k; ++j)
        send.push_back(route[j] >= lo && route[j] < hi ? float(route[j] - lo) : -1.0f);
      for (int64_t j = 0; j < k; ++j)
        send.push_back(route[j] >= lo && route[j] < hi ? weights[t * k + j] : 0.0f);
      sent[slot++] = int32_t(t);
      sendCounts[size_t(d)] += width;
    }
    counts[d] = int32_t(sendCounts[size_t(d)] / width);
  }
  // At most one row per token of every source: T rows.
  float *recv = scratch(received, num_tokens * width);
  if (n == 1) {
    std::copy(send.begin(), send.end(), recv);
    recvCounts[0] = sendCounts[0];
  } else if (!allToAll(send.data(), sendCounts.data(), recv, recvCounts.data(),
                       num_tokens * width, n)) {
    for (int64_t s = 0; s < n; ++s)
      counts[n + s] = 0;
    return; // the step is lost; the runtime reports why
  }
  int64_t rows = 0;
  for (int64_t s = 0; s < n; ++s) {
    counts[n + s] = int32_t(recvCounts[size_t(s)] / width);
    rows += counts[n + s];
  }
  // Unused rows zero: kernels that convert every row see no arena garbage.
  std::fill(out_rows + rows * dim, out_rows + num_tokens * dim, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    const float *p = recv + i * width;
    std::memcpy(out_rows + i * dim, p, sizeof(float) * size_t(dim));
    for (int64_t j = 0; j < k; ++j) {
      out_ids[i * k + j] = int32_t(p[dim + j]);
      out_weights[i * k + j] = p[dim + k + j];
    }
  }
}

extern "C" void hyrt_ref_moe_undispatch(const float *results, const int32_t *sent,
                                        const int32_t *counts, int64_t num_tokens, int64_t dim,
                                        int64_t group_size, int64_t rank, float *out) {
  const int64_t n = group_size;
  // -0: x + (-0) is x for every x, so the gather below is exact.
  std::fill(out, out + num_tokens * dim, -0.0f);
  // Back to the sources, in the order received.
  std::vector<int64_t> sendCounts(static_cast<size_t>(n), 0),
      recvCounts(static_cast<size_t>(n), 0);
  int64_t received = 0, returned = 0;
  for (int64_t s = 0; s < n; ++s) {
    sendCounts[size_t(s)] = int64_t(counts[n + s]) * dim;
    received += counts[n + s];
    returned += counts[s];
  }
  // What comes back: one row per row this rank sent (counts[0..n)).
  thread_local std::vector<float> returnedRows;
  float *back = scratch(returnedRows, returned * dim);
  if (n == 1) {
    std::memcpy(back, results, sizeof(float) * size_t(received * dim));
  } else if (!allToAll(results, sendCounts.data(), back, recvCounts.data(), returned * dim,
                       n)) {
    return;
  }
  for (int64_t slot = 0; slot < returned; ++slot) {
    float *o = out + int64_t(sent[slot]) * dim;
    const float *r = back + slot * dim;
    for (int64_t d = 0; d < dim; ++d)
      o[d] += r[d];
  }
  // Every rank's token rows, the others zero here: summed, exact.
  hyrt_ref_all_reduce_sum(out, num_tokens * dim, n);
  (void)rank;
}
