// reasoning.cpp - the <think> splitter: a small state machine that holds
// back any suffix that could still grow into a tag.
#include "hyrt/structured/reasoning.h"

#include "text_markers.h"

namespace hyrt::structured {
namespace {
constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
} // namespace

ReasoningSplitter::ReasoningSplitter(bool starts_in_reasoning)
    : state_(starts_in_reasoning ? State::kOpening : State::kStart) {}

ReasoningDelta ReasoningSplitter::feed(std::string_view piece) {
  held_.append(piece);
  ReasoningDelta out;
  run(&out, false);
  return out;
}

ReasoningDelta ReasoningSplitter::finish() {
  ReasoningDelta out;
  run(&out, true);
  return out;
}

void ReasoningSplitter::run(ReasoningDelta *out, bool final) {
  while (true) {
    switch (state_) {
    case State::kStart:
    case State::kOpening: {
      // An opening tag may come first, after whitespace (R1 sometimes
      // repeats the one its prompt holds).
      const size_t start = held_.find_first_not_of(" \t\r\n");
      const std::string_view rest =
          start == std::string::npos ? std::string_view()
                                     : std::string_view(held_).substr(start);
      if (rest.substr(0, kOpen.size()) == kOpen) {
        held_.erase(0, start + kOpen.size());
        state_ = State::kReasoning;
        continue;
      }
      if (!final && kOpen.substr(0, rest.size()) == rest)
        return; // all whitespace, or a prefix of "<think>": wait
      state_ = state_ == State::kStart ? State::kContent : State::kReasoning;
      continue;
    }
    case State::kReasoning: {
      const size_t at = held_.find(kClose);
      if (at != std::string::npos) {
        out->reasoning += held_.substr(0, at);
        held_.erase(0, at + kClose.size());
        state_ = State::kAfterClose;
        continue;
      }
      const size_t keep = final ? 0 : partial_marker_suffix(held_, kClose);
      out->reasoning += held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return;
    }
    case State::kAfterClose: {
      const size_t start = held_.find_first_not_of("\r\n");
      if (start == std::string::npos) {
        held_.clear();
        return; // only newlines so far: drop them, wait for content
      }
      held_.erase(0, start);
      state_ = State::kContent;
      continue;
    }
    case State::kContent:
      out->content += held_;
      held_.clear();
      return;
    }
  }
}

bool prompt_opens_reasoning(std::string_view prompt) {
  const size_t open = prompt.rfind(kOpen);
  if (open == std::string_view::npos)
    return false;
  const size_t close = prompt.rfind(kClose);
  if (close != std::string_view::npos && close > open)
    return false;
  return prompt.find_first_not_of(" \t\r\n", open + kOpen.size()) ==
         std::string_view::npos;
}

} // namespace hyrt::structured
