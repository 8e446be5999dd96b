// Chat-template evaluation: Jinja values (undefined, none, bool, numbers,
// strings, lists, dicts, namespaces), the filters, tests and methods chat
// templates use, and rendering of the parsed tree. Values come from JSON
// (messages, tools, kwargs) and keep its key order, as Python dicts do, so
// `tojson` prints them in the caller's order.
#include "hyrt/text/chat_template.h"
#include "hyrt/support/json.h"

#include "ast.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <sstream>
#include <unordered_set>

namespace hyrt {

namespace detail {

namespace {

using ojson = nlohmann::ordered_json;

struct RenderError {
  std::string message;
};

[[noreturn]] void fail(int line, const std::string &msg) {
  throw RenderError{"chat template line " + std::to_string(line) + ": " + msg};
}

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;

struct Value {
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList,
                    kDict, kNamespace };
  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict; ///< kDict and kNamespace (shared: mutable)

  static Value none() { Value v; v.kind = Kind::kNone; return v; }
  static Value boolean(bool x) { Value v; v.kind = Kind::kBool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.kind = Kind::kInt; v.i = x; return v; }
  static Value real(double x) { Value v; v.kind = Kind::kFloat; v.f = x; return v; }
  static Value str(std::string x) { Value v; v.kind = Kind::kString; v.s = std::move(x); return v; }
  static Value of_list(List l) { Value v; v.kind = Kind::kList; v.list = std::make_shared<List>(std::move(l)); return v; }
  static Value of_dict(Dict d, Kind k = Kind::kDict) { Value v; v.kind = k; v.dict = std::make_shared<Dict>(std::move(d)); return v; }

  bool is(Kind k) const { return kind == k; }
  bool numeric() const { return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool; }
  double num() const { return kind == Kind::kFloat ? f : kind == Kind::kBool ? double(b) : double(i); }
  const Value *find(const std::string &key) const {
    if (!dict)
      return nullptr;
    for (const auto &[k, v] : *dict)
      if (k == key)
        return &v;
    return nullptr;
  }
};

using K = Value::Kind;

Value from_json(const ojson &j) {
  switch (j.type()) {
  case ojson::value_t::null: return Value::none();
  case ojson::value_t::boolean: return Value::boolean(j.get<bool>());
  case ojson::value_t::number_integer:
  case ojson::value_t::number_unsigned: return Value::integer(j.get<int64_t>());
  case ojson::value_t::number_float: return Value::real(j.get<double>());
  case ojson::value_t::string: return Value::str(j.get<std::string>());
  case ojson::value_t::array: {
    List l;
    for (const ojson &e : j)
      l.push_back(from_json(e));
    return Value::of_list(std::move(l));
  }
  case ojson::value_t::object: {
    Dict d;
    for (auto it = j.begin(); it != j.end(); ++it)
      d.emplace_back(it.key(), from_json(it.value()));
    return Value::of_dict(std::move(d));
  }
  default: return Value();
  }
}

/// Whether `v` is or contains (through its lists, dicts and namespaces)
/// the dict `target`; each shared container is visited once, so a value
/// that shares one many times costs its distinct containers only.
bool holds(const Value &v, const Dict *target) {
  std::vector<const Value *> todo{&v};
  std::unordered_set<const void *> seen;
  while (!todo.empty()) {
    const Value *x = todo.back();
    todo.pop_back();
    if (x->dict) {
      if (x->dict.get() == target)
        return true;
      if (seen.insert(x->dict.get()).second)
        for (const auto &kv : *x->dict)
          todo.push_back(&kv.second);
    } else if (x->list && seen.insert(x->list.get()).second) {
      for (const Value &e : *x->list)
        todo.push_back(&e);
    }
  }
  return false;
}

bool truthy(const Value &v) {
  switch (v.kind) {
  case K::kUndefined: case K::kNone: return false;
  case K::kBool: return v.b;
  case K::kInt: return v.i != 0;
  case K::kFloat: return v.f != 0;
  case K::kString: return !v.s.empty();
  case K::kList: return !v.list->empty();
  case K::kDict: return !v.dict->empty();
  case K::kNamespace: return true;
  }
  return false;
}

std::string float_repr(double x) {
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e16) {
    std::ostringstream o;
    o << int64_t(x) << ".0";
    return o.str();
  }
  char buf[32];
  for (int prec = 1; prec <= 17; ++prec) { // shortest repr that round-trips
    std::snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (std::strtod(buf, nullptr) == x)
      break;
  }
  return buf;
}

void json_string(const std::string &s, std::string *out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"': *out += "\\\""; break;
    case '\\': *out += "\\\\"; break;
    case '\n': *out += "\\n"; break;
    case '\r': *out += "\\r"; break;
    case '\t': *out += "\\t"; break;
    case '\b': *out += "\\b"; break;
    case '\f': *out += "\\f"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        *out += buf;
      } else {
        *out += char(c);
      }
    }
  }
  *out += '"';
}

