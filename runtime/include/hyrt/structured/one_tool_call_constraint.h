// hyrt/structured/one_tool_call_constraint.h - parallel_tool_calls false
// under tool_choice "auto": the model writes freely (text, or a call),
// and once its first call has ended (its closing marker written) only
// end-of-sequence may follow.
//
// The output is read as the reply is (reasoning split off, then the
// family's ToolCallParser), so "the first call ended" here is the moment
// the client's reply has its one call; the request then stops, and a
// second call cannot begin. (tool_choice "required" / a named function get
// the same by their grammar: one call, then the end.)
#pragma once

#include "hyrt/engine/token_constraint.h"
#include "hyrt/structured/reasoning.h"
#include "hyrt/structured/token_vocabulary.h"
#include "hyrt/structured/tool_calls.h"

#include <memory>
#include <optional>

namespace hyrt::structured {

class OneToolCallConstraint final : public hyrt::TokenConstraint {
public:
  /// `split_reasoning` / `starts_in_reasoning`: as the reply is split
  /// (calls are looked for in the answer only).
  OneToolCallConstraint(std::shared_ptr<const TokenVocabulary> vocab,
                        ToolCallFormat format, bool split_reasoning,
                        bool starts_in_reasoning);

  /// Nothing before the first call has ended; then all but the stop ids.
  void mask(float *logits, int64_t n) override;
  bool accept(int32_t token) override;
  /// Any prefix may end (unconstrained text may stop anywhere).
  bool complete() const override { return true; }
  bool can_continue() const override { return !ended_; }

private:
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::optional<ReasoningSplitter> reasoning_;
  ToolCallParser calls_;
  std::vector<ToolCallEvent> scratch_;
  bool ended_ = false;
};

} // namespace hyrt::structured
