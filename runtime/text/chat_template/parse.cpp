// Chat-template parsing: splits the source into text and tags (applying
// trim_blocks, lstrip_blocks and the "-" whitespace controls as
// transformers' Jinja environment does), then parses tags into
// chat_template_ast.h nodes. Constructs outside the supported subset are
// rejected here, by name, rather than misrendered later.
#include "ast.h"

#include <nlohmann/json.hpp>

#include <cctype>

namespace hyrt::detail {

namespace {

struct Token {
  enum class Type { kName, kString, kNumber, kOp, kEnd };
  Type type = Type::kEnd;
  std::string text;
};

struct ParseError {
  std::string message;
};

[[noreturn]] void fail(int line, const std::string &msg) {
  throw ParseError{"chat template line " + std::to_string(line) + ": " + msg};
}

// A template comes with a downloaded checkpoint: untrusted input. The
// parser and the renderer recurse over nesting, so nesting is bounded here,
// far above what real templates use (under 10 levels, under 200 tokens a
// tag): tokens per tag bound the depth of left-leaning chains (a + a + ...,
// a.b.c..., x | f | g ...), which are built by loops, not recursion.
constexpr size_t kMaxTokensPerTag = 2048;
constexpr int kMaxExprNesting = 64;  ///< parentheses, brackets, not, unary -
constexpr int kMaxBlockNesting = 64; ///< if / for inside if / for

/// Counts one level of nesting for as long as it lives.
class NestingGuard {
public:
  NestingGuard(int *depth, int limit, int line, const char *what)
      : depth_(depth) {
    if (++*depth_ > limit)
      fail(line, std::string(what) + " nest deeper than " +
                     std::to_string(limit) + " levels");
  }
  ~NestingGuard() { --*depth_; }
  NestingGuard(const NestingGuard &) = delete;
  NestingGuard &operator=(const NestingGuard &) = delete;

private:
  int *depth_;
};

std::vector<Token> lex(const std::string &s, int line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) ||
                              s[j] == '_'))
        ++j;
      out.push_back({Token::Type::kName, s.substr(i, j - i)});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) ||
                              s[j] == '.'))
        ++j;
      out.push_back({Token::Type::kNumber, s.substr(i, j - i)});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 == s.size()) {
          v += s[j];
          continue;
        }
        const char e = s[++j];
        switch (e) {
        case 'n': v += '\n'; break;
        case 't': v += '\t'; break;
        case 'r': v += '\r'; break;
        case '\\': case '\'': case '"': v += e; break;
        default: v += '\\'; v += e;
        }
      }
      if (j >= s.size())
        fail(line, "unterminated string literal");
      out.push_back({Token::Type::kString, v});
      i = j + 1;
    } else {
      static const char *two[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::string op(1, c);
      for (const char *t : two)
        if (s.compare(i, 2, t) == 0)
          op = t;
      if (op.size() == 1 &&
          std::string("()[]{}.,:|~+-*/%<>=").find(c) == std::string::npos)
        fail(line, std::string("unexpected character '") + c + "'");
      out.push_back({Token::Type::kOp, op});
      i += op.size();
    }
  }
  if (out.size() > kMaxTokensPerTag)
    fail(line, "a tag of " + std::to_string(out.size()) +
                   " tokens, expected at most " +
                   std::to_string(kMaxTokensPerTag));
  out.push_back({Token::Type::kEnd, ""});
  return out;
}

class ExprParser {
public:
  ExprParser(std::vector<Token> toks, int line)
      : t_(std::move(toks)), line_(line) {}

