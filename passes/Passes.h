//===- Passes.h - hyc passes ------------------------------------*- C++ -*-===//
#ifndef HYC_PASSES_PASSES_H
#define HYC_PASSES_PASSES_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace hyc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Generated `registerHycPasses()` registers every hyc pass (hyc-opt).
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace hyc

#endif // HYC_PASSES_PASSES_H
