// tool_call_parser.cpp - recognizing tool calls in output as it is
// generated: the markers of each family around calls, the call's JSON read
// by JsonCallScanner (see tool_calls.h).
#include "hyrt/structured/tool_calls.h"

#include "json_call_scanner.h"
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
constexpr std::string_view kDsFence = "```json";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kSpace = " \t\r\n";

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(kSpace);
  if (a == std::string_view::npos)
    return {};
  const size_t b = s.find_last_not_of(kSpace);
  return s.substr(a, b - a + 1);
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

/// Whether `s` may still grow into `marker` (a proper prefix of it).
bool may_become(std::string_view s, std::string_view marker) {
  return s.size() < marker.size() && starts_with(marker, s);
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
ToolCallParser::~ToolCallParser() = default;
ToolCallParser::ToolCallParser(ToolCallParser &&) noexcept = default;
ToolCallParser &ToolCallParser::operator=(ToolCallParser &&) noexcept = default;

void ToolCallParser::feed(std::string_view piece,
                          std::vector<ToolCallEvent> *out) {
  held_.append(piece);
  run(out, false);
}

void ToolCallParser::finish(std::vector<ToolCallEvent> *out) {
  run(out, true);
  held_.clear();
}

void ToolCallParser::start_scanner(std::unique_ptr<JsonCallScanner> scanner) {
  scanner_ = std::move(scanner);
  state_ = State::kCall;
}

void ToolCallParser::end_call(std::vector<ToolCallEvent> *out) {
  append_event(out, ToolCallEvent::Kind::kCallEnd, "");
  ++calls_ended_;
  after_call_ = true;
  raw_.clear();
  scanner_.reset();
  state_ = format_ == ToolCallFormat::kLlama3Json ? State::kBetween
                                                  : State::kAfterCall;
}

void ToolCallParser::not_a_call(std::vector<ToolCallEvent> *out,
                                std::string_view more) {
  append_event(out, ToolCallEvent::Kind::kContent, raw_);
  append_event(out, ToolCallEvent::Kind::kContent, more);
  raw_.clear();
  scanner_.reset();
}

// kCall: the scanner reads bytes until the call ends, its closing marker
// comes (outside a string), or the text runs out. False: wait for more.
bool ToolCallParser::step_call(std::vector<ToolCallEvent> *out, bool final) {
  const std::string_view close =
      format_ == ToolCallFormat::kQwen         ? kQwenClose
      : format_ == ToolCallFormat::kDeepSeekV3 ? kDsCallEnd
                                               : std::string_view();
  const std::string_view text = held_;
  size_t i = 0;
  for (; i < text.size(); ++i) {
    if (!close.empty() && !scanner_->in_string()) {
      const std::string_view rest = text.substr(i);
      if (starts_with(rest, close)) { // closed before its JSON did
        if (scanner_->started())
          end_call(out);
        else
          not_a_call(out, close); // raw_ holds the bytes read before it
        state_ = format_ == ToolCallFormat::kQwen ? State::kText
                                                  : State::kRegion;
        held_.erase(0, i + close.size());
        return true;
      }
      if (!final && may_become(rest, close))
        break;
    }
    scanner_->put(text[i], out);
    if (!scanner_->started())
      raw_ += text[i];
    if (!scanner_->done())
      continue;
    held_.erase(0, i + 1);
    if (scanner_->started()) {
      end_call(out);
    } else if (format_ == ToolCallFormat::kLlama3Json) {
      not_a_call(out, "");
      state_ = State::kPlain;
    } else {
      state_ = State::kFailedCall;
    }
    return true;
  }
  held_.erase(0, i);
  if (!final)
    return false;
  // The output stopped inside the call.
  if (scanner_->started())
    end_call(out);
  else if (format_ == ToolCallFormat::kLlama3Json && !scanner_->touched())
    scanner_.reset(); // a trailing ';' announced nothing
  else
    not_a_call(out, held_);
  held_.clear();
  return false;
}

void ToolCallParser::run(std::vector<ToolCallEvent> *out, bool final) {
  using K = ToolCallEvent::Kind;
  const bool qwen = format_ == ToolCallFormat::kQwen;
  while (true) {
    switch (state_) {
    case State::kPlain:
      append_event(out, K::kContent, held_);
      held_.clear();
      return;
    case State::kText: {
      if (format_ == ToolCallFormat::kNone) {
        state_ = State::kPlain;
        continue;
      }
      if (format_ == ToolCallFormat::kLlama3Json) {
        // The reply is a call when it starts with '{' or the python tag.
        const std::string_view t = trim(held_);
        if (t.empty() && !final)
          return;
        if (!final && may_become(t, kPythonTag))
          return;
        if (starts_with(t, "{") || starts_with(t, kPythonTag)) {
          const size_t at = held_.find_first_not_of(kSpace);
          const size_t skip =
              held_[at] == '{' ? at : at + kPythonTag.size();
          raw_ = held_.substr(0, skip);
          held_.erase(0, skip);
          start_scanner(std::make_unique<JsonCallScanner>());
        } else {
          state_ = State::kPlain;
        }
        continue;
      }
      // The newlines a template puts after a call are no content.
      if (after_call_) {
        held_.erase(0, std::min(held_.size(), held_.find_first_not_of(kSpace)));
        if (held_.empty())
          return;
        after_call_ = false;
      }
      // DeepSeek calls normally sit in a calls block; a bare call begin is
      // taken too.
      std::string_view open = qwen ? kQwenOpen : kDsCallsBegin;
      size_t at = held_.find(open);
      if (!qwen) {
        const size_t bare = held_.find(kDsCallBegin);
        if (bare < at) {
          at = bare;
          open = kDsCallBegin;
        }
      }
      if (at == std::string::npos) {
        size_t keep = final ? 0 : partial_marker_suffix(held_, open);
        if (!qwen && !final)
          keep = std::max(keep, partial_marker_suffix(held_, kDsCallBegin));
        append_event(out, K::kContent,
                     std::string_view(held_).substr(0, held_.size() - keep));
        held_.erase(0, held_.size() - keep);
        return;
      }
      append_event(out, K::kContent, std::string_view(held_).substr(0, at));
      raw_ = held_.substr(at, open.size());
      held_.erase(0, at + open.size());
      if (qwen)
        start_scanner(std::make_unique<JsonCallScanner>());
      else
        state_ = open == kDsCallBegin ? State::kHead : State::kRegion;
      if (state_ == State::kHead)
        head_.clear();
      continue;
    }
    case State::kRegion: { // DeepSeek, between calls
      const size_t start = held_.find_first_not_of(kSpace);
      if (start == std::string::npos) {
        if (final)
          held_.clear();
        return;
      }
      const std::string_view rest = std::string_view(held_).substr(start);
      if (starts_with(rest, kDsCallBegin)) {
        raw_ = std::string(kDsCallBegin);
        held_.erase(0, start + kDsCallBegin.size());
        head_.clear();
        state_ = State::kHead;
        continue;
      }
      if (starts_with(rest, kDsCallsEnd)) {
        held_.erase(0, start + kDsCallsEnd.size());
        after_call_ = calls_ended_ > 0;
        state_ = State::kText;
        continue;
      }
      if (!final &&
          (may_become(rest, kDsCallBegin) || may_become(rest, kDsCallsEnd)))
        return;
      state_ = State::kText; // something else: back to plain text
      continue;
    }
    case State::kHead: { // DeepSeek: "function" or V3.1's name, then <sep>
      const size_t sep = held_.find(kDsSep);
      if (sep == std::string::npos) {
        if (final) {
          not_a_call(out, held_);
          held_.clear();
        }
        return;
      }
      head_ = std::string(trim(std::string_view(held_).substr(0, sep)));
      raw_.append(held_, 0, sep + kDsSep.size());
      held_.erase(0, sep + kDsSep.size());
      state_ = State::kAfterSep;
      continue;
    }
    case State::kAfterSep: { // V3.1: the arguments; V3: the name
      const size_t start = held_.find_first_not_of(kSpace);
      if (start == std::string::npos) {
        if (final) {
          not_a_call(out, held_);
          held_.clear();
        }
        return;
      }
      if (held_[start] == '{') {
        start_scanner(std::make_unique<JsonCallScanner>(head_));
        scanner_->begin(out);
      } else {
        state_ = State::kName;
      }
      continue;
    }
    case State::kName: { // DeepSeek V3: the name, then ```json
      const size_t fence = held_.find(kDsFence);
      const size_t end = held_.find(kDsCallEnd);
      if (end < fence) { // no arguments: not a call this parser knows
        not_a_call(out,
                   std::string_view(held_).substr(0, end + kDsCallEnd.size()));
        held_.erase(0, end + kDsCallEnd.size());
        state_ = State::kRegion;
        continue;
      }
      if (fence == std::string::npos) {
        if (final) {
          not_a_call(out, held_);
          held_.clear();
        }
        return;
      }
      const std::string name(trim(std::string_view(held_).substr(0, fence)));
      raw_.append(held_, 0, fence + kDsFence.size());
      held_.erase(0, fence + kDsFence.size());
      start_scanner(std::make_unique<JsonCallScanner>(name));
      scanner_->begin(out);
      continue;
    }
    case State::kCall:
      if (!step_call(out, final))
        return;
      continue;
    case State::kAfterCall:
    case State::kFailedCall: {
      // Up to the call's closing marker: dropped after a call (the fence
      // and newlines DeepSeek writes), content after a text that was none.
      const std::string_view close = qwen ? kQwenClose : kDsCallEnd;
      const size_t end = held_.find(close);
      const bool failed = state_ == State::kFailedCall;
      if (end == std::string::npos) {
        if (final) {
          if (failed)
            not_a_call(out, held_);
          held_.clear();
          return;
        }
        if (!failed) // keep only what may begin the marker
          held_.erase(0, held_.size() - partial_marker_suffix(held_, close));
        return;
      }
      if (failed)
        not_a_call(out, std::string_view(held_).substr(0, end + close.size()));
      held_.erase(0, end + close.size());
      state_ = qwen ? State::kText : State::kRegion;
      continue;
    }
    case State::kBetween: { // Llama: "; {next call}" or the end
      const size_t start = held_.find_first_not_of(kSpace);
      if (start == std::string::npos) {
        if (final)
          held_.clear();
        return;
      }
      if (held_[start] == ';' || held_[start] == '{') {
        const size_t skip = held_[start] == ';' ? start + 1 : start;
        raw_ = held_.substr(0, skip);
        held_.erase(0, skip);
        start_scanner(std::make_unique<JsonCallScanner>());
      } else {
        held_.erase(0, start); // text after the calls, without the gap
        state_ = State::kPlain;
      }
      continue;
    }
    }
  }
}

void gather_tool_call_events(const std::vector<ToolCallEvent> &events,
                             ToolCallDelta *into) {
  for (const ToolCallEvent &e : events) {
    switch (e.kind) {
    case ToolCallEvent::Kind::kContent:
      into->content += e.text;
      break;
    case ToolCallEvent::Kind::kCallStart:
      into->calls.push_back({e.text, ""});
      break;
    case ToolCallEvent::Kind::kArguments:
      if (!into->calls.empty())
        into->calls.back().arguments += e.text;
      break;
    case ToolCallEvent::Kind::kCallEnd:
      break;
    }
  }
}

ToolCallDelta parse_tool_calls(ToolCallFormat format, std::string_view text) {
  ToolCallParser parser(format);
  std::vector<ToolCallEvent> events;
  parser.feed(text, &events);
  parser.finish(&events);
  ToolCallDelta out;
  gather_tool_call_events(events, &out);
  return out;
}

} // namespace hyrt::structured
