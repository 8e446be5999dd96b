// hyrt/structured/grammar_constraint.h - hyrt::TokenConstraint over a
// compiled grammar and a tokenizer's vocabulary.
//
// Use:
//   // once per model
//   std::shared_ptr<const TokenVocabulary> vocab;
//   TokenVocabulary::build(tokenizer, stop_ids, &vocab);
//   // once per distinct schema (keep it in an LRU keyed by schema text)
//   std::shared_ptr<const Grammar> grammar;
//   compile_response_format(response_format, SchemaLimits{}, &grammar);
//   auto compiled = std::make_shared<CompiledConstraint>(grammar, vocab);
//   // per request
//   request.constraint = std::make_shared<GrammarConstraint>(compiled);
//
// Masks are computed by walking the vocabulary trie through the automaton
// from the current configurations, and cached in the CompiledConstraint per
// mask key: the live nodes plus the top few frames of their stacks (as
// XGrammar splits context-independent tokens from context-dependent ones).
// A token whose bytes would return below the kept frames is "uncertain" in
// the cached entry and checked against the full stack at mask time.
#pragma once

#include "hyrt/engine/token_constraint.h"
#include "hyrt/structured/grammar.h"
#include "hyrt/structured/grammar_matcher.h"
#include "hyrt/structured/token_vocabulary.h"

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hyrt::structured {

class Stepper;

/// Options of a compiled constraint's mask cache.
struct MaskCacheOptions {
  /// Memory the cached masks may hold; least recently used go first.
  size_t max_bytes = size_t(64) << 20;
  /// Stack frames a mask key keeps (more: fewer uncertain tokens, more
  /// distinct keys).
  int key_frames = 2;
  /// Headroom below the stack depth limit a key distinguishes.
  int key_headroom = 8;
};

/// One cached mask.
struct TokenMask {
  std::vector<uint64_t> allowed; ///< bit per token id
  std::vector<int32_t> uncertain; ///< depend on stack frames below the key
  size_t memory() const {
    return allowed.size() * 8 + uncertain.size() * 4 + 128;
  }
};

/// A grammar bound to a vocabulary, with its mask cache. Thread-safe;
/// share it between the requests that use the same schema.
class CompiledConstraint {
public:
  CompiledConstraint(std::shared_ptr<const Grammar> grammar,
                     std::shared_ptr<const TokenVocabulary> vocab,
                     MaskCacheOptions options = {});
  ~CompiledConstraint();

  const std::shared_ptr<const Grammar> &grammar() const { return grammar_; }
  const TokenVocabulary &vocab() const { return *vocab_; }
  const MaskCacheOptions &options() const { return options_; }

  /// The mask for `key` (GrammarMatcher::mask_key), from the cache or
  /// computed now.
  std::shared_ptr<const TokenMask> mask_for(const std::string &key);

  /// Cache counters, for tests and benchmarks.
  struct Stats {
    int64_t hits = 0, misses = 0, entries = 0;
    size_t bytes = 0;
  };
  Stats stats() const;

private:
  std::shared_ptr<TokenMask> compute(const std::string &key);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  MaskCacheOptions options_;
  mutable std::mutex mu_;
  std::unique_ptr<Stepper> stepper_; // guarded by mu_
  using Entry = std::pair<std::string, std::shared_ptr<const TokenMask>>;
  std::list<Entry> lru_; // front: most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  Stats stats_;
};

/// The constraint of one request. Not thread-safe (one sequence).
class GrammarConstraint final : public hyrt::TokenConstraint {
public:
  explicit GrammarConstraint(std::shared_ptr<CompiledConstraint> compiled);

  void mask(float *logits, int64_t n) override;
  bool accept(int32_t token) override;
  bool complete() const override;
  bool can_continue() const override;

  /// The allowed ids as a bitmask over the vocabulary (what mask() applies).
  void allowed(std::vector<uint64_t> *bits);
  /// Whether `token` may come next (what mask() decides for it).
  bool allows(int32_t token);

private:
  std::shared_ptr<CompiledConstraint> compiled_;
  GrammarMatcher matcher_;
  std::vector<uint64_t> scratch_;
  bool stopped_ = false;
};

} // namespace hyrt::structured
