// One choice's generated text turned into what a chat reply carries:
// reasoning_content (the <think> block), content, and tool calls, piece by
// piece as the scheduler hands the text over (streamed replies send each
// delta as it becomes certain; whole calls per delta).
#pragma once

#include "openai_api.h"

#include "hyrt/structured/reasoning.h"
#include "hyrt/structured/tool_calls.h"

#include <optional>
#include <string>
#include <vector>

namespace hyrt::serve {

/// What a piece of output made certain.
struct ChoiceDelta {
  std::string reasoning;
  std::string content;
  /// Call starts, argument pieces and ends (content is in `content`).
  std::vector<structured::ToolCallEvent> calls;
  bool empty() const {
    return reasoning.empty() && content.empty() && calls.empty();
  }
};

class ChoiceOutput {
public:
  explicit ChoiceOutput(const OutputPlan &plan);
  /// The delta that `text` (the next generated text) makes certain.
  ChoiceDelta feed(const std::string &text);
  /// End of output: whatever was held back.
  ChoiceDelta finish();

private:
  void route(structured::ReasoningDelta r, bool final, ChoiceDelta *out);

  OutputPlan plan_;
  std::optional<structured::ReasoningSplitter> reasoning_;
  std::optional<structured::ToolCallParser> tools_;
};

} // namespace hyrt::serve
