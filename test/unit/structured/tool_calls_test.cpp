// tool_calls_test.cpp - tool-call recognition on assistant turns rendered
// by the real Qwen3 and DeepSeek-V3 chat templates (cases.json) and
// Llama-3.1 JSON replies, fed whole, in every split in two, byte by byte
// and in random chunks (the argument pieces concatenate to the whole
// call's arguments); family detection from the real templates; the grammar
// forcing calls (one, or several with parallel_tool_calls), sampled over
// the real vocabulary and parsed back; and the constraint that ends an
// "auto" output after its first call.
#include "hyrt/structured/grammar_matcher.h"
#include "hyrt/structured/one_tool_call_constraint.h"
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

// The events of `text` fed in `pieces`, checked as a stream: a call is a
// start, argument pieces, an end; nothing comes between them.
ToolCallDelta collect(ToolCallFormat f, const std::vector<std::string> &pieces,
                      const std::string &how) {
  using K = hyrt::structured::ToolCallEvent::Kind;
  ToolCallParser p(f);
  std::vector<hyrt::structured::ToolCallEvent> events;
  for (const std::string &piece : pieces)
    p.feed(piece, &events);
  p.finish(&events);
  bool open = false;
  for (const auto &e : events) {
    if (e.kind == K::kCallStart)
      EXPECT_FALSE(open) << how << ": a call starts inside another";
    else if (e.kind == K::kContent)
      EXPECT_FALSE(open) << how << ": content inside a call";
    else
      EXPECT_TRUE(open) << how << ": arguments or an end outside a call";
    open = e.kind == K::kCallStart || e.kind == K::kArguments;
  }
  EXPECT_FALSE(open) << how << ": a call never ended";
  ToolCallDelta all;
  hyrt::structured::gather_tool_call_events(events, &all);
  EXPECT_EQ(p.calls_ended(), all.calls.size()) << how;
  return all;
}

// Same result whole, in every split in two, byte by byte, and in random
// chunks.
void expectStreamingAgrees(ToolCallFormat f, const std::string &text,
                           const ToolCallDelta &whole) {
  auto same = [&](const std::vector<std::string> &pieces,
                  const std::string &how) {
    const ToolCallDelta d = collect(f, pieces, how);
    EXPECT_EQ(d.content, whole.content) << how;
    ASSERT_EQ(d.calls.size(), whole.calls.size()) << how;
    for (size_t i = 0; i < d.calls.size(); ++i) {
      EXPECT_EQ(d.calls[i].name, whole.calls[i].name) << how;
      EXPECT_EQ(d.calls[i].arguments, whole.calls[i].arguments) << how;
    }
  };
  for (size_t cut = 0; cut <= text.size(); ++cut)
    same({text.substr(0, cut), text.substr(cut)},
         "split at " + std::to_string(cut));
  std::vector<std::string> bytes;
  for (char c : text)
    bytes.push_back(std::string(1, c));
  same(bytes, "byte by byte");
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> chunks;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::uniform_int_distribution<size_t>(1, 9)(rng);
      chunks.push_back(text.substr(at, n));
      at += n;
    }
    same(chunks, "random chunks, round " + std::to_string(round));
  }
}

using hyrt::structured::ToolCallEvent;

// Feeds `text` a byte at a time: the events, after which byte each call
// started, and how many bytes brought argument text out.
std::vector<ToolCallEvent> byteEvents(ToolCallFormat f, const std::string &text,
                                      std::vector<size_t> *started_at,
                                      size_t *argument_feeds) {
  ToolCallParser p(f);
  std::vector<ToolCallEvent> events;
  *argument_feeds = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    std::vector<ToolCallEvent> step;
    p.feed(text.substr(i, 1), &step);
    bool args = false;
    for (const ToolCallEvent &e : step) {
      if (e.kind == ToolCallEvent::Kind::kCallStart)
        started_at->push_back(i);
      args |= e.kind == ToolCallEvent::Kind::kArguments;
      events.push_back(e);
    }
    *argument_feeds += args;
  }
  p.finish(&events);
  return events;
}