/// Python's json.dumps(v, ensure_ascii=False): ", " and ": " separators.
void to_json(const Value &v, std::string *out, int line) {
  switch (v.kind) {
  case K::kNone: *out += "null"; return;
  case K::kBool: *out += v.b ? "true" : "false"; return;
  case K::kInt: *out += std::to_string(v.i); return;
  case K::kFloat: *out += float_repr(v.f); return;
  case K::kString: json_string(v.s, out); return;
  case K::kList:
    *out += '[';
    for (size_t k = 0; k < v.list->size(); ++k) {
      if (k)
        *out += ", ";
      to_json((*v.list)[k], out, line);
    }
    *out += ']';
    return;
  case K::kDict:
    *out += '{';
    for (size_t k = 0; k < v.dict->size(); ++k) {
      if (k)
        *out += ", ";
      json_string((*v.dict)[k].first, out);
      *out += ": ";
      to_json((*v.dict)[k].second, out, line);
    }
    *out += '}';
    return;
  default: fail(line, "tojson of an undefined value or namespace");
  }
}

std::string to_text(const Value &v, int line);

std::string repr(const Value &v, int line) {
  if (v.is(K::kString)) {
    std::string r = "'";
    for (char c : v.s)
      r += c == '\'' ? std::string("\\'") : std::string(1, c);
    return r + "'";
  }
  return to_text(v, line);
}

/// Python's str(v), which is what {{ v }} prints.
std::string to_text(const Value &v, int line) {
  switch (v.kind) {
  case K::kUndefined: return "";
  case K::kNone: return "None";
  case K::kBool: return v.b ? "True" : "False";
  case K::kInt: return std::to_string(v.i);
  case K::kFloat: return float_repr(v.f);
  case K::kString: return v.s;
  case K::kList: {
    std::string r = "[";
    for (size_t k = 0; k < v.list->size(); ++k)
      r += (k ? ", " : "") + repr((*v.list)[k], line);
    return r + "]";
  }
  case K::kDict: {
    std::string r = "{";
    for (size_t k = 0; k < v.dict->size(); ++k)
      r += (k ? ", " : "") + repr(Value::str((*v.dict)[k].first), line) +
           ": " + repr((*v.dict)[k].second, line);
    return r + "}";
  }
  case K::kNamespace: return "<Namespace>";
  }
  return "";
}

bool equal(const Value &a, const Value &b) {
  if (a.numeric() && b.numeric())
    return a.num() == b.num();
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case K::kString: return a.s == b.s;
  case K::kList:
    if (a.list->size() != b.list->size())
      return false;
    for (size_t k = 0; k < a.list->size(); ++k)
      if (!equal((*a.list)[k], (*b.list)[k]))
        return false;
    return true;
  case K::kDict: case K::kNamespace: return a.dict == b.dict;
  default: return true; // none == none, undefined == undefined
  }
}

/// Code points of UTF-8 text, so indices and slices count characters as
/// Python's str does.
std::vector<std::string> chars(const std::string &s) {
  std::vector<std::string> out;
  for (size_t k = 0; k < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    len = std::min(len, s.size() - k);
    out.push_back(s.substr(k, len));
    k += len;
  }
  return out;
}

std::string strip_chars(const std::string &s, const std::string *set,
                        bool left, bool right) {
  auto drop = [&](char c) {
    return set ? set->find(c) != std::string::npos
               : std::isspace(static_cast<unsigned char>(c)) != 0;
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && drop(s[b]))
      ++b;
  if (right)
    while (e > b && drop(s[e - 1]))
      --e;
  return s.substr(b, e - b);
}

