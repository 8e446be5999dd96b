// tools / tool_choice / response_format of a request (see
// structured_request.h).
#include "structured_request.h"

#include "request_fields.h"
#include "structured_support.h"

#include "hyrt/structured/json_schema.h"
#include "hyrt/structured/one_tool_call_constraint.h"
#include "hyrt/structured/reasoning.h"

#include <cctype>

namespace hyrt::serve {

using nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace st = hyrt::structured;

bool valid_function_name(const std::string &name) {
  if (name.empty() || name.size() > StructuredBounds::kMaxNameBytes)
    return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '_' && c != '-')
      return false;
  return true;
}

namespace {

std::string shown(const std::string &s) {
  return ojson(s.size() > 80 ? s.substr(0, 80) + "..." : s)
      .dump(-1, ' ', false, ojson::error_handler_t::replace);
}

size_t json_bytes(const ojson &j) {
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace).size();
}

/// One entry of `tools`: {"type": "function", "function": {"name",
/// "description"?, "parameters"?, "strict"?}}.
std::optional<ApiError> check_tool(const ojson &tool, size_t i) {
  const std::string at = "tools[" + std::to_string(i) + "]";
  if (!tool.is_object() || tool.value("type", ojson()) != "function" ||
      !tool.contains("function") || !tool["function"].is_object())
    return bad(at, at + ": expected {\"type\": \"function\", \"function\": "
                        "{\"name\", \"parameters\", ...}}");
  for (auto it = tool.begin(); it != tool.end(); ++it)
    if (it.key() != "type" && it.key() != "function")
      return bad(at + "." + it.key(), at + ": unexpected field '" + it.key() +
                                          "' (expected type and function)");
  const ojson &fn = tool["function"];
  for (auto it = fn.begin(); it != fn.end(); ++it) {
    const std::string &k = it.key();
    if (k != "name" && k != "description" && k != "parameters" && k != "strict")
      return bad(at + ".function." + k,
                 at + ".function: unexpected field '" + k +
                     "' (expected name, description, parameters, strict)");
  }
  if (!fn.contains("name") || !fn["name"].is_string() ||
      !valid_function_name(fn["name"].get<std::string>()))
    return bad(at + ".function.name",
               at + ".function.name: expected 1 to 64 of a-z, A-Z, 0-9, _ and "
                    "-, found " + (fn.contains("name") ? shown(fn["name"].is_string()
                                                              ? fn["name"].get<std::string>()
                                                              : fn["name"].dump())
                                                       : std::string("nothing")));
  if (fn.contains("description") && !fn["description"].is_string())
    return bad(at + ".function.description",
               at + ".function.description: expected a string");
  if (fn.contains("parameters") && !fn["parameters"].is_object())
    return bad(at + ".function.parameters",
               at + ".function.parameters: expected a JSON schema object");
  if (fn.contains("strict") && !fn["strict"].is_boolean())
    return bad(at + ".function.strict", at + ".function.strict: expected a boolean");
  const size_t bytes = json_bytes(tool);
  if (bytes > StructuredBounds::kMaxToolBytes)
    return bad(at, at + ": " + std::to_string(bytes) + " bytes of JSON; at most " +
                       std::to_string(StructuredBounds::kMaxToolBytes));
  return std::nullopt;
}

