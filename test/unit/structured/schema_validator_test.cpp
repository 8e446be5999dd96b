// schema_validator_test.cpp - the validator on its own: for each keyword an
// instance that satisfies it and one that does not.
#include "hyrt/structured/schema_validator.h"

#include <gtest/gtest.h>

namespace {

using Json = nlohmann::ordered_json;

void expectValid(const char *schema, const char *instance) {
  hyrt::Status s = hyrt::structured::validate_json(Json::parse(schema),
                                                   Json::parse(instance));
  EXPECT_TRUE(s.ok()) << schema << " / " << instance << ": " << s.message();
}

void expectInvalid(const char *schema, const char *instance,
                   const char *keyword) {
  hyrt::Status s = hyrt::structured::validate_json(Json::parse(schema),
                                                   Json::parse(instance));
  EXPECT_FALSE(s.ok()) << schema << " / " << instance;
  EXPECT_NE(s.message().find(keyword), std::string::npos) << s.message();
}

TEST(SchemaValidator, Types) {
  expectValid(R"({"type":"integer"})", "3");
  expectValid(R"({"type":"integer"})", "3.0");
  expectInvalid(R"({"type":"integer"})", "3.5", "type");
  expectInvalid(R"({"type":"string"})", "3", "type");
  expectValid(R"({"type":["string","null"]})", "null");
  expectInvalid(R"({"type":["string","null"]})", "false", "type");
  expectValid(R"({"type":"number"})", "-1e5");
  expectInvalid(R"({"type":"object"})", "[]", "type");
  expectInvalid(R"({"type":"boolean"})", "0", "type");
}

TEST(SchemaValidator, ObjectKeywords) {
  const char *s = R"({"type":"object","properties":{"a":{"type":"integer"}},
    "required":["a"],"additionalProperties":false})";
  expectValid(s, R"({"a":1})");
  expectInvalid(s, R"({})", "required");
  expectInvalid(s, R"({"a":"x"})", "type");
  expectInvalid(s, R"({"a":1,"b":2})", "schema false");
  expectValid(R"({"type":"object","additionalProperties":{"type":"string"}})",
              R"({"x":"y"})");
  expectInvalid(R"({"type":"object","additionalProperties":{"type":"string"}})",
                R"({"x":1})", "type");
}

TEST(SchemaValidator, ArrayKeywords) {
  const char *s = R"({"type":"array","items":{"type":"integer"},
    "minItems":1,"maxItems":2})";
  expectValid(s, "[1,2]");
  expectInvalid(s, "[]", "minItems");
  expectInvalid(s, "[1,2,3]", "maxItems");
  expectInvalid(s, "[1,\"a\"]", "type");
  const char *t = R"({"prefixItems":[{"type":"string"},{"type":"integer"}],
    "items":false})";
  expectValid(t, R"(["a",1])");
  expectInvalid(t, R"([1,1])", "type");
  expectInvalid(t, R"(["a",1,2])", "schema false");
}

TEST(SchemaValidator, StringKeywords) {
  expectValid(R"({"minLength":2,"maxLength":3})", R"("日本")");
  expectInvalid(R"({"minLength":2,"maxLength":3})", R"("日")", "minLength");
  expectInvalid(R"({"minLength":2,"maxLength":3})", R"("日本語!")",
                "maxLength");
  expectValid(R"({"pattern":"^[a-z]+$"})", R"("abc")");
  expectInvalid(R"({"pattern":"^[a-z]+$"})", R"("abC")", "pattern");
  expectValid(R"({"pattern":"b"})", R"("abc")"); // search, not full match
  expectValid(R"({"format":"date"})", R"("2024-02-29")");
  expectInvalid(R"({"format":"date"})", R"("2023-02-29")", "format");
  expectInvalid(R"({"format":"date"})", R"("2023-13-01")", "format");
  expectValid(R"({"format":"date-time"})", R"("2023-01-05T10:11:12.5+01:00")");
  expectInvalid(R"({"format":"date-time"})", R"("2023-01-05 10:11:12Z")",
                "format");
  expectValid(R"({"format":"uuid"})",
              R"("123e4567-e89b-12d3-a456-426614174000")");
  expectInvalid(R"({"format":"uuid"})", R"("123e4567e89b12d3a456426614174000")",
                "format");
  expectValid(R"({"format":"email"})", R"("a.b@example.org")");
  expectInvalid(R"({"format":"email"})", R"("a.b@example")", "format");
  expectValid(R"({"format":"ipv4"})", R"("192.168.0.255")");
  expectInvalid(R"({"format":"ipv4"})", R"("192.168.0.256")", "format");
}

TEST(SchemaValidator, NumberKeywords) {
  const char *s = R"({"minimum":-2.5,"exclusiveMaximum":10})";
  expectValid(s, "-2.5");
  expectValid(s, "9.99");
  expectInvalid(s, "10", "exclusiveMaximum");
  expectInvalid(s, "-2.6", "minimum");
  expectInvalid(R"({"exclusiveMinimum":0})", "0", "exclusiveMinimum");
  expectInvalid(R"({"maximum":3})", "4", "maximum");
}

TEST(SchemaValidator, EnumConstAndCombinators) {
  expectValid(R"({"enum":[1,"a",{"k":[1]}]})", R"({"k":[1]})");
  expectInvalid(R"({"enum":[1,"a"]})", R"("b")", "enum");
  expectValid(R"({"const":{"a":1,"b":2}})", R"({"b":2,"a":1})");
  expectInvalid(R"({"const":"x"})", R"("y")", "const");
  expectValid(R"({"anyOf":[{"type":"string"},{"type":"integer"}]})", "1");
  expectInvalid(R"({"anyOf":[{"type":"string"},{"type":"integer"}]})", "1.5",
                "anyOf");
  expectInvalid(R"({"oneOf":[{"type":"number"},{"type":"integer"}]})", "1",
                "oneOf");
  expectValid(R"({"oneOf":[{"type":"number"},{"type":"integer"}]})", "1.5");
  expectInvalid(R"({"allOf":[{"minimum":1},{"maximum":2}]})", "3", "maximum");
}

TEST(SchemaValidator, RefsAndErrors) {
  const char *tree = R"({"$defs":{"n":{"type":"object","properties":{
    "v":{"type":"integer"},"k":{"type":"array","items":{"$ref":"#/$defs/n"}}},
    "required":["v"]}},"$ref":"#/$defs/n"})";
  expectValid(tree, R"({"v":1,"k":[{"v":2,"k":[{"v":3}]}]})");
  expectInvalid(tree, R"({"v":1,"k":[{"v":2,"k":[{"w":3}]}]})", "required");
  hyrt::Status s = hyrt::structured::validate_json(
      Json::parse(R"({"uniqueItems":true})"), Json::parse("[1]"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("uniqueItems"), std::string::npos);
  s = hyrt::structured::validate_json(Json::parse(R"({"$ref":"#/nope"})"),
                                      Json::parse("1"));
  EXPECT_FALSE(s.ok());
  // A $ref cycle ends at the depth bound with an error, not a crash.
  s = hyrt::structured::validate_json(Json::parse(R"({"$ref":"#"})"),
                                      Json::parse("1"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("$ref nesting"), std::string::npos);
}

} // namespace