struct Scope {
  std::vector<std::map<std::string, Value>> frames;
  Value get(const std::string &name) const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
      if (auto f = it->find(name); f != it->end())
        return f->second;
    return Value();
  }
};

struct LoopSignal {
  bool brk = false, cont = false;
};

// A render's budgets. A template is untrusted input (it comes with a
// downloaded checkpoint) and this engine is Turing-incomplete only in
// theory: nested loops over range() run for ages and doubling a string in a
// loop exhausts memory. Real chat templates take thousands of steps and
// produce the prompt (at most a few MB), far below these.
constexpr int64_t kMaxRenderSteps = 2'000'000;
constexpr size_t kMaxRenderBytes = size_t(16) << 20; ///< output, any string
constexpr size_t kMaxListItems = 100'000;            ///< range(), list + list

class Renderer {
public:
  explicit Renderer(Scope scope) : scope_(std::move(scope)) {}
  std::string out;

  void render(const TemplateNode &n, LoopSignal &sig) {
    using NK = TemplateNode::Kind;
    step(n.line);
    if (out.size() > kMaxRenderBytes)
      fail(n.line, "the output passed the budget of " +
                       std::to_string(kMaxRenderBytes) + " bytes");
    switch (n.kind) {
    case NK::kBlock:
      for (const auto &c : n.children) {
        render(*c, sig);
        if (sig.brk || sig.cont)
          return;
      }
      return;
    case NK::kText: out += n.text; return;
    case NK::kOutput: out += to_text(eval(*n.expr), n.line); return;
    case NK::kIf:
      for (size_t k = 0; k < n.children.size(); ++k)
        if (!n.conditions[k] || truthy(eval(*n.conditions[k]))) {
          render(*n.children[k], sig);
          return;
        }
      return;
    case NK::kSet: {
      Value v = eval(*n.expr);
      if (n.attr.empty()) {
        scope_.frames.back()[n.text] = std::move(v);
        return;
      }
      Value ns = scope_.get(n.text);
      if (!ns.is(K::kNamespace))
        fail(n.line, "'set " + n.text + "." + n.attr +
                         "' needs a namespace(), found another value");
      // Values share their lists and dicts; a namespace holding itself
      // (directly or inside a list, a dict or another namespace) would be
      // a reference cycle that is never freed: a leak per render.
      if (holds(v, ns.dict.get()))
        fail(n.line, "'set " + n.text + "." + n.attr + "' would make the namespace hold "
                     "itself (a reference cycle hyc does not allow)");
      for (auto &[k, val] : *ns.dict)
        if (k == n.attr) {
          val = std::move(v);
          return;
        }
      ns.dict->emplace_back(n.attr, std::move(v));
      return;
    }
    case NK::kBreak: sig.brk = true; return;
    case NK::kContinue: sig.cont = true; return;
    case NK::kFor: render_for(n); return;
    }
  }

private:
  void render_for(const TemplateNode &n) {
    Value seq = eval(*n.expr);
    List items;
    if (seq.is(K::kList))
      items = *seq.list;
    else if (seq.is(K::kDict))
      for (const auto &kv : *seq.dict)
        items.push_back(Value::str(kv.first));
    else if (seq.is(K::kString))
      for (auto &c : chars(seq.s))
        items.push_back(Value::str(c));
    else if (!seq.is(K::kUndefined) && !seq.is(K::kNone))
      fail(n.line, "for loop over a value that is not iterable");
    scope_.frames.emplace_back();
    if (n.filter) { // the `if` clause filters before loop.* is computed
      List kept;
      for (Value &v : items) {
        bind(n, v);
        if (truthy(eval(*n.filter)))
          kept.push_back(std::move(v));
      }
      items.swap(kept);
    }
    const int64_t len = int64_t(items.size());
    for (int64_t k = 0; k < len; ++k) {
      bind(n, items[size_t(k)]);
      scope_.frames.back()["loop"] = Value::of_dict(
          {{"index0", Value::integer(k)},
           {"index", Value::integer(k + 1)},
           {"revindex0", Value::integer(len - k - 1)},
           {"revindex", Value::integer(len - k)},
           {"first", Value::boolean(k == 0)},
           {"last", Value::boolean(k + 1 == len)},
           {"length", Value::integer(len)},
           {"previtem", k > 0 ? items[size_t(k - 1)] : Value()},
           {"nextitem", k + 1 < len ? items[size_t(k + 1)] : Value()}});
      LoopSignal sig;
      render(*n.children[0], sig);
      if (sig.brk)
        break;
    }
    if (len == 0 && n.children.size() > 1) {
      LoopSignal sig;
      render(*n.children[1], sig);
    }
    scope_.frames.pop_back();
  }

