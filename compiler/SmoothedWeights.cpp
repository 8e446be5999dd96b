//===- SmoothedWeights.cpp - SmoothQuant factors applied while reading ---===//

#include "compiler/SmoothedWeights.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace hyc::compiler {

namespace {

/// How a smoothed tensor differs from the checkpoint's.
struct Smoothing {
  std::shared_ptr<const std::vector<float>> factors;
  bool columns; ///< GEMM weight: column j * s_j; else norm weight: w_j / s_j
};

class SmoothedWeightSource : public models::WeightSource {
public:
  SmoothedWeightSource(std::unique_ptr<models::WeightSource> base,
                       std::unordered_map<std::string, Smoothing> smoothed)
      : base_(std::move(base)), smoothed_(std::move(smoothed)) {}

  const std::vector<models::WeightInfo> &weights() const override {
    return base_->weights();
  }
  const models::WeightInfo *find(const std::string &name) const override {
    return base_->find(name);
  }
  models::Status read_f32(const std::string &name, float *out) const override {
    if (models::Status s = base_->read_f32(name, out); !s.ok())
      return s;
    auto it = smoothed_.find(name);
    if (it == smoothed_.end())
      return {};
    const std::vector<float> &s = *it->second.factors;
    const int64_t k = int64_t(s.size());
    const models::WeightInfo *info = base_->find(name);
    int64_t numel = 1;
    for (int64_t d : info->shape)
      numel *= d;
    for (int64_t i = 0; i < numel; ++i)
      out[i] = it->second.columns ? out[i] * s[size_t(i % k)] : out[i] / s[size_t(i % k)];
    return {};
  }
  bool read_int8_channel(const std::string &name, int8_t *q, float *scale) const override {
    return !smoothed_.count(name) && base_->read_int8_channel(name, q, scale);
  }
  // Row slices only of weights it leaves alone (a smoothed one is scaled
  // by read_f32 as a whole).
  bool read_f32_rows(const std::string &name, int64_t row0, int64_t rows,
                     float *out) const override {
    return !smoothed_.count(name) && base_->read_f32_rows(name, row0, rows, out);
  }
  bool read_fp8_block(const std::string &name, uint8_t *codes,
                      float *scale_inv) const override {
    return !smoothed_.count(name) && base_->read_fp8_block(name, codes, scale_inv);
  }
  bool read_codes_g32(const std::string &name, int bits, uint8_t *codes,
                      uint16_t *scales) const override {
    return !smoothed_.count(name) && base_->read_codes_g32(name, bits, codes, scales);
  }
  std::string stored_codes_format(const std::string &name) const override {
    return !smoothed_.count(name) ? base_->stored_codes_format(name) : "";
  }
  bool read_stored_codes(const std::string &name, models::StoredCodes &out) const override {
    return !smoothed_.count(name) && base_->read_stored_codes(name, out);
  }

private:
  std::unique_ptr<models::WeightSource> base_;
  std::unordered_map<std::string, Smoothing> smoothed_;
};

} // namespace

std::vector<float> smoothingFactors(const std::vector<float> &activationMax,
                                    const std::vector<float> &weightMax, double alpha) {
  std::vector<float> s(activationMax.size(), 1.0f);
  for (size_t j = 0; j < s.size(); ++j) {
    const double x = activationMax[j], w = weightMax[j];
    if (!(x > 0) || !(w > 0) || !std::isfinite(x) || !std::isfinite(w))
      continue;
    // log2 s = alpha log2 x - (1 - alpha) log2 w, rounded to an integer.
    const double e = std::nearbyint(alpha * std::log2(x) - (1 - alpha) * std::log2(w));
    s[j] = std::ldexp(1.0f, int(std::clamp(e, double(-kMaxSmoothExponent),
                                           double(kMaxSmoothExponent))));
  }
  return s;
}

std::unique_ptr<models::WeightSource>
smoothWeights(std::unique_ptr<models::WeightSource> base, const std::vector<SmoothGroup> &groups,
              std::string &error) {
  std::unordered_map<std::string, Smoothing> smoothed;
  for (const SmoothGroup &g : groups) {
    const size_t k = g.activationMax.size();
    std::vector<float> weightMax(k, 0.0f), w;
    for (const std::string &name : g.gemms) {
      const models::WeightInfo *info = base->find(name);
      if (!info || info->shape.size() != 2 || info->shape[1] != int64_t(k)) {
        error = "smoothing " + name + ": expected a [N, " + std::to_string(k) + "] weight";
        return nullptr;
      }
      w.resize(size_t(info->shape[0]) * k);
      if (models::Status s = base->read_f32(name, w.data()); !s.ok()) {
        error = s.error();
        return nullptr;
      }
      for (size_t i = 0; i < w.size(); ++i)
        weightMax[i % k] = std::max(weightMax[i % k], std::fabs(w[i]));
    }
    auto factors = std::make_shared<const std::vector<float>>(
        smoothingFactors(g.activationMax, weightMax, g.alpha));
    smoothed[g.norm] = {factors, false};
    for (const std::string &name : g.gemms)
      smoothed[name] = {factors, true};
  }
  return std::make_unique<SmoothedWeightSource>(std::move(base), std::move(smoothed));
}

} // namespace hyc::compiler
