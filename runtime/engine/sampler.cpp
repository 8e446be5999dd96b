// Greedy and seeded stochastic sampling (see hyrt/engine/sampler.h).
#include "hyrt/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace hyrt {

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

Sampler::Sampler(const SamplerConfig &config)
    : config_(config), rng_(config.seed) {}

Status Sampler::validate() const {
  if (!(config_.temperature >= 0.f) || config_.top_k < 0 ||
      !(config_.top_p > 0.f && config_.top_p <= 1.f))
    return Status::Error(
        "sampler: expected temperature >= 0, top_k >= 0, 0 < top_p <= 1; "
        "found temperature=" +
        std::to_string(config_.temperature) +
        " top_k=" + std::to_string(config_.top_k) +
        " top_p=" + std::to_string(config_.top_p));
  return Status::Ok();
}

int32_t Sampler::sample(const float *logits, int64_t n) {
  if (n <= 0)
    return -1;
  if (config_.temperature <= 0.f || config_.top_k == 1)
    return argmax(logits, n);
  const bool truncate = config_.top_k > 0 || config_.top_p < 1.f;
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
    total = 0.0;
    for (int64_t i = 0; i < count; ++i)
      total += probs_[i];
  }
  const double u = rng_.next_double() * total;
  double cum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    cum += probs_[i];
    if (u < cum)
      return order_[i];
  }
  return order_[count - 1];
}

} // namespace hyrt
