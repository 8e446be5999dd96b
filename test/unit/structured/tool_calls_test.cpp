// tool_calls_test.cpp - tool-call recognition on assistant turns rendered
// by the real Qwen3 and DeepSeek-V3 chat templates (cases.json), streamed in
// every split; family detection from the real templates; and the grammar
// forcing one call, sampled over the real vocabulary and parsed back.
#include "hyrt/structured/grammar_matcher.h"
#include "hyrt/structured/schema_validator.h"
#include "hyrt/structured/tool_calls.h"
#include "hyrt/support/json.h"
#include "structured_test_util.h"

#include <fstream>
#include <random>
#include <sstream>

namespace {

using hyrt::structured::ToolCallDelta;
using hyrt::structured::ToolCallFormat;
using hyrt::structured::ToolCallParser;
using Json = nlohmann::ordered_json;

Json readJson(const std::string &rel) {
  std::ifstream in(hyc::test::sharedPath(rel));
  std::stringstream ss;
  ss << in.rdbuf();
  Json j;
  EXPECT_TRUE(hyrt::parse_json(ss.str(), &j).empty()) << rel;
  return j;
}

// The rendered chat of `id` in cases.json, and its assistant message.
std::pair<std::string, Json> renderedChat(const std::string &tokenizer,
                                          const std::string &id) {
  Json cases = readJson("tokenizers/" + tokenizer + "/cases.json");
  for (const Json &chat : cases["chats"])
    if (chat["id"] == id)
      for (const Json &m : chat["messages"])
        if (m["role"] == "assistant" && m.contains("tool_calls"))
          return {chat["rendered"].get<std::string>(), m};
  ADD_FAILURE() << "no chat " << id;
  return {};
}

std::string between(const std::string &s, const std::string &a,
                    const std::string &b) {
  const size_t i = s.find(a);
  const size_t j = s.find(b, i + a.size());
  EXPECT_NE(i, std::string::npos);
  EXPECT_NE(j, std::string::npos);
  return s.substr(i + a.size(), j - i - a.size());
}

// Same result whole, in every split in two, and byte by byte.
void expectStreamingAgrees(ToolCallFormat f, const std::string &text,
                           const ToolCallDelta &whole) {
  auto same = [&](const ToolCallDelta &d, const std::string &how) {
    EXPECT_EQ(d.content, whole.content) << how;
    ASSERT_EQ(d.calls.size(), whole.calls.size()) << how;
    for (size_t i = 0; i < d.calls.size(); ++i) {
      EXPECT_EQ(d.calls[i].name, whole.calls[i].name) << how;
      EXPECT_EQ(d.calls[i].arguments, whole.calls[i].arguments) << how;
    }
  };
  auto collect = [&](const std::vector<std::string> &pieces) {
    ToolCallParser p(f);
    ToolCallDelta all;
    for (const std::string &piece : pieces) {
      ToolCallDelta d = p.feed(piece);
      all.content += d.content;
      all.calls.insert(all.calls.end(), d.calls.begin(), d.calls.end());
    }
    ToolCallDelta d = p.finish();
    all.content += d.content;
    all.calls.insert(all.calls.end(), d.calls.begin(), d.calls.end());
    return all;
  };
  for (size_t cut = 0; cut <= text.size(); ++cut)
    same(collect({text.substr(0, cut), text.substr(cut)}),
         "split at " + std::to_string(cut));
  std::vector<std::string> bytes;
  for (char c : text)
    bytes.push_back(std::string(1, c));
  same(collect(bytes), "byte by byte");
}

TEST(ToolCalls, DetectsTheFamilyFromRealTemplates) {
  Json qwen = readJson("tokenizers/qwen3/tokenizer_config.json");
  Json ds = readJson("tokenizers/deepseek_v3/tokenizer_config.json");
  EXPECT_EQ(hyrt::structured::detect_tool_call_format(
                qwen["chat_template"].get<std::string>()),
            ToolCallFormat::kQwen);
  EXPECT_EQ(hyrt::structured::detect_tool_call_format(
                ds["chat_template"].get<std::string>()),
            ToolCallFormat::kDeepSeekV3);
  EXPECT_EQ(hyrt::structured::detect_tool_call_format(
                "<|start_header_id|>ipython<|end_header_id|> {\"name\": "
                "function name, \"parameters\": dictionary}"),
            ToolCallFormat::kLlama3Json);
  EXPECT_EQ(hyrt::structured::detect_tool_call_format("{{ messages }}"),
            ToolCallFormat::kNone);
}

TEST(ToolCalls, QwenTurnRenderedByItsTemplate) {
  auto [rendered, message] = renderedChat("qwen3", "tool-qwen-single");
  const std::string turn =
      "Checking." + between(rendered, "<|im_start|>assistant\n", "<|im_end|>");
  const ToolCallDelta d =
      hyrt::structured::parse_tool_calls(ToolCallFormat::kQwen, turn);
  EXPECT_EQ(d.content, "Checking.");
  ASSERT_EQ(d.calls.size(), 1u);
  const Json &want = message["tool_calls"][0]["function"];
  EXPECT_EQ(d.calls[0].name, want["name"]);
  EXPECT_EQ(Json::parse(d.calls[0].arguments), want["arguments"]);
  expectStreamingAgrees(ToolCallFormat::kQwen, turn, d);
  // Two calls, then a broken one that comes back as text.
  const std::string two =
      turn + "\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1]}}\n"
             "</tool_call><tool_call>{\"name\": oops}</tool_call>";
  const ToolCallDelta d2 =
      hyrt::structured::parse_tool_calls(ToolCallFormat::kQwen, two);
  ASSERT_EQ(d2.calls.size(), 2u);
  EXPECT_EQ(d2.calls[1].name, "f");
  EXPECT_EQ(d2.calls[1].arguments, R"({"a":[1]})");
  EXPECT_EQ(d2.content, "Checking.\n<tool_call>{\"name\": oops}</tool_call>");
  expectStreamingAgrees(ToolCallFormat::kQwen, two, d2);
}

TEST(ToolCalls, DeepSeekTurnRenderedByItsTemplate) {
  auto [rendered, message] = renderedChat("deepseek_v3", "tool-ds-single");
  // The template closes the block only after a second call; a model ends
  // it with <｜tool▁calls▁end｜>.
  const std::string call =
      between(rendered, "<｜Assistant｜>", "<｜tool▁outputs▁begin｜>");
  const std::string turn = "Let me compute." + call +
                           "\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>"
                           "echo\n```json\n{\"s\": \"ü\"}\n```"
                           "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  const ToolCallDelta d =
      hyrt::structured::parse_tool_calls(ToolCallFormat::kDeepSeekV3, turn);
  EXPECT_EQ(d.content, "Let me compute.");
  ASSERT_EQ(d.calls.size(), 2u);
  const Json &want = message["tool_calls"][0]["function"];
  EXPECT_EQ(d.calls[0].name, want["name"]);
  EXPECT_EQ(Json::parse(d.calls[0].arguments),
            Json::parse(want["arguments"].get<std::string>()));
  EXPECT_EQ(d.calls[1].name, "echo");
  EXPECT_EQ(d.calls[1].arguments, "{\"s\":\"ü\"}");
  expectStreamingAgrees(ToolCallFormat::kDeepSeekV3, turn, d);
  // The V3.1 form: name<sep>arguments.
  const ToolCallDelta v31 = hyrt::structured::parse_tool_calls(
      ToolCallFormat::kDeepSeekV3,
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>calc<｜tool▁sep｜>"
      "{\"expr\": \"1\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  ASSERT_EQ(v31.calls.size(), 1u);
  EXPECT_EQ(v31.calls[0].name, "calc");
}

TEST(ToolCalls, Llama3JsonReplies) {
  const std::string one = R"({"name": "get_weather", "parameters": {"city": "Oslo"}})";
  ToolCallDelta d =
      hyrt::structured::parse_tool_calls(ToolCallFormat::kLlama3Json, one);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(d.content, "");
  expectStreamingAgrees(ToolCallFormat::kLlama3Json, one, d);
  const std::string two = "<|python_tag|>" + one +
                          R"(; {"name": "f", "parameters": {"s": "a\\\";b"}})";
  d = hyrt::structured::parse_tool_calls(ToolCallFormat::kLlama3Json, two);
  ASSERT_EQ(d.calls.size(), 2u) << d.content;
  EXPECT_EQ(d.calls[1].arguments, R"({"s":"a\\\";b"})");
  d = hyrt::structured::parse_tool_calls(ToolCallFormat::kLlama3Json,
                                         "Sure: {\"name\": 1}");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "Sure: {\"name\": 1}");
  d = hyrt::structured::parse_tool_calls(ToolCallFormat::kLlama3Json,
                                         "{\"not\": \"a call\"}");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "{\"not\": \"a call\"}");
  d = hyrt::structured::parse_tool_calls(ToolCallFormat::kLlama3Json,
                                         "{\"name\": \"f\", \"para");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "{\"name\": \"f\", \"para");
}

