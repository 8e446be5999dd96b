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
