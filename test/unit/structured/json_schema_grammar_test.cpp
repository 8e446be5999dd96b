// json_schema_grammar_test.cpp - the schema compiler at the byte level:
// which texts the automaton reads as complete, which it refuses, and the
// errors (clear, bounded in time) for unsupported and hostile schemas.
#include "hyrt/structured/grammar_matcher.h"
#include "structured_test_util.h"

#include <chrono>

namespace {

using hyrt::structured::GrammarMatcher;
using hyrt::structured::SchemaLimits;

bool matches(const std::shared_ptr<const hyrt::structured::Grammar> &g,
             const std::string &text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.complete();
}

std::string compileError(const std::string &schema,
                         SchemaLimits limits = SchemaLimits{}) {
  std::shared_ptr<const hyrt::structured::Grammar> g;
  hyrt::Status s = hyrt::structured::compile_json_schema_text(schema, limits, &g);
  return s.ok() ? "" : s.message();
}

TEST(JsonSchemaGrammar, IntegerRangesAreExact) {
  const std::pair<int, int> ranges[] = {{-13, 127}, {0, 9}, {5, 5},
                                        {-100, -7}, {99, 1001}};
  for (auto [lo, hi] : ranges) {
    auto g = hyc::test::compileOrFail(
        R"({"type":"integer","minimum":)" + std::to_string(lo) +
        R"(,"maximum":)" + std::to_string(hi) + "}");
    ASSERT_NE(g, nullptr);
    for (int x = lo - 150; x <= hi + 150; ++x)
      EXPECT_EQ(matches(g, std::to_string(x)), x >= lo && x <= hi)
          << x << " in [" << lo << ", " << hi << "]";
    EXPECT_FALSE(matches(g, "0" + std::to_string(std::abs(hi))));
  }
}

TEST(JsonSchemaGrammar, NumberBoundsNeverLetOutsideValuesThrough) {
  auto g = hyc::test::compileOrFail(
      R"({"type":"number","minimum":-2.5,"exclusiveMaximum":10})");
  for (const char *ok : {"0", "9.75", "-2", "-1.5", "3", "9"})
    EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char *bad : {"10", "10.0", "-3", "-2.6", "11", "1e2", "01"})
    EXPECT_FALSE(matches(g, bad)) << bad;
  auto any = hyc::test::compileOrFail(R"({"type":"number"})");
  for (const char *ok : {"0", "-0.5", "1e5", "12.25E-3"})
    EXPECT_TRUE(matches(any, ok)) << ok;
  for (const char *bad : {"1.", ".5", "+1", "1e", "--1", "0x1"})
    EXPECT_FALSE(matches(any, bad)) << bad;
}

TEST(JsonSchemaGrammar, StringsAreValidUtf8AndEscapes) {
  auto g = hyc::test::compileOrFail(R"({"type":"string","maxLength":3})");
  EXPECT_TRUE(matches(g, R"("a\"\\")"));
  EXPECT_TRUE(matches(g, "\"\\u00e9\""));
  EXPECT_TRUE(matches(g, "\"日本語\""));
  EXPECT_TRUE(matches(g, "\"\xF0\x9F\x98\x80\"")); // U+1F600 is one char
  EXPECT_FALSE(matches(g, "\"日本語x\""));          // 4 characters
  EXPECT_FALSE(matches(g, "\"\\ud800\""));          // lone surrogate
  EXPECT_FALSE(matches(g, "\"\xED\xA0\x80\""));     // surrogate as UTF-8
  EXPECT_FALSE(matches(g, "\"\xC0\x80\""));         // overlong
  EXPECT_FALSE(matches(g, "\"a\nb\""));              // raw control
  EXPECT_FALSE(matches(g, "\"\\x41\""));             // not a JSON escape
  auto min = hyc::test::compileOrFail(R"({"type":"string","minLength":2})");
  EXPECT_FALSE(matches(min, "\"é\""));
  EXPECT_TRUE(matches(min, "\"éé\""));
}

TEST(JsonSchemaGrammar, ObjectsFollowDeclaredOrderAndWhitespacePolicy) {
  auto g = hyc::test::compileOrFail(
      R"({"type":"object","properties":{"b":{"type":"integer"},
      "a":{"type":"boolean"},"c":{"type":"null"}},"required":["a"]})");
  EXPECT_TRUE(matches(g, R"({"a":true})"));
  EXPECT_TRUE(matches(g, R"({"b":1,"a":false,"c":null})"));
  EXPECT_TRUE(matches(g, R"({"b": 1, "a": false})"));
  EXPECT_FALSE(matches(g, R"({"a":true,"b":1})"));  // declared order
  EXPECT_FALSE(matches(g, R"({"b":1})"));           // a is required
  EXPECT_FALSE(matches(g, R"({"a":true,"d":1})"));  // no extra members
  EXPECT_FALSE(matches(g, R"({"a":  true})"));      // one space at most
  EXPECT_FALSE(matches(g, R"({ "a":true})"));       // none after '{'
  EXPECT_FALSE(matches(g, "{\"a\":\ntrue}"));       // no newlines
  EXPECT_FALSE(matches(g, R"({"a":true,})"));
}

