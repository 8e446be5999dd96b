// hyrt/structured/reasoning.h - splits streamed model text into
// reasoning_content (inside <think>...</think>) and content, for Qwen3 and
// DeepSeek-R1 style models.
//
// Text arrives in pieces and a tag may be split across them: text that
// could be the start of a tag is held back until the next piece decides.
// Qwen3 writes "<think>" itself at the start of its output (or nothing,
// when thinking is off: then all is content). DeepSeek-R1's template ends
// the prompt with "<think>\n", so the output starts inside the reasoning
// (prompt_opens_reasoning() tells which). The reasoning text is kept as
// written; the newlines right after "</think>" are dropped from content.
#pragma once

#include <string>
#include <string_view>

namespace hyrt::structured {

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

class ReasoningSplitter {
public:
  /// `starts_in_reasoning`: the prompt already opened the thinking block.
  explicit ReasoningSplitter(bool starts_in_reasoning);
  /// The reasoning and content that `piece` makes certain.
  ReasoningDelta feed(std::string_view piece);
  /// End of output: whatever was held back (a reasoning block that never
  /// closed stays reasoning).
  ReasoningDelta finish();

private:
  enum class State { kStart, kOpening, kReasoning, kAfterClose, kContent };
  void run(ReasoningDelta *out, bool final);
  State state_;
  std::string held_;
};

/// Whether a rendered prompt ends inside an open <think> block (the last
/// "<think>" comes after the last "</think>" and only whitespace follows
/// it), so that the output starts in the reasoning.
bool prompt_opens_reasoning(std::string_view rendered_prompt);

} // namespace hyrt::structured
