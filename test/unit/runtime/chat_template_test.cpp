// Chat-template renderer: Jinja semantics the real templates rely on, and
// errors that name unsupported constructs.
#include "hyrt/text/chat_template.h"

#include <gtest/gtest.h>

namespace {

std::string render(const std::string &src, const std::string &vars = "{}") {
  hyrt::ChatTemplate t;
  hyrt::Status s = t.compile(src);
  if (!s.ok())
    return "compile error: " + s.message();
  std::string out;
  s = t.render(vars, &out);
  return s.ok() ? out : "render error: " + s.message();
}

TEST(ChatTemplate, WhitespaceControlAndTrimBlocks) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the
  // indentation before it; "-" strips all whitespace on its side.
  EXPECT_EQ(render("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(render("x  {{- 'y' -}}  z"), "xyz");
}

TEST(ChatTemplate, LoopsNamespacesAndSlices) {
  EXPECT_EQ(render("{% for m in xs[::-1] %}{{ loop.index0 }}{{ m }}"
                   "{% if not loop.last %},{% endif %}{% endfor %}",
                   R"({"xs": ["a", "b", "c"]})"),
            "0c,1b,2a");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for x in xs %}"
                   "{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}",
                   R"({"xs": [1, 2, 3]})"),
            "6");
  // A plain `set` inside a loop does not leak out of it.
  EXPECT_EQ(render("{% set n = 1 %}{% for x in xs %}{% set n = x %}"
                   "{% endfor %}{{ n }}",
                   R"({"xs": [5]})"),
            "1");
}

TEST(ChatTemplate, TestsFiltersAndMethods) {
  EXPECT_EQ(render("{{ a is defined }}{{ b is defined }}{{ a is none }}"
                   "{{ not b is defined }}",
                   R"({"a": null})"),
            "TrueFalseTrueTrue");
  EXPECT_EQ(render("{{ x | tojson }}", R"({"x": {"b": [1, "é\n"], "a": 2.5}})"),
            R"({"b": [1, "é\n"], "a": 2.5})");
  EXPECT_EQ(render("{{ s.split('</think>')[-1].lstrip('\\n') ~ '|' ~ "
                   "(s | length) }}",
                   R"({"s": "r</think>\n\nok"})"),
            "ok|13");
  EXPECT_EQ(render("{{ 'ab' in s }}{{ 'zz' not in s }}", R"({"s": "xaby"})"),
            "TrueTrue");
}

TEST(ChatTemplate, ErrorsNameTheConstruct) {
  EXPECT_NE(render("{% macro f() %}{% endmacro %}").find(
                "unsupported statement 'macro'"),
            std::string::npos);
  EXPECT_NE(render("{{ x | wordcount }}").find("unsupported filter 'wordcount'"),
            std::string::npos);
  EXPECT_NE(render("{% if x %}a").find("'if' without 'endif'"),
            std::string::npos);
  EXPECT_NE(render("{{ raise_exception('no system role') }}")
                .find("template raised: no system role"),
            std::string::npos);
}

} // namespace