TEST(ToolCalls, ArgumentsArePassedOnAsTheyAreWritten) {
  // Qwen: the call starts when its name's string closes; every byte of the
  // arguments goes out when it comes.
  const std::string text =
      "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"a b\", "
      "\"n\": [1, 2]}}\n</tool_call>";
  std::vector<size_t> started;
  size_t feeds = 0;
  auto events = byteEvents(ToolCallFormat::kQwen, text, &started, &feeds);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0], text.find("\"f\"") + 2);
  ToolCallDelta d;
  hyrt::structured::gather_tool_call_events(events, &d);
  EXPECT_EQ(d.content, "Hi ");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "f");
  EXPECT_EQ(d.calls[0].arguments, R"({"q":"a b","n":[1,2]})");
  // Each byte of the (minified) arguments came out as it was read.
  EXPECT_EQ(feeds, d.calls[0].arguments.size());
  expectStreamingAgrees(ToolCallFormat::kQwen, text,
                        hyrt::structured::parse_tool_calls(ToolCallFormat::kQwen, text));

  // DeepSeek V3: the start comes with the fence that ends the name.
  const std::string ds =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
      "get_weather\n```json\n{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>";
  started.clear();
  events = byteEvents(ToolCallFormat::kDeepSeekV3, ds, &started, &feeds);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0], ds.find("```json") + 6);
  EXPECT_EQ(feeds, std::string(R"({"city":"Oslo"})").size());

  // Llama: the same, and a second call after ';'.
  const std::string llama = R"({"name": "a", "parameters": {"x": 1}}; )"
                            R"({"parameters": {"y": "}"}, "name": "b"})";
  started.clear();
  events = byteEvents(ToolCallFormat::kLlama3Json, llama, &started, &feeds);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[0], llama.find("\"a\"") + 2);
  // Arguments before the name wait for it.
  EXPECT_EQ(started[1], llama.rfind("\"b\"") + 2);
  hyrt::structured::gather_tool_call_events(events, &(d = ToolCallDelta()));
  ASSERT_EQ(d.calls.size(), 2u);
  EXPECT_EQ(d.calls[1].arguments, R"({"y":"}"})");
  EXPECT_EQ(d.content, "");
}

