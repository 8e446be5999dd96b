// grammar_matcher.cpp - the live position of one output in its grammar.
#include "hyrt/structured/grammar_matcher.h"

#include "pda.h"

namespace hyrt::structured {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), pool_(std::make_unique<StackPool>()),
      stepper_(std::make_unique<Stepper>(*grammar_)) {
  bool unused = false;
  stepper_->close(*pool_, {{grammar_->rules[grammar_->root_rule].start,
                            StackPool::kEmpty}},
                  &current_, &unused);
}

GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher &&) noexcept = default;

bool GrammarMatcher::advance(std::string_view bytes) {
  std::vector<Config> at = current_;
  bool unused = false;
  for (unsigned char b : bytes) {
    stepper_->step(*pool_, at, b, &next_, &unused);
    if (next_.empty())
      return false;
    at.swap(next_);
  }
  current_.swap(at);
  return true;
}

bool GrammarMatcher::can_advance(std::string_view bytes) {
  const size_t mark = pool_->size();
  std::vector<Config> saved = current_;
  const bool ok = advance(bytes);
  current_.swap(saved);
  pool_->truncate(mark);
  return ok;
}

bool GrammarMatcher::complete() const {
  for (const Config &c : current_)
    if (c.node == grammar_->root_end() && c.stack == StackPool::kEmpty)
      return true;
  return false;
}

bool GrammarMatcher::can_continue() const {
  for (const Config &c : current_)
    if (!grammar_->nodes[c.node].bytes.empty())
      return true;
  return false;
}

std::string GrammarMatcher::mask_key(int frames, int headroom_cap) const {
  return encode_mask_key(*pool_, current_, frames, headroom_cap,
                         grammar_->max_stack_depth);
}

} // namespace hyrt::structured
