// constrained_generation_test.cpp - random constrained generation over the
// real Qwen3 and DeepSeek-V3 vocabularies: at every step a token is drawn
// among those the mask allows (seeded), until the constraint is complete
// and the stop token is drawn. Half the draws are uniform over the allowed
// tokens; the other half first pick a first byte uniformly, then a token
// starting with it: a uniform draw alone almost never closes an unbounded
// string (among ~150k allowed tokens, few hold a '"'). The text must parse as JSON and
// validate against the schema (schema_validator, written apart from the
// compiler). Along the way, tokens the mask forbids are checked to be
// really unreadable, and allowed ones readable, by an independent matcher.
#include "hyrt/structured/grammar_matcher.h"
#include "hyrt/structured/schema_validator.h"
#include "hyrt/support/json.h"
#include "structured_test_util.h"

#include <random>

namespace {

using hyc::test::sharedTokenizer;
using hyrt::structured::CompiledConstraint;
using hyrt::structured::GrammarConstraint;
using hyrt::structured::GrammarMatcher;

struct SchemaCase {
  const char *name;
  const char *schema;
};

const SchemaCase kCases[] = {
    {"person",
     R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
        "age":{"type":"integer","minimum":0,"maximum":130}},
        "required":["name","age"]})"},
    {"optional_members",
     R"({"type":"object","properties":{"a":{"type":"boolean"},
        "b":{"type":"null"},"c":{"type":"number"}},"required":["b"]})"},
    {"mixed_enum", R"({"enum":["red","green","blue",1,null,{"k":[1,2]}]})"},
    {"const_member",
     R"({"type":"object","properties":{"kind":{"const":"point"},
        "x":{"type":"integer"}},"required":["kind","x"]})"},
    {"int_array_2_to_5",
     R"({"type":"array","items":{"type":"integer","minimum":-50,"maximum":50},
        "minItems":2,"maxItems":5})"},
    {"nested_object",
     R"({"type":"object","properties":{"user":{"type":"object","properties":{
        "id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string",
        "maxLength":6},"maxItems":3}},"required":["id","tags"]}},
        "required":["user"]})"},
    {"any_of",
     R"({"anyOf":[{"type":"string","maxLength":5},{"type":"integer"},
        {"type":"array","items":{"type":"boolean"},"maxItems":3}]})"},
    {"type_array", R"({"type":["string","null"],"maxLength":8})"},
    {"string_3_to_6", R"({"type":"string","minLength":3,"maxLength":6})"},
    {"pattern", R"({"type":"string","pattern":"^[A-Z]{2}-[0-9]{3,4}$"})"},
    {"formats",
     R"({"type":"object","properties":{"d":{"type":"string","format":"date"},
        "t":{"type":"string","format":"date-time"},
        "u":{"type":"string","format":"uuid"},
        "e":{"type":"string","format":"email"},
        "ip":{"type":"string","format":"ipv4"}},
        "required":["d","t","u","e","ip"]})"},
    {"number_range",
     R"({"type":"number","minimum":-2.5,"exclusiveMaximum":10})"},
    {"integer_exclusive",
     R"({"type":"integer","exclusiveMinimum":-3,"exclusiveMaximum":1000})"},
    {"recursive_tree",
     R"({"$defs":{"node":{"type":"object","properties":{
        "v":{"type":"integer","minimum":0,"maximum":9},
        "kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},
        "required":["v"]}},"$ref":"#/$defs/node"})"},
    {"additional_boolean",
     R"({"type":"object","properties":{"id":{"type":"integer"}},
        "required":["id"],"additionalProperties":{"type":"boolean"}})"},
    {"any_member",
     R"({"type":"object","properties":{"meta":{}},"required":["meta"]})"},
    {"tuple",
     R"({"type":"array","prefixItems":[{"type":"string","maxLength":4},
        {"type":"integer"}],"items":false})"},
    {"boolean", R"({"type":"boolean"})"},
    {"one_of_disjoint",
     R"({"oneOf":[{"type":"object","properties":{"cat":{"const":true}},
        "required":["cat"]},{"type":"object","properties":{
        "dog":{"type":"integer"}},"required":["dog"]}]})"},
    {"unicode_enum", R"({"enum":["日本語","naïve","emoji 😀"]})"},
    {"all_of_definitions",
     R"({"allOf":[{"$ref":"#/definitions/p"}],"definitions":{"p":{
        "type":"object","properties":{"q":{"type":"string","maxLength":10,
        "description":"a note"}},"required":["q"]}}})"},
    {"nested_arrays",
     R"({"type":"array","items":{"type":"array","items":{"type":"array",
        "items":{"type":"integer"},"maxItems":2},"maxItems":2},"maxItems":2})"},
    {"unicode_string", R"({"type":"string","minLength":4,"maxLength":4})"},
    {"time_and_optional",
     R"({"type":"object","properties":{"at":{"type":"string","format":"time"},
        "note":{"type":["string","null"],"maxLength":3}},"required":["at"]})"},
};