TEST(ToolCalls, CallShapesAgreeStreamedAndWhole) {
  struct Case {
    ToolCallFormat format;
    std::string text, content;
    std::vector<std::pair<std::string, std::string>> calls;
  };
  const Case cases[] = {
      // Arguments as a JSON string are decoded; absent arguments are {}.
      {ToolCallFormat::kQwen,
       "<tool_call>{\"name\": \"s\", \"arguments\": \"{\\\"a\\\": 1}\"}"
       "</tool_call>\n<tool_call>{\"name\": \"e\"}</tool_call>\n",
       "",
       {{"s", "{\"a\": 1}"}, {"e", "{}"}}},
      // A marker inside a string is text.
      {ToolCallFormat::kQwen,
       "<tool_call>{\"name\": \"h\", \"arguments\": {\"t\": "
       "\"</tool_call>\"}}</tool_call>after",
       "after",
       {{"h", "{\"t\":\"</tool_call>\"}"}}},
      // Output that stops inside the arguments: the call as written.
      {ToolCallFormat::kQwen,
       "x<tool_call>{\"name\": \"t\", \"arguments\": {\"a\": [1, 2",
       "x",
       {{"t", "{\"a\":[1,2"}}},
      // Not a call (the name is not a string): verbatim content.
      {ToolCallFormat::kQwen, "<tool_call>{\"name\": 3}</tool_call>!",
       "<tool_call>{\"name\": 3}</tool_call>!", {}},
      // DeepSeek V3.1 form, a bare call begin, text around.
      {ToolCallFormat::kDeepSeekV3,
       "a<｜tool▁call▁begin｜>calc<｜tool▁sep｜>{\"e\": \"1 + 1\"}"
       "<｜tool▁call▁end｜>b",
       "ab",
       {{"calc", "{\"e\":\"1 + 1\"}"}}},
      // A DeepSeek call without a fence or object: verbatim content.
      {ToolCallFormat::kDeepSeekV3,
       "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f<｜tool▁call▁end｜>",
       "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f<｜tool▁call▁end｜>",
       {}},
      // Llama: text after the calls stays text; a trailing ';' is nothing.
      {ToolCallFormat::kLlama3Json,
       "<|python_tag|>{\"name\": \"a\", \"parameters\": {}};", "",
       {{"a", "{}"}}},
      {ToolCallFormat::kLlama3Json,
       " {\"name\": \"a\", \"parameters\": {\"k\": null}} thanks", "thanks",
       {{"a", "{\"k\":null}"}}},
  };
  for (const Case &c : cases) {
    const ToolCallDelta d = hyrt::structured::parse_tool_calls(c.format, c.text);
    EXPECT_EQ(d.content, c.content) << c.text;
    ASSERT_EQ(d.calls.size(), c.calls.size()) << c.text;
    for (size_t i = 0; i < d.calls.size(); ++i) {
      EXPECT_EQ(d.calls[i].name, c.calls[i].first) << c.text;
      EXPECT_EQ(d.calls[i].arguments, c.calls[i].second) << c.text;
    }
    expectStreamingAgrees(c.format, c.text, d);
  }
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
  // The newline after a call is the template's, not content.
  EXPECT_EQ(d2.content, "Checking.<tool_call>{\"name\": oops}</tool_call>");
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
  // Stopped after the name: a call (its start was streamed) whose
  // arguments were never written.
  d = hyrt::structured::parse_tool_calls(ToolCallFormat::kLlama3Json,
                                         "{\"name\": \"f\", \"para");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "f");
  EXPECT_EQ(d.calls[0].arguments, "");
  EXPECT_EQ(d.content, "");
  d = hyrt::structured::parse_tool_calls(ToolCallFormat::kLlama3Json,
                                         "{\"nam");
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "{\"nam");
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
                    format, tools, "", false, hyrt::structured::SchemaLimits{}, &g)
                    .ok());
    hyrt::structured::GrammarMatcher m(g);
    EXPECT_TRUE(m.advance(text) && m.complete()) << text;
    hyrt::structured::GrammarMatcher bad(g);
    EXPECT_FALSE(bad.advance(text.substr(0, text.size() - 1) + "x"));
  }
  // A named function allows only that one.
  std::shared_ptr<const hyrt::structured::Grammar> g;
  ASSERT_TRUE(hyrt::structured::compile_tool_call_grammar(
                  ToolCallFormat::kQwen, tools, "ping", false,
                  hyrt::structured::SchemaLimits{}, &g)
                  .ok());
  hyrt::structured::GrammarMatcher m(g);
  EXPECT_FALSE(m.advance("<tool_call>\n{\"name\": \"add\""));
  hyrt::Status s = hyrt::structured::compile_tool_call_grammar(
      ToolCallFormat::kQwen, tools, "nope", false, hyrt::structured::SchemaLimits{},
      &g);
  EXPECT_NE(s.message().find("\"nope\""), std::string::npos);
}