TEST(JsonSchemaGrammar, EnumConstPatternAndRefs) {
  auto e = hyc::test::compileOrFail(R"({"enum":["ab","abc",3,null]})");
  for (const char *ok : {R"("ab")", R"("abc")", "3", "null"})
    EXPECT_TRUE(matches(e, ok)) << ok;
  for (const char *bad : {R"("a")", R"("abcd")", "4", "\"3\""})
    EXPECT_FALSE(matches(e, bad)) << bad;
  auto p = hyc::test::compileOrFail(
      R"({"type":"string","pattern":"^(ab|c\"d)[0-9]{2}$"})");
  EXPECT_TRUE(matches(p, R"("ab12")"));
  EXPECT_TRUE(matches(p, R"("c\"d00")")); // '"' written as its escape
  EXPECT_FALSE(matches(p, R"("ab1")"));
  EXPECT_FALSE(matches(p, R"("xab12")"));
  auto r = hyc::test::compileOrFail(
      R"({"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/a"}}},
          "$ref":"#/$defs/a"})");
  // Recursion nests on the stack, up to its depth limit (32).
  EXPECT_TRUE(matches(r, std::string(31, '[') + std::string(31, ']')));
  EXPECT_FALSE(matches(r, std::string(40, '[') + std::string(40, ']')));
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreNamed) {
  const std::pair<const char *, const char *> cases[] = {
      {R"({"type":"array","uniqueItems":true})", "\"uniqueItems\""},
      {R"({"not":{"type":"string"}})", "\"not\""},
      {R"({"type":"object","patternProperties":{"a":{}}})",
       "\"patternProperties\""},
      {R"({"type":"integer","multipleOf":3})", "\"multipleOf\""},
      {R"({"type":"strin"})", "unknown type \"strin\""},
      {R"({"type":"string","pattern":"(?=a)b"})", "lookaround"},
      {R"({"type":"string","pattern":"(a)\\1"})", "unsupported escape"},
      {R"({"$ref":"http://example.com/s.json"})", "only references inside"},
      {R"({"$ref":"#/$defs/missing"})", "points to nothing"},
      {R"({"properties":{"a":false},"required":["a"]})", "admits no value"},
      {R"({"type":"integer","minimum":5,"maximum":4})", "no integer"},
      {R"({"type":"object","required":["x"],"additionalProperties":false})",
       "\"required\" names \"x\""},
  };
  for (auto [schema, expected] : cases) {
    const std::string e = compileError(schema);
    EXPECT_NE(e.find(expected), std::string::npos)
        << schema << " gave: '" << e << "'";
  }
}

TEST(JsonSchemaGrammar, HostileSchemasFailFastWithClearErrors) {
  const auto start = std::chrono::steady_clock::now();
  std::string deep;
  for (int i = 0; i < 10000; ++i)
    deep += R"({"type":"array","items":)";
  deep += "{}" + std::string(10000, '}');
  EXPECT_NE(compileError(deep).find("deeper than"), std::string::npos);

  std::string nested = "{}";
  for (int i = 0; i < 40; ++i) // within JSON's depth, beyond the schema's
    nested = R"({"items":)" + nested + "}";
  EXPECT_NE(compileError(nested).find("nest deeper than 32"),
            std::string::npos);

  std::string huge = R"({"enum":[)";
  for (int i = 0; i < 100000; ++i)
    huge += (i ? ",\"v" : "\"v") + std::to_string(i) + "\"";
  huge += "]}";
  EXPECT_NE(compileError(huge).find("100000 values"), std::string::npos);

  EXPECT_NE(compileError(R"({"$ref":"#"})").find("admits no finite text"),
            std::string::npos);
  EXPECT_NE(compileError(R"({"$defs":{"a":{"$ref":"#/$defs/b"},
      "b":{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},
      "required":["x"]}},"$ref":"#/$defs/a"})")
                .find("admits no finite text"),
            std::string::npos);
  EXPECT_NE(compileError(R"({"type":"string","maxLength":1000000000})")
                .find("at most 10000"),
            std::string::npos);
  // Many bounded strings multiply into too many states.
  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i < 40; ++i)
    wide += (i ? ",\"p" : "\"p") + std::to_string(i) +
            R"(":{"type":"string","maxLength":9000})";
  wide += "}}";
  EXPECT_NE(compileError(wide).find("states"), std::string::npos);
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  EXPECT_LT(seconds, 10.0) << "hostile schemas must be refused quickly";
}

TEST(JsonSchemaGrammar, ResponseFormats) {
  std::shared_ptr<const hyrt::structured::Grammar> g;
  using Json = nlohmann::ordered_json;
  EXPECT_TRUE(hyrt::structured::compile_response_format(
                  Json::parse(R"({"type":"text"})"), SchemaLimits{}, &g)
                  .ok());
  EXPECT_EQ(g, nullptr);
  ASSERT_TRUE(hyrt::structured::compile_response_format(
                  Json::parse(R"({"type":"json_object"})"), SchemaLimits{}, &g)
                  .ok());
  EXPECT_TRUE(matches(g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_FALSE(matches(g, "[1]"));
  ASSERT_TRUE(hyrt::structured::compile_response_format(
                  Json::parse(R"({"type":"json_schema","json_schema":{
                      "name":"x","schema":{"type":"integer"}}})"),
                  SchemaLimits{}, &g)
                  .ok());
  EXPECT_TRUE(matches(g, "42"));
  hyrt::Status s = hyrt::structured::compile_response_format(
      Json::parse(R"({"type":"xml"})"), SchemaLimits{}, &g);
  EXPECT_NE(s.message().find("\"xml\""), std::string::npos);
}

} // namespace
