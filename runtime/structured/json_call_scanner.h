// json_call_scanner.h - reads one tool call's JSON a byte at a time, so
// that its name is known as soon as it is written and its arguments can be
// handed on while they are generated.
//
// Two shapes:
//  - a call object {"name": "f", "arguments" | "parameters": {...}} (Qwen,
//    Llama 3.1), keys in any order;
//  - the arguments object alone, the name known from the markers
//    (DeepSeek).
// The call starts once its name is read (arguments written before the
// name wait for it). Object arguments are passed on minified (whitespace
// outside strings dropped, nothing else changed), so the pieces of a
// streamed call and the whole call agree byte for byte. Arguments written
// as a JSON string are decoded once the string closes; absent arguments
// are "{}".
#pragma once

#include "hyrt/structured/tool_calls.h"

#include <string>
#include <vector>

namespace hyrt::structured {

class JsonCallScanner {
public:
  /// A call object.
  JsonCallScanner();
  /// The arguments object of a call to `name`.
  explicit JsonCallScanner(std::string name);

  /// Reads the next byte; a call start and argument pieces go to `out`.
  void put(char c, std::vector<ToolCallEvent> *out);
  /// The object closed, or the text cannot be a call object.
  bool done() const { return state_ == State::kDone || failed(); }
  bool failed() const { return state_ == State::kFailed; }
  /// The call's start went out: its name was read (a call object's name
  /// as soon as its string closes), and its arguments follow.
  bool started() const { return started_; }
  /// Inside a JSON string (a marker there is text, not a marker).
  bool in_string() const { return value_.in_string || state_ == State::kKey; }
  /// Whether a byte other than whitespace was read.
  bool touched() const { return touched_; }
  /// Starts the call when its name is known already (the arguments-only
  /// shape).
  void begin(std::vector<ToolCallEvent> *out);

private:
  enum class State {
    kBeforeOpen,
    kBeforeKey,
    kKey,
    kAfterKey,
    kBeforeValue,
    kValue,
    kAfterValue,
    kDone,
    kFailed
  };
  enum class Role { kName, kArguments, kOther };
  struct Value {
    Role role = Role::kOther;
    std::string raw; ///< the value's text (object arguments: not kept here)
    char first = 0;
    int depth = 0;
    bool in_string = false, escaped = false;
  };

  void begin_value(char c, std::vector<ToolCallEvent> *out);
  /// Reads `c` inside the value; false when `c` lies after it (a scalar's
  /// terminator), to be read again in kAfterValue.
  bool value_byte(char c, std::vector<ToolCallEvent> *out);
  void end_value(std::vector<ToolCallEvent> *out);
  void maybe_start(std::vector<ToolCallEvent> *out);
  void closed(std::vector<ToolCallEvent> *out);
  void arguments_text(char c, std::vector<ToolCallEvent> *out);

  const bool arguments_only_;
  State state_;
  std::string key_;
  Value value_;
  std::string name_;
  bool have_name_ = false, bad_ = false;
  enum class Args { kAbsent, kObject, kString } args_ = Args::kAbsent;
  bool args_seen_ = false;
  std::string pending_; ///< arguments read before the call could start
  bool started_ = false, touched_ = false;
};

/// Appends an event, merging it into the last one when both are content or
/// both are argument pieces.
void append_event(std::vector<ToolCallEvent> *out, ToolCallEvent::Kind kind,
                  std::string_view text);

} // namespace hyrt::structured