// Draws tokens uniformly among the allowed ones until the stop token;
// returns the text, or "" after a test failure.
std::string generate(const hyc::test::LoadedTokenizer &lt,
                     std::shared_ptr<const hyrt::structured::Grammar> grammar,
                     uint32_t seed) {
  auto compiled = std::make_shared<CompiledConstraint>(grammar, lt.vocab);
  GrammarConstraint constraint(compiled);
  GrammarMatcher check(grammar); // independent of the mask machinery
  std::mt19937 rng(seed);
  const auto &v = *lt.vocab;
  std::string text;
  std::vector<uint64_t> bits;
  std::vector<int32_t> allowed;
  for (int step = 0; step < 8000; ++step) {
    constraint.allowed(&bits);
    allowed.clear();
    for (int32_t id = 0; id < v.size(); ++id)
      if ((bits[id >> 6] >> (id & 63)) & 1)
        allowed.push_back(id);
    if (allowed.empty()) {
      ADD_FAILURE() << "dead end after " << text;
      return "";
    }
    // Forbidden and allowed tokens, sampled, against a plain matcher.
    for (int k = 0; k < 40; ++k) {
      const int32_t id = int32_t(rng() % v.size());
      if (v.is_stop(id) || v.bytes(id).empty())
        continue;
      const bool ok = (bits[id >> 6] >> (id & 63)) & 1;
      EXPECT_EQ(ok, check.can_advance(v.bytes(id)))
          << "token " << id << " '" << v.bytes(id) << "' after '" << text
          << "'";
    }
    int32_t pick = allowed[rng() % allowed.size()];
    if (rng() % 2) {
      std::vector<int32_t> by_byte[256];
      for (int32_t id : allowed)
        by_byte[v.is_stop(id) ? 0 : uint8_t(v.bytes(id)[0])].push_back(id);
      std::vector<int> bytes;
      for (int b = 0; b < 256; ++b)
        if (!by_byte[b].empty())
          bytes.push_back(b);
      const auto &group = by_byte[bytes[rng() % bytes.size()]];
      pick = group[rng() % group.size()];
    }
    if (v.is_stop(pick)) {
      EXPECT_TRUE(constraint.complete());
      EXPECT_TRUE(check.complete());
      EXPECT_TRUE(constraint.accept(pick));
      return text;
    }
    for (int32_t stop : v.stop_ids())
      EXPECT_EQ(bool((bits[stop >> 6] >> (stop & 63)) & 1),
                constraint.complete())
          << "stop token allowed iff complete, after '" << text << "'";
    if (!constraint.accept(pick) || !check.advance(v.bytes(pick))) {
      ADD_FAILURE() << "allowed token " << pick << " refused after " << text;
      return "";
    }
    text += v.bytes(pick);
    if (!constraint.can_continue()) {
      EXPECT_TRUE(constraint.complete()) << text;
      return text;
    }
  }
  ADD_FAILURE() << "no end after 8000 tokens: " << text.substr(0, 300);
  return "";
}

class ConstrainedGeneration
    : public ::testing::TestWithParam<std::tuple<const char *, SchemaCase>> {};

TEST_P(ConstrainedGeneration, OutputParsesAndValidates) {
  const auto &[tokenizer_name, c] = GetParam();
  const hyc::test::LoadedTokenizer *lt = sharedTokenizer(tokenizer_name);
  ASSERT_NE(lt, nullptr);
  auto grammar = hyc::test::compileOrFail(c.schema);
  ASSERT_NE(grammar, nullptr);
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(c.schema);
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::string text = generate(*lt, grammar, seed);
    ASSERT_FALSE(text.empty()) << "seed " << seed;
    nlohmann::ordered_json instance;
    const std::string e = hyrt::parse_json(text, &instance);
    ASSERT_TRUE(e.empty()) << text << ": " << e;
    hyrt::Status s = hyrt::structured::validate_json(schema, instance);
    EXPECT_TRUE(s.ok()) << text << ": " << s.message();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schemas, ConstrainedGeneration,
    ::testing::Combine(::testing::Values("qwen3", "deepseek_v3"),
                       ::testing::ValuesIn(kCases)),
    [](const auto &info) {
      return std::string(std::get<0>(info.param)) + "_" +
             std::get<1>(info.param).name;
    });

TEST(ConstrainedGeneration, JsonObjectModeGivesObjects) {
  for (const char *name : {"qwen3", "deepseek_v3"}) {
    const hyc::test::LoadedTokenizer *lt = sharedTokenizer(name);
    ASSERT_NE(lt, nullptr);
    auto grammar =
        hyrt::structured::json_object_grammar(hyrt::structured::SchemaLimits{});
    for (uint32_t seed : {7u, 8u}) {
      const std::string text = generate(*lt, grammar, seed);
      ASSERT_FALSE(text.empty());
      nlohmann::ordered_json instance;
      ASSERT_TRUE(hyrt::parse_json(text, &instance).empty()) << text;
      EXPECT_TRUE(instance.is_object()) << text;
    }
  }
}

} // namespace