  void bind(const TemplateNode &n, const Value &v) {
    if (n.loop_vars.size() == 1) {
      scope_.frames.back()[n.loop_vars[0]] = v;
      return;
    }
    if (!v.is(K::kList) || v.list->size() != n.loop_vars.size())
      fail(n.line, "cannot unpack a loop item into " +
                       std::to_string(n.loop_vars.size()) + " names");
    for (size_t k = 0; k < n.loop_vars.size(); ++k)
      scope_.frames.back()[n.loop_vars[k]] = (*v.list)[k];
  }

  Value eval(const Expr &e) {
    using EK = Expr::Kind;
    step(e.line);
    switch (e.kind) {
    case EK::kLiteral: return from_json(ojson::parse(e.text));
    case EK::kName: return scope_.get(e.text);
    case EK::kAttr: return member(eval(*e.a), e.text, e.line);
    case EK::kIndex: return index(eval(*e.a), eval(*e.b), e.line);
    case EK::kSlice: return slice(e);
    case EK::kCall: return call(e);
    case EK::kFilter: return filter(e);
    case EK::kTest: return Value::boolean(test(e) != e.negate);
    case EK::kUnary: {
      Value v = eval(*e.a);
      if (e.text == "not")
        return Value::boolean(!truthy(v));
      if (v.is(K::kInt)) {
        if (v.i == INT64_MIN)
          fail(e.line, "integer overflow in -(" + std::to_string(v.i) + ")");
        return Value::integer(-v.i);
      }
      if (v.numeric())
        return Value::real(-v.num());
      fail(e.line, "unary '-' on a non-number");
    }
    case EK::kBinary: return binary(e);
    case EK::kCondition:
      if (truthy(eval(*e.b)))
        return eval(*e.a);
      return e.c ? eval(*e.c) : Value();
    case EK::kList: {
      List l;
      for (const auto &a : e.args)
        l.push_back(eval(*a));
      return Value::of_list(std::move(l));
    }
    case EK::kDict: {
      Dict d;
      for (size_t k = 0; k < e.args.size(); ++k)
        d.emplace_back(e.names[k], eval(*e.args[k]));
      return Value::of_dict(std::move(d));
    }
    }
    return Value();
  }

  Value member(const Value &v, const std::string &name, int line) {
    if (v.is(K::kDict) || v.is(K::kNamespace)) {
      const Value *f = v.find(name);
      return f ? *f : Value();
    }
    if (v.is(K::kUndefined))
      fail(line, "'" + name + "' of an undefined value");
    return Value(); // e.g. a method name; call() resolves those
  }

  static int64_t norm_index(int64_t k, int64_t n) { return k < 0 ? k + n : k; }

  Value index(const Value &v, const Value &key, int line) {
    if (v.is(K::kDict) || v.is(K::kNamespace)) {
      if (!key.is(K::kString))
        fail(line, "dict subscript must be a string");
      return member(v, key.s, line);
    }
    if (!key.is(K::kInt))
      fail(line, "subscript must be an integer");
    if (v.is(K::kList)) {
      const int64_t k = norm_index(key.i, int64_t(v.list->size()));
      return k >= 0 && k < int64_t(v.list->size()) ? (*v.list)[size_t(k)]
                                                   : Value();
    }
    if (v.is(K::kString)) {
      auto cs = chars(v.s);
      const int64_t k = norm_index(key.i, int64_t(cs.size()));
      return k >= 0 && k < int64_t(cs.size()) ? Value::str(cs[size_t(k)])
                                              : Value();
    }
    fail(line, "subscript of a value that is not a list, string or dict");
  }

