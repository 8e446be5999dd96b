// Greedy and seeded stochastic sampling, the logit processors in front of
// it, and the log-probabilities of what it drew (see hyrt/engine/sampler.h).
#include "hyrt/engine/sampler.h"

#include "hyrt/engine/token_constraint.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace hyrt {

namespace {

constexpr uint64_t kDefaultStream = 0x5851f42d4c957f2dULL;

std::string num(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.')
    s.pop_back();
  return s;
}

} // namespace

Pcg32::Pcg32(uint64_t seed, uint64_t stream) {
  inc_ = (stream << 1u) | 1u;
  state_ = 0;
  next_u32();
  state_ += seed;
  next_u32();
}

uint32_t Pcg32::next_u32() {
  const uint64_t old = state_;
  state_ = old * 6364136223846793005ULL + inc_;
  const uint32_t xorshifted = uint32_t(((old >> 18u) ^ old) >> 27u);
  const uint32_t rot = uint32_t(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

double Pcg32::next_double() {
  const uint64_t hi = next_u32(), lo = next_u32();
  const uint64_t bits = ((hi << 32) | lo) >> 11;
  return double(bits) * (1.0 / 9007199254740992.0); // 2^-53
}

int32_t argmax(const float *logits, int64_t n) {
  int64_t best = n > 0 ? 0 : -1;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best])
      best = i;
  return int32_t(best);
}

// Stream 0 keeps PCG32's default stream, so a single request draws what it
// drew before streams existed; choice i of a request adds i to it.
Sampler::Sampler(const SamplerConfig &config)
    : config_(config), rng_(config.seed, kDefaultStream + config.stream) {}

Status Sampler::validate(int64_t vocab_size) const {
  const SamplerConfig &c = config_;
  if (!(c.temperature >= 0.f) || c.top_k < 0 || !(c.top_p > 0.f && c.top_p <= 1.f))
    return Status::Error("sampler: expected temperature >= 0, top_k >= 0, "
                         "0 < top_p <= 1; found temperature=" +
                         num(c.temperature) + " top_k=" + std::to_string(c.top_k) +
                         " top_p=" + num(c.top_p));
  if (!(c.min_p >= 0.f && c.min_p <= 1.f))
    return Status::Error("min_p: expected a number in [0, 1], found " + num(c.min_p));
  for (auto [name, v] : {std::pair<const char *, float>{"presence_penalty", c.presence_penalty},
                         {"frequency_penalty", c.frequency_penalty}})
    if (!(v >= -2.f && v <= 2.f))
      return Status::Error(std::string(name) + ": expected a number in [-2, 2], found " +
                           num(v));
  if (!(c.repetition_penalty > 0.f) || !std::isfinite(c.repetition_penalty))
    return Status::Error("repetition_penalty: expected a finite number > 0, found " +
                         num(c.repetition_penalty));
  for (const auto &[id, bias] : c.logit_bias) {
    if (id < 0 || (vocab_size > 0 && id >= vocab_size))
      return Status::Error("logit_bias: token id " + std::to_string(id) +
                           " outside the vocabulary [0, " + std::to_string(vocab_size) +
                           ")");
    if (!(bias >= -100.f && bias <= 100.f))
      return Status::Error("logit_bias: expected biases in [-100, 100], found " +
                           num(bias) + " for token " + std::to_string(id));
  }
  return Status::Ok();
}

void Sampler::set_prompt(const std::vector<int32_t> &prompt) {
  prompt_tokens_.clear();
  if (config_.repetition_penalty == 1.f)
    return;
  prompt_tokens_ = prompt;
  std::sort(prompt_tokens_.begin(), prompt_tokens_.end());
  prompt_tokens_.erase(std::unique(prompt_tokens_.begin(), prompt_tokens_.end()),
                       prompt_tokens_.end());
}

void Sampler::apply_bias_and_penalties(float *logits, int64_t n) const {
  const SamplerConfig &c = config_;
  for (const auto &[id, bias] : c.logit_bias)
    if (id >= 0 && id < n)
      logits[id] += bias;
  if (c.presence_penalty != 0.f || c.frequency_penalty != 0.f)
    for (const auto &[id, count] : generated_counts_)
      if (id >= 0 && id < n)
        logits[id] -= c.presence_penalty + float(count) * c.frequency_penalty;
  if (c.repetition_penalty != 1.f) {
    // Each token seen (prompt or output) is penalised once, however often.
    auto penalise = [&](int32_t id) {
      if (id < 0 || id >= n)
        return;
      float &l = logits[id];
      l = l > 0.f ? l / c.repetition_penalty : l * c.repetition_penalty;
    };
    for (int32_t id : prompt_tokens_)
      penalise(id);
    for (const auto &[id, count] : generated_counts_)
      if (!std::binary_search(prompt_tokens_.begin(), prompt_tokens_.end(), id))
        penalise(id);
  }
}

