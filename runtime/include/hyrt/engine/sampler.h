// hyrt/engine/sampler.h - token sampling: greedy argmax and seeded temperature /
// top-k / top-p sampling with a portable PRNG (PCG32).
#pragma once

#include "hyrt/status.h"

#include <cstdint>
#include <vector>

namespace hyrt {

/// PCG32 (XSH-RR output, 64-bit LCG state): the same seed gives the same
/// stream on every machine.
class Pcg32 {
public:
  explicit Pcg32(uint64_t seed = 0, uint64_t stream = 0x5851f42d4c957f2dULL);
  /// Next 32 uniformly distributed bits.
  uint32_t next_u32();
  /// Uniform double in [0, 1) with 53 random bits.
  double next_double();

private:
  uint64_t state_ = 0, inc_ = 1;
};

/// Index of the largest logit; ties go to the lower id. -1 when n <= 0.
int32_t argmax(const float *logits, int64_t n);

/// Sampling settings. temperature <= 0 means greedy.
struct SamplerConfig {
  float temperature = 0.f;
  int64_t top_k = 0;  ///< keep the k most likely tokens; 0 keeps all
  float top_p = 1.f;  ///< keep the smallest prefix with mass >= top_p
  uint64_t seed = 0;
};

/// Draws tokens from logits. Deterministic for a given config and sequence
/// of calls.
class Sampler {
public:
  explicit Sampler(const SamplerConfig &config = {});
  /// Checks the settings: temperature >= 0, top_k >= 0, 0 < top_p <= 1.
  Status validate() const;
  /// One token id from logits[0..n).
  int32_t sample(const float *logits, int64_t n);
  const SamplerConfig &config() const { return config_; }

private:
  SamplerConfig config_;
  Pcg32 rng_;
  std::vector<int32_t> order_;
  std::vector<double> probs_;
};

} // namespace hyrt
