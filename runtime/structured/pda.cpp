// pda.cpp - the pushdown automaton's closure and steps.
#include "pda.h"

#include <algorithm>

namespace hyrt::structured {

int32_t StackPool::push(int32_t parent, int32_t ret) {
  const uint64_t key = (uint64_t(uint32_t(parent)) << 32) | uint32_t(ret);
  auto [it, fresh] = index_.try_emplace(key, int32_t(entries_.size()));
  if (fresh)
    entries_.push_back({parent, ret, entries_[parent].depth + 1, false});
  return it->second;
}

int32_t StackPool::unknown_bottom(int32_t depth) {
  // Keyed apart from pushes: parent -1 never occurs in a push.
  const uint64_t key = (uint64_t(0xFFFFFFFFu) << 32) | uint32_t(depth);
  auto [it, fresh] = index_.try_emplace(key, int32_t(entries_.size()));
  if (fresh)
    entries_.push_back({-1, -1, depth, true});
  return it->second;
}

void StackPool::truncate(size_t n) {
  for (size_t i = n; i < entries_.size(); ++i) {
    const Entry &e = entries_[i];
    const uint64_t key =
        e.unknown ? (uint64_t(0xFFFFFFFFu) << 32) | uint32_t(e.depth)
                  : (uint64_t(uint32_t(e.parent)) << 32) | uint32_t(e.ret);
    index_.erase(key);
  }
  entries_.resize(std::min(n, entries_.size()));
}

Stepper::Stepper(const Grammar &grammar)
    : g_(grammar), stamp_(grammar.nodes.size(), 0),
      stamp_stack_(grammar.nodes.size(), -1) {}

void Stepper::close(StackPool &pool, const std::vector<Config> &seeds,
                    std::vector<Config> *out, bool *popped_unknown) {
  out->clear();
  if (++generation_ == 0) { // wrapped: reset the stamps
    std::fill(stamp_.begin(), stamp_.end(), 0);
    generation_ = 1;
  }
  visited_.clear();
  work_.assign(seeds.begin(), seeds.end());
  const int32_t root_end = g_.root_end();
  // A node usually meets one stack per closure: the stamp answers that
  // case; a second stack falls back to scanning the visited list.
  auto seen = [&](Config c) {
    if (stamp_[c.node] != generation_) {
      stamp_[c.node] = generation_;
      stamp_stack_[c.node] = c.stack;
      return false;
    }
    if (stamp_stack_[c.node] == c.stack)
      return true;
    return std::find(visited_.begin(), visited_.end(), c) != visited_.end();
  };
  constexpr size_t kMaxVisited = 4096;
  while (!work_.empty()) {
    const Config c = work_.back();
    work_.pop_back();
    if (seen(c))
      continue;
    if (visited_.size() >= kMaxVisited)
      break;
    visited_.push_back(c);
    const GrammarNode &node = g_.nodes[c.node];
    if (!node.bytes.empty() && out->size() < kMaxConfigs)
      out->push_back(c);
    for (int32_t t : node.eps)
      work_.push_back({t, c.stack});
    if (!node.calls.empty() && pool.depth(c.stack) < g_.max_stack_depth)
      for (const CallEdge &call : node.calls)
        work_.push_back(
            {g_.rules[call.rule].start, pool.push(c.stack, call.ret)});
    if (node.ends_rule >= 0) {
      if (pool.is_unknown(c.stack))
        *popped_unknown = true;
      else if (c.stack == StackPool::kEmpty) {
        if (c.node == root_end) // only the root is entered without a push
          out->push_back(c);
      } else
        work_.push_back({pool.ret(c.stack), pool.parent(c.stack)});
    }
  }
}

void Stepper::step(StackPool &pool, const std::vector<Config> &from, uint8_t b,
                   std::vector<Config> *out, bool *popped_unknown) {
  seeds_.clear();
  for (const Config &c : from)
    for (const ByteEdge &e : g_.nodes[c.node].bytes)
      if (b >= e.lo && b <= e.hi)
        seeds_.push_back({e.to, c.stack});
  if (seeds_.empty()) {
    out->clear();
    return;
  }
  close(pool, seeds_, out, popped_unknown);
}

} // namespace hyrt::structured

namespace hyrt::structured {

std::string encode_mask_key(const StackPool &pool,
                            const std::vector<Config> &configs, int frames,
                            int headroom_cap, int max_stack_depth) {
  std::vector<std::vector<int32_t>> parts;
  parts.reserve(configs.size());
  for (const Config &c : configs) {
    std::vector<int32_t> p{c.node};
    const int32_t depth = pool.depth(c.stack);
    const int32_t headroom =
        std::min<int32_t>(max_stack_depth - depth, headroom_cap);
    p.push_back(headroom);
    int32_t s = c.stack;
    std::vector<int32_t> rets;
    for (int k = 0; k < frames && s != StackPool::kEmpty; ++k) {
      rets.push_back(pool.ret(s));
      s = pool.parent(s);
    }
    p.push_back(int32_t(rets.size()));
    p.insert(p.end(), rets.begin(), rets.end());
    p.push_back(s == StackPool::kEmpty ? 0 : 1); // 1: frames cut off below
    parts.push_back(std::move(p));
  }
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  std::string key;
  for (const auto &p : parts)
    key.append(reinterpret_cast<const char *>(p.data()),
               p.size() * sizeof(int32_t));
  return key;
}

void decode_mask_key(const std::string &key, StackPool &pool,
                     int max_stack_depth, std::vector<Config> *configs) {
  configs->clear();
  std::vector<int32_t> v(key.size() / sizeof(int32_t));
  std::copy(key.begin(), key.end(), reinterpret_cast<char *>(v.data()));
  for (size_t i = 0; i < v.size();) {
    const int32_t node = v[i], headroom = v[i + 1], n = v[i + 2];
    const int32_t *rets = &v[i + 3];
    const bool cut = v[i + 3 + n] != 0;
    i += 4 + n;
    int32_t s = StackPool::kEmpty;
    if (cut) // depth as if the headroom were exact: never more room
      s = pool.unknown_bottom(max_stack_depth - headroom - n);
    for (int32_t k = n - 1; k >= 0; --k)
      s = pool.push(s, rets[k]);
    configs->push_back({node, s});
  }
}

} // namespace hyrt::structured
