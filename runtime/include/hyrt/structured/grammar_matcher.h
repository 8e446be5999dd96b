// hyrt/structured/grammar_matcher.h - where one output stands in a Grammar:
// the set of live (node, stack) configurations after the bytes so far.
#pragma once

#include "hyrt/structured/grammar.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hyrt::structured {

class StackPool;
class Stepper;
struct Config;

/// Reads output bytes through a grammar. Not thread-safe; one per request.
class GrammarMatcher {
public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher &&) noexcept;

  /// Reads `bytes`; false (and no change) when the grammar forbids them.
  bool advance(std::string_view bytes);
  /// Whether `bytes` could be read now (no change either way).
  bool can_advance(std::string_view bytes);
  /// The output so far is a whole match.
  bool complete() const;
  /// Some byte may still follow.
  bool can_continue() const;
  /// What the next token's mask depends on: the nodes, and per node the top
  /// `frames` return nodes of its stack plus its headroom (capped at
  /// `headroom_cap`) below the depth limit. Equal keys give equal masks.
  std::string mask_key(int frames, int headroom_cap) const;

  const Grammar &grammar() const { return *grammar_; }

private:
  std::shared_ptr<const Grammar> grammar_;
  std::unique_ptr<StackPool> pool_;
  std::unique_ptr<Stepper> stepper_;
  std::vector<Config> current_, next_;
};

} // namespace hyrt::structured
