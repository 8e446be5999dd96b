// tool_call_parser.cpp - recognizing tool calls in streamed output.
#include "hyrt/structured/tool_calls.h"

#include "hyrt/support/json.h"
#include "text_markers.h"

namespace hyrt::structured {
namespace {

constexpr std::string_view kQwenOpen = "<tool_call>";
constexpr std::string_view kQwenClose = "</tool_call>";
constexpr std::string_view kDsCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kDsCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDsCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDsCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kDsSep = "<｜tool▁sep｜>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos)
    return {};
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// {"name": ..., "arguments" | "parameters": {...} or "..."} -> call.
bool call_from_json(std::string_view text, ToolCall *call) {
  nlohmann::ordered_json j;
  if (!parse_json(trim(text), &j).empty() || !j.is_object() ||
      !j.contains("name") || !j["name"].is_string())
    return false;
  call->name = j["name"].get<std::string>();
  const char *key = j.contains("arguments") ? "arguments" : "parameters";
  if (!j.contains(key)) {
    call->arguments = "{}";
  } else if (j[key].is_string()) {
    call->arguments = j[key].get<std::string>();
  } else if (j[key].is_object()) {
    call->arguments = j[key].dump();
  } else {
    return false;
  }
  return true;
}

// DeepSeek: "function<sep>name\n```json\n{...}\n```" or "name<sep>{...}".
bool call_from_deepseek(std::string_view body, ToolCall *call) {
  const size_t sep = body.find(kDsSep);
  if (sep == std::string_view::npos)
    return false;
  const std::string_view head = trim(body.substr(0, sep));
  std::string_view rest = body.substr(sep + kDsSep.size());
  std::string_view name, args;
  const size_t fence = rest.find("```json");
  if (fence != std::string_view::npos) {
    name = trim(rest.substr(0, fence));
    args = rest.substr(fence + 7);
    const size_t close = args.rfind("```");
    if (close == std::string_view::npos)
      return false;
    args = args.substr(0, close);
  } else {
    name = head;
    args = rest;
  }
  nlohmann::ordered_json j;
  if (name.empty() || !parse_json(trim(args), &j).empty() || !j.is_object())
    return false;
  call->name = std::string(name);
  call->arguments = j.dump();
  return true;
}

} // namespace

ToolCallFormat detect_tool_call_format(std::string_view t) {
  if (t.find("<tool_call>") != std::string_view::npos)
    return ToolCallFormat::kQwen;
  if (t.find("tool▁calls▁begin") != std::string_view::npos ||
      t.find("tool▁call▁begin") != std::string_view::npos)
    return ToolCallFormat::kDeepSeekV3;
  if (t.find("<|start_header_id|>") != std::string_view::npos &&
      (t.find("\"parameters\"") != std::string_view::npos ||
       t.find("<|python_tag|>") != std::string_view::npos ||
       t.find("ipython") != std::string_view::npos))
    return ToolCallFormat::kLlama3Json;
  return ToolCallFormat::kNone;
}

const char *tool_call_format_name(ToolCallFormat f) {
  switch (f) {
  case ToolCallFormat::kQwen: return "qwen";
  case ToolCallFormat::kDeepSeekV3: return "deepseek_v3";
  case ToolCallFormat::kLlama3Json: return "llama3_json";
  case ToolCallFormat::kNone: break;
  }
  return "none";
}

ToolCallParser::ToolCallParser(ToolCallFormat format) : format_(format) {}

ToolCallDelta ToolCallParser::feed(std::string_view piece) {
  held_.append(piece);
  ToolCallDelta out;
  run(&out, false);
  return out;
}

ToolCallDelta ToolCallParser::finish() {
  ToolCallDelta out;
  run(&out, true);
  return out;
}

void ToolCallParser::take_call(std::string_view body, std::string_view raw,
                               ToolCallDelta *out) {
  ToolCall call;
  const bool ok = format_ == ToolCallFormat::kDeepSeekV3
                      ? call_from_deepseek(body, &call)
                      : call_from_json(body, &call);
  if (ok)
    out->calls.push_back(std::move(call));
  else
    out->content += raw;
}

void ToolCallParser::run(ToolCallDelta *out, bool final) {
  if (format_ == ToolCallFormat::kNone) {
    out->content += held_;
    held_.clear();
    return;
  }
  if (format_ == ToolCallFormat::kLlama3Json) {
    // The reply is a call when it starts with '{' or the python tag: then
    // it is held to the end and parsed whole.
    if (!decided_) {
      const std::string_view t = trim(held_);
      if (t.empty() || (!final && kPythonTag.substr(0, t.size()) == t))
        return;
      decided_ = true;
      state_ = (t[0] == '{' || t.substr(0, kPythonTag.size()) == kPythonTag)
                   ? State::kCall
                   : State::kText;
    }
    if (state_ == State::kText || !final) {
      if (state_ == State::kText) {
        out->content += held_;
        held_.clear();
      }
      return;
    }
    std::string_view body = trim(held_);
    if (body.substr(0, kPythonTag.size()) == kPythonTag)
      body = trim(body.substr(kPythonTag.size()));
    // Calls separated by ';' outside strings and brackets.
    ToolCallDelta calls;
    bool ok = true;
    size_t from = 0;
    int depth = 0;
    hyrt::JsonStringSkipper skip;
    for (size_t i = 0; i <= body.size() && ok; ++i) {
      const char c = i < body.size() ? body[i] : ';';
      if (!skip.structural(c))
        continue;
      if (c == '{' || c == '[')
        ++depth;
      else if (c == '}' || c == ']')
        --depth;
      else if (c == ';' && depth == 0) {
        ToolCall call;
        ok = call_from_json(body.substr(from, i - from), &call);
        calls.calls.push_back(std::move(call));
        from = i + 1;
      }
    }
    if (skip.in_string() || from != body.size() + 1) // unterminated: not a call
      ok = false;
    if (!ok) {
      calls.calls.clear();
      out->content += held_;
    }
    for (ToolCall &c : calls.calls)
      out->calls.push_back(std::move(c));
    held_.clear();
    return;
  }
  const bool qwen = format_ == ToolCallFormat::kQwen;
  while (true) {
    if (state_ == State::kText) {
      // DeepSeek calls normally sit in a calls block; a bare call begin is
      // taken too.
      std::string_view open = qwen ? kQwenOpen : kDsCallsBegin;
      size_t at = held_.find(open);
      if (!qwen) {
        const size_t bare = held_.find(kDsCallBegin);
        if (bare < at) {
          at = bare;
          open = {};
        }
      }
      if (at == std::string::npos) {
        size_t keep = final ? 0 : partial_marker_suffix(held_, open);
        if (!qwen && !final)
          keep = std::max(keep, partial_marker_suffix(held_, kDsCallBegin));
        out->content += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return;
      }
      out->content += held_.substr(0, at);
      raw_ = held_.substr(at, open.size());
      held_.erase(0, at + open.size());
      state_ = qwen ? State::kCall : State::kRegion;
      continue;
    }
    if (state_ == State::kRegion) { // DeepSeek, between calls
      const size_t start = held_.find_first_not_of(" \t\r\n");
      if (start == std::string::npos) {
        if (final)
          held_.clear();
        return;
      }
      const std::string_view rest = std::string_view(held_).substr(start);
      if (rest.substr(0, kDsCallBegin.size()) == kDsCallBegin) {
        held_.erase(0, start + kDsCallBegin.size());
        raw_ = std::string(kDsCallBegin);
        state_ = State::kCall;
        continue;
      }
      if (rest.substr(0, kDsCallsEnd.size()) == kDsCallsEnd) {
        held_.erase(0, start + kDsCallsEnd.size());
        state_ = State::kText;
        continue;
      }
      if (!final && (kDsCallBegin.substr(0, rest.size()) == rest ||
                     kDsCallsEnd.substr(0, rest.size()) == rest))
        return;
      state_ = State::kText; // something else: back to plain text
      continue;
    }
    // kCall: up to the end marker.
    const std::string_view close = qwen ? kQwenClose : kDsCallEnd;
    const size_t end = held_.find(close);
    if (end == std::string::npos) {
      if (final) { // output stopped inside a call: take it if it parses
        take_call(held_, raw_ + held_, out);
        held_.clear();
      }
      return;
    }
    take_call(std::string_view(held_).substr(0, end),
              raw_ + held_.substr(0, end + close.size()), out);
    held_.erase(0, end + close.size());
    state_ = qwen ? State::kText : State::kRegion;
  }
}

ToolCallDelta parse_tool_calls(ToolCallFormat format, std::string_view text) {
  ToolCallParser parser(format);
  ToolCallDelta out = parser.feed(text);
  ToolCallDelta rest = parser.finish();
  out.content += rest.content;
  for (ToolCall &c : rest.calls)
    out.calls.push_back(std::move(c));
  return out;
}

} // namespace hyrt::structured
