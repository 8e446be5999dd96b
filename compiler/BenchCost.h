//===- BenchCost.h - what an artifact reads and computes per token -*- C++ -*-===//
//
// The numerators of `hyc bench`'s efficiencies, from the manifest alone:
// weight bytes one decode step reads, GEMM FLOPs one prompt token costs, and
// which measured peak the artifact's GEMM kernels can reach.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_BENCHCOST_H
#define HYC_COMPILER_BENCHCOST_H

#include "codegen/host_peaks.h"
#include "hyrt/artifact/artifact.h"

#include <cstdint>
#include <string>

namespace hyc::compiler {

/// What one decode step reads and one prompt token computes.
struct ModelCost {
  double decodeBytesPerStep = 0; ///< weights read by one decode step
  double flopsPerToken = 0;      ///< prefill GEMM FLOPs per prompt token
  /// Most GEMM weight bytes are integer codes (W8A8, 4-bit...): the
  /// kernels multiply with integer instructions.
  bool integerCodes = false;
};

/// For `batch` sequences decoding together after prompts of `input` tokens
/// (the rules are in BenchCost.cpp).
ModelCost modelCost(const hyrt::Manifest &m, const hyrt::Variant &v, int64_t batch,
                    int64_t input);

/// The measured peak (GFLOP/s, GOP/s) of the instruction the variant's GEMM
/// kernels use for weights of that kind (integerCodes: ModelCost's); `which`
/// names it. 0 when it was not measured (does not execute here).
double kernelPeak(const hyrt::Variant &v, const codegen::HostPeaks &p, bool integerCodes,
                  std::string &which);

} // namespace hyc::compiler

#endif // HYC_COMPILER_BENCHCOST_H