/// tool_choice: "none", "auto", "required" or {"type": "function",
/// "function": {"name": ...}}.
std::optional<ApiError> parse_tool_choice(const json &body, ToolsRequest *out) {
  const json *c = field(body, "tool_choice");
  const bool has_tools = !out->tools.empty();
  out->choice = has_tools ? ToolChoice::kAuto : ToolChoice::kNone;
  if (!c)
    return std::nullopt;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none")
      out->choice = ToolChoice::kNone;
    else if (s == "auto")
      out->choice = ToolChoice::kAuto;
    else if (s == "required")
      out->choice = ToolChoice::kRequired;
    else
      return bad("tool_choice", "tool_choice: expected \"none\", \"auto\", "
                                "\"required\" or {\"type\": \"function\", "
                                "\"function\": {\"name\": ...}}, found " +
                                    shown(s));
  } else if (c->is_object() && c->value("type", json()) == "function" &&
             c->contains("function") && (*c)["function"].is_object() &&
             (*c)["function"].contains("name") &&
             (*c)["function"]["name"].is_string()) {
    out->choice = ToolChoice::kNamed;
    out->name = (*c)["function"]["name"].get<std::string>();
    bool found = false;
    for (const ojson &t : out->tools)
      found = found || t["function"]["name"] == out->name;
    if (!found)
      return bad("tool_choice", "tool_choice: names function " + shown(out->name) +
                                    ", which is not among the tools");
  } else {
    return bad("tool_choice", "tool_choice: expected \"none\", \"auto\", "
                              "\"required\" or {\"type\": \"function\", "
                              "\"function\": {\"name\": ...}}, found " +
                                  c->dump());
  }
  if (!has_tools && out->choice != ToolChoice::kNone &&
      out->choice != ToolChoice::kAuto)
    return bad("tool_choice", "tool_choice: " +
                                  std::string(out->choice == ToolChoice::kNamed
                                                  ? "a named function"
                                                  : "\"required\"") +
                                  " needs tools");
  if (!has_tools)
    out->choice = ToolChoice::kNone;
  return std::nullopt;
}

/// response_format's own fields, before the schema compiler sees it.
std::optional<ApiError> check_response_format(const ojson &rf) {
  if (!rf.is_object())
    return bad("response_format", "response_format: expected an object, found " +
                                      std::string(rf.type_name()));
  if (!rf.contains("json_schema"))
    return std::nullopt;
  const ojson &js = rf["json_schema"];
  if (!js.is_object())
    return bad("response_format.json_schema",
               "response_format.json_schema: expected an object with name and "
               "schema");
  for (auto it = js.begin(); it != js.end(); ++it) {
    const std::string &k = it.key();
    if (k != "name" && k != "schema" && k != "strict" && k != "description")
      return bad("response_format.json_schema." + k,
                 "response_format.json_schema: unexpected field '" + k +
                     "' (expected name, description, schema, strict)");
  }
  if (!js.contains("name") || !js["name"].is_string() ||
      !valid_function_name(js["name"].get<std::string>()))
    return bad("response_format.json_schema.name",
               "response_format.json_schema.name: expected 1 to 64 of a-z, "
               "A-Z, 0-9, _ and -");
  if (js.contains("strict") && !js["strict"].is_boolean())
    return bad("response_format.json_schema.strict",
               "response_format.json_schema.strict: expected a boolean");
  if (js.contains("schema")) {
    if (!js["schema"].is_object())
      return bad("response_format.json_schema.schema",
                 "response_format.json_schema.schema: expected a JSON schema "
                 "object, found " + std::string(js["schema"].type_name()));
    const size_t bytes = json_bytes(js["schema"]);
    if (bytes > StructuredBounds::kMaxSchemaBytes)
      return bad("response_format.json_schema.schema",
                 "response_format.json_schema.schema: " + std::to_string(bytes) +
                     " bytes of JSON; at most " +
                     std::to_string(StructuredBounds::kMaxSchemaBytes));
  }
  return std::nullopt;
}

/// Keeps the key order of `body_text` (a schema's property order is the
/// output's; tools are rendered with tojson in the order sent).
std::optional<ApiError> ordered_body(const std::string &body_text, ojson *out) {
  // The text already parsed, depth-checked, as `body`.
  *out = ojson::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded() || !out->is_object())
    return bad("", "the request body is not a JSON object");
  return std::nullopt;
}

