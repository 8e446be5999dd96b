// hyc serve's tool messages through the real chat templates: an OpenAI
// request (assistant tool_calls with arguments as a JSON string and content
// null, a tool result with its tool_call_id, the tools list) must render
// to the very prompt Python jinja2 renders from the same conversation
// (tokenizers/*/cases.json, the ids of transformers' apply_chat_template):
// Qwen3 needs content "" and arguments as an object, DeepSeek-V3 content
// none and the arguments string. Plus the template traits read from them.
#include "hyrt/support/json.h"
#include "hyrt/text/chat_template.h"
#include "hyrt/text/tokenizer.h"
#include "runtime/serving/openai_api.h"
#include "runtime/serving/structured_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

// Ordered: the tools are rendered with tojson in the order a client sends.
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::string sharedDir() { return HYC_SHARED_DIR; }

json readJson(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

struct Model {
  hyrt::Tokenizer tok;
  hyrt::serve::ServeLimits limits;
};

std::unique_ptr<Model> load(const std::string &name) {
  auto m = std::make_unique<Model>();
  hyrt::TokenizerData data;
  const std::string dir = sharedDir() + "/tokenizers/" + name;
  if (!hyrt::read_hf_tokenizer(dir, &data).ok() || !m->tok.init(std::move(data)).ok())
    return nullptr;
  auto &l = m->limits;
  l.model_name = "m";
  l.max_seq_len = 4096;
  l.vocab_size = m->tok.vocab_size();
  l.tokenizer = &m->tok;
  l.bos_id = m->tok.bos_id();
  l.eos_id = m->tok.eos_id();
  auto t = std::make_shared<hyrt::ChatTemplate>();
  EXPECT_TRUE(t->compile(m->tok.data().chat_template).ok());
  l.chat_template = t;
  l.structured = std::make_shared<hyrt::serve::StructuredSupport>(
      &m->tok, std::vector<int32_t>{l.eos_id},
      hyrt::serve::TemplateTraits::of(m->tok.data().chat_template));
  return m;
}

json caseChat(const std::string &name, const std::string &id) {
  const json cases = readJson(sharedDir() + "/tokenizers/" + name + "/cases.json");
  for (const json &c : cases["chats"])
    if (c["id"] == id)
      return c;
  ADD_FAILURE() << id;
  return json();
}

/// The case's conversation as an OpenAI client sends it.
json openaiBody(const json &chat) {
  json messages = json::array();
  for (json m : chat["messages"]) {
    if (m.contains("tool_calls")) {
      for (json &c : m["tool_calls"]) {
        json &args = c["function"]["arguments"];
        if (!args.is_string())
          args = args.dump(); // OpenAI sends arguments as a JSON string
        c["id"] = "call_1";
      }
      m["content"] = nullptr;
    }
    if (m["role"] == "tool")
      m["tool_call_id"] = "call_1";
    messages.push_back(m);
  }
  json body = {{"model", "m"}, {"messages", messages}, {"max_tokens", 1}};
  if (chat.contains("tools"))
    body["tools"] = chat["tools"];
  if (!chat["template_kwargs"].empty())
    body["chat_template_kwargs"] = chat["template_kwargs"];
  return body;
}

void expectRendersAsHf(const std::string &name, const std::string &id) {
  auto m = load(name);
  if (!m)
    GTEST_SKIP() << sharedDir() << "/tokenizers/" << name << " absent";
  const json chat = caseChat(name, id);
  hyrt::serve::ParsedRequest pr;
  auto e = hyrt::serve::parse_request(openaiBody(chat).dump(), true, m->limits, 1, &pr);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(pr.request.prompt, chat["ids"].get<std::vector<int32_t>>())
      << "rendered:\n" << m->tok.decode_text(pr.request.prompt, false)
      << "\nexpected:\n" << chat["rendered"].get<std::string>();
}

TEST(ServeTools, QwenToolTurnRendersAsTransformers) {
  expectRendersAsHf("qwen3", "tool-qwen-single");
  expectRendersAsHf("qwen3", "tool-qwen-single+no-think");
}

TEST(ServeTools, DeepSeekToolTurnRendersAsTransformers) {
  expectRendersAsHf("deepseek_v3", "tool-ds-single");
}

TEST(ServeTools, TraitsOfTheRealTemplates) {
  for (const char *name : {"qwen3", "deepseek_v3"}) {
    const std::string path = sharedDir() + "/tokenizers/" + name + "/tokenizer_config.json";
    if (!fs::exists(path))
      GTEST_SKIP() << path << " absent";
    const auto t = hyrt::serve::TemplateTraits::of(readJson(path)["chat_template"]);
    const bool qwen = std::string(name) == "qwen3";
    EXPECT_EQ(t.reasoning, qwen) << name;
    EXPECT_EQ(t.arguments_as_object, qwen) << name;
    EXPECT_EQ(t.null_content, !qwen) << name;
    EXPECT_EQ(t.tool_format, qwen ? hyrt::structured::ToolCallFormat::kQwen
                                  : hyrt::structured::ToolCallFormat::kDeepSeekV3);
  }
}

} // namespace
