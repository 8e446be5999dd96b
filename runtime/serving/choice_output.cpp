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
  st::ToolCallDelta d = tools_->feed(r.content);
  if (final) {
    st::ToolCallDelta rest = tools_->finish();
    d.content += rest.content;
    d.calls.insert(d.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  out->content = std::move(d.content);
  for (st::ToolCall &c : d.calls) {
    if (!plan_.parallel_tool_calls && calls_ > 0)
      break; // parallel_tool_calls false: the first call only
    out->calls.push_back(std::move(c));
    ++calls_;
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
