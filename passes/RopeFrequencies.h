//===- RopeFrequencies.h - RoPE inverse frequencies at compile time -*- C++ -*-===//
//
// The compiler turns `hyc.rope`'s theta + scaling attributes into a table of
// inverse frequencies and an attention factor once, so kernels only multiply.
// Plain C++ so it can be unit-tested without MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_ROPEFREQUENCIES_H
#define HYC_PASSES_ROPEFREQUENCIES_H

#include <cstdint>
#include <string>
#include <vector>

namespace hyc {

/// Plain-data mirror of #hyc.rope_scaling (kind: none|linear|llama3|yarn).
struct RopeScalingParams {
  std::string kind = "none";
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 1.0;
  double mscale_all_dim = 0.0;
};

struct RopeTable {
  /// rotary_dim / 2 inverse frequencies.
  std::vector<float> inv_freq;
  /// Factor applied to cos and sin (YaRN's attention factor; 1 otherwise).
  float mscale = 1.0f;
};

/// Computes the inverse frequencies the way Hugging Face transformers does
/// for each rope_type (default, linear, llama3, yarn).
RopeTable computeRopeTable(double theta, int64_t rotaryDim,
                           const RopeScalingParams &scaling);

/// YaRN's magnitude correction: 0.1 * m * ln(scale) + 1 for scale > 1.
double yarnGetMscale(double scale, double m);

} // namespace hyc

#endif // HYC_PASSES_ROPEFREQUENCIES_H
