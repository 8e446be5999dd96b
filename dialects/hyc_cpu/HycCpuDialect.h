//===- HycCpuDialect.h - hyc_cpu dialect and attributes ---------*- C++ -*-===//
#ifndef HYC_DIALECTS_HYC_CPU_HYCCPUDIALECT_H
#define HYC_DIALECTS_HYC_CPU_HYCCPUDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/hyc_cpu/HycCpuDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/hyc_cpu/HycCpuAttrs.h.inc"

namespace hyc::cpu {
/// Name of the discardable attribute that carries an op's LoweringConfigAttr.
inline constexpr const char *kLoweringConfigName = "hyc_cpu.lowering_config";
} // namespace hyc::cpu

#endif // HYC_DIALECTS_HYC_CPU_HYCCPUDIALECT_H
