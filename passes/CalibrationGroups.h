//===- CalibrationGroups.h - which GEMM inputs calibration is about -*- C++ -*-===//
//
// Shared by hyc-global-observe-activations and hyc-global-smooth-activations:
// the weights the quantize policy always keeps 16-bit (output head, MoE
// router) are neither observed nor smoothed, since no int8 activation ever
// reads their input.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_CALIBRATIONGROUPS_H
#define HYC_PASSES_CALIBRATIONGROUPS_H

#include "llvm/ADT/StringRef.h"

namespace hyc {

/// True for the output head (its own or the tied embedding table) and the
/// MoE router, which hyc-global-quantize-policy never quantizes.
inline bool staysSixteenBit(llvm::StringRef tensor) {
  return tensor.contains("lm_head.weight") || tensor.contains("embed_tokens.weight") ||
         tensor.contains("mlp.gate.weight");
}

} // namespace hyc

#endif // HYC_PASSES_CALIBRATIONGROUPS_H
