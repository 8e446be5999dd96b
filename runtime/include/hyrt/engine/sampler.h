// hyrt/engine/sampler.h - token sampling: greedy argmax and seeded temperature /
// top-k / top-p / min-p sampling with a portable PRNG (PCG32), behind the
// logit processors of an OpenAI-style request (logit_bias, presence /
// frequency / repetition penalties, a TokenConstraint's mask), with the
// log-probabilities of what was drawn.
#pragma once

#include "hyrt/status.h"

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hyrt {

class TokenConstraint;

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
  /// Drop tokens less likely than min_p times the most likely one (after
  /// top-k and top-p); 0 keeps all.
  float min_p = 0.f;
  /// OpenAI semantics, over the generated tokens only: the logit of a token
  /// generated c > 0 times so far loses presence + c * frequency.
  float presence_penalty = 0.f, frequency_penalty = 0.f;
  /// HF / vLLM semantics, over prompt and generated tokens: a positive logit
  /// is divided by it, a negative one multiplied; 1 changes nothing.
  float repetition_penalty = 1.f;
  /// (token id, bias in [-100, 100]) added to the raw logits first.
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = 0;
  /// Which PCG32 stream the seed drives: the choices of one request (n > 1)
  /// share a seed and draw from streams 0, 1, ... (distinct and each
  /// reproducible). Stream 0 is the stream of a single request.
  uint64_t stream = 0;
};

/// A token and its log-probability.
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.f;
};

/// What one step drew. The log-probabilities are those of the distribution
/// the token was drawn from: the log-softmax of the logits after every
/// processor (greedy: bias, penalties, mask; sampled: also / temperature,
/// with tokens top-k / top-p / min-p dropped at -inf).
struct SampledToken {
  int32_t token = -1;   ///< -1: every token was masked out
  float logprob = 0.f;  ///< of `token` (only when logprobs were asked for)
  std::vector<TokenLogprob> top; ///< the most likely tokens, best first
};

/// Draws tokens from logits. Deterministic for a given config and sequence
/// of calls.
class Sampler {
public:
  explicit Sampler(const SamplerConfig &config = {});
  /// Checks the settings: temperature >= 0, top_k >= 0, 0 < top_p <= 1,
  /// 0 <= min_p <= 1, penalties in [-2, 2], repetition_penalty > 0, and
  /// (with vocab_size > 0) logit_bias ids in [0, vocab_size) and biases in
  /// [-100, 100].
  Status validate(int64_t vocab_size = 0) const;
  /// The prompt, for the repetition penalty (which counts prompt tokens).
  void set_prompt(const std::vector<int32_t> &prompt);
  /// One token id from logits[0..n): the final stage only (temperature,
  /// top-k, top-p, min-p); -1 when every logit is -inf.
  int32_t sample(const float *logits, int64_t n);
  /// One generation step over logits[0..n), modified in place: logit_bias,
  /// penalties, `constraint`'s mask (may be null), then sample(). With
  /// top_logprobs >= 0, `out` also gets the token's log-probability and
  /// the top_logprobs most likely tokens. The token joins the history the
  /// penalties count.
  SampledToken step(float *logits, int64_t n, TokenConstraint *constraint,
                    int64_t top_logprobs = -1);
  /// Applies logit_bias and the penalties in place (step's first stage).
  void apply_bias_and_penalties(float *logits, int64_t n) const;
  const SamplerConfig &config() const { return config_; }

private:
  void log_probs(const float *logits, int64_t n, int64_t top,
                 SampledToken *out);

  SamplerConfig config_;
  Pcg32 rng_;
  std::vector<int32_t> order_;
  std::vector<double> probs_;
  /// Candidates the last sample() kept (order_[0..kept_)); kept_sorted_:
  /// they are in descending logit order (otherwise id order, all of them).
  int64_t kept_ = 0;
  bool kept_sorted_ = false;
  std::unordered_map<int32_t, int32_t> generated_counts_;
  std::vector<int32_t> prompt_tokens_; ///< distinct, for repetition_penalty
  std::vector<int32_t> top_ids_;
  std::vector<char> kept_flags_;
};

} // namespace hyrt
