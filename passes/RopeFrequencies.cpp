//===- RopeFrequencies.cpp - RoPE inverse frequencies ----------------------===//

#include "passes/RopeFrequencies.h"

#include <algorithm>
#include <cmath>

namespace hyc {

double yarnGetMscale(double scale, double m) {
  if (scale <= 1.0)
    return 1.0;
  return 0.1 * m * std::log(scale) + 1.0;
}

namespace {
constexpr double kPi = 3.14159265358979323846;

/// Dimension index at which a rotation count `numRotations` over the
/// original context is reached (YaRN).
double yarnCorrectionDim(double numRotations, int64_t dim, double base,
                         double maxPosition) {
  return (dim * std::log(maxPosition / (numRotations * 2.0 * kPi))) /
         (2.0 * std::log(base));
}
} // namespace

RopeTable computeRopeTable(double theta, int64_t rotaryDim,
                           const RopeScalingParams &s) {
  RopeTable table;
  int64_t half = rotaryDim / 2;
  // Computed in float like transformers (torch.arange(...).float() / dim and
  // base ** that in float32) so tables agree bit for bit where possible.
  std::vector<double> base(half);
  for (int64_t i = 0; i < half; ++i) {
    float exponent = static_cast<float>(2 * i) / static_cast<float>(rotaryDim);
    base[i] = 1.0 / std::pow(theta, static_cast<double>(exponent));
  }
  table.inv_freq.resize(half);
  if (s.kind == "linear") {
    for (int64_t i = 0; i < half; ++i)
      table.inv_freq[i] = static_cast<float>(base[i] / s.factor);
  } else if (s.kind == "llama3") {
    double oldCtx = static_cast<double>(s.original_max_position);
    double lowWavelen = oldCtx / s.low_freq_factor;
    double highWavelen = oldCtx / s.high_freq_factor;
    for (int64_t i = 0; i < half; ++i) {
      double inv = base[i];
      double wavelen = 2.0 * kPi / inv;
      double out;
      if (wavelen < highWavelen) {
        out = inv;
      } else if (wavelen > lowWavelen) {
        out = inv / s.factor;
      } else {
        double smooth = (oldCtx / wavelen - s.low_freq_factor) /
                        (s.high_freq_factor - s.low_freq_factor);
        out = (1.0 - smooth) * inv / s.factor + smooth * inv;
      }
      table.inv_freq[i] = static_cast<float>(out);
    }
  } else if (s.kind == "yarn") {
    double maxPos = static_cast<double>(s.original_max_position);
    double low = std::floor(yarnCorrectionDim(s.beta_fast, rotaryDim, theta, maxPos));
    double high = std::ceil(yarnCorrectionDim(s.beta_slow, rotaryDim, theta, maxPos));
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(rotaryDim - 1));
    if (low == high)
      high += 0.001;
    for (int64_t i = 0; i < half; ++i) {
      double ramp = (static_cast<double>(i) - low) / (high - low);
      ramp = std::clamp(ramp, 0.0, 1.0);
      double extrapolationFactor = 1.0 - ramp;
      double extrapolated = base[i];
      double interpolated = base[i] / s.factor;
      table.inv_freq[i] = static_cast<float>(
          interpolated * (1.0 - extrapolationFactor) +
          extrapolated * extrapolationFactor);
    }
    double attentionFactor;
    if (s.mscale != 0.0 && s.mscale_all_dim != 0.0)
      attentionFactor = yarnGetMscale(s.factor, s.mscale) /
                        yarnGetMscale(s.factor, s.mscale_all_dim);
    else
      attentionFactor = yarnGetMscale(s.factor, 1.0);
    table.mscale = static_cast<float>(attentionFactor);
  } else {
    for (int64_t i = 0; i < half; ++i)
      table.inv_freq[i] = static_cast<float>(base[i]);
  }
  return table;
}

} // namespace hyc
