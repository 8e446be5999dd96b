// reasoning_constraint.cpp - the gate that holds a constraint back until
// the reasoning block has closed (see reasoning_constraint.h).
#include "hyrt/structured/reasoning_constraint.h"

#include "text_markers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

namespace hyrt::structured {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool only_newlines(std::string_view s) {
  return !s.empty() && s.find_first_not_of("\r\n") == std::string_view::npos;
}

/// Whether `text` closes the block and has something other than newlines
/// after the close: the inner constraint would never see those bytes.
bool closes_then_text(std::string_view text) {
  const size_t at = text.find(kClose);
  if (at == std::string_view::npos)
    return false;
  const std::string_view rest = text.substr(at + kClose.size());
  return !rest.empty() && !only_newlines(rest);
}

} // namespace

std::shared_ptr<const ReasoningTokens>
ReasoningTokens::find(std::shared_ptr<const TokenVocabulary> vocab) {
  auto t = std::make_shared<ReasoningTokens>();
  for (int32_t id = 0; id < vocab->size(); ++id) {
    const std::string &b = vocab->bytes(id);
    if (b == kOpen)
      t->open.push_back(id);
    else if (only_newlines(b))
      t->newline_only.push_back(id);
    else if (closes_then_text(b))
      t->bad_close.push_back(id);
  }
  t->vocab = std::move(vocab);
  return t;
}

ReasoningGateConstraint::ReasoningGateConstraint(
    std::shared_ptr<const ReasoningTokens> tokens,
    std::shared_ptr<hyrt::TokenConstraint> inner, bool starts_in_reasoning)
    : tokens_(std::move(tokens)), inner_(std::move(inner)),
      state_(starts_in_reasoning ? State::kReasoning : State::kMayOpen) {}

void ReasoningGateConstraint::inner_mask_plus(float *logits, int64_t n,
                                              const std::vector<int32_t> &extra) {
  saved_.clear();
  for (int32_t id : extra)
    saved_.push_back(id < n ? logits[id] : 0.0f);
  inner_->mask(logits, n);
  for (size_t i = 0; i < extra.size(); ++i)
    if (extra[i] < n)
      logits[extra[i]] = saved_[i];
}

void ReasoningGateConstraint::mask(float *logits, int64_t n) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  switch (state_) {
  case State::kMayOpen:
    return inner_mask_plus(logits, n, tokens_->open);
  case State::kAfterClose:
    return inner_mask_plus(logits, n, tokens_->newline_only);
  case State::kAnswer:
    return inner_->mask(logits, n);
  case State::kReasoning:
    break;
  }
  const TokenVocabulary &v = *tokens_->vocab;
  for (int32_t id : v.stop_ids())
    if (id < n)
      logits[id] = minus_inf;
  for (int32_t id : tokens_->bad_close)
    if (id < n)
      logits[id] = minus_inf;
  // A "</" already written: a token that finishes the tag and carries more
  // text is out too. Rare (the families write "</think>" as one token), so
  // the scan over the vocabulary is paid only then.
  const size_t partial = partial_marker_suffix(tail_, kClose);
  if (partial > 0) {
    const std::string head = tail_.substr(tail_.size() - partial);
    for (int32_t id = 0; id < v.size() && id < n; ++id)
      if (closes_then_text(head + v.bytes(id)))
        logits[id] = minus_inf;
  }
  // Ids past the tokenizer's vocabulary (padded embedding rows) write
  // nothing a client could read.
  for (int64_t id = v.size(); id < n; ++id)
    logits[id] = minus_inf;
}

bool ReasoningGateConstraint::accept(int32_t token) {
  const TokenVocabulary &v = *tokens_->vocab;
  if (token < 0 || token >= v.size())
    return false;
  const std::string &bytes = v.bytes(token);
  auto is_in = [&](const std::vector<int32_t> &ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  switch (state_) {
  case State::kMayOpen:
    if (is_in(tokens_->open)) {
      state_ = State::kReasoning;
      return true;
    }
    state_ = State::kAnswer;
    return inner_->accept(token);
  case State::kReasoning: {
    if (v.is_stop(token))
      return false;
    tail_ += bytes;
    const size_t at = tail_.find(kClose);
    if (at != std::string::npos) {
      if (closes_then_text(tail_))
        return false;
      state_ = State::kAfterClose;
      tail_.clear();
    } else if (tail_.size() > 64) {
      tail_.erase(0, tail_.size() - kClose.size());
    }
    return true;
  }
  case State::kAfterClose:
    if (only_newlines(bytes))
      return true;
    state_ = State::kAnswer;
    return inner_->accept(token);
  case State::kAnswer:
    return inner_->accept(token);
  }
  return false;
}

bool ReasoningGateConstraint::complete() const {
  return (state_ == State::kAnswer || state_ == State::kAfterClose ||
          state_ == State::kMayOpen) &&
         inner_->complete();
}

bool ReasoningGateConstraint::can_continue() const {
  return state_ != State::kAnswer || inner_->can_continue();
}

} // namespace hyrt::structured