  Value slice(const Expr &e) {
    Value v = eval(*e.a);
    auto opt = [&](const std::unique_ptr<Expr> &x, bool *given) -> int64_t {
      *given = false;
      if (!x)
        return 0;
      Value r = eval(*x);
      if (r.is(K::kNone))
        return 0;
      if (!r.is(K::kInt))
        fail(e.line, "slice bounds must be integers");
      *given = true;
      return r.i;
    };
    bool has_start, has_stop, has_step;
    int64_t start = opt(e.b, &has_start), stop = opt(e.c, &has_stop),
            step = opt(e.d, &has_step);
    if (!has_step)
      step = 1;
    if (step == 0)
      fail(e.line, "slice step cannot be zero");
    std::vector<Value> src;
    const bool is_str = v.is(K::kString);
    if (is_str)
      for (auto &c : chars(v.s))
        src.push_back(Value::str(c));
    else if (v.is(K::kList))
      src = *v.list;
    else
      fail(e.line, "slice of a value that is not a list or string");
    const int64_t n = int64_t(src.size());
    // Python's slice.indices().
    auto clamp = [&](int64_t x, bool given, int64_t dflt) {
      if (!given)
        return dflt;
      if (x < 0)
        x += n;
      return step > 0 ? std::clamp<int64_t>(x, 0, n)
                      : std::clamp<int64_t>(x, -1, n - 1);
    };
    start = clamp(start, has_start, step > 0 ? 0 : n - 1);
    stop = clamp(stop, has_stop, step > 0 ? n : -1);
    List out;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step)
      out.push_back(src[size_t(k)]);
    if (!is_str)
      return Value::of_list(std::move(out));
    std::string s;
    for (auto &c : out)
      s += c.s;
    return Value::str(s);
  }

  Value binary(const Expr &e) {
    const std::string &op = e.text;
    if (op == "and") {
      Value l = eval(*e.a);
      return truthy(l) ? eval(*e.b) : l;
    }
    if (op == "or") {
      Value l = eval(*e.a);
      return truthy(l) ? l : eval(*e.b);
    }
    Value l = eval(*e.a), r = eval(*e.b);
    if (op == "==")
      return Value::boolean(equal(l, r));
    if (op == "!=")
      return Value::boolean(!equal(l, r));
    if (op == "~")
      return Value::str(bounded(to_text(l, e.line) + to_text(r, e.line), e.line));
    if (op == "in" || op == "not in") {
      bool found = false;
      if (r.is(K::kString) && l.is(K::kString))
        found = r.s.find(l.s) != std::string::npos;
      else if (r.is(K::kList))
        for (const Value &x : *r.list)
          found = found || equal(x, l);
      else if ((r.is(K::kDict) || r.is(K::kNamespace)) && l.is(K::kString))
        found = r.find(l.s) != nullptr;
      else if (r.is(K::kUndefined))
        fail(e.line, "'in' on an undefined value");
      else
        fail(e.line, "'in' needs a string, list or dict on the right");
      return Value::boolean(found != (op == "not in"));
    }
    if (op == "+" && l.is(K::kString) && r.is(K::kString)) {
      if (l.s.size() + r.s.size() > kMaxRenderBytes)
        fail(e.line, "a string past the budget of " +
                         std::to_string(kMaxRenderBytes) + " bytes");
      return Value::str(l.s + r.s);
    }
    if (op == "+" && l.is(K::kList) && r.is(K::kList)) {
      if (l.list->size() + r.list->size() > kMaxListItems)
        fail(e.line, "a list past the budget of " +
                         std::to_string(kMaxListItems) + " items");
      List x = *l.list;
      x.insert(x.end(), r.list->begin(), r.list->end());
      return Value::of_list(std::move(x));
    }
    if (l.is(K::kString) && r.is(K::kString) &&
        (op == "<" || op == ">" || op == "<=" || op == ">="))
      return Value::boolean(op == "<" ? l.s < r.s : op == ">" ? l.s > r.s
                            : op == "<=" ? l.s <= r.s : l.s >= r.s);
    if (!l.numeric() || !r.numeric())
      fail(e.line, "operator '" + op + "' on unsupported operand types");
    const bool ints = !l.is(K::kFloat) && !r.is(K::kFloat);
    const double a = l.num(), b = r.num();
    if (op == "<") return Value::boolean(a < b);
    if (op == ">") return Value::boolean(a > b);
    if (op == "<=") return Value::boolean(a <= b);
    if (op == ">=") return Value::boolean(a >= b);
    if ((op == "/" || op == "//" || op == "%") && b == 0)
      fail(e.line, "division by zero");
    if (op == "/")
      return Value::real(a / b);
    if (ints) { // bools count as 0 / 1, as in Python
      const auto as_int = [](const Value &v) { return v.is(K::kBool) ? int64_t(v.b) : v.i; };
      return integer_arithmetic(op, as_int(l), as_int(r), e.line);
    }
    if (op == "+") return Value::real(a + b);
    if (op == "-") return Value::real(a - b);
    if (op == "*") return Value::real(a * b);
    if (op == "//") return Value::real(std::floor(a / b));
    if (op == "%") return Value::real(a - b * std::floor(a / b));
    fail(e.line, "unsupported operator '" + op + "'");
  }

  bool test(const Expr &e) {
    const Value v = eval(*e.args[0]);
    const std::string &t = e.text;
    if (t == "defined") return !v.is(K::kUndefined);
    if (t == "undefined") return v.is(K::kUndefined);
    if (t == "none") return v.is(K::kNone);
    if (t == "string") return v.is(K::kString);
    if (t == "number") return v.is(K::kInt) || v.is(K::kFloat);
    if (t == "integer") return v.is(K::kInt);
    if (t == "float") return v.is(K::kFloat);
    if (t == "boolean") return v.is(K::kBool);
    if (t == "true") return v.is(K::kBool) && v.b;
    if (t == "false") return v.is(K::kBool) && !v.b;
    if (t == "mapping") return v.is(K::kDict);
    if (t == "sequence" || t == "iterable")
      return v.is(K::kList) || v.is(K::kString) || v.is(K::kDict);
    fail(e.line, "unsupported test 'is " + t + "'");
  }

  std::vector<Value> args_of(const Expr &e, size_t skip, size_t max,
                             const std::string &what) {
    if (!e.names.empty())
      fail(e.line, what + " takes no keyword arguments");
    if (e.args.size() - skip > max)
      fail(e.line, what + " takes at most " + std::to_string(max) +
                       " arguments");
    std::vector<Value> out;
    for (size_t k = skip; k < e.args.size(); ++k)
      out.push_back(eval(*e.args[k]));
    return out;
  }

  Value filter(const Expr &e) {
    const std::string &f = e.text;
    Value v = eval(*e.args[0]);
    if (f == "length" || f == "count") {
      args_of(e, 1, 0, "filter 'length'");
      if (v.is(K::kString)) return Value::integer(int64_t(chars(v.s).size()));
      if (v.is(K::kList)) return Value::integer(int64_t(v.list->size()));
      if (v.is(K::kDict)) return Value::integer(int64_t(v.dict->size()));
      fail(e.line, "filter 'length' on a value without a length");
    }
    if (f == "tojson") {
      if (!e.names.empty() || e.args.size() > 1)
        fail(e.line, "filter 'tojson' with arguments is not supported");
      std::string s;
      to_json(v, &s, e.line);
      return Value::str(s);
    }
    if (f == "trim") {
      args_of(e, 1, 0, "filter 'trim'");
      return Value::str(strip_chars(to_text(v, e.line), nullptr, true, true));
    }
    if (f == "string") return Value::str(to_text(v, e.line));
    if (f == "upper" || f == "lower") {
      std::string s = to_text(v, e.line);
      for (char &c : s)
        c = char(f == "upper" ? std::toupper(static_cast<unsigned char>(c))
                              : std::tolower(static_cast<unsigned char>(c)));
      return Value::str(s);
    }
    if (f == "default" || f == "d") {
      auto a = args_of(e, 1, 2, "filter 'default'");
      const bool boolean = a.size() > 1 && truthy(a[1]);
      if (v.is(K::kUndefined) || (boolean && !truthy(v)))
        return a.empty() ? Value::str("") : a[0];
      return v;
    }
    if (f == "first" || f == "last") {
      if (!v.is(K::kList))
        fail(e.line, "filter '" + f + "' needs a list");
      if (v.list->empty())
        return Value();
      return f == "first" ? v.list->front() : v.list->back();
    }
    if (f == "join") {
      auto a = args_of(e, 1, 1, "filter 'join'");
      if (!v.is(K::kList))
        fail(e.line, "filter 'join' needs a list");
      std::string sep = a.empty() ? "" : to_text(a[0], e.line), s;
      for (size_t k = 0; k < v.list->size(); ++k)
        s += (k ? sep : "") + to_text((*v.list)[k], e.line);
      return Value::str(s);
    }
    if (f == "list") {
      if (v.is(K::kList)) return v;
      fail(e.line, "filter 'list' on a non-list is not supported");
    }
    if (f == "items") {
      if (!v.is(K::kDict))
        fail(e.line, "filter 'items' needs a dict");
      return dict_items(v);
    }
    fail(e.line, "unsupported filter '" + f + "'");
  }

  static Value dict_items(const Value &v) {
    List l;
    for (const auto &[k, x] : *v.dict)
      l.push_back(Value::of_list({Value::str(k), x}));
    return Value::of_list(std::move(l));
  }

  Value call(const Expr &e) {
    const Expr &fn = *e.a;
    if (fn.kind == Expr::Kind::kName) {
      if (fn.text == "namespace") {
        Dict d;
        if (e.args.size() != e.names.size())
          fail(e.line, "namespace() takes keyword arguments only");
        for (size_t k = 0; k < e.args.size(); ++k)
          d.emplace_back(e.names[k], eval(*e.args[k]));
        return Value::of_dict(std::move(d), K::kNamespace);
      }
      if (fn.text == "raise_exception") {
        auto a = args_of(e, 0, 1, "raise_exception");
        fail(e.line, "template raised: " +
                         (a.empty() ? std::string() : to_text(a[0], e.line)));
      }
      if (fn.text == "range") {
        auto a = args_of(e, 0, 2, "range");
        int64_t lo = 0, hi = 0;
        if (a.size() == 1) hi = a[0].i;
        if (a.size() == 2) { lo = a[0].i; hi = a[1].i; }
        if (hi > lo && uint64_t(hi) - uint64_t(lo) > kMaxListItems)
          fail(e.line, "range(" + std::to_string(lo) + ", " +
                           std::to_string(hi) + ") past the budget of " +
                           std::to_string(kMaxListItems) + " items");
        List l;
        for (int64_t k = lo; k < hi; ++k)
          l.push_back(Value::integer(k));
        return Value::of_list(std::move(l));
      }
      fail(e.line, "unsupported function '" + fn.text + "'");
    }
    if (fn.kind != Expr::Kind::kAttr)
      fail(e.line, "call of an expression that is not a function");
    Value self = eval(*fn.a);
    const std::string &m = fn.text;
    if (self.is(K::kString)) {
      auto a = args_of(e, 0, 2, "method '" + m + "'");
      const std::string &s = self.s;
      auto arg_str = [&](size_t k) -> const std::string & {
        if (k >= a.size() || !a[k].is(K::kString))
          fail(e.line, "method '" + m + "' expects a string argument");
        return a[k].s;
      };
      if (m == "startswith")
        return Value::boolean(s.compare(0, arg_str(0).size(), arg_str(0)) == 0);
      if (m == "endswith") {
        const std::string &x = arg_str(0);
        return Value::boolean(s.size() >= x.size() &&
                              s.compare(s.size() - x.size(), x.size(), x) == 0);
      }
      if (m == "strip" || m == "lstrip" || m == "rstrip") {
        const bool given = !a.empty() && !a[0].is(K::kNone);
        const std::string *set = given ? &arg_str(0) : nullptr;
        return Value::str(strip_chars(s, set, m != "rstrip", m != "lstrip"));
      }
      if (m == "split") {
        List parts;
        if (a.empty() || a[0].is(K::kNone)) {
          std::istringstream in(s);
          std::string w;
          while (in >> w)
            parts.push_back(Value::str(w));
          return Value::of_list(std::move(parts));
        }
        const std::string &sep = arg_str(0);
        if (sep.empty())
          fail(e.line, "split with an empty separator");
        size_t start = 0, hit;
        while ((hit = s.find(sep, start)) != std::string::npos) {
          parts.push_back(Value::str(s.substr(start, hit - start)));
          start = hit + sep.size();
        }
        parts.push_back(Value::str(s.substr(start)));
        return Value::of_list(std::move(parts));
      }
      if (m == "replace") {
        const std::string &from = arg_str(0), &to = arg_str(1);
        if (from.empty())
          fail(e.line, "replace with an empty pattern");
        std::string r;
        size_t start = 0, hit;
        while ((hit = s.find(from, start)) != std::string::npos) {
          r += s.substr(start, hit - start) + to;
          start = hit + from.size();
        }
        return Value::str(r + s.substr(start));
      }
      if (m == "upper" || m == "lower") {
        std::string r = s;
        for (char &c : r)
          c = char(m == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                : std::tolower(static_cast<unsigned char>(c)));
        return Value::str(r);
      }
      fail(e.line, "unsupported string method '" + m + "'");
    }
    if (self.is(K::kDict)) {
      if (m == "items") return dict_items(self);
      if (m == "keys" || m == "values") {
        List l;
        for (const auto &[k, x] : *self.dict)
          l.push_back(m == "keys" ? Value::str(k) : x);
        return Value::of_list(std::move(l));
      }
      if (m == "get") {
        auto a = args_of(e, 0, 2, "method 'get'");
        if (a.empty() || !a[0].is(K::kString))
          fail(e.line, "method 'get' expects a string key");
        const Value *f = self.find(a[0].s);
        return f ? *f : a.size() > 1 ? a[1] : Value::none();
      }
      fail(e.line, "unsupported dict method '" + m + "'");
    }
    if (self.is(K::kUndefined))
      fail(e.line, "method '" + m + "' of an undefined value");
    fail(e.line, "unsupported method '" + m + "'");
  }

  Scope scope_;
  int64_t steps_ = 0;

  void step(int line) {
    if (++steps_ > kMaxRenderSteps)
      fail(line, "the render passed the budget of " +
                     std::to_string(kMaxRenderSteps) +
                     " steps (a loop that does not end?)");
  }

  std::string bounded(std::string s, int line) const {
    if (s.size() > kMaxRenderBytes)
      fail(line, "a string past the budget of " +
                     std::to_string(kMaxRenderBytes) + " bytes");
    return s;
  }

  /// Python's integer + - * // % on int64, refusing what overflows (Python
  /// would go to big integers; a template has no use for them).
  static Value integer_arithmetic(const std::string &op, int64_t x, int64_t y,
                                  int line) {
    int64_t r = 0;
    bool overflow = false;
    if (op == "+")
      overflow = __builtin_add_overflow(x, y, &r);
    else if (op == "-")
      overflow = __builtin_sub_overflow(x, y, &r);
    else if (op == "*")
      overflow = __builtin_mul_overflow(x, y, &r);
    else if (op == "//" || op == "%") {
      // y != 0 was checked; INT64_MIN / -1 is the one quotient that does
      // not fit. Python floors: the remainder takes the divisor's sign.
      if (x == INT64_MIN && y == -1) {
        overflow = op == "//";
      } else {
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;
        }
        r = op == "//" ? q : m;
      }
    } else {
      fail(line, "unsupported operator '" + op + "'");
    }
    if (overflow)
      fail(line, "integer overflow in " + std::to_string(x) + " " + op + " " +
                     std::to_string(y));
    return Value::integer(r);
  }
};

} // namespace
} // namespace detail

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate &&) noexcept = default;
ChatTemplate &ChatTemplate::operator=(ChatTemplate &&) noexcept = default;

