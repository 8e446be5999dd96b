//===- Schedule.h - reading the decisions of the strategy pass --*- C++ -*-===//
//
// hyc-cpu-select-lowering-strategy writes a #hyc_cpu.lowering_config on
// every compute op; the passes after it read the decisions through these
// helpers instead of deciding again.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_SCHEDULE_H
#define HYC_PASSES_SCHEDULE_H

#include "dialects/hyc_cpu/HycCpuDialect.h"
#include "passes/KernelSchemes.h"

namespace hyc {

/// The schedule written on `op`; null when it has none (the op then runs on
/// its reference kernel).
cpu::LoweringConfigAttr configOf(mlir::Operation *op);

/// Whether `op`'s schedule names `kernel`.
bool runsOn(mlir::Operation *op, llvm::StringRef kernel);

/// The generated-kernel scheme of a GEMM scheduled on `brgemm`, else null.
const KernelScheme *brgemmScheme(mlir::Operation *op);

} // namespace hyc

#endif // HYC_PASSES_SCHEDULE_H