const char *kTools = R"([
  {"type":"function","function":{"name":"get_weather","parameters":{
    "type":"object","properties":{"city":{"type":"string","maxLength":12},
    "unit":{"type":"string","enum":["celsius","fahrenheit"]}},
    "required":["city"]}}},
  {"type":"function","function":{"name":"add","parameters":{
    "type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
    "required":["a","b"]}}},
  {"type":"function","function":{"name":"ping"}}])";

TEST(ToolCalls, RequiredCallGrammarReadsEachWireFormat) {
  const Json tools = Json::parse(kTools);
  const std::pair<ToolCallFormat, std::string> ok[] = {
      {ToolCallFormat::kQwen, "<tool_call>\n{\"name\": \"add\", \"arguments\": "
                              "{\"a\": 1, \"b\": -2}}\n</tool_call>"},
      {ToolCallFormat::kDeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>ping\n"
       "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {ToolCallFormat::kLlama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}"},
  };
  for (const auto &[format, text] : ok) {
    std::shared_ptr<const hyrt::structured::Grammar> g;
    ASSERT_TRUE(hyrt::structured::compile_tool_call_grammar(
                    format, tools, "", hyrt::structured::SchemaLimits{}, &g)
                    .ok());
    hyrt::structured::GrammarMatcher m(g);
    EXPECT_TRUE(m.advance(text) && m.complete()) << text;
    hyrt::structured::GrammarMatcher bad(g);
    EXPECT_FALSE(bad.advance(text.substr(0, text.size() - 1) + "x"));
  }
  // A named function allows only that one.
  std::shared_ptr<const hyrt::structured::Grammar> g;
  ASSERT_TRUE(hyrt::structured::compile_tool_call_grammar(
                  ToolCallFormat::kQwen, tools, "ping",
                  hyrt::structured::SchemaLimits{}, &g)
                  .ok());
  hyrt::structured::GrammarMatcher m(g);
  EXPECT_FALSE(m.advance("<tool_call>\n{\"name\": \"add\""));
  hyrt::Status s = hyrt::structured::compile_tool_call_grammar(
      ToolCallFormat::kQwen, tools, "nope", hyrt::structured::SchemaLimits{},
      &g);
  EXPECT_NE(s.message().find("\"nope\""), std::string::npos);
}

