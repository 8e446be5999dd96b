// pda.h - running a Grammar: configurations (node, stack) and the epsilon /
// call / return closure, shared by the live matcher and the token-mask walk.
#pragma once

#include "hyrt/structured/grammar.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hyrt::structured {

/// Call stacks, hash-consed: equal stacks have equal ids, so a set of
/// configurations deduplicates by comparing two integers.
class StackPool {
public:
  static constexpr int32_t kEmpty = 0;

  StackPool() { entries_.push_back({-1, -1, 0, false}); }
  /// The stack `parent` with return node `ret` on top.
  int32_t push(int32_t parent, int32_t ret);
  /// A bottom standing for frames the caller does not know (a cache key
  /// keeps only the top frames), `depth` frames deep.
  int32_t unknown_bottom(int32_t depth);
  int32_t parent(int32_t s) const { return entries_[s].parent; }
  int32_t ret(int32_t s) const { return entries_[s].ret; }
  int32_t depth(int32_t s) const { return entries_[s].depth; }
  bool is_unknown(int32_t s) const { return entries_[s].unknown; }
  /// Forget every stack made after size() was `n` (scratch work).
  size_t size() const { return entries_.size(); }
  void truncate(size_t n);

private:
  struct Entry {
    int32_t parent, ret, depth;
    bool unknown;
  };
  std::vector<Entry> entries_;
  std::unordered_map<uint64_t, int32_t> index_;
};

struct Config {
  int32_t node;
  int32_t stack;
  bool operator==(const Config &o) const {
    return node == o.node && stack == o.stack;
  }
};

/// Most configurations a set keeps; beyond it the rest are dropped, which
/// narrows the language (what is generated still matches) instead of
/// letting an ambiguous schema make every step slow.
constexpr size_t kMaxConfigs = 64;

/// Closure and byte steps over one grammar, with reusable scratch space.
class Stepper {
public:
  explicit Stepper(const Grammar &grammar);
  /// Closes `seeds` over epsilons, calls (up to the depth limit) and
  /// returns; keeps the configurations that can read a byte, plus the
  /// accepting one (root end, empty stack). A return into an unknown bottom
  /// sets *popped_unknown.
  void close(StackPool &pool, const std::vector<Config> &seeds,
             std::vector<Config> *out, bool *popped_unknown);
  /// Reads byte `b` from every configuration of `from`, then closes.
  void step(StackPool &pool, const std::vector<Config> &from, uint8_t b,
            std::vector<Config> *out, bool *popped_unknown);
  const Grammar &grammar() const { return g_; }

private:
  const Grammar &g_;
  std::vector<uint32_t> stamp_;       // per node: closure generation seen
  std::vector<int32_t> stamp_stack_;  // per node: first stack seen
  uint32_t generation_ = 0;
  std::vector<Config> work_, visited_, seeds_;
};

} // namespace hyrt::structured

namespace hyrt::structured {

/// Encodes `configs` as a mask key (see GrammarMatcher::mask_key).
std::string encode_mask_key(const StackPool &pool,
                            const std::vector<Config> &configs, int frames,
                            int headroom_cap, int max_stack_depth);
/// The configurations a key stands for, with unknown bottoms under the
/// kept frames, made in `pool`.
void decode_mask_key(const std::string &key, StackPool &pool,
                     int max_stack_depth, std::vector<Config> *configs);

} // namespace hyrt::structured
