// regex_compiler.cpp - pattern text -> small AST -> grammar fragments. The
// AST is kept so that a quantified piece can be built once per copy.
#include "regex_compiler.h"

#include <algorithm>
#include <memory>

namespace hyrt::structured {
namespace {

struct RegexNode {
  enum Kind { kSet, kConcat, kAlt, kRepeat } kind = kSet;
  std::vector<CodePointRange> set;
  std::vector<std::unique_ptr<RegexNode>> children;
  int64_t min = 0, max = 0; // kRepeat; max < 0: unbounded
};
using NodePtr = std::unique_ptr<RegexNode>;

constexpr int kMaxGroupDepth = 32;
constexpr int64_t kMaxRepeat = 1000;

std::vector<CodePointRange> complement(std::vector<CodePointRange> set) {
  std::sort(set.begin(), set.end());
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (auto [lo, hi] : set) {
    if (lo > next)
      out.push_back({next, lo - 1});
    next = std::max(next, hi + 1);
  }
  if (next <= 0x10FFFF)
    out.push_back({next, 0x10FFFF});
  return out;
}

class Parser {
public:
  explicit Parser(std::string_view p) : p_(p) {}

  Status parse(NodePtr *out) {
    if (p_.size() > kMaxPatternBytes)
      return Status::Error("pattern is " + std::to_string(p_.size()) +
                           " bytes; at most " +
                           std::to_string(kMaxPatternBytes) + " are accepted");
    if (!p_.empty() && p_.front() == '^')
      p_.remove_prefix(1);
    if (!p_.empty() && p_.back() == '$' &&
        (p_.size() < 2 || p_[p_.size() - 2] != '\\'))
      p_.remove_suffix(1);
    NodePtr n = alternation(0);
    if (!error_.empty())
      return Status::Error("pattern: " + error_);
    if (pos_ != p_.size())
      return Status::Error("pattern: unbalanced ')' at offset " +
                           std::to_string(pos_));
    *out = std::move(n);
    return Status::Ok();
  }

private:
  bool fail(std::string message) {
    if (error_.empty())
      error_ = std::move(message) + " (offset " + std::to_string(pos_) + ")";
    return false;
  }
  bool done() const { return pos_ >= p_.size() || !error_.empty(); }

  NodePtr alternation(int depth) {
    auto alt = std::make_unique<RegexNode>();
    alt->kind = RegexNode::kAlt;
    alt->children.push_back(concatenation(depth));
    while (!done() && p_[pos_] == '|') {
      ++pos_;
      alt->children.push_back(concatenation(depth));
    }
    return alt;
  }

  NodePtr concatenation(int depth) {
    auto cat = std::make_unique<RegexNode>();
    cat->kind = RegexNode::kConcat;
    while (!done() && p_[pos_] != '|' && p_[pos_] != ')') {
      NodePtr atom = this->atom(depth);
      if (!atom)
        break;
      cat->children.push_back(quantified(std::move(atom)));
    }
    return cat;
  }

  NodePtr quantified(NodePtr atom) {
    if (done())
      return atom;
    int64_t min = 0, max = 0;
    const char c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      min = c == '+' ? 1 : 0;
      max = c == '?' ? 1 : -1;
    } else if (c == '{') {
      if (!bounds(&min, &max))
        return atom;
    } else {
      return atom;
    }
    if (!done() && (p_[pos_] == '?' || p_[pos_] == '+'))
      ++pos_; // lazy / possessive: the same language
    if (!done() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?' ||
                    p_[pos_] == '{')) {
      fail("a quantifier follows a quantifier");
      return atom;
    }
    auto rep = std::make_unique<RegexNode>();
    rep->kind = RegexNode::kRepeat;
    rep->min = min;
    rep->max = max;
    rep->children.push_back(std::move(atom));
    return rep;
  }

  bool number(int64_t *v) {
    const size_t start = pos_;
    *v = 0;
    while (pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      *v = *v * 10 + (p_[pos_++] - '0');
      if (*v > kMaxRepeat)
        return fail("repetition count above " + std::to_string(kMaxRepeat));
    }
    return pos_ > start || fail("expected a number in {m,n}");
  }

