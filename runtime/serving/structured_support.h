// What one served model needs for structured output, tool calls and
// reasoning, made once and shared by every request: the chat template's
// traits (its tool-call wire format, whether it reasons in <think> blocks,
// how it wants assistant tool calls handed to it), the vocabulary as bytes
// (built at the first constrained request: a 150k-token vocabulary takes a
// while and most servers never need it), and an LRU of compiled
// constraints keyed by the schema's text, so that requests repeating a
// schema reuse its automaton and its cache of token masks.
#pragma once

#include "hyrt/status.h"
#include "hyrt/structured/grammar_constraint.h"
#include "hyrt/structured/reasoning_constraint.h"
#include "hyrt/structured/tool_calls.h"
#include "hyrt/text/tokenizer.h"

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hyrt::serve {

/// How a chat template reads tool calls and reasoning (from its source).
struct TemplateTraits {
  /// The family its tool calls are written in (kNone: none hyc parses).
  structured::ToolCallFormat tool_format = structured::ToolCallFormat::kNone;
  /// It writes or strips <think> blocks (Qwen3, DeepSeek-R1): replies are
  /// split into reasoning_content and content.
  bool reasoning = false;
  /// It tests an assistant's content for none (DeepSeek-V3 writes a tool
  /// call turn only when content is none); others concatenate content and
  /// need "" (Qwen3 fails on none).
  bool null_content = false;
  /// It runs `arguments | tojson` (Qwen3, Llama 3.1): arguments go in as
  /// the object the client's JSON string holds, as transformers expects;
  /// templates that concatenate them (DeepSeek-V3) get the string.
  bool arguments_as_object = false;

  static TemplateTraits of(const std::string &template_source);
};

/// Per-model structured-output state. Thread-safe.
class StructuredSupport {
public:
  /// `tokenizer` (may be null: then nothing can be constrained) must
  /// outlive this. `stop_ids` end a constrained output once it is complete.
  StructuredSupport(const Tokenizer *tokenizer, std::vector<int32_t> stop_ids,
                    TemplateTraits traits, size_t max_cached = 64);

  const TemplateTraits &traits() const { return traits_; }

  /// The compiled constraint for `key` (the schema's text and what kind it
  /// is), from the cache or made now by `compile`.
  using Compile =
      std::function<Status(std::shared_ptr<const structured::Grammar> *)>;
  Status constraint(const std::string &key, const Compile &compile,
                    std::shared_ptr<structured::CompiledConstraint> *out);
  /// The reasoning gate's tokens (built with the vocabulary).
  Status reasoning_tokens(
      std::shared_ptr<const structured::ReasoningTokens> *out);

  /// The tokenizer's vocabulary as bytes (built once).
  Status vocabulary(std::shared_ptr<const structured::TokenVocabulary> *out);

private:

  const Tokenizer *tokenizer_;
  std::vector<int32_t> stop_ids_;
  TemplateTraits traits_;
  size_t max_cached_;

  std::mutex vocab_mu_; ///< held while the vocabulary is built, once
  std::shared_ptr<const structured::TokenVocabulary> vocab_;
  std::shared_ptr<const structured::ReasoningTokens> reasoning_;

  std::mutex mu_; ///< guards the LRU
  using Entry =
      std::pair<std::string, std::shared_ptr<structured::CompiledConstraint>>;
  std::list<Entry> lru_; // front: most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

} // namespace hyrt::serve
