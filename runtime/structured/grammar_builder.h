// grammar_builder.h - builds a Grammar out of NFA fragments (Thompson
// construction), with a node budget so that a hostile schema fails with an
// error instead of taking the process's memory.
#pragma once

#include "hyrt/status.h"
#include "hyrt/structured/grammar.h"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hyrt::structured {

/// A piece of automaton with one entry and one exit node.
struct Frag {
  int32_t in = -1;
  int32_t out = -1;
};

/// An inclusive range of Unicode code points.
using CodePointRange = std::pair<uint32_t, uint32_t>;

class GrammarBuilder {
public:
  explicit GrammarBuilder(int64_t max_nodes) : max_nodes_(max_nodes) {}

  /// A new rule (its body is set later, so rules may call themselves).
  int32_t new_rule(std::string name);
  void set_rule_body(int32_t rule, Frag body);
  const std::string &rule_name(int32_t rule) const {
    return grammar_.rules[rule].name;
  }

  Frag empty();
  Frag literal(std::string_view text);
  Frag byte_range(uint8_t lo, uint8_t hi);
  /// Any one code point of `ranges` (sorted or not), as UTF-8; surrogates
  /// (U+D800..U+DFFF) are never produced.
  Frag code_points(std::vector<CodePointRange> ranges);
  /// Any one of `texts`, shared prefixes merged (a trie), so that a long
  /// enum keeps the active set small.
  Frag literal_set(const std::vector<std::string> &texts);
  Frag seq(Frag a, Frag b);
  Frag seq(std::initializer_list<Frag> parts);
  Frag alt(const std::vector<Frag> &alternatives);
  Frag optional(Frag f);
  Frag star(Frag f);
  /// min..max copies of make() (max < 0: unbounded).
  Frag repeat(const std::function<Frag()> &make, int64_t min, int64_t max);
  Frag call(int32_t rule);
  /// An epsilon edge: for joining fragments by hand (object properties).
  void link(int32_t from, int32_t to) { eps(from, to); }

  /// The node budget was passed (every later fragment is a dummy).
  bool overflowed() const { return overflow_; }
  int64_t node_count() const { return int64_t(grammar_.nodes.size()); }

  /// Finishes the grammar: `root` becomes the root rule; rules that cannot
  /// produce any finite text are found here, and a root that cannot is an
  /// error naming it.
  Status finish(int32_t root, int32_t max_stack_depth, std::string description,
                Grammar *out);

private:
  int32_t node();
  void eps(int32_t from, int32_t to);
  void utf8_range(uint32_t lo, uint32_t hi, Frag f);

  Grammar grammar_;
  int64_t max_nodes_;
  bool overflow_ = false;
};

} // namespace hyrt::structured
