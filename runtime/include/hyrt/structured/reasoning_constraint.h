// hyrt/structured/reasoning_constraint.h - a TokenConstraint that lets a
// thinking model reason freely and constrains only the answer after
// "</think>".
//
// A JSON schema or tool-call grammar starts at the first byte of the
// answer. Qwen3 with thinking on writes "<think>...</think>\n\n" first, and
// DeepSeek-R1's prompt already opened the block, so the grammar must wait
// for the reasoning to close:
//   - before anything is written (kind kMayOpen): the answer's first token
//     or the token "<think>" (which opens the reasoning);
//   - inside the reasoning: any token but the stop ids (the answer must
//     come), and no token that closes the block and goes on with other
//     text in the same token (the inner constraint sees whole tokens only);
//   - right after "</think>": newline-only tokens (the family's separator),
//     or the answer's first token;
//   - then the inner constraint alone.
#pragma once

#include "hyrt/engine/token_constraint.h"
#include "hyrt/structured/token_vocabulary.h"

#include <memory>
#include <string>
#include <vector>

namespace hyrt::structured {

/// The tokens the gate treats specially, found once per vocabulary.
struct ReasoningTokens {
  std::vector<int32_t> open;          ///< tokens that write exactly "<think>"
  std::vector<int32_t> bad_close;     ///< hold "</think>" then non-newlines
  std::vector<int32_t> newline_only;  ///< write only '\n' / '\r'
  std::shared_ptr<const TokenVocabulary> vocab;

  static std::shared_ptr<const ReasoningTokens>
  find(std::shared_ptr<const TokenVocabulary> vocab);
};

class ReasoningGateConstraint final : public hyrt::TokenConstraint {
public:
  /// `starts_in_reasoning`: the prompt opened the block (R1); otherwise the
  /// output may open it with its first token (Qwen3, thinking on).
  ReasoningGateConstraint(std::shared_ptr<const ReasoningTokens> tokens,
                          std::shared_ptr<hyrt::TokenConstraint> inner,
                          bool starts_in_reasoning);

  void mask(float *logits, int64_t n) override;
  bool accept(int32_t token) override;
  bool complete() const override;
  bool can_continue() const override;

private:
  enum class State { kMayOpen, kReasoning, kAfterClose, kAnswer };
  /// Runs the inner mask, then lets `extra` through as they were.
  void inner_mask_plus(float *logits, int64_t n,
                       const std::vector<int32_t> &extra);

  std::shared_ptr<const ReasoningTokens> tokens_;
  std::shared_ptr<hyrt::TokenConstraint> inner_;
  State state_;
  std::string tail_; ///< last bytes of the reasoning: a "</think>" split
                     ///< across tokens is found here
  std::vector<float> saved_;
};

} // namespace hyrt::structured
