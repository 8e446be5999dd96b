// hyrt/structured/grammar.h - the automaton constrained decoding runs: a
// pushdown automaton over bytes, compiled once from a JSON schema (or a
// tool-call wire format) and shared, read-only, by every request using it.
//
// Each rule is a Thompson-style NFA fragment between a start and an end
// node. Nodes carry byte-range edges, epsilon edges and call edges (enter
// another rule, come back to a return node). Calls are what lets generic
// JSON and recursive $ref nest: the return nodes form the stack, bounded by
// max_stack_depth. Everything else (objects with known properties, strings,
// numbers, enums) is inlined, so most steps never touch the stack.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hyrt::structured {

/// One byte edge: bytes lo..hi (inclusive) lead to node `to`.
struct ByteEdge {
  uint8_t lo = 0, hi = 0;
  int32_t to = -1;
};

/// Enter `rule`; when it ends, continue at node `ret` of the caller.
struct CallEdge {
  int32_t rule = -1;
  int32_t ret = -1;
};

struct GrammarNode {
  std::vector<ByteEdge> bytes;
  std::vector<int32_t> eps;
  std::vector<CallEdge> calls;
  /// The rule this node ends, or -1.
  int32_t ends_rule = -1;
};

struct GrammarRule {
  std::string name; ///< for messages: "$ref #/$defs/node", "json value"
  int32_t start = -1;
  int32_t end = -1;
};

/// A compiled grammar: immutable once built; share it across requests.
struct Grammar {
  std::vector<GrammarNode> nodes;
  std::vector<GrammarRule> rules;
  int32_t root_rule = -1;
  /// Deepest rule nesting a match may reach: calls beyond it are not taken,
  /// so generic JSON nests at most this deep and recursive $refs stop here.
  int32_t max_stack_depth = 32;
  /// Human-readable description of what was compiled (for messages).
  std::string description;

  int32_t root_end() const { return rules[root_rule].end; }
};

} // namespace hyrt::structured