  bool bounds(int64_t *min, int64_t *max) {
    ++pos_; // '{'
    if (!number(min))
      return false;
    *max = *min;
    if (pos_ < p_.size() && p_[pos_] == ',') {
      ++pos_;
      if (pos_ < p_.size() && p_[pos_] == '}')
        *max = -1;
      else if (!number(max))
        return false;
    }
    if (pos_ >= p_.size() || p_[pos_] != '}')
      return fail("expected '}' closing a {m,n} quantifier");
    ++pos_;
    if (*max >= 0 && *max < *min)
      return fail("{m,n} with n < m");
    return true;
  }

  uint32_t code_point() {
    const unsigned char c = p_[pos_];
    const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (c >= 0x80 && c < 0xC0) {
      fail("invalid UTF-8 in pattern");
      return 0;
    }
    if (pos_ + len > p_.size()) {
      fail("truncated UTF-8 in pattern");
      return 0;
    }
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int i = 1; i < len; ++i)
      cp = (cp << 6) | (p_[pos_ + i] & 0x3F);
    pos_ += len;
    return cp;
  }

  // After a backslash: the class or character it stands for.
  bool escape(std::vector<CodePointRange> *set) {
    if (pos_ >= p_.size())
      return fail("pattern ends with '\\'");
    const char c = p_[pos_++];
    const std::vector<CodePointRange> digit{{'0', '9'}};
    const std::vector<CodePointRange> word{
        {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    const std::vector<CodePointRange> space{
        {'\t', '\r'}, {' ', ' '}};
    switch (c) {
    case 'd': set->insert(set->end(), digit.begin(), digit.end()); return true;
    case 'w': set->insert(set->end(), word.begin(), word.end()); return true;
    case 's': set->insert(set->end(), space.begin(), space.end()); return true;
    case 'D': { auto s = complement(digit); set->insert(set->end(), s.begin(), s.end()); return true; }
    case 'W': { auto s = complement(word); set->insert(set->end(), s.begin(), s.end()); return true; }
    case 'S': { auto s = complement(space); set->insert(set->end(), s.begin(), s.end()); return true; }
    case 'n': set->push_back({'\n', '\n'}); return true;
    case 't': set->push_back({'\t', '\t'}); return true;
    case 'r': set->push_back({'\r', '\r'}); return true;
    case 'f': set->push_back({'\f', '\f'}); return true;
    case 'v': set->push_back({'\v', '\v'}); return true;
    default:
      break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9'))
      return fail(std::string("unsupported escape \\") + c +
                  " (backreferences, \\b, \\p{...} and the like are not "
                  "supported)");
    --pos_;
    const uint32_t cp = code_point();
    set->push_back({cp, cp});
    return true;
  }

  NodePtr char_class() {
    ++pos_; // '['
    auto node = std::make_unique<RegexNode>();
    bool negate = false;
    if (pos_ < p_.size() && p_[pos_] == '^') {
      negate = true;
      ++pos_;
    }
    bool first = true;
    while (true) {
      if (done()) {
        fail("unterminated character class");
        return nullptr;
      }
      if (p_[pos_] == ']' && !first)
        break;
      first = false;
      std::vector<CodePointRange> item;
      if (p_[pos_] == '\\') {
        ++pos_;
        if (!escape(&item))
          return nullptr;
      } else {
        const uint32_t cp = code_point();
        item.push_back({cp, cp});
      }
      // A range a-b (single characters on both sides).
      if (item.size() == 1 && item[0].first == item[0].second &&
          pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        std::vector<CodePointRange> hi;
        if (p_[pos_] == '\\') {
          ++pos_;
          if (!escape(&hi))
            return nullptr;
        } else {
          const uint32_t cp = code_point();
          hi.push_back({cp, cp});
        }
        if (hi.size() != 1 || hi[0].first != hi[0].second ||
            hi[0].first < item[0].first) {
          fail("invalid range in character class");
          return nullptr;
        }
        item[0].second = hi[0].first;
      }
      node->set.insert(node->set.end(), item.begin(), item.end());
    }
    ++pos_; // ']'
    if (negate)
      node->set = complement(node->set);
    return node;
  }

  NodePtr atom(int depth) {
    const char c = p_[pos_];
    if (c == '(') {
      if (depth >= kMaxGroupDepth) {
        fail("groups nest deeper than " + std::to_string(kMaxGroupDepth));
        return nullptr;
      }
      ++pos_;
      if (pos_ < p_.size() && p_[pos_] == '?') {
        if (pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
          pos_ += 2;
        } else {
          fail("unsupported group (?" +
               std::string(1, pos_ + 1 < p_.size() ? p_[pos_ + 1] : ' ') +
               "...): lookaround and named groups are not supported");
          return nullptr;
        }
      }
      NodePtr inner = alternation(depth + 1);
      if (pos_ >= p_.size() || p_[pos_] != ')') {
        fail("missing ')'");
        return nullptr;
      }
      ++pos_;
      return inner;
    }
    auto node = std::make_unique<RegexNode>();
    if (c == '[')
      return char_class();
    if (c == '.') {
      ++pos_;
      node->set = complement({{'\n', '\n'}, {'\r', '\r'}});
      return node;
    }
    if (c == '\\') {
      ++pos_;
      if (!escape(&node->set))
        return nullptr;
      return node;
    }
    if (c == '^' || c == '$') {
      fail(std::string("anchor '") + c + "' inside the pattern");
      return nullptr;
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      fail(std::string("quantifier '") + c + "' with nothing to repeat");
      return nullptr;
    }
    const uint32_t cp = code_point();
    node->set.push_back({cp, cp});
    return node;
  }

  std::string_view p_;
  size_t pos_ = 0;
  std::string error_;
};

// One code point of `set` as it appears inside a JSON string: raw when
// JSON allows it raw, else as its escape.
Frag build_set(const std::vector<CodePointRange> &set, GrammarBuilder &b) {
  std::vector<CodePointRange> raw;
  std::vector<Frag> escaped;
  auto escape_of = [](uint32_t cp) -> std::string {
    switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", cp);
      return buf;
    }
    }
  };
  for (auto [lo, hi] : set) {
    for (uint32_t cp = lo; cp <= std::min<uint32_t>(hi, 0x1F); ++cp)
      escaped.push_back(b.literal(escape_of(cp)));
    for (uint32_t special : {uint32_t('"'), uint32_t('\\')})
      if (lo <= special && special <= hi)
        escaped.push_back(b.literal(escape_of(special)));
    // The raw part: lo..hi minus controls, '"' and '\'.
    uint32_t a = std::max<uint32_t>(lo, 0x20);
    for (uint32_t special : {uint32_t('"'), uint32_t('\\')}) {
      if (a <= special && special <= hi) {
        if (a < special)
          raw.push_back({a, special - 1});
        a = special + 1;
      }
    }
    if (a <= hi)
      raw.push_back({a, hi});
  }
  if (!raw.empty())
    escaped.push_back(b.code_points(raw));
  return b.alt(escaped);
}

Frag build(const RegexNode &n, GrammarBuilder &b) {
  switch (n.kind) {
  case RegexNode::kSet:
    return build_set(n.set, b);
  case RegexNode::kConcat: {
    Frag f = b.empty();
    for (const auto &c : n.children)
      f = b.seq(f, build(*c, b));
    return f;
  }
  case RegexNode::kAlt: {
    if (n.children.size() == 1)
      return build(*n.children[0], b);
    std::vector<Frag> alts;
    for (const auto &c : n.children)
      alts.push_back(build(*c, b));
    return b.alt(alts);
  }
  case RegexNode::kRepeat: {
    const RegexNode &inner = *n.children[0];
    return b.repeat([&] { return build(inner, b); }, n.min, n.max);
  }
  }
  return b.empty();
}

} // namespace

Status compile_pattern(std::string_view pattern, GrammarBuilder &builder,
                       Frag *out) {
  NodePtr ast;
  Parser parser(pattern);
  if (Status s = parser.parse(&ast); !s.ok())
    return s;
  *out = build(*ast, builder);
  return Status::Ok();
}

} // namespace hyrt::structured