TEST(ToolCalls, ParallelCallsOnlyWhenAllowed) {
  const Json tools = Json::parse(kTools);
  const std::string qwen1 = "<tool_call>\n{\"name\": \"ping\", \"arguments\": "
                            "{}}\n</tool_call>";
  const std::string ds1 = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>ping\n"
                          "```json\n{}\n```<｜tool▁call▁end｜>";
  const std::string llama1 = "{\"name\": \"ping\", \"parameters\": {}}";
  const std::string dsOpen = "<｜tool▁calls▁begin｜>",
                    dsClose = "<｜tool▁calls▁end｜>";
  struct Case {
    ToolCallFormat format;
    std::string one, two;
  };
  const Case cases[] = {
      {ToolCallFormat::kQwen, qwen1, qwen1 + "\n" + qwen1},
      {ToolCallFormat::kDeepSeekV3, dsOpen + ds1 + dsClose,
       dsOpen + ds1 + "\n" + ds1 + dsClose},
      {ToolCallFormat::kLlama3Json, llama1, llama1 + "; " + llama1},
  };
  for (const Case &c : cases) {
    for (bool parallel : {false, true}) {
      std::shared_ptr<const hyrt::structured::Grammar> g;
      ASSERT_TRUE(hyrt::structured::compile_tool_call_grammar(
                      c.format, tools, "", parallel,
                      hyrt::structured::SchemaLimits{}, &g)
                      .ok());
      hyrt::structured::GrammarMatcher one(g);
      EXPECT_TRUE(one.advance(c.one) && one.complete()) << c.one;
      // One call: nothing may follow it but the end (DeepSeek's "one"
      // has closed its block already).
      if (c.format != ToolCallFormat::kDeepSeekV3)
        EXPECT_EQ(one.can_continue(), parallel) << c.one;
      hyrt::structured::GrammarMatcher two(g);
      const bool ok = two.advance(c.two) && two.complete();
      EXPECT_EQ(ok, parallel) << c.two;
      if (parallel)
        EXPECT_EQ(hyrt::structured::parse_tool_calls(c.format, c.two).calls.size(), 2u);
    }
  }
}

TEST(ToolCalls, AutoWithoutParallelCallsEndsAfterTheFirstCall) {
  const hyc::test::LoadedTokenizer *lt = hyc::test::sharedTokenizer("qwen3");
  ASSERT_NE(lt, nullptr);
  const std::string call =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
  const std::vector<int32_t> ids = lt->tokenizer.encode("Sure. " + call, false);
  hyrt::structured::OneToolCallConstraint c(lt->vocab, ToolCallFormat::kQwen,
                                            false, false);
  const int64_t n = lt->vocab->size();
  std::vector<float> logits(n);
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(c.can_continue()) << "ended early, after " << text;
    std::fill(logits.begin(), logits.end(), 1.0f);
    c.mask(logits.data(), n);
    EXPECT_EQ(logits[ids[i]], 1.0f) << "free text is not masked";
    ASSERT_TRUE(c.accept(ids[i]));
    text += lt->vocab->bytes(ids[i]);
  }
  ASSERT_EQ(text, "Sure. " + call);
  // The call has ended: only the stop ids are left, so no second call.
  EXPECT_TRUE(c.complete());
  EXPECT_FALSE(c.can_continue());
  std::fill(logits.begin(), logits.end(), 1.0f);
  c.mask(logits.data(), n);
  int64_t open = 0;
  for (int64_t id = 0; id < n; ++id)
    if (logits[id] == 1.0f) {
      ++open;
      EXPECT_TRUE(lt->vocab->is_stop(int32_t(id))) << id;
    }
  EXPECT_EQ(open, int64_t(lt->vocab->stop_ids().size()));
  EXPECT_FALSE(c.accept(lt->tokenizer.encode("<tool_call>", false)[0]));

  // Thinking first: a call inside the reasoning is no call.
  hyrt::structured::OneToolCallConstraint r(lt->vocab, ToolCallFormat::kQwen,
                                            true, false);
  for (int32_t id : lt->tokenizer.encode("<think>" + call + "</think>\n\n", false))
    ASSERT_TRUE(r.accept(id));
  EXPECT_TRUE(r.can_continue());
  for (int32_t id : lt->tokenizer.encode(call, false))
    ASSERT_TRUE(r.accept(id));
  EXPECT_FALSE(r.can_continue());
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
                    format, tools, "", false, hyrt::structured::SchemaLimits{}, &g)
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
      expectStreamingAgrees(format, text, d);
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
