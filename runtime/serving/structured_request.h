// The structured-output fields of a request: `tools`, `tool_choice`,
// `parallel_tool_calls` (chat) and `response_format` (chat and
// completions), checked against bounds (they come from the socket), turned
// into the request's TokenConstraint and into what the reply is parsed
// for (reasoning, tool calls).
#pragma once

#include "openai_api.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace hyrt::serve {

/// Bounds on what the structured fields may hold: each is a 400 naming it.
struct StructuredBounds {
  static constexpr size_t kMaxSchemaBytes = 128 << 10; ///< a schema's JSON
  static constexpr size_t kMaxTools = 128;
  static constexpr size_t kMaxToolBytes = 64 << 10;   ///< one tool's JSON
  static constexpr size_t kMaxToolsBytes = 512 << 10; ///< all tools
  static constexpr size_t kMaxNameBytes = 64;         ///< OpenAI's
};

/// OpenAI's rule for function and schema names: 1 to 64 of a-z, A-Z, 0-9,
/// '_' and '-'.
bool valid_function_name(const std::string &name);

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

/// A request's tools, in the order and with the key order the client sent
/// (templates render them with tojson; schemas set the output's order).
struct ToolsRequest {
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice choice = ToolChoice::kAuto;
  std::string name; ///< kNamed: the function
  bool parallel = true;
  /// Tools go to the template and the reply is parsed for calls.
  bool active() const { return !tools.empty() && choice != ToolChoice::kNone; }
};

/// Reads `tools`, `tool_choice` and `parallel_tool_calls` of `body`
/// (`body_text` is re-read with key order kept when tools are present).
std::optional<ApiError> parse_tools(const std::string &body_text,
                                    const nlohmann::json &body,
                                    ToolsRequest *out);

/// Sets out->request's constraint (response_format, or a required / named
/// tool call) and out->output (reasoning split, tool-call parsing) for a
/// request whose prompt is `prompt` (its rendered text for chat).
std::optional<ApiError> plan_structured(const std::string &body_text,
                                        const nlohmann::json &body,
                                        const ServeLimits &limits,
                                        const ToolsRequest &tools,
                                        const Prompt &prompt, bool templated,
                                        ParsedRequest *out);

} // namespace hyrt::serve
