// hyrt/engine/token_constraint.h - what a request may generate next.
//
// Constrained decoding (JSON mode, JSON schema, a required / named tool call)
// narrows the vocabulary step by step. The scheduler owns one constraint per
// running sequence (Request::constraint); the constraint compiler (JSON
// schema -> automaton -> token masks, runtime/structured/) implements it.
// Order on each step: logit_bias, penalties, mask(), then temperature /
// top-k / top-p / min-p; logprobs are taken after all of them.
#pragma once

#include <cstdint>

namespace hyrt {

class TokenConstraint {
public:
  virtual ~TokenConstraint() = default;
  /// Sets logits[id] = -inf for every id in [0, n) that may not come next
  /// (end-of-sequence ids included unless complete()).
  virtual void mask(float *logits, int64_t n) = 0;
  /// Advances past the sampled token; false when it was not allowed (the
  /// request then ends with an error naming it).
  virtual bool accept(int32_t token) = 0;
  /// Whether the output so far is a complete match; when nothing else can
  /// follow, the scheduler ends the request ("stop").
  virtual bool complete() const = 0;
  /// Whether any token other than end-of-sequence can still follow.
  virtual bool can_continue() const = 0;
};

} // namespace hyrt