  const Token &peek(size_t k = 0) const {
    return t_[std::min(p_ + k, t_.size() - 1)];
  }
  bool is_op(const char *op) const {
    return peek().type == Token::Type::kOp && peek().text == op;
  }
  bool is_name(const char *n) const {
    return peek().type == Token::Type::kName && peek().text == n;
  }
  bool at_end() const { return peek().type == Token::Type::kEnd; }
  Token next() { return t_[std::min(p_++, t_.size() - 1)]; }
  void expect_op(const char *op) {
    if (!is_op(op))
      fail(line_, std::string("expected '") + op + "', found '" +
                      peek().text + "'");
    ++p_;
  }
  std::string expect_name() {
    if (peek().type != Token::Type::kName)
      fail(line_, "expected a name, found '" + peek().text + "'");
    return next().text;
  }
  void expect_end() {
    if (!at_end())
      fail(line_, "unexpected '" + peek().text + "'");
  }

  std::unique_ptr<Expr> make(Expr::Kind k, std::string text = "") {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->text = std::move(text);
    e->line = line_;
    return e;
  }

  std::unique_ptr<Expr> expression() {
    NestingGuard nest(&depth_, kMaxExprNesting, line_, "expressions");
    auto e = or_expr();
    if (is_name("if")) {
      ++p_;
      auto cond = make(Expr::Kind::kCondition);
      cond->b = or_expr();
      if (is_name("else")) {
        ++p_;
        cond->c = expression();
      }
      cond->a = std::move(e);
      return cond;
    }
    return e;
  }

private:
  std::unique_ptr<Expr> binary(std::string op, std::unique_ptr<Expr> l,
                               std::unique_ptr<Expr> r) {
    auto e = make(Expr::Kind::kBinary, std::move(op));
    e->a = std::move(l);
    e->b = std::move(r);
    return e;
  }
  std::unique_ptr<Expr> or_expr() {
    auto e = and_expr();
    while (is_name("or")) {
      ++p_;
      e = binary("or", std::move(e), and_expr());
    }
    return e;
  }
  std::unique_ptr<Expr> and_expr() {
    auto e = not_expr();
    while (is_name("and")) {
      ++p_;
      e = binary("and", std::move(e), not_expr());
    }
    return e;
  }
  std::unique_ptr<Expr> not_expr() {
    if (is_name("not")) {
      ++p_;
      NestingGuard nest(&depth_, kMaxExprNesting, line_, "expressions");
      auto e = make(Expr::Kind::kUnary, "not");
      e->a = not_expr();
      return e;
    }
    return compare();
  }
  std::unique_ptr<Expr> compare() {
    auto e = math1();
    for (;;) {
      static const char *ops[] = {"==", "!=", "<", ">", "<=", ">="};
      bool matched = false;
      for (const char *op : ops)
        if (is_op(op)) {
          ++p_;
          e = binary(op, std::move(e), math1());
          matched = true;
          break;
        }
      if (matched)
        continue;
      if (is_name("in")) {
        ++p_;
        e = binary("in", std::move(e), math1());
      } else if (is_name("not") && peek(1).type == Token::Type::kName &&
                 peek(1).text == "in") {
        p_ += 2;
        e = binary("not in", std::move(e), math1());
      } else {
        return e;
      }
    }
  }
  std::unique_ptr<Expr> math1() {
    auto e = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = next().text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  std::unique_ptr<Expr> concat() {
    auto e = math2();
    while (is_op("~")) {
      ++p_;
      e = binary("~", std::move(e), math2());
    }
    return e;
  }
  std::unique_ptr<Expr> math2() {
    auto e = unary();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = next().text;
      e = binary(op, std::move(e), unary());
    }
    return e;
  }
  std::unique_ptr<Expr> unary() {
    if (is_op("-")) {
      ++p_;
      NestingGuard nest(&depth_, kMaxExprNesting, line_, "expressions");
      auto e = make(Expr::Kind::kUnary, "-");
      e->a = unary();
      return e;
    }
    return postfix(primary());
  }
  void call_args(Expr *call) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().type == Token::Type::kName && peek(1).type == Token::Type::kOp &&
          peek(1).text == "=") {
        call->names.push_back(next().text);
        ++p_;
      } else if (!call->names.empty()) {
        fail(line_, "positional argument after a keyword argument");
      }
      call->args.push_back(expression());
      if (!is_op(","))
        break;
      ++p_;
    }
    expect_op(")");
  }
  std::unique_ptr<Expr> postfix(std::unique_ptr<Expr> e) {
    for (;;) {
      if (is_op(".")) {
        ++p_;
        auto a = make(Expr::Kind::kAttr, expect_name());
        a->a = std::move(e);
        e = std::move(a);
      } else if (is_op("[")) {
        ++p_;
        std::unique_ptr<Expr> parts[3];
        int n = 0;
        bool slice = false;
        for (;;) {
          if (!is_op(":") && !is_op("]"))
            parts[n] = expression();
          if (is_op(":") && n < 2) {
            ++p_;
            ++n;
            slice = true;
            continue;
          }
          break;
        }
        expect_op("]");
        auto s = make(slice ? Expr::Kind::kSlice : Expr::Kind::kIndex);
        s->a = std::move(e);
        s->b = std::move(parts[0]);
        s->c = std::move(parts[1]);
        s->d = std::move(parts[2]);
        if (!slice && !s->b)
          fail(line_, "empty subscript");
        e = std::move(s);
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::kCall);
        c->a = std::move(e);
        call_args(c.get());
        e = std::move(c);
      } else if (is_op("|")) {
        ++p_;
        auto f = make(Expr::Kind::kFilter, expect_name());
        f->args.push_back(std::move(e));
        if (is_op("("))
          call_args(f.get());
        e = std::move(f);
      } else if (is_name("is")) {
        ++p_;
        auto t = make(Expr::Kind::kTest);
        if (is_name("not")) {
          ++p_;
          t->negate = true;
        }
        t->text = expect_name();
        t->args.push_back(std::move(e));
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  std::unique_ptr<Expr> primary() {
    const Token tok = next();
    using T = Token::Type;
    if (tok.type == T::kString) {
      std::string v = tok.text;
      while (peek().type == T::kString) // adjacent literals concatenate
        v += next().text;
      // A template's bytes need not be UTF-8 (found by fuzz_chat_template:
      // dump() threw and aborted); Jinja works on text, so invalid
      // sequences become U+FFFD, as Python's decoding with 'replace' does.
      return make(Expr::Kind::kLiteral,
                  nlohmann::json(v).dump(-1, ' ', false,
                                         nlohmann::json::error_handler_t::replace));
    }
    if (tok.type == T::kNumber)
      return make(Expr::Kind::kLiteral, tok.text);
    if (tok.type == T::kName) {
      if (tok.text == "true" || tok.text == "True")
        return make(Expr::Kind::kLiteral, "true");
      if (tok.text == "false" || tok.text == "False")
        return make(Expr::Kind::kLiteral, "false");
      if (tok.text == "none" || tok.text == "None")
        return make(Expr::Kind::kLiteral, "null");
      return make(Expr::Kind::kName, tok.text);
    }
    if (tok.type == T::kOp && tok.text == "(") {
      auto e = expression();
      if (is_op(","))
        fail(line_, "tuples are not supported");
      expect_op(")");
      return e;
    }
    if (tok.type == T::kOp && tok.text == "[") {
      auto l = make(Expr::Kind::kList);
      while (!is_op("]")) {
        l->args.push_back(expression());
        if (!is_op(","))
          break;
        ++p_;
      }
      expect_op("]");
      return l;
    }
    if (tok.type == T::kOp && tok.text == "{") {
      auto d = make(Expr::Kind::kDict);
      while (!is_op("}")) {
        if (peek().type != T::kString)
          fail(line_, "dict keys must be string literals");
        d->names.push_back(next().text);
        expect_op(":");
        d->args.push_back(expression());
        if (!is_op(","))
          break;
        ++p_;
      }
      expect_op("}");
      return d;
    }
    fail(line_, "unexpected '" + tok.text + "' in an expression");
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  int line_;
  int depth_ = 0; ///< expression nesting (NestingGuard)
};

struct Segment {
  enum class Kind { kText, kOutput, kStatement };
  Kind kind;
  std::string body;
  int line;
};

std::vector<Segment> split_segments(const std::string &src) {
  std::vector<Segment> segs;
  size_t pos = 0;
  bool strip_next = false, trim_newline = false;
  auto line_at = [&](size_t p) {
    return 1 + int(std::count(src.begin(), src.begin() + long(p), '\n'));
  };
  while (pos <= src.size()) {
    size_t p = pos;
    while (p + 1 < src.size() &&
           !(src[p] == '{' && (src[p + 1] == '{' || src[p + 1] == '%' ||
                               src[p + 1] == '#')))
      ++p;
    if (p + 1 >= src.size())
      p = src.size();
    std::string text = src.substr(pos, p - pos);
    if (strip_next) {
      size_t k = 0;
      while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k])))
        ++k;
      text.erase(0, k);
    } else if (trim_newline && !text.empty() && text[0] == '\n') {
      text.erase(0, 1);
    } else if (trim_newline && text.compare(0, 2, "\r\n") == 0) {
      text.erase(0, 2);
    }
    if (p == src.size()) {
      if (!text.empty())
        segs.push_back({Segment::Kind::kText, text, line_at(pos)});
      break;
    }
    const char kind = src[p + 1];
    const bool minus = p + 2 < src.size() && src[p + 2] == '-';
    const bool plus = p + 2 < src.size() && src[p + 2] == '+';
    if (minus) {
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    } else if (kind != '{' && !plus) {
      // lstrip_blocks: spaces and tabs between a line start and a block tag.
      size_t k = text.size();
      while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t'))
        --k;
      if ((k > 0 && text[k - 1] == '\n') || (k == 0 && pos == 0))
        text.erase(k);
    }
    if (!text.empty())
      segs.push_back({Segment::Kind::kText, text, line_at(pos)});
    const size_t body_begin = p + 2 + ((minus || plus) ? 1 : 0);
    const char close = kind == '{' ? '}' : kind;
    size_t e = body_begin;
    char quote = 0;
    for (; e + 1 < src.size(); ++e) {
      if (quote) {
        if (src[e] == '\\')
          ++e;
        else if (src[e] == quote)
          quote = 0;
      } else if (kind != '#' && (src[e] == '\'' || src[e] == '"')) {
        quote = src[e];
      } else if (src[e] == close && src[e + 1] == '}') {
        break;
      }
    }
    if (e + 1 >= src.size())
      fail(line_at(p), std::string("unterminated '{") + kind + "' tag");
    const bool minus_end = e > body_begin && src[e - 1] == '-';
    std::string body =
        src.substr(body_begin, e - body_begin - (minus_end ? 1 : 0));
    if (kind != '#')
      segs.push_back({kind == '{' ? Segment::Kind::kOutput
                                  : Segment::Kind::kStatement,
                      body, line_at(p)});
    strip_next = minus_end;
    trim_newline = kind != '{'; // trim_blocks
    pos = e + 2;
  }
  return segs;
}

