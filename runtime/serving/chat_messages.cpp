// The messages of a chat request (see read_messages in openai_api.h):
// OpenAI's roles, assistant tool calls and tool results, checked and
// bounded, shaped the way the checkpoint's chat template reads them.
#include "openai_api.h"

#include "request_fields.h"
#include "structured_request.h"
#include "structured_support.h"

#include "hyrt/support/json.h"

namespace hyrt::serve {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

constexpr size_t kMaxCallsPerMessage = 128;
constexpr size_t kMaxIdBytes = 256;

/// Text of a message's content: a string, or an array of {"type": "text",
/// "text": ...} parts joined.
std::optional<ApiError> content_text(const json &c, const std::string &at,
                                     std::string *out) {
  const std::string param = at + ".content";
  if (c.is_string()) {
    *out = c.get<std::string>();
    return std::nullopt;
  }
  if (!c.is_array())
    return bad(param, param + ": expected a string or an array of text "
                              "parts, found " + c.type_name());
  for (const json &part : c) {
    if (!part.is_object() || part.value("type", json()) != "text" ||
        !part.contains("text") || !part["text"].is_string())
      return bad(param, param + ": only {\"type\": \"text\", \"text\": ...} "
                                "parts are supported");
    *out += part["text"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> short_string(const json &m, const char *key,
                                     const std::string &at, std::string *out) {
  const std::string param = at + "." + key;
  if (!m.contains(key) || !m[key].is_string() || m[key].get<std::string>().empty() ||
      m[key].get<std::string>().size() > kMaxIdBytes)
    return bad(param, param + ": expected a string of 1 to " +
                          std::to_string(kMaxIdBytes) + " bytes");
  *out = m[key].get<std::string>();
  return std::nullopt;
}

/// An assistant's tool_calls as the template reads them: arguments stay
/// the client's JSON string, or become the object it holds for templates
/// that write them with tojson.
std::optional<ApiError> read_tool_calls(const json &calls, const std::string &at,
                                        bool arguments_as_object, ojson *out) {
  const std::string param = at + ".tool_calls";
  if (!calls.is_array() || calls.size() > kMaxCallsPerMessage)
    return bad(param, param + ": expected an array of at most " +
                          std::to_string(kMaxCallsPerMessage) + " calls");
  *out = ojson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const json &c = calls[k];
    const std::string ck = param + "[" + std::to_string(k) + "]";
    if (!c.is_object() || c.value("type", json("function")) != "function" ||
        !c.contains("function") || !c["function"].is_object())
      return bad(ck, ck + ": expected {\"id\", \"type\": \"function\", "
                          "\"function\": {\"name\", \"arguments\"}}");
    std::string id;
    if (c.contains("id"))
      if (auto e = short_string(c, "id", ck, &id))
        return e;
    const json &fn = c["function"];
    if (!fn.contains("name") || !fn["name"].is_string() ||
        !valid_function_name(fn["name"].get<std::string>()))
      return bad(ck + ".function.name", ck + ".function.name: expected 1 to 64 "
                                             "of a-z, A-Z, 0-9, _ and -");
    if (!fn.contains("arguments") || !fn["arguments"].is_string())
      return bad(ck + ".function.arguments",
                 ck + ".function.arguments: expected the arguments as a JSON "
                      "string");
    const std::string text = fn["arguments"].get<std::string>();
    ojson arguments = text;
    if (arguments_as_object) {
      ojson parsed;
      if (parse_json(text, &parsed).empty() && parsed.is_object())
        arguments = std::move(parsed);
    }
    ojson call = {{"type", "function"},
                  {"function", {{"name", fn["name"]}, {"arguments", arguments}}}};
    if (!id.empty())
      call["id"] = id;
    out->push_back(std::move(call));
  }
  return std::nullopt;
}

} // namespace

std::optional<ApiError> read_messages(const json &body,
                                      const StructuredSupport *support,
                                      ojson *for_template,
                                      std::vector<ChatMessage> *plain) {
  const json *msgs = field(body, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty())
    return bad("messages", "messages: expected a non-empty array of "
                           "{role, content} objects");
  const TemplateTraits traits = support ? support->traits() : TemplateTraits();
  *for_template = ojson::array();
  plain->clear();
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json &m = (*msgs)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return bad(at, at + ": expected an object with a string role");
    ChatMessage cm;
    cm.role = m["role"].get<std::string>();
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant" &&
        cm.role != "developer" && cm.role != "tool")
      return bad(at + ".role", at + ".role: expected system, developer, "
                                    "user, assistant or tool, found '" +
                                    cm.role + "'");
    const bool has_content = m.contains("content") && !m["content"].is_null();
    if (has_content)
      if (auto e = content_text(m["content"], at, &cm.content))
        return e;
    ojson tm = {{"role", cm.role}, {"content", cm.content}};
    if (m.contains("name") && !m["name"].is_null()) {
      std::string name;
      if (auto e = short_string(m, "name", at, &name))
        return e;
      tm["name"] = name;
    }
    if (m.contains("reasoning_content") && !m["reasoning_content"].is_null()) {
      if (!m["reasoning_content"].is_string() || cm.role != "assistant")
        return bad(at + ".reasoning_content",
                   at + ".reasoning_content: expected a string, on an "
                        "assistant message");
      tm["reasoning_content"] = m["reasoning_content"].get<std::string>();
    }
    const bool calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (calls && cm.role != "assistant")
      return bad(at + ".tool_calls", at + ".tool_calls: only assistant messages "
                                          "carry tool calls");
    if (calls) {
      ojson list;
      if (auto e = read_tool_calls(m["tool_calls"], at,
                                   traits.arguments_as_object, &list))
        return e;
      tm["tool_calls"] = std::move(list);
      // DeepSeek-V3 writes a call turn only for content none.
      if (!has_content && traits.null_content)
        tm["content"] = nullptr;
    }
    if (cm.role == "tool") {
      std::string id;
      if (auto e = short_string(m, "tool_call_id", at, &id))
        return e;
      tm["tool_call_id"] = id;
    } else if (m.contains("tool_call_id") && !m["tool_call_id"].is_null()) {
      return bad(at + ".tool_call_id",
                 at + ".tool_call_id: only tool messages answer a call");
    }
    for_template->push_back(std::move(tm));
    plain->push_back(std::move(cm));
  }
  return std::nullopt;
}

} // namespace hyrt::serve