namespace {

std::string repeat(const std::string &s, int n) {
  std::string r;
  for (int k = 0; k < n; ++k)
    r += s;
  return r;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

// A template comes with a downloaded checkpoint. Before these bounds, deep
// nesting overflowed the parser's or renderer's stack (SIGSEGV), range() of
// a huge number aborted on memory, nested loops ran for hours and integer
// arithmetic wrapped or trapped. Each is now an error naming its budget.
TEST(ChatTemplateSandbox, DeepNestingIsAnErrorNotACrash) {
  const std::string parens = render("{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}");
  EXPECT_TRUE(contains(parens, "tokens, expected at most 2048")) << parens;
  const std::string nested = render("{{ " + repeat("(", 65) + "1" + repeat(")", 65) + " }}");
  EXPECT_TRUE(contains(nested, "expressions nest deeper than 64 levels")) << nested;
  EXPECT_EQ(render("{{ " + repeat("(", 60) + "1" + repeat(")", 60) + " }}"), "1");
  const std::string nots = render("{{ " + repeat("not ", 1000) + "true }}");
  EXPECT_TRUE(contains(nots, "nest deeper than 64")) << nots;
  const std::string ifs = render(repeat("{% if true %}", 100) + "x" + repeat("{% endif %}", 100));
  EXPECT_TRUE(contains(ifs, "statements nest deeper than 64 levels")) << ifs;
  EXPECT_EQ(render(repeat("{% if true %}", 30) + "x" + repeat("{% endif %}", 30)), "x");
  // A left-leaning chain is built by a loop: the token bound bounds it.
  const std::string chain = render("{{ 1" + repeat(" + 1", 5000) + " }}");
  EXPECT_TRUE(contains(chain, "tokens, expected at most 2048")) << chain;
  EXPECT_EQ(render("{{ 1" + repeat(" + 1", 900) + " }}"), "901");
}

TEST(ChatTemplateSandbox, BudgetsOfStepsMemoryAndOutput) {
  const std::string range = render("{% for i in range(10000000000) %}{% endfor %}");
  EXPECT_TRUE(contains(range, "past the budget of 100000 items")) << range;
  const std::string loops = render(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  EXPECT_TRUE(contains(loops, "budget of 2000000 steps")) << loops;
  const std::string doubling = render(
      "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
      "{% endfor %}{{ ns.s | length }}");
  EXPECT_TRUE(contains(doubling, "a string past the budget of 16777216 bytes")) << doubling;
  const std::string output = render(
      "{% for i in range(100000) %}{% for j in range(99) %}" + repeat("0123456789ABCDEF", 64) +
      "{% endfor %}{% endfor %}");
  EXPECT_TRUE(contains(output, "budget of 16777216 bytes")) << output;
}

// A namespace that holds itself, directly, in a list or through another
// namespace, would be a reference cycle no shared pointer frees: the fuzz
// smoke run's LeakSanitizer found `{% set ns.n = ns %}` leaking each
// render. It is an error naming the statement; holding another namespace
// or the same list twice stays fine.
TEST(ChatTemplateSandbox, ANamespaceCannotHoldItself) {
  const std::string self = render("{% set ns = namespace(a=0) %}{% set ns.a = ns %}x");
  EXPECT_TRUE(contains(self, "line 1: 'set ns.a' would make the namespace hold itself")) << self;
  EXPECT_TRUE(contains(render("{% set ns = namespace(a=0) %}{% set ns.a = [1, {'k': [ns]}] %}"),
                       "hold itself"));
  const std::string two = render(
      "{% set p = namespace(a=0) %}{% set q = namespace(b=0) %}{% set p.a = q %}"
      "{% set q.b = p %}");
  EXPECT_TRUE(contains(two, "'set q.b' would make the namespace hold itself")) << two;
  EXPECT_EQ(render("{% set p = namespace(a=0) %}{% set q = namespace(b=7) %}{% set l = [1, 2] %}"
                   "{% set p.a = [q, l, l] %}{{ p.a[0].b }}{{ p.a[2] | length }}"),
            "72");
}

TEST(ChatTemplateSandbox, IntegerArithmeticIsChecked) {
  EXPECT_TRUE(contains(render("{{ 9223372036854775807 + 1 }}"), "integer overflow"));
  EXPECT_TRUE(contains(render("{{ 4611686018427387904 * 4 }}"), "integer overflow"));
  EXPECT_TRUE(contains(render("{{ (-9223372036854775807 - 1) // -1 }}"), "integer overflow"));
  EXPECT_TRUE(contains(render("{{ -(-9223372036854775807 - 1) }}"), "integer overflow"));
  // INT64_MIN % -1 is 0 in Python (and trapped in C++).
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) % -1 }}"), "0");
  // Python floors: -7 // 2 == -4, -7 % 2 == 1, 7 % -2 == -1.
  EXPECT_EQ(render("{{ -7 // 2 }} {{ -7 % 2 }} {{ 7 % -2 }} {{ 7 // -2 }}"), "-4 1 -1 -4");
  EXPECT_EQ(render("{{ true + 1 }}"), "2");
}

// Found by fuzz_chat_template: a string literal that is not UTF-8 made the
// parser's JSON encoding throw, which aborted the process.
TEST(ChatTemplateSandbox, InvalidUtf8InALiteralIsText) {
  EXPECT_EQ(render("{{ 'a\xe1' }}b"), "a\xef\xbf\xbd" "b");
}
