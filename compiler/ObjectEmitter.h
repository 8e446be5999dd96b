//===- ObjectEmitter.h - LLVM dialect module -> LLVM IR / object -*- C++ -*-===//
#ifndef HYC_COMPILER_OBJECTEMITTER_H
#define HYC_COMPILER_OBJECTEMITTER_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace hyc::compiler {

/// Target machine choice for the generated graph code.
struct CodegenTarget {
  /// LLVM CPU name; "x86-64" is the portable baseline of --target=reference.
  std::string cpu = "x86-64";
  std::string features;
};

/// Translates an LLVM-dialect module to LLVM IR, runs the O3 pipeline and
/// returns the textual IR (`emitObject = false`) or an ELF object. On failure
/// returns false with `error` set.
bool emitLLVM(mlir::ModuleOp module, const CodegenTarget &target,
              bool emitObject, std::string &out, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_OBJECTEMITTER_H
