// tool_call_grammar.cpp - the grammar of tool calls in a family's wire
// format, for tool_choice "required" or a named function: the literal
// markers around the function's name, its parameters schema inside; one
// call then the end, or (parallel_tool_calls) one or more.
#include "hyrt/structured/tool_calls.h"

#include "schema_compiler.h"

namespace hyrt::structured {

namespace {

// The text before and after the arguments of a call to `name`.
std::pair<std::string, std::string> wire(ToolCallFormat format,
                                         const std::string &name) {
  const std::string quoted = nlohmann::ordered_json(name).dump();
  switch (format) {
  case ToolCallFormat::kQwen:
    return {"<tool_call>\n{\"name\": " + quoted + ", \"arguments\": ",
            "}\n</tool_call>"};
  case ToolCallFormat::kDeepSeekV3:
    return {"<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n",
            "\n```<｜tool▁call▁end｜>"};
  case ToolCallFormat::kLlama3Json:
    return {"{\"name\": " + quoted + ", \"parameters\": ", "}"};
  case ToolCallFormat::kNone:
    break;
  }
  return {};
}

// Around the calls (DeepSeek's block), and between two calls, as the
// families' templates write them.
struct Frame {
  std::string open, between, close;
};
Frame frame(ToolCallFormat format) {
  switch (format) {
  case ToolCallFormat::kQwen:
    return {"", "\n", ""};
  case ToolCallFormat::kDeepSeekV3:
    return {"<｜tool▁calls▁begin｜>", "\n", "<｜tool▁calls▁end｜>"};
  case ToolCallFormat::kLlama3Json:
    return {"", "; ", ""};
  case ToolCallFormat::kNone:
    break;
  }
  return {};
}

} // namespace

Status compile_tool_call_grammar(ToolCallFormat format,
                                 const nlohmann::ordered_json &tools,
                                 const std::string &function_name,
                                 bool parallel, const SchemaLimits &limits,
                                 std::shared_ptr<const Grammar> *out) {
  if (format == ToolCallFormat::kNone)
    return Status::Error("tool_choice: this model's chat template has no tool "
                         "call format hyc knows (Qwen, DeepSeek-V3, Llama 3.1 "
                         "JSON)");
  if (!tools.is_array() || tools.empty())
    return Status::Error("tool_choice: \"tools\" must be a non-empty array");
  GrammarBuilder builder(limits.max_states);
  JsonPieces pieces(builder);
  static const nlohmann::ordered_json kNoParameters =
      nlohmann::ordered_json::parse(R"({"type":"object","properties":{}})");
  std::vector<Frag> calls;
  // Each function's parameters are their own document ("#" is them); the
  // compilers must live until the grammar is finished.
  std::vector<std::unique_ptr<SchemaCompiler>> compilers;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::ordered_json &tool = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object() || !tool.contains("function") ||
        !tool["function"].is_object() || !tool["function"].contains("name") ||
        !tool["function"]["name"].is_string())
      return Status::Error(at + ": expected {\"type\": \"function\", "
                                "\"function\": {\"name\": ...}}");
    const nlohmann::ordered_json &fn = tool["function"];
    const std::string name = fn["name"].get<std::string>();
    if (!function_name.empty() && name != function_name)
      continue;
    if (name.empty() || name.find_first_of("\n\"\\<>`") != std::string::npos)
      return Status::Error(at + ": function name \"" + name +
                           "\" holds characters a call cannot carry");
    const nlohmann::ordered_json &params =
        fn.contains("parameters") ? fn["parameters"] : kNoParameters;
    compilers.push_back(
        std::make_unique<SchemaCompiler>(builder, pieces, params, limits));
    Frag args = compilers.back()->value(params, at + ".parameters", 0);
    if (!compilers.back()->status().ok())
      return Status::Error("tool " + name + ": " +
                           compilers.back()->status().message());
    auto [before, after] = wire(format, name);
    calls.push_back(
        builder.seq({builder.literal(before), args, builder.literal(after)}));
  }
  if (calls.empty())
    return Status::Error("tool_choice names function \"" + function_name +
                         "\", which is not among the tools");
  const int32_t one = builder.new_rule("tool call");
  builder.set_rule_body(one, builder.alt(calls));
  // parallel_tool_calls false: the grammar ends after the first call, so
  // the only token left is end-of-sequence.
  const Frame f = frame(format);
  Frag body = builder.call(one);
  if (parallel)
    body = builder.seq(
        body, builder.star(builder.seq(builder.literal(f.between),
                                       builder.call(one))));
  const int32_t root = builder.new_rule("tool calls");
  builder.set_rule_body(root, builder.seq({builder.literal(f.open), body,
                                           builder.literal(f.close)}));
  auto grammar = std::make_shared<Grammar>();
  if (Status s = builder.finish(root, limits.max_stack_depth,
                                std::string("tool call (") +
                                    tool_call_format_name(format) + ")",
                                grammar.get());
      !s.ok())
    return s;
  *out = std::move(grammar);
  return Status::Ok();
}

} // namespace hyrt::structured
