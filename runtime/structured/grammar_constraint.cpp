// grammar_constraint.cpp - token masks: the trie walk, the LRU cache, and
// the per-request constraint.
#include "hyrt/structured/grammar_constraint.h"

#include "pda.h"

#include <cmath>
#include <limits>

namespace hyrt::structured {

CompiledConstraint::CompiledConstraint(
    std::shared_ptr<const Grammar> grammar,
    std::shared_ptr<const TokenVocabulary> vocab, MaskCacheOptions options)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)),
      options_(options), stepper_(std::make_unique<Stepper>(*grammar_)) {}

CompiledConstraint::~CompiledConstraint() = default;

// Walks the trie in preorder, one automaton step per trie node, skipping a
// subtree as soon as no configuration survives. Level d holds the
// configurations after the first d bytes of the current path.
std::shared_ptr<TokenMask> CompiledConstraint::compute(const std::string &key) {
  const TokenVocabulary &v = *vocab_;
  auto mask = std::make_shared<TokenMask>();
  mask->allowed.assign((v.size() + 63) / 64, 0);
  auto allow = [&](int32_t id) {
    mask->allowed[id >> 6] |= uint64_t(1) << (id & 63);
  };
  StackPool pool;
  const int32_t levels = v.max_depth() + 1;
  std::vector<std::vector<Config>> at(levels);
  // hit[d]: the step into level d returned below the kept frames; tokens
  // ending there are allowed (a real stack always has the frame), longer
  // ones depend on it. below[d]: some shorter prefix did so.
  std::vector<char> hit(levels, 0), below(levels, 0);
  decode_mask_key(key, pool, grammar_->max_stack_depth, &at[0]);
  const int64_t n = v.trie_size();
  for (int64_t i = 0; i < n;) {
    const int32_t d = v.depth(i);
    bool popped = false;
    stepper_->step(pool, at[d - 1], v.byte(i), &at[d], &popped);
    hit[d] = popped;
    below[d] = below[d - 1] || hit[d - 1];
    const bool alive = !at[d].empty();
    for (int64_t k = v.token_begin(i); k < v.exact_end(i); ++k) {
      if (alive || popped)
        allow(v.sorted_id(k));
      else if (below[d])
        mask->uncertain.push_back(v.sorted_id(k));
    }
    if (alive) {
      ++i;
      continue;
    }
    if (popped || below[d]) // longer tokens here all depend on the stack
      for (int64_t k = v.exact_end(i); k < v.token_begin(v.subtree_end(i));
           ++k)
        mask->uncertain.push_back(v.sorted_id(k));
    i = v.subtree_end(i);
  }
  return mask;
}

std::shared_ptr<const TokenMask>
CompiledConstraint::mask_for(const std::string &key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  ++stats_.misses;
  std::shared_ptr<const TokenMask> mask = compute(key);
  const size_t size = mask->memory() + key.size();
  while (!lru_.empty() && stats_.bytes + size > options_.max_bytes) {
    stats_.bytes -= lru_.back().second->memory() + lru_.back().first.size();
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(key, mask);
  index_[key] = lru_.begin();
  stats_.bytes += size;
  stats_.entries = int64_t(lru_.size());
  return mask;
}

CompiledConstraint::Stats CompiledConstraint::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.entries = int64_t(lru_.size());
  return s;
}

GrammarConstraint::GrammarConstraint(
    std::shared_ptr<CompiledConstraint> compiled)
    : compiled_(std::move(compiled)), matcher_(compiled_->grammar()) {}

void GrammarConstraint::allowed(std::vector<uint64_t> *bits) {
  const TokenVocabulary &v = compiled_->vocab();
  const MaskCacheOptions &o = compiled_->options();
  std::shared_ptr<const TokenMask> mask =
      compiled_->mask_for(matcher_.mask_key(o.key_frames, o.key_headroom));
  *bits = mask->allowed;
  for (int32_t id : mask->uncertain)
    if (matcher_.can_advance(v.bytes(id)))
      (*bits)[id >> 6] |= uint64_t(1) << (id & 63);
  const bool done = matcher_.complete();
  for (int32_t id : v.stop_ids()) {
    const uint64_t bit = uint64_t(1) << (id & 63);
    (*bits)[id >> 6] = done ? ((*bits)[id >> 6] | bit) : ((*bits)[id >> 6] & ~bit);
  }
}

bool GrammarConstraint::allows(int32_t token) {
  if (token < 0 || token >= compiled_->vocab().size())
    return false;
  allowed(&scratch_);
  return (scratch_[token >> 6] >> (token & 63)) & 1;
}

void GrammarConstraint::mask(float *logits, int64_t n) {
  allowed(&scratch_);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const int64_t vocab = compiled_->vocab().size();
  const int64_t covered = std::min(n, vocab);
  for (int64_t w = 0; w * 64 < covered; ++w) {
    const uint64_t word = scratch_[w];
    if (word == ~uint64_t(0) && (w + 1) * 64 <= covered)
      continue;
    const int64_t end = std::min<int64_t>((w + 1) * 64, covered);
    for (int64_t id = w * 64; id < end; ++id)
      if (!((word >> (id & 63)) & 1))
        logits[id] = minus_inf;
  }
  for (int64_t id = covered; id < n; ++id) // ids the tokenizer lacks
    logits[id] = minus_inf;
}

bool GrammarConstraint::accept(int32_t token) {
  const TokenVocabulary &v = compiled_->vocab();
  if (stopped_ || token < 0 || token >= v.size())
    return false;
  if (v.is_stop(token)) {
    if (!matcher_.complete())
      return false;
    stopped_ = true;
    return true;
  }
  const std::string &bytes = v.bytes(token);
  return !bytes.empty() && matcher_.advance(bytes);
}

bool GrammarConstraint::complete() const { return matcher_.complete(); }

bool GrammarConstraint::can_continue() const {
  return !stopped_ && matcher_.can_continue();
}

} // namespace hyrt::structured
