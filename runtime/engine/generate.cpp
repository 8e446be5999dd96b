// Engine::generate: prompt prefill, then sampled token-by-token decode with
// stop conditions and timing (see hyrt/engine/engine.h).
#include "hyrt/engine/engine.h"

#include <algorithm>
#include <chrono>

namespace hyrt {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

/// Releases a sequence on every exit path.
struct SequenceGuard {
  Engine &engine;
  int64_t seq;
  ~SequenceGuard() { (void)engine.release(seq); }
};

} // namespace

Status Engine::generate(const std::vector<int32_t> &prompt,
                        const GenerateOptions &options,
                        const TokenCallback &on_token,
                        GenerateResult *result) {
  const int64_t max_len = limits().max_seq_len, V = vocab_size();
  if (prompt.empty())
    return Status::Error(
        "generate: empty prompt (expected at least the BOS token)");
  if (int64_t(prompt.size()) > max_len)
    return Status::Error("prompt of " + std::to_string(prompt.size()) +
                         " tokens + " + std::to_string(options.max_new_tokens) +
                         " new exceeds max_seq_len " + std::to_string(max_len) +
                         " of this artifact");
  Sampler sampler(options.sampler);
  if (Status s = sampler.validate(); !s.ok())
    return s;
  *result = GenerateResult();
  result->prompt_tokens = int64_t(prompt.size());

  const int64_t seq = add_sequence();
  SequenceGuard guard{*this, seq};
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> rows;
  if (Status s = extend(seq, prompt, &rows, options.record_logits); !s.ok())
    return s;
  if (options.record_logits) {
    result->logits = rows;
    result->logits_rows = int64_t(prompt.size());
  }
  if (options.max_new_tokens <= 0) {
    result->stop_reason = "length";
    result->prefill_seconds = seconds_since(t0);
    return Status::Ok();
  }
  int32_t next = sampler.sample(rows.data() + rows.size() - V, V);
  result->prefill_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const auto &stops = options.stop_tokens;
  while (true) {
    if (std::find(stops.begin(), stops.end(), next) != stops.end()) {
      result->stop_reason = "stop_token";
      break;
    }
    result->tokens.push_back(next);
    if (on_token && !on_token(next)) {
      result->stop_reason = "callback";
      break;
    }
    if (int64_t(result->tokens.size()) >= options.max_new_tokens) {
      result->stop_reason = "length";
      break;
    }
    if (seq_length(seq) >= max_len) {
      result->stop_reason = "max_seq_len";
      break;
    }
    if (Status s = decode({seq}, {next}, &rows); !s.ok())
      return s;
    ++result->decode_steps;
    if (options.record_logits) {
      result->logits.insert(result->logits.end(), rows.begin(), rows.end());
      ++result->logits_rows;
    }
    next = sampler.sample(rows.data(), V);
  }
  result->decode_seconds = seconds_since(t0);
  return Status::Ok();
}

} // namespace hyrt
