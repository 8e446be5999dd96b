// json_call_scanner.cpp - one tool call's JSON read a byte at a time (see
// json_call_scanner.h).
#include "json_call_scanner.h"

#include "hyrt/support/json.h"

namespace hyrt::structured {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

} // namespace

void append_event(std::vector<ToolCallEvent> *out, ToolCallEvent::Kind kind,
                  std::string_view text) {
  using K = ToolCallEvent::Kind;
  if ((kind == K::kContent || kind == K::kArguments) && text.empty())
    return;
  if ((kind == K::kContent || kind == K::kArguments) && !out->empty() &&
      out->back().kind == kind) {
    out->back().text += text;
    return;
  }
  out->push_back({kind, std::string(text)});
}

JsonCallScanner::JsonCallScanner()
    : arguments_only_(false), state_(State::kBeforeOpen) {}

JsonCallScanner::JsonCallScanner(std::string name)
    : arguments_only_(true), state_(State::kBeforeValue),
      name_(std::move(name)), have_name_(!name_.empty()) {
  value_.role = Role::kArguments;
}

void JsonCallScanner::begin(std::vector<ToolCallEvent> *out) {
  maybe_start(out);
}

void JsonCallScanner::maybe_start(std::vector<ToolCallEvent> *out) {
  if (started_ || !have_name_ || bad_)
    return;
  started_ = true;
  append_event(out, ToolCallEvent::Kind::kCallStart, name_);
  append_event(out, ToolCallEvent::Kind::kArguments, pending_);
  pending_.clear();
}

void JsonCallScanner::arguments_text(char c, std::vector<ToolCallEvent> *out) {
  if (started_)
    append_event(out, ToolCallEvent::Kind::kArguments, std::string_view(&c, 1));
  else
    pending_ += c;
}

void JsonCallScanner::begin_value(char c, std::vector<ToolCallEvent> *out) {
  const Role role = value_.role;
  value_ = Value();
  value_.role = role;
  value_.first = c;
  if (role == Role::kArguments) {
    args_seen_ = true;
    if (c == '{') {
      args_ = Args::kObject;
    } else if (c == '"') {
      args_ = Args::kString;
    } else {
      bad_ = true; // arguments are an object or a string holding one
    }
  }
  state_ = State::kValue;
  value_byte(c, out);
}

bool JsonCallScanner::value_byte(char c, std::vector<ToolCallEvent> *out) {
  Value &v = value_;
  const bool object_args = v.role == Role::kArguments && args_ == Args::kObject;
  bool ends = false;
  if (v.in_string) {
    if (v.escaped)
      v.escaped = false;
    else if (c == '\\')
      v.escaped = true;
    else if (c == '"')
      v.in_string = false, ends = v.depth == 0;
  } else if (c == '"') {
    v.in_string = true;
  } else if (c == '{' || c == '[') {
    ++v.depth;
  } else if (c == '}' || c == ']') {
    if (v.depth == 0) // a scalar ended by its object's close
      return false;
    ends = --v.depth == 0;
  } else if (v.depth == 0 && (c == ',' || is_space(c)) && v.first != c) {
    return false; // a scalar's end
  }
  if (object_args) {
    if (v.in_string || !is_space(c))
      arguments_text(c, out);
  } else {
    v.raw += c;
  }
  if (ends)
    end_value(out);
  return true;
}

void JsonCallScanner::end_value(std::vector<ToolCallEvent> *out) {
  state_ = arguments_only_ ? State::kDone : State::kAfterValue;
  const Value &v = value_;
  if (v.role == Role::kName) {
    nlohmann::ordered_json j;
    if (parse_json(v.raw, &j).empty() && j.is_string()) {
      name_ = j.get<std::string>();
      have_name_ = true;
    } else {
      bad_ = true;
    }
  } else if (v.role == Role::kArguments && args_ == Args::kString) {
    nlohmann::ordered_json j;
    if (parse_json(v.raw, &j).empty() && j.is_string()) {
      if (started_)
        append_event(out, ToolCallEvent::Kind::kArguments,
                     j.get<std::string>());
      else
        pending_ = j.get<std::string>();
    } else if (!started_) {
      bad_ = true;
    }
  }
  maybe_start(out);
}

void JsonCallScanner::put(char c, std::vector<ToolCallEvent> *out) {
  if (!is_space(c))
    touched_ = true;
  switch (state_) {
  case State::kBeforeOpen:
    if (c == '{')
      state_ = State::kBeforeKey;
    else if (!is_space(c))
      state_ = State::kFailed;
    return;
  case State::kBeforeKey:
    if (c == '"') {
      key_.clear();
      state_ = State::kKey;
    } else if (c == '}') {
      closed(out);
    } else if (!is_space(c)) {
      state_ = State::kFailed;
    }
    return;
  case State::kKey:
    if (c == '"' && (key_.empty() || key_.back() != '\\')) {
      const bool args = (key_ == "arguments" || key_ == "parameters");
      value_.role = key_ == "name" && !have_name_ ? Role::kName
                    : args && !args_seen_         ? Role::kArguments
                                                  : Role::kOther;
      state_ = State::kAfterKey;
    } else {
      key_ += c;
    }
    return;
  case State::kAfterKey:
    if (c == ':')
      state_ = State::kBeforeValue;
    else if (!is_space(c))
      state_ = State::kFailed;
    return;
  case State::kBeforeValue:
    if (!is_space(c))
      begin_value(c, out);
    return;
  case State::kValue:
    if (value_byte(c, out))
      return;
    end_value(out);
    if (state_ == State::kDone)
      return; // a scalar where arguments belong: bad_ says so
    put(c, out);
    return;
  case State::kAfterValue:
    if (c == ',')
      state_ = State::kBeforeKey;
    else if (c == '}')
      closed(out);
    else if (!is_space(c))
      state_ = State::kFailed;
    return;
  case State::kDone:
  case State::kFailed:
    return;
  }
}

void JsonCallScanner::closed(std::vector<ToolCallEvent> *out) {
  state_ = State::kDone;
  if (started_ && !args_seen_)
    append_event(out, ToolCallEvent::Kind::kArguments, "{}");
}

} // namespace hyrt::structured
