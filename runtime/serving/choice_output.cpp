// A choice's text split into reasoning, content and tool calls (see
// choice_output.h).
#include "choice_output.h"

namespace hyrt::serve {

namespace st = hyrt::structured;

ChoiceOutput::ChoiceOutput(const OutputPlan &plan) : plan_(plan) {
  if (plan.split_reasoning)
    reasoning_.emplace(plan.starts_in_reasoning);
  if (plan.tool_format != st::ToolCallFormat::kNone)
    tools_.emplace(plan.tool_format);
}

void ChoiceOutput::route(st::ReasoningDelta r, bool final, ChoiceDelta *out) {
  out->reasoning = std::move(r.reasoning);
  // Tool calls are looked for in the answer only: a model that thinks
  // about calling a tool has not called it.
  if (!tools_) {
    out->content = std::move(r.content);
    return;
  }
  std::vector<st::ToolCallEvent> events;
  tools_->feed(r.content, &events);
  if (final)
    tools_->finish(&events);
  // parallel_tool_calls false is kept by the constraint (one call, then
  // the end), not here.
  for (st::ToolCallEvent &e : events) {
    if (e.kind == st::ToolCallEvent::Kind::kContent)
      out->content += e.text;
    else
      out->calls.push_back(std::move(e));
  }
}

ChoiceDelta ChoiceOutput::feed(const std::string &text) {
  ChoiceDelta out;
  st::ReasoningDelta r;
  if (reasoning_)
    r = reasoning_->feed(text);
  else
    r.content = text;
  route(std::move(r), false, &out);
  return out;
}

ChoiceDelta ChoiceOutput::finish() {
  ChoiceDelta out;
  st::ReasoningDelta r;
  if (reasoning_)
    r = reasoning_->finish();
  route(std::move(r), true, &out);
  return out;
}

} // namespace hyrt::serve
