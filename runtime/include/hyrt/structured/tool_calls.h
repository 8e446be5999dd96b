// hyrt/structured/tool_calls.h - tool calls in model output, per chat
// family: recognizing them (streamed), and the grammar that forces one
// (tool_choice "required" or a named function).
//
// Wire formats, as the checkpoints' chat templates write them:
// - Qwen2.5 / Qwen3 (Hermes style):
//     <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
// - DeepSeek-V3 / R1:
//     <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n
//     ```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//   (also the V3.1 form <｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}<｜tool▁call▁end｜>);
// - Llama 3.1 JSON tool calling: the whole reply is
//     {"name": "f", "parameters": {...}}   (optionally after <|python_tag|>,
//   several separated by ';').
#pragma once

#include "hyrt/status.h"
#include "hyrt/structured/grammar.h"
#include "hyrt/structured/json_schema.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hyrt::structured {

enum class ToolCallFormat { kNone, kQwen, kDeepSeekV3, kLlama3Json };

/// The family a chat template writes tool calls in (kNone: it has no tool
/// calls this library knows).
ToolCallFormat detect_tool_call_format(std::string_view chat_template);
const char *tool_call_format_name(ToolCallFormat format);

/// One call, as OpenAI's tool_calls[i].function: the arguments are a JSON
/// object written as a string.
struct ToolCall {
  std::string name;
  std::string arguments;
};

/// What a piece of output made certain: text for `content`, and the calls
/// completed in it (their index in tool_calls is the number of calls
/// returned before them).
struct ToolCallDelta {
  std::string content;
  std::vector<ToolCall> calls;
};

/// Streaming recognizer for one output. A call that does not parse (bad
/// JSON, no name) is given back as content, verbatim.
class ToolCallParser {
public:
  explicit ToolCallParser(ToolCallFormat format);
  ToolCallDelta feed(std::string_view piece);
  /// End of output: held text, and a call left open if it parses.
  ToolCallDelta finish();

private:
  enum class State { kText, kRegion, kCall };
  void run(ToolCallDelta *out, bool final);
  void take_call(std::string_view body, std::string_view raw,
                 ToolCallDelta *out);

  ToolCallFormat format_;
  State state_ = State::kText;
  std::string held_;
  std::string raw_; // the markers read so far of an open call (kQwen)
  bool decided_ = false; // kLlama3Json: whether the reply is a call
};

/// The whole output at once.
ToolCallDelta parse_tool_calls(ToolCallFormat format, std::string_view text);

/// The grammar of exactly one call, in `format`, to one of `tools` (an
/// OpenAI tools array) or, when `function_name` is not empty, to that one,
/// its arguments matching the function's "parameters" schema.
Status compile_tool_call_grammar(ToolCallFormat format,
                                 const nlohmann::ordered_json &tools,
                                 const std::string &function_name,
                                 const SchemaLimits &limits,
                                 std::shared_ptr<const Grammar> *out);

} // namespace hyrt::structured
