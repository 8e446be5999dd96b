//===- HycKernelDialect.h - hyc_kernel dialect and ops ----------*- C++ -*-===//
#ifndef HYC_DIALECTS_HYC_KERNEL_HYCKERNELDIALECT_H
#define HYC_DIALECTS_HYC_KERNEL_HYCKERNELDIALECT_H

#include "dialects/hyc/HycDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/hyc_kernel/HycKernelDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/hyc_kernel/HycKernelOps.h.inc"

#endif // HYC_DIALECTS_HYC_KERNEL_HYCKERNELDIALECT_H
