// hyrt/structured/tool_calls.h - tool calls in model output, per chat
// family: recognizing them incrementally (events as the text comes), and
// the grammar that forces them (tool_choice "required" or a named
// function).
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

/// What reading the output made certain, in order. A call is a start (its
/// function's name), argument pieces whose concatenation is the call's
/// "arguments" string, and an end; content is the text around calls.
struct ToolCallEvent {
  enum class Kind { kContent, kCallStart, kArguments, kCallEnd };
  Kind kind;
  std::string text; ///< content, the function's name, or arguments text
};

/// The content and whole calls of some output (events gathered).
struct ToolCallDelta {
  std::string content;
  std::vector<ToolCall> calls;
};

class JsonCallScanner;

/// Incremental recognizer for one output: text goes in as it is generated,
/// events come out as soon as they are certain (a call starts once its
/// name is read: the string after "name" closes, or DeepSeek's name is
/// followed by its fence or its arguments; argument text is handed on as
/// it comes, minified; a piece of a marker is held until the next text
/// says what it is). Text that cannot be a call (not JSON, no string name)
/// is given back as content, verbatim. Whole outputs are read by the same
/// code (parse_tool_calls), so streamed and whole replies agree byte for
/// byte.
class ToolCallParser {
public:
  explicit ToolCallParser(ToolCallFormat format);
  ~ToolCallParser();
  ToolCallParser(ToolCallParser &&) noexcept;
  ToolCallParser &operator=(ToolCallParser &&) noexcept;

  void feed(std::string_view piece, std::vector<ToolCallEvent> *out);
  /// End of output: held text, and the end of a call left open (its
  /// arguments as far as they were written).
  void finish(std::vector<ToolCallEvent> *out);
  /// Calls that have ended so far.
  size_t calls_ended() const { return calls_ended_; }
  /// Between calls or in text: the last call's closing marker (if its
  /// family writes one) has been read too.
  bool outside_calls() const {
    return state_ == State::kText || state_ == State::kPlain ||
           state_ == State::kRegion || state_ == State::kBetween;
  }

private:
  enum class State {
    kText,       ///< content, looking for a call's opening marker
    kPlain,      ///< content to the end (Llama: the reply is no call)
    kRegion,     ///< DeepSeek: inside the calls block, between calls
    kHead,       ///< DeepSeek: up to <sep> ("function", or V3.1's name)
    kAfterSep,   ///< DeepSeek: after <sep>, the name or the arguments
    kName,       ///< DeepSeek V3: the name, up to ```json
    kCall,       ///< the scanner reads the call's JSON
    kAfterCall,  ///< a call ended: skipping to its closing marker
    kFailedCall, ///< not a call: its text up to the closing marker is content
    kBetween,    ///< Llama: after a call, ';' and the next, or the end
  };
  void run(std::vector<ToolCallEvent> *out, bool final);
  bool step_call(std::vector<ToolCallEvent> *out, bool final);
  void end_call(std::vector<ToolCallEvent> *out);
  void not_a_call(std::vector<ToolCallEvent> *out, std::string_view more);
  void start_scanner(std::unique_ptr<JsonCallScanner> scanner);

  ToolCallFormat format_;
  State state_ = State::kText;
  std::string held_; ///< text not yet read to the end
  std::string raw_;  ///< an unstarted call's text so far (for not_a_call)
  std::string head_; ///< DeepSeek: the text before <sep>
  std::unique_ptr<JsonCallScanner> scanner_;
  bool after_call_ = false; ///< whitespace here follows a call (dropped)
  size_t calls_ended_ = 0;
};

/// The whole output at once: content, and the calls with their arguments
/// (each equal to its streamed pieces concatenated).
ToolCallDelta parse_tool_calls(ToolCallFormat format, std::string_view text);

/// Gathers events into content and whole calls.
void gather_tool_call_events(const std::vector<ToolCallEvent> &events,
                             ToolCallDelta *into);

/// The grammar of tool calls in `format` to one of `tools` (an OpenAI
/// tools array) or, when `function_name` is not empty, to that one, their
/// arguments matching the function's "parameters" schema: exactly one call
/// then the end, or with `parallel` one or more calls.
Status compile_tool_call_grammar(ToolCallFormat format,
                                 const nlohmann::ordered_json &tools,
                                 const std::string &function_name,
                                 bool parallel, const SchemaLimits &limits,
                                 std::shared_ptr<const Grammar> *out);

} // namespace hyrt::structured
