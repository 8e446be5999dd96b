//===- HycOps.h - hyc operations --------------------------------*- C++ -*-===//
#ifndef HYC_DIALECTS_HYC_HYCOPS_H
#define HYC_DIALECTS_HYC_HYCOPS_H

#include "dialects/hyc/HycDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/hyc/HycOps.h.inc"

#endif // HYC_DIALECTS_HYC_HYCOPS_H
