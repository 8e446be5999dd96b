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
};

/// For `batch` sequences decoding together after prompts of `input` tokens
/// (the rules are in BenchCost.cpp).
ModelCost modelCost(const hyrt::Manifest &m, const hyrt::Variant &v, int64_t batch,
                    int64_t input);

/// The measured peak (GFLOP/s) of the instruction the artifact's GEMM
/// kernels use; `which` names it.
double kernelPeak(const hyrt::Variant &v, const codegen::HostPeaks &p,
                  std::string &which);

} // namespace hyc::compiler

#endif // HYC_COMPILER_BENCHCOST_H
