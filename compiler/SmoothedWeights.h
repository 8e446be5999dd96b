//===- SmoothedWeights.h - SmoothQuant factors applied while reading -*- C++ -*-===//
//
// The "apply" half of SmoothQuant (hyc-global-smooth-activations chooses the
// groups): a WeightSource over the checkpoint's that returns, for each
// group, the norm weight divided by s and every GEMM weight with column j
// multiplied by s_j. The artifact writer reads every weight through it and
// quantizes the smoothed values; nothing else changes.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_SMOOTHEDWEIGHTS_H
#define HYC_COMPILER_SMOOTHEDWEIGHTS_H

#include "compiler/Calibration.h"

#include <memory>

namespace hyc::compiler {

/// Per-channel factors s_j = max|X_j|^alpha / max|W_j|^(1 - alpha), rounded
/// to the nearest power of two (so that x / s and w * s are exact in fp32
/// and an unquantized artifact computes the very same products), with
/// exponents clamped to [-kMaxSmoothExponent, kMaxSmoothExponent]; 1 where
/// either maximum is 0 (a channel that never fires or no weight reads).
std::vector<float> smoothingFactors(const std::vector<float> &activationMax,
                                    const std::vector<float> &weightMax, double alpha);
constexpr int kMaxSmoothExponent = 24;

/// Wraps `base` so that the groups' weights read smoothed. Reads every GEMM
/// weight of every group once (max |W_j| over the group's rows). Weights
/// it smooths are re-quantized from fp32: read_int8_channel and
/// read_fp8_block return false for them. Null with `error` set when a
/// weight cannot be read.
std::unique_ptr<models::WeightSource>
smoothWeights(std::unique_ptr<models::WeightSource> base,
              const std::vector<SmoothGroup> &groups, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_SMOOTHEDWEIGHTS_H
