// one_tool_call_constraint.cpp - the output ends after its first tool call
// (see one_tool_call_constraint.h).
#include "hyrt/structured/one_tool_call_constraint.h"

#include <limits>

namespace hyrt::structured {

OneToolCallConstraint::OneToolCallConstraint(
    std::shared_ptr<const TokenVocabulary> vocab, ToolCallFormat format,
    bool split_reasoning, bool starts_in_reasoning)
    : vocab_(std::move(vocab)), calls_(format) {
  if (split_reasoning)
    reasoning_.emplace(starts_in_reasoning);
}

void OneToolCallConstraint::mask(float *logits, int64_t n) {
  if (!ended_)
    return;
  const float minus_inf = -std::numeric_limits<float>::infinity();
  std::vector<float> keep;
  for (int32_t id : vocab_->stop_ids())
    keep.push_back(id < n ? logits[id] : 0.0f);
  for (int64_t id = 0; id < n; ++id)
    logits[id] = minus_inf;
  for (size_t i = 0; i < keep.size(); ++i)
    if (vocab_->stop_ids()[i] < n)
      logits[vocab_->stop_ids()[i]] = keep[i];
}

bool OneToolCallConstraint::accept(int32_t token) {
  if (token < 0 || token >= vocab_->size())
    return !ended_; // ids past the tokenizer write nothing
  if (ended_)
    return vocab_->is_stop(token);
  const std::string &bytes = vocab_->bytes(token);
  std::string answer = bytes;
  if (reasoning_)
    answer = reasoning_->feed(bytes).content;
  scratch_.clear();
  calls_.feed(answer, &scratch_);
  // Its closing marker written, as the template writes one.
  ended_ = calls_.calls_ended() > 0 && calls_.outside_calls();
  return true;
}

} // namespace hyrt::structured