std::unique_ptr<TemplateNode> node(TemplateNode::Kind k, int line) {
  auto n = std::make_unique<TemplateNode>();
  n->kind = k;
  n->line = line;
  return n;
}

/// Parses segments from `i` into `block` until a statement whose keyword is
/// in `stops`; returns that keyword ("" at the end of the template), with
/// `i` left on that statement.
std::string parse_block(const std::vector<Segment> &segs, size_t &i,
                        TemplateNode *block,
                        const std::vector<std::string> &stops, int depth) {
  if (depth > kMaxBlockNesting)
    fail(i < segs.size() ? segs[i].line : 0,
         "statements nest deeper than " + std::to_string(kMaxBlockNesting) +
             " levels");
  for (; i < segs.size(); ++i) {
    const Segment &s = segs[i];
    if (s.kind == Segment::Kind::kText) {
      auto n = node(TemplateNode::Kind::kText, s.line);
      n->text = s.body;
      block->children.push_back(std::move(n));
      continue;
    }
    ExprParser ep(lex(s.body, s.line), s.line);
    if (s.kind == Segment::Kind::kOutput) {
      auto n = node(TemplateNode::Kind::kOutput, s.line);
      n->expr = ep.expression();
      ep.expect_end();
      block->children.push_back(std::move(n));
      continue;
    }
    const std::string kw = ep.expect_name();
    for (const std::string &stop : stops)
      if (kw == stop)
        return kw;
    if (kw == "if") {
      auto n = node(TemplateNode::Kind::kIf, s.line);
      n->conditions.push_back(ep.expression());
      ep.expect_end();
      for (;;) {
        auto body = node(TemplateNode::Kind::kBlock, s.line);
        ++i;
        const std::string end =
            parse_block(segs, i, body.get(), {"elif", "else", "endif"},
                        depth + 1);
        n->children.push_back(std::move(body));
        if (end.empty())
          fail(s.line, "'if' without 'endif'");
        if (end == "endif")
          break;
        if (end == "elif") {
          ExprParser elif(lex(segs[i].body, segs[i].line), segs[i].line);
          elif.expect_name();
          n->conditions.push_back(elif.expression());
          elif.expect_end();
        } else {
          if (!n->conditions.back())
            fail(segs[i].line, "'else' after 'else'");
          n->conditions.push_back(nullptr);
        }
      }
      block->children.push_back(std::move(n));
    } else if (kw == "for") {
      auto n = node(TemplateNode::Kind::kFor, s.line);
      n->loop_vars.push_back(ep.expect_name());
      while (ep.is_op(",")) {
        ep.next();
        n->loop_vars.push_back(ep.expect_name());
      }
      if (!ep.is_name("in"))
        fail(s.line, "expected 'in' in a for statement");
      ep.next();
      // `for x in xs if cond` parses as a conditional without else: its
      // condition is the loop filter.
      n->expr = ep.expression();
      if (n->expr->kind == Expr::Kind::kCondition && !n->expr->c) {
        n->filter = std::move(n->expr->b);
        n->expr = std::move(n->expr->a);
      }
      if (ep.is_name("recursive"))
        fail(s.line, "recursive loops are not supported");
      ep.expect_end();
      auto body = node(TemplateNode::Kind::kBlock, s.line);
      ++i;
      std::string end = parse_block(segs, i, body.get(), {"else", "endfor"}, depth + 1);
      n->children.push_back(std::move(body));
      if (end == "else") {
        auto other = node(TemplateNode::Kind::kBlock, s.line);
        ++i;
        end = parse_block(segs, i, other.get(), {"endfor"}, depth + 1);
        n->children.push_back(std::move(other));
      }
      if (end != "endfor")
        fail(s.line, "'for' without 'endfor'");
      block->children.push_back(std::move(n));
    } else if (kw == "set") {
      auto n = node(TemplateNode::Kind::kSet, s.line);
      n->text = ep.expect_name();
      if (ep.is_op(".")) {
        ep.next();
        n->attr = ep.expect_name();
      }
      if (!ep.is_op("="))
        fail(s.line, "block 'set' (without '=') is not supported");
      ep.next();
      n->expr = ep.expression();
      ep.expect_end();
      block->children.push_back(std::move(n));
    } else if (kw == "break" || kw == "continue") {
      ep.expect_end();
      block->children.push_back(node(kw == "break"
                                         ? TemplateNode::Kind::kBreak
                                         : TemplateNode::Kind::kContinue,
                                     s.line));
    } else {
      fail(s.line, "unsupported statement '" + kw + "'");
    }
  }
  return "";
}

} // namespace

std::string parse_template(const std::string &source,
                           std::unique_ptr<TemplateNode> *out) {
  try {
    std::vector<Segment> segs = split_segments(source);
    auto root = node(TemplateNode::Kind::kBlock, 1);
    size_t i = 0;
    parse_block(segs, i, root.get(), {}, 0);
    *out = std::move(root);
    return "";
  } catch (const ParseError &e) {
    return e.message;
  }
}

} // namespace hyrt::detail