TEST(ToolCalls, SampledRequiredCallsParseAndValidate) {
  const Json tools = Json::parse(kTools);
  const std::pair<ToolCallFormat, const char *> families[] = {
      {ToolCallFormat::kQwen, "qwen3"},
      {ToolCallFormat::kDeepSeekV3, "deepseek_v3"},
      {ToolCallFormat::kLlama3Json, "qwen3"}};
  for (const auto &[format, tokenizer] : families) {
    const hyc::test::LoadedTokenizer *lt = hyc::test::sharedTokenizer(tokenizer);
    ASSERT_NE(lt, nullptr);
    std::shared_ptr<const hyrt::structured::Grammar> g;
    ASSERT_TRUE(hyrt::structured::compile_tool_call_grammar(
                    format, tools, "", hyrt::structured::SchemaLimits{}, &g)
                    .ok());
    auto compiled =
        std::make_shared<hyrt::structured::CompiledConstraint>(g, lt->vocab);
    for (uint32_t seed = 1; seed <= 6; ++seed) {
      hyrt::structured::GrammarConstraint c(compiled);
      std::mt19937 rng(seed);
      std::string text;
      std::vector<uint64_t> bits;
      for (int step = 0; step < 2000 && c.can_continue(); ++step) {
        c.allowed(&bits);
        std::vector<int32_t> ids;
        for (int32_t id = 0; id < lt->vocab->size(); ++id)
          if ((bits[id >> 6] >> (id & 63)) & 1 && !lt->vocab->is_stop(id))
            ids.push_back(id);
        if (ids.empty())
          break;
        const int32_t pick = ids[rng() % ids.size()];
        ASSERT_TRUE(c.accept(pick));
        text += lt->vocab->bytes(pick);
      }
      ASSERT_TRUE(c.complete()) << text;
      const ToolCallDelta d = hyrt::structured::parse_tool_calls(format, text);
      ASSERT_EQ(d.calls.size(), 1u) << text;
      EXPECT_EQ(d.content, "") << text;
      for (const Json &tool : tools)
        if (tool["function"]["name"] == d.calls[0].name) {
          const Json params = tool["function"].value(
              "parameters", Json::parse(R"({"type":"object"})"));
          hyrt::Status s = hyrt::structured::validate_json(
              params, Json::parse(d.calls[0].arguments));
          EXPECT_TRUE(s.ok()) << text << ": " << s.message();
        }
    }
  }
}

} // namespace