/// tool_choice "auto" with parallel_tool_calls false: the output ends once
/// its first call has (the request's constraint, when nothing else
/// constrains it).
std::optional<ApiError> one_call_only(const ToolsRequest &tools,
                                      const ServeLimits &limits,
                                      const OutputPlan &plan,
                                      ParsedRequest *out) {
  if (tools.parallel || !tools.active() ||
      plan.tool_format == st::ToolCallFormat::kNone)
    return std::nullopt;
  if (!limits.structured || !limits.tokenizer)
    return bad("parallel_tool_calls",
               "parallel_tool_calls: this artifact has no tokenizer, so its "
               "output cannot be held to one call");
  std::shared_ptr<const st::TokenVocabulary> vocab;
  if (Status s = limits.structured->vocabulary(&vocab); !s.ok())
    return bad("parallel_tool_calls", s.message());
  auto make = [vocab, plan]() -> std::shared_ptr<TokenConstraint> {
    return std::make_shared<st::OneToolCallConstraint>(
        vocab, plan.tool_format, plan.split_reasoning,
        plan.starts_in_reasoning);
  };
  out->request.constraint = make();
  if (out->request.n > 1)
    out->request.constraint_factory = make;
  return std::nullopt;
}

} // namespace

std::optional<ApiError> parse_tools(const std::string &body_text,
                                    const json &body, ToolsRequest *out) {
  *out = ToolsRequest();
  if (auto e = get_bool(body, "parallel_tool_calls", &out->parallel))
    return e;
  if (const json *t = field(body, "tools")) {
    if (!t->is_array())
      return bad("tools", "tools: expected an array of function tools, found " +
                              std::string(t->type_name()));
    if (t->size() > StructuredBounds::kMaxTools)
      return bad("tools", "tools: at most " +
                              std::to_string(StructuredBounds::kMaxTools) +
                              " tools, found " + std::to_string(t->size()));
    ojson ordered;
    if (auto e = ordered_body(body_text, &ordered))
      return e;
    out->tools = ordered["tools"];
    size_t total = 0;
    for (size_t i = 0; i < out->tools.size(); ++i) {
      if (auto e = check_tool(out->tools[i], i))
        return e;
      total += json_bytes(out->tools[i]);
      for (size_t j = 0; j < i; ++j)
        if (out->tools[j]["function"]["name"] == out->tools[i]["function"]["name"])
          return bad("tools", "tools: function " +
                                  shown(out->tools[i]["function"]["name"].get<std::string>()) +
                                  " is defined twice (tools[" + std::to_string(j) +
                                  "] and tools[" + std::to_string(i) + "])");
    }
    if (total > StructuredBounds::kMaxToolsBytes)
      return bad("tools", "tools: " + std::to_string(total) +
                              " bytes of JSON; at most " +
                              std::to_string(StructuredBounds::kMaxToolsBytes));
  }
  return parse_tool_choice(body, out);
}

