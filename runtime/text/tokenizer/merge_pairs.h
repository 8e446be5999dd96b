// The merge loop both BPE flavours share (rank-ordered merges of
// tokenizer.json, score-ordered merges of SentencePiece / llama2.c): apply
// the best adjacent merge, leftmost on ties, until none applies.
//
// The obvious loop rescans the sequence after every merge: O(n^2) in the
// piece's length, which a single 1 MB word (pasted base64, a run of one
// character) turns into hours of a server thread. This one keeps the
// symbols in a linked list and the candidate pairs in a heap ordered by
// (priority, position of the left symbol): O(n log n), and the same merges
// in the same order, since a symbol keeps the position it started at and
// positions keep their order.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace hyrt::detail {

/// `pair(left, right, &priority, &merged)` says whether ids left, right
/// merge, into which id, and how early (lower priority first).
template <class PairFn> void merge_pairs(std::vector<int32_t> &ids, PairFn pair) {
  const size_t n = ids.size();
  if (n < 2)
    return;
  struct Candidate {
    double priority;
    size_t pos; ///< the left symbol's original position
    int32_t left, right, merged;
    bool operator>(const Candidate &o) const {
      return priority != o.priority ? priority > o.priority : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  std::vector<size_t> prev(n), next(n); // n: none
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? n : i - 1;
    next[i] = i + 1;
  }
  auto consider = [&](size_t i) {
    if (i >= n || next[i] >= n)
      return;
    Candidate c{0, i, ids[i], ids[next[i]], -1};
    if (pair(c.left, c.right, &c.priority, &c.merged))
      heap.push(c);
  };
  for (size_t i = 0; i + 1 < n; ++i)
    consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const size_t i = c.pos, j = alive[i] ? next[i] : n;
    // Stale: a neighbour merged since. Equal ids mean the pair is still
    // there with the same priority, so it is merged all the same.
    if (j >= n || ids[i] != c.left || ids[j] != c.right)
      continue;
    ids[i] = c.merged;
    alive[j] = false;
    next[i] = next[j];
    if (next[j] < n)
      prev[next[j]] = i;
    consider(prev[i]);
    consider(i);
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i])
      ids[kept++] = ids[i];
  ids.resize(kept);
}

} // namespace hyrt::detail
