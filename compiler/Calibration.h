//===- Calibration.h - calibrated activation maxima and SmoothQuant groups -===//
//
// `hyc calibrate` writes per-channel max |x| of every quantizable GEMM input
// (runtime/cli/calibrate.cpp); `hyc compile --calibration FILE` reads
// them here, matches them to the groups hyc-global-smooth-activations chose
// (module attribute hyc.smooth_groups) and checks that they belong to this
// checkpoint.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_CALIBRATION_H
#define HYC_COMPILER_CALIBRATION_H

#include "models/checkpoint/model_spec.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace hyc::compiler {

/// One observed GEMM input: the weights that read it and its per-channel
/// maxima.
struct CalibratedInput {
  std::vector<std::string> feeds;
  std::vector<float> absmax;
};

/// A calibration file as `hyc calibrate` writes it.
struct Calibration {
  std::string path;
  std::string checkpoint; ///< what the calibration build was compiled from
  std::vector<CalibratedInput> inputs;
};

/// Reads and checks a calibration file: format "hyc-calibration" version
/// 1, every input with feeds, channels and that many finite, non-negative
/// maxima. Errors name the file and the field, expected vs found.
bool readCalibration(const std::string &path, Calibration &out, std::string &error);

/// A norm and the GEMMs it feeds, as hyc-global-smooth-activations chose
/// them, with the calibrated maxima of their shared input.
struct SmoothGroup {
  std::string norm;
  std::vector<std::string> gemms;
  double alpha = 0.5;
  std::vector<float> activationMax;
};

/// The groups of `module`'s hyc.smooth_groups (empty when absent).
std::vector<SmoothGroup> smoothGroupsOf(mlir::ModuleOp module);

/// Gives every group the maxima of the calibrated input that feeds exactly
/// its GEMMs, checking channel counts against the checkpoint's shapes
/// (norm length, each GEMM's K). A calibration file made for another model
/// fails here: the error names the group and what was expected vs found.
bool matchCalibration(std::vector<SmoothGroup> &groups, const Calibration &calibration,
                      const models::WeightSource &weights, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_CALIBRATION_H
