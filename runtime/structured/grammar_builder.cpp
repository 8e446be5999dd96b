// grammar_builder.cpp - Thompson fragments, UTF-8 code point ranges as byte
// automata, literal tries, and the finishing pass that prunes what can never
// complete.
#include "grammar_builder.h"

#include <algorithm>
#include <map>

namespace hyrt::structured {

int32_t GrammarBuilder::node() {
  if (int64_t(grammar_.nodes.size()) >= max_nodes_) {
    overflow_ = true;
    // Keep returning a valid id so callers need no checks; finish() fails.
    if (grammar_.nodes.empty())
      grammar_.nodes.emplace_back();
    return 0;
  }
  grammar_.nodes.emplace_back();
  return int32_t(grammar_.nodes.size() - 1);
}

void GrammarBuilder::eps(int32_t from, int32_t to) {
  if (!overflow_)
    grammar_.nodes[from].eps.push_back(to);
}

int32_t GrammarBuilder::new_rule(std::string name) {
  GrammarRule rule;
  rule.name = std::move(name);
  rule.start = node();
  rule.end = node();
  grammar_.rules.push_back(rule);
  const int32_t id = int32_t(grammar_.rules.size() - 1);
  if (!overflow_)
    grammar_.nodes[rule.end].ends_rule = id;
  return id;
}

void GrammarBuilder::set_rule_body(int32_t rule, Frag body) {
  eps(grammar_.rules[rule].start, body.in);
  eps(body.out, grammar_.rules[rule].end);
}

Frag GrammarBuilder::empty() {
  const int32_t n = node();
  return {n, n};
}

Frag GrammarBuilder::byte_range(uint8_t lo, uint8_t hi) {
  Frag f{node(), node()};
  if (!overflow_)
    grammar_.nodes[f.in].bytes.push_back({lo, hi, f.out});
  return f;
}

Frag GrammarBuilder::literal(std::string_view text) {
  Frag f = empty();
  for (unsigned char c : text) {
    const int32_t next = node();
    if (!overflow_)
      grammar_.nodes[f.out].bytes.push_back({c, c, next});
    f.out = next;
  }
  return f;
}

Frag GrammarBuilder::literal_set(const std::vector<std::string> &texts) {
  Frag f{node(), node()};
  // Trie over the texts: one node per distinct prefix.
  std::map<std::pair<int32_t, unsigned char>, int32_t> child;
  for (const std::string &text : texts) {
    int32_t at = f.in;
    for (unsigned char c : text) {
      auto [it, fresh] = child.try_emplace({at, c}, -1);
      if (fresh) {
        it->second = node();
        if (!overflow_)
          grammar_.nodes[at].bytes.push_back({c, c, it->second});
      }
      at = it->second;
    }
    if (!overflow_ && std::find(grammar_.nodes[at].eps.begin(),
                                grammar_.nodes[at].eps.end(),
                                f.out) == grammar_.nodes[at].eps.end())
      eps(at, f.out);
  }
  return f;
}

Frag GrammarBuilder::seq(Frag a, Frag b) {
  eps(a.out, b.in);
  return {a.in, b.out};
}

Frag GrammarBuilder::seq(std::initializer_list<Frag> parts) {
  Frag f = empty();
  for (Frag p : parts)
    f = seq(f, p);
  return f;
}

Frag GrammarBuilder::alt(const std::vector<Frag> &alternatives) {
  Frag f{node(), node()};
  for (Frag a : alternatives) {
    eps(f.in, a.in);
    eps(a.out, f.out);
  }
  return f;
}

Frag GrammarBuilder::optional(Frag f) {
  Frag g{node(), node()};
  eps(g.in, f.in);
  eps(f.out, g.out);
  eps(g.in, g.out);
  return g;
}

Frag GrammarBuilder::star(Frag f) {
  Frag g{node(), node()};
  eps(g.in, f.in);
  eps(g.in, g.out);
  eps(f.out, f.in);
  eps(f.out, g.out);
  return g;
}

Frag GrammarBuilder::repeat(const std::function<Frag()> &make, int64_t min,
                            int64_t max) {
  Frag f = empty();
  for (int64_t i = 0; i < min && !overflow_; ++i)
    f = seq(f, make());
  if (max < 0)
    return seq(f, star(make()));
  // Optional copies chained so that every prefix count exits to one node:
  // linear in max - min, no nesting.
  const int32_t out = node();
  for (int64_t i = min; i < max && !overflow_; ++i) {
    eps(f.out, out);
    f = seq(f, make());
  }
  eps(f.out, out);
  return {f.in, out};
}

Frag GrammarBuilder::call(int32_t rule) {
  Frag f{node(), node()};
  if (!overflow_)
    grammar_.nodes[f.in].calls.push_back({rule, f.out});
  return f;
}

namespace {

uint32_t utf8_max_for_length(int n) {
  static const uint32_t kMax[] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  return kMax[n];
}

int utf8_length(uint32_t cp) {
  return cp <= 0x7F ? 1 : cp <= 0x7FF ? 2 : cp <= 0xFFFF ? 3 : 4;
}

void utf8_encode(uint32_t cp, int n, uint8_t *out) {
  if (n == 1) {
    out[0] = uint8_t(cp);
    return;
  }
  for (int i = n - 1; i > 0; --i) {
    out[i] = uint8_t(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  static const uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  out[0] = uint8_t(kLead[n] | cp);
}

} // namespace

// Code points lo..hi of one UTF-8 length, split until every byte position
// ranges independently (the ranges are "rectangular"), then one chain of
// byte ranges per piece.
void GrammarBuilder::utf8_range(uint32_t lo, uint32_t hi, Frag f) {
  const int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_range(lo, lo | m, f);
        utf8_range((lo | m) + 1, hi, f);
        return;
      }
      if ((hi & m) != m) {
        utf8_range(lo, (hi & ~m) - 1, f);
        utf8_range(hi & ~m, hi, f);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  utf8_encode(lo, n, a);
  utf8_encode(hi, n, b);
  int32_t at = f.in;
  for (int k = 0; k < n; ++k) {
    const int32_t next = k + 1 == n ? f.out : node();
    if (!overflow_)
      grammar_.nodes[at].bytes.push_back({a[k], b[k], next});
    at = next;
  }
}

Frag GrammarBuilder::code_points(std::vector<CodePointRange> ranges) {
  std::sort(ranges.begin(), ranges.end());
  Frag f{node(), node()};
  for (auto [lo, hi] : ranges) {
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    while (lo <= hi && !overflow_) {
      // Cut out the surrogates, then split by encoded length.
      if (lo >= 0xD800 && lo <= 0xDFFF) {
        lo = 0xE000;
        continue;
      }
      uint32_t end = std::min(hi, utf8_max_for_length(utf8_length(lo)));
      if (lo < 0xD800 && end >= 0xD800)
        end = 0xD7FF;
      utf8_range(lo, end, f);
      if (end == 0x10FFFF)
        break;
      lo = end + 1;
    }
  }
  return f;
}

Status GrammarBuilder::finish(int32_t root, int32_t max_stack_depth,
                              std::string description, Grammar *out) {
  if (overflow_)
    return Status::Error(description + ": the automaton needs more than " +
                         std::to_string(max_nodes_) +
                         " states (limit); simplify the schema (fewer "
                         "alternatives, smaller length or item bounds)");
  std::vector<GrammarNode> &nodes = grammar_.nodes;
  const size_t n = nodes.size();
  // Productive: can reach the end of its rule through bytes, epsilons and
  // calls of productive rules. Worklist over reverse edges.
  std::vector<std::vector<int32_t>> preds(n);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> sites_of_rule(
      grammar_.rules.size()); // (caller node, return node)
  std::vector<std::vector<std::pair<int32_t, int32_t>>> sites_of_ret(n);
  for (size_t i = 0; i < n; ++i) {
    for (const ByteEdge &e : nodes[i].bytes)
      preds[e.to].push_back(int32_t(i));
    for (int32_t t : nodes[i].eps)
      preds[t].push_back(int32_t(i));
    for (const CallEdge &c : nodes[i].calls) {
      sites_of_rule[c.rule].push_back({int32_t(i), c.ret});
      sites_of_ret[c.ret].push_back({int32_t(i), c.rule});
    }
  }
  std::vector<char> productive(n, 0);
  std::vector<int32_t> rule_of_start(n, -1);
  for (size_t r = 0; r < grammar_.rules.size(); ++r)
    rule_of_start[grammar_.rules[r].start] = int32_t(r);
  std::vector<int32_t> work;
  auto mark = [&](int32_t x) {
    if (!productive[x]) {
      productive[x] = 1;
      work.push_back(x);
    }
  };
  for (size_t i = 0; i < n; ++i)
    if (nodes[i].ends_rule >= 0)
      mark(int32_t(i));
  while (!work.empty()) {
    const int32_t x = work.back();
    work.pop_back();
    for (int32_t p : preds[x])
      mark(p);
    if (rule_of_start[x] >= 0)
      for (auto [caller, ret] : sites_of_rule[rule_of_start[x]])
        if (productive[ret])
          mark(caller);
    for (auto [caller, rule] : sites_of_ret[x])
      if (productive[grammar_.rules[rule].start])
        mark(caller);
  }
  const GrammarRule &root_rule = grammar_.rules[root];
  if (!productive[root_rule.start])
    return Status::Error(description +
                         " admits no finite text: every way through it "
                         "recurses forever (a $ref cycle with no way out?)");
  // Drop every edge into a dead end, so that a match never enters a state
  // it cannot finish from.
  for (GrammarNode &node : nodes) {
    auto dead_byte = [&](const ByteEdge &e) { return !productive[e.to]; };
    node.bytes.erase(
        std::remove_if(node.bytes.begin(), node.bytes.end(), dead_byte),
        node.bytes.end());
    node.eps.erase(std::remove_if(node.eps.begin(), node.eps.end(),
                                  [&](int32_t t) { return !productive[t]; }),
                   node.eps.end());
    node.calls.erase(
        std::remove_if(node.calls.begin(), node.calls.end(),
                       [&](const CallEdge &c) {
                         return !productive[c.ret] ||
                                !productive[grammar_.rules[c.rule].start];
                       }),
        node.calls.end());
  }
  grammar_.root_rule = root;
  grammar_.max_stack_depth = max_stack_depth;
  grammar_.description = std::move(description);
  *out = std::move(grammar_);
  return Status::Ok();
}

} // namespace hyrt::structured
