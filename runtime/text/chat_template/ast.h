// The parsed form of a chat template (private to libhyrt): expression and
// statement nodes produced by chat_template_parse.cpp and walked by
// chat_template_eval.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace hyrt::detail {

struct Expr {
  enum class Kind {
    kLiteral,   ///< text: JSON of the constant
    kName,      ///< text: variable
    kAttr,      ///< a.text
    kIndex,     ///< a[b]
    kSlice,     ///< a[b:c:d]; missing parts are null
    kCall,      ///< a(args..., names[i]=kwargs...)
    kFilter,    ///< args[0] | text(args[1..])
    kTest,      ///< args[0] is [not] text(args[1..]); negate
    kUnary,     ///< text in {"not", "-"} applied to a
    kBinary,    ///< a text b
    kCondition, ///< a if b else c
    kList,      ///< [args...]
    kDict,      ///< {names[i]: args[i]}
  };
  Kind kind = Kind::kLiteral;
  std::string text;
  std::unique_ptr<Expr> a, b, c, d;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::string> names; ///< keyword names (kCall, kDict)
  bool negate = false;
  int line = 0;
};

struct TemplateNode {
  enum class Kind { kBlock, kText, kOutput, kIf, kFor, kSet, kBreak, kContinue };
  Kind kind = Kind::kBlock;
  std::string text;                     ///< kText; kSet: name
  std::string attr;                     ///< kSet: namespace attribute
  std::vector<std::string> loop_vars;   ///< kFor
  std::unique_ptr<Expr> expr;           ///< output, set value, for iterable
  std::unique_ptr<Expr> filter;         ///< kFor: `if` clause
  /// kBlock: children. kIf: (condition, body) pairs, condition null = else.
  /// kFor: body and optional else body.
  std::vector<std::unique_ptr<TemplateNode>> children;
  std::vector<std::unique_ptr<Expr>> conditions; ///< kIf
  int line = 0;
};

/// Parses a template into a kBlock node; "" on success, else the error.
std::string parse_template(const std::string &source,
                           std::unique_ptr<TemplateNode> *out);

} // namespace hyrt::detail
