// The default staged all-to-all of a RankGroup (see hyrt/rank_group.h):
// counts, then blocks, both through all_gather.
#include "hyrt/rank_group.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hyrt {

namespace {
/// Counts travel as floats (all_gather's element): two per count, 2^20
/// apart, so that every count below 2^44 is exact.
constexpr double kHalf = 1048576.0;
} // namespace

Status RankGroup::all_to_all_v(const float *send, const int64_t *send_counts, float *recv,
                               int64_t *recv_counts, size_t recv_capacity) {
  const int n = size(), me = rank();
  // Stage 1: every rank's counts (to every destination) and its capacity.
  std::vector<float> mine(size_t(2 * n + 2)), all(size_t(n) * (2 * n + 2));
  auto put = [](float *at, int64_t v) {
    at[0] = float(double(v / int64_t(kHalf)));
    at[1] = float(double(v % int64_t(kHalf)));
  };
  auto get = [](const float *at) { return int64_t(at[0]) * int64_t(kHalf) + int64_t(at[1]); };
  for (int d = 0; d < n; ++d)
    put(&mine[size_t(2 * d)], send_counts[d]);
  put(&mine[size_t(2 * n)], int64_t(recv_capacity));
  if (Status s = all_gather(mine.data(), mine.size(), all.data()); !s.ok())
    return s;
  auto count = [&](int src, int dst) { return get(&all[size_t(src) * (2 * n + 2) + 2 * dst]); };
  int64_t longest = 0;
  for (int r = 0; r < n; ++r) {
    int64_t in = 0, out = 0;
    for (int o = 0; o < n; ++o)
      in += count(o, r), out += count(r, o);
    longest = std::max(longest, out);
    const int64_t cap = get(&all[size_t(r) * (2 * n + 2) + 2 * n]);
    if (in > cap) // every rank sees it: all fail alike, nobody waits
      return Status::Error("all_to_all_v: rank " + std::to_string(r) + " would receive " +
                           std::to_string(in) + " floats, its buffer holds " +
                           std::to_string(cap));
  }
  // Stage 2: every rank's blocks, padded to the longest.
  std::vector<float> block(size_t(longest), 0.0f), blocks(size_t(n) * size_t(longest));
  int64_t total = 0;
  for (int d = 0; d < n; ++d)
    total += send_counts[d];
  std::copy(send, send + total, block.begin());
  if (longest > 0)
    if (Status s = all_gather(block.data(), block.size(), blocks.data()); !s.ok())
      return s;
  float *at = recv;
  for (int src = 0; src < n; ++src) {
    int64_t offset = 0;
    for (int d = 0; d < me; ++d)
      offset += count(src, d);
    recv_counts[src] = count(src, me);
    const float *from = blocks.data() + size_t(src) * size_t(longest) + offset;
    at = std::copy(from, from + recv_counts[src], at);
  }
  return Status::Ok();
}

} // namespace hyrt
