// Per-model structured-output state (see structured_support.h).
#include "structured_support.h"

#include <regex>

namespace hyrt::serve {

namespace st = hyrt::structured;

TemplateTraits TemplateTraits::of(const std::string &source) {
  TemplateTraits t;
  t.tool_format = st::detect_tool_call_format(source);
  t.reasoning = source.find("<think>") != std::string::npos ||
                source.find("</think>") != std::string::npos;
  // message['content'] is none / message.content is not none; not
  // message.reasoning_content (Qwen3 tests that one and needs "").
  static const std::regex null_test(
      R"((\[\s*['"]content['"]\s*\]|\bmessage\.content)\s+is\s+(not\s+)?none)");
  static const std::regex tojson_args(R"(arguments['"\]]*\s*\|\s*tojson)");
  t.null_content = std::regex_search(source, null_test);
  t.arguments_as_object = std::regex_search(source, tojson_args);
  return t;
}

StructuredSupport::StructuredSupport(const Tokenizer *tokenizer,
                                     std::vector<int32_t> stop_ids,
                                     TemplateTraits traits, size_t max_cached)
    : tokenizer_(tokenizer), stop_ids_(std::move(stop_ids)),
      traits_(traits), max_cached_(max_cached) {}

Status StructuredSupport::vocabulary(
    std::shared_ptr<const st::TokenVocabulary> *out) {
  std::lock_guard<std::mutex> lock(vocab_mu_);
  if (!vocab_) {
    if (!tokenizer_)
      return Status::Error("this artifact has no tokenizer: the output "
                           "cannot be constrained to a schema");
    if (Status s = st::TokenVocabulary::build(*tokenizer_, stop_ids_, &vocab_);
        !s.ok())
      return s;
    reasoning_ = st::ReasoningTokens::find(vocab_);
  }
  *out = vocab_;
  return Status::Ok();
}

Status StructuredSupport::reasoning_tokens(
    std::shared_ptr<const st::ReasoningTokens> *out) {
  std::shared_ptr<const st::TokenVocabulary> v;
  if (Status s = vocabulary(&v); !s.ok())
    return s;
  std::lock_guard<std::mutex> lock(vocab_mu_);
  *out = reasoning_;
  return Status::Ok();
}

Status StructuredSupport::constraint(
    const std::string &key, const Compile &compile,
    std::shared_ptr<st::CompiledConstraint> *out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      *out = it->second->second;
      return Status::Ok();
    }
  }
  std::shared_ptr<const st::TokenVocabulary> vocab;
  if (Status s = vocabulary(&vocab); !s.ok())
    return s;
  // Compiled outside the lock: a big schema must not stall the requests
  // whose schemas are cached. Two requests racing on one new schema both
  // compile it; the first one in wins the slot.
  std::shared_ptr<const st::Grammar> grammar;
  if (Status s = compile(&grammar); !s.ok())
    return s;
  auto compiled = std::make_shared<st::CompiledConstraint>(grammar, vocab);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    *out = it->second->second;
    return Status::Ok();
  }
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > max_cached_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  *out = std::move(compiled);
  return Status::Ok();
}

} // namespace hyrt::serve
