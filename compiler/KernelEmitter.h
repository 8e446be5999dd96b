//===- KernelEmitter.h - generated microkernels as assembly -----*- C++ -*-===//
//
// Runs the Xbyak generators (codegen/) for every kernel a lowered module
// calls (`hyc.kernels`) and writes their machine code as an assembly file of
// ordinary global functions, linked into model.so: no JIT at run time, and
// llvm-objdump shows each kernel by name.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_KERNELEMITTER_H
#define HYC_COMPILER_KERNELEMITTER_H

#include "mlir/IR/BuiltinOps.h"

#include <set>
#include <string>

namespace hyc::compiler {

/// Writes the kernels named in the module's `hyc.kernels` to `asmPath`;
/// collects the CPU features (cpuinfo names) they need in `features`.
/// Returns false with `error` set on failure.
bool emitKernels(mlir::ModuleOp module, const std::string &asmPath,
                 std::set<std::string> &features, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_KERNELEMITTER_H
