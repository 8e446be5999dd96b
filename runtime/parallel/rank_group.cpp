// The default staged all-to-all of a RankGroup (see hyrt/parallel/rank_group.h):
// counts, then blocks, both through all_gather.
#include "hyrt/parallel/rank_group.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hyrt {

namespace {
/// Counts travel as floats (all_gather's element): two per count, 2^20
/// apart, so that every count below 2^44 is exact.
constexpr double kHalf = 1048576.0;
} // namespace

Status plan_all_to_all(int n, int me, const std::vector<int64_t> &table, AllToAllPlan *plan) {
  auto count = [&](int src, int dst) { return table[size_t(src) * size_t(n + 1) + size_t(dst)]; };
  plan->longest = 0;
  for (int r = 0; r < n; ++r) {
    int64_t in = 0, out = 0;
    for (int o = 0; o < n; ++o)
      in += count(o, r), out += count(r, o);
    plan->longest = std::max(plan->longest, out);
    if (in > count(r, n))
      return Status::Error("all_to_all_v: rank " + std::to_string(r) + " would receive " +
                           std::to_string(in) + " floats, its buffer holds " +
                           std::to_string(count(r, n)));
  }
  plan->from.assign(size_t(n), 0);
  plan->to.assign(size_t(n), 0);
  plan->size.assign(size_t(n), 0);
  int64_t at = 0;
  for (int src = 0; src < n; ++src) {
    for (int d = 0; d < me; ++d)
      plan->from[size_t(src)] += count(src, d);
    plan->to[size_t(src)] = at;
    plan->size[size_t(src)] = count(src, me);
    at += count(src, me);
  }
  return Status::Ok();
}

Status RankGroup::all_to_all_v(const float *send, const int64_t *send_counts, float *recv,
                               int64_t *recv_counts, size_t recv_capacity) {
  const int n = size();
  // Stage 1: every rank's counts (to every destination) and its capacity.
  std::vector<float> mine(size_t(2 * n + 2)), all(size_t(n) * (2 * n + 2));
  auto put = [](float *at, int64_t v) {
    at[0] = float(double(v / int64_t(kHalf)));
    at[1] = float(double(v % int64_t(kHalf)));
  };
  for (int d = 0; d < n; ++d)
    put(&mine[size_t(2 * d)], send_counts[d]);
  put(&mine[size_t(2 * n)], int64_t(recv_capacity));
  if (Status s = all_gather(mine.data(), mine.size(), all.data()); !s.ok())
    return s;
  std::vector<int64_t> table(all.size() / 2);
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = int64_t(all[2 * i]) * int64_t(kHalf) + int64_t(all[2 * i + 1]);
  AllToAllPlan plan;
  if (Status s = plan_all_to_all(n, rank(), table, &plan); !s.ok())
    return s;
  // Stage 2: every rank's blocks, padded to the longest.
  std::vector<float> block(size_t(plan.longest), 0.0f), blocks(size_t(n) * size_t(plan.longest));
  int64_t total = 0;
  for (int d = 0; d < n; ++d)
    total += send_counts[d];
  std::copy(send, send + total, block.begin());
  if (plan.longest > 0)
    if (Status s = all_gather(block.data(), block.size(), blocks.data()); !s.ok())
      return s;
  for (int src = 0; src < n; ++src) {
    const float *from = blocks.data() + size_t(src) * size_t(plan.longest) + plan.from[size_t(src)];
    std::copy(from, from + plan.size[size_t(src)], recv + plan.to[size_t(src)]);
    recv_counts[src] = plan.size[size_t(src)];
  }
  return Status::Ok();
}

} // namespace hyrt