Status ChatTemplate::compile(const std::string &source) {
  std::unique_ptr<detail::TemplateNode> root;
  std::string err;
  try {
    err = detail::parse_template(source, &root);
  } catch (const std::exception &e) {
    err = std::string("chat template: ") + e.what();
  }
  if (!err.empty())
    return Status::Error(err);
  root_ = std::move(root);
  return Status::Ok();
}

Status ChatTemplate::render(const std::string &variables_json,
                            std::string *out) const {
  if (!root_)
    return Status::Error("chat template: render before compile");
  detail::ojson vars;
  if (std::string e = parse_json(variables_json, &vars); !e.empty())
    return Status::Error("chat template variables: " + e);
  if (!vars.is_object())
    return Status::Error("chat template: variables must be a JSON object");
  detail::Scope scope;
  scope.frames.emplace_back();
  for (auto it = vars.begin(); it != vars.end(); ++it)
    scope.frames.back()[it.key()] = detail::from_json(it.value());
  detail::Renderer r(std::move(scope));
  try {
    detail::LoopSignal sig;
    r.render(*root_, sig);
  } catch (const detail::RenderError &e) {
    return Status::Error(e.message);
  } catch (const std::exception &e) { // a case no check foresaw: an error,
    return Status::Error(std::string("chat template: ") + e.what()); // not an abort
  }
  *out = std::move(r.out);
  return Status::Ok();
}

} // namespace hyrt