std::optional<ApiError> plan_structured(const std::string &body_text,
                                        const json &body,
                                        const ServeLimits &limits,
                                        const ToolsRequest &tools,
                                        const Prompt &prompt, bool templated,
                                        ParsedRequest *out) {
  OutputPlan &plan = out->output;
  const TemplateTraits traits =
      limits.structured ? limits.structured->traits() : TemplateTraits();
  if (out->chat && templated && traits.reasoning) {
    plan.split_reasoning = true;
    plan.starts_in_reasoning = st::prompt_opens_reasoning(prompt.text);
    // Qwen3 with enable_thinking false closes an empty block in the prompt.
    const size_t end = prompt.text.find_last_not_of(" \t\r\n");
    const std::string_view kClose = "</think>";
    plan.reasoning_closed =
        end != std::string::npos && end + 1 >= kClose.size() &&
        std::string_view(prompt.text).substr(end + 1 - kClose.size(), kClose.size()) ==
            kClose;
  }
  if (tools.active() && templated) {
    plan.tool_format = traits.tool_format;
    plan.parallel_tool_calls = tools.parallel;
  }

  // What constrains the output, and the cache key of its compiled form.
  std::string key;
  std::string param;
  StructuredSupport::Compile compile;
  const st::SchemaLimits schema_limits;
  ojson rf;
  const bool forced_call =
      tools.choice == ToolChoice::kRequired || tools.choice == ToolChoice::kNamed;
  if (field(body, "response_format")) {
    ojson ordered;
    if (auto e = ordered_body(body_text, &ordered))
      return e;
    rf = ordered["response_format"];
    if (auto e = check_response_format(rf))
      return e;
    std::shared_ptr<const st::Grammar> probe;
    // {"type": "text"} and malformed formats are told apart without the
    // vocabulary: text needs nothing, and an error names itself.
    const std::string type = rf.value("type", ojson()).is_string()
                                 ? rf["type"].get<std::string>()
                                 : std::string();
    if (type != "text") {
      if (forced_call)
        return bad("response_format",
                   "response_format and tool_choice \"required\" / a named "
                   "function both fix the output's form: give one");
      key = "response_format " + rf.dump(-1, ' ', false, ojson::error_handler_t::replace);
      param = "response_format";
      compile = [rf, schema_limits](std::shared_ptr<const st::Grammar> *g) {
        return st::compile_response_format(rf, schema_limits, g);
      };
    } else if (Status s = st::compile_response_format(rf, schema_limits, &probe);
               !s.ok()) {
      return bad("response_format", s.message());
    }
  }
  if (forced_call) {
    if (!templated || traits.tool_format == st::ToolCallFormat::kNone)
      return bad("tool_choice",
                 "tool_choice: this model's chat template writes tool calls in "
                 "no format hyc knows (Qwen, DeepSeek-V3, Llama 3.1 JSON), so a "
                 "call cannot be required; use \"auto\" or \"none\"");
    const st::ToolCallFormat format = traits.tool_format;
    const std::string name = tools.choice == ToolChoice::kNamed ? tools.name : "";
    // A named function is called once (as OpenAI does).
    const bool parallel = tools.parallel && tools.choice == ToolChoice::kRequired;
    key = std::string("tool call ") + st::tool_call_format_name(format) +
          (parallel ? " parallel " : " one ") + name + " " +
          tools.tools.dump(-1, ' ', false, ojson::error_handler_t::replace);
    param = "tools";
    const ojson list = tools.tools;
    compile = [format, list, name, parallel,
               schema_limits](std::shared_ptr<const st::Grammar> *g) {
      return st::compile_tool_call_grammar(format, list, name, parallel,
                                           schema_limits, g);
    };
  }
  if (!compile)
    return one_call_only(tools, limits, plan, out);
  if (!limits.structured || !limits.tokenizer)
    return bad(param, param + ": this artifact has no tokenizer, so its output "
                              "cannot be constrained");
  std::shared_ptr<st::CompiledConstraint> compiled;
  if (Status s = limits.structured->constraint(key, compile, &compiled); !s.ok())
    return bad(param, s.message());
  // A thinking model reasons first: the constraint waits for "</think>".
  std::shared_ptr<const st::ReasoningTokens> gate_tokens;
  if (plan.split_reasoning && !plan.reasoning_closed)
    if (Status s = limits.structured->reasoning_tokens(&gate_tokens); !s.ok())
      return bad(param, s.message());
  const bool starts_in = plan.starts_in_reasoning;
  auto make = [compiled, gate_tokens, starts_in]() -> std::shared_ptr<TokenConstraint> {
    auto grammar = std::make_shared<st::GrammarConstraint>(compiled);
    if (!gate_tokens)
      return grammar;
    return std::make_shared<st::ReasoningGateConstraint>(gate_tokens, grammar,
                                                         starts_in);
  };
  out->request.constraint = make();
  if (out->request.n > 1)
    out->request.constraint_factory = make;
  return std::nullopt;
}

} // namespace hyrt::serve