int32_t Sampler::sample(const float *logits, int64_t n) {
  kept_ = 0;
  if (n <= 0)
    return -1;
  if (config_.temperature <= 0.f || config_.top_k == 1) {
    const int32_t best = argmax(logits, n);
    return logits[best] == -INFINITY ? -1 : best;
  }
  const bool truncate =
      config_.top_k > 0 || config_.top_p < 1.f || config_.min_p > 0.f;
  // Candidates in descending logit order (ties: lower id first) when
  // truncating; otherwise in id order.
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  auto by_logit = [logits](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  int64_t count = n;
  if (config_.top_k > 0 && config_.top_k < n) {
    count = config_.top_k;
    std::partial_sort(order_.begin(), order_.begin() + count, order_.end(),
                      by_logit);
  } else if (truncate) {
    std::sort(order_.begin(), order_.end(), by_logit);
  }
  double max_logit = -INFINITY;
  for (int64_t i = 0; i < count; ++i)
    max_logit = std::max(max_logit, double(logits[order_[i]]));
  if (max_logit == -INFINITY)
    return -1; // everything masked out
  probs_.resize(count);
  double total = 0.0;
  const double inv_t = 1.0 / double(config_.temperature);
  for (int64_t i = 0; i < count; ++i)
    total += (probs_[i] = std::exp((double(logits[order_[i]]) - max_logit) *
                                   inv_t));
  if (config_.top_p < 1.f) {
    double mass = 0.0;
    int64_t keep = 0;
    while (keep < count) {
      mass += probs_[keep++] / total;
      if (mass >= double(config_.top_p))
        break;
    }
    count = keep;
  }
  if (config_.min_p > 0.f) {
    // Sorted, so probs_[0] (= 1, the maximum) leads and the kept ones are a
    // prefix; the ratio to the maximum does not depend on normalisation.
    int64_t keep = 1;
    while (keep < count && probs_[keep] >= double(config_.min_p))
      ++keep;
    count = keep;
  }
  total = 0.0;
  for (int64_t i = 0; i < count; ++i)
    total += probs_[i];
  kept_ = count;
  kept_sorted_ = truncate;
  const double u = rng_.next_double() * total;
  double cum = 0.0;
  int64_t last_possible = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (probs_[i] <= 0.0)
      continue; // a masked token is never drawn, not even by rounding
    last_possible = i;
    cum += probs_[i];
    if (u < cum)
      return order_[i];
  }
  return order_[last_possible];
}

void Sampler::log_probs(const float *logits, int64_t n, int64_t top,
                        SampledToken *out) {
  // The distribution the token came from, as log-probabilities: greedy,
  // the log-softmax of the processed logits; sampled, of logits / T over
  // the kept candidates (the rest at -inf).
  const bool greedy = kept_ == 0;
  const double inv_t = greedy ? 1.0 : 1.0 / double(config_.temperature);
  const bool all_kept = greedy || !kept_sorted_; // every candidate, id order
  kept_flags_.assign(all_kept ? 0 : size_t(n), 0);
  for (int64_t i = 0; !all_kept && i < kept_; ++i)
    kept_flags_[size_t(order_[i])] = 1;
  auto in_kept = [&](int32_t id) { return all_kept || kept_flags_[size_t(id)]; };
  double max_logit = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    max_logit = std::max(max_logit, double(logits[i]));
  double total = 0.0;
  if (all_kept) {
    for (int64_t i = 0; i < n; ++i)
      total += std::exp((double(logits[i]) - max_logit) * inv_t);
  } else {
    for (int64_t i = 0; i < kept_; ++i)
      total += std::exp((double(logits[order_[i]]) - max_logit) * inv_t);
  }
  const double log_total = std::log(total);
  auto logprob = [&](int32_t id) {
    if (!in_kept(id) || logits[id] == -INFINITY)
      return -INFINITY;
    return float((double(logits[id]) - max_logit) * inv_t - log_total);
  };
  out->logprob = logprob(out->token);
  out->top.clear();
  if (top <= 0)
    return;
  // The top candidates: the kept prefix when sorted, else a partial sort.
  top = std::min(top, n);
  top_ids_.resize(size_t(n));
  std::iota(top_ids_.begin(), top_ids_.end(), 0);
  std::partial_sort(top_ids_.begin(), top_ids_.begin() + top, top_ids_.end(),
                    [logits](int32_t a, int32_t b) {
                      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                    });
  for (int64_t i = 0; i < top; ++i)
    out->top.push_back({top_ids_[size_t(i)], logprob(top_ids_[size_t(i)])});
}

SampledToken Sampler::step(float *logits, int64_t n, TokenConstraint *constraint,
                           int64_t top_logprobs) {
  apply_bias_and_penalties(logits, n);
  if (constraint)
    constraint->mask(logits, n);
  SampledToken out;
  out.token = sample(logits, n);
  if (out.token < 0)
    return out;
  if (top_logprobs >= 0)
    log_probs(logits, n, top_logprobs, &out);
  ++generated_counts_[out.token];
  return out;
}

} // namespace hyrt
