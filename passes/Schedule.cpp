//===- Schedule.cpp - reading the decisions of the strategy pass ----------===//

#include "passes/Schedule.h"

namespace hyc {

cpu::LoweringConfigAttr configOf(mlir::Operation *op) {
  return op->getAttrOfType<cpu::LoweringConfigAttr>(cpu::kLoweringConfigName);
}

bool runsOn(mlir::Operation *op, llvm::StringRef kernel) {
  cpu::LoweringConfigAttr c = configOf(op);
  return c && c.getKernel() == kernel;
}

const KernelScheme *brgemmScheme(mlir::Operation *op) {
  cpu::LoweringConfigAttr c = configOf(op);
  if (!c || c.getKernel() != "brgemm")
    return nullptr;
  return kernelSchemeNamed(c.getIsa().getValue(), c.getTypes().getValue(),
                           c.getLayout() ? c.getLayout().getValue() : "");
}

} // namespace hyc
