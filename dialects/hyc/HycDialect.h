//===- HycDialect.h - hyc dialect, attributes and types ---------*- C++ -*-===//
#ifndef HYC_DIALECTS_HYC_HYCDIALECT_H
#define HYC_DIALECTS_HYC_HYCDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

namespace hyc {
/// Parses a float literal into an APFloat (double) attribute parameter.
inline mlir::FailureOr<llvm::APFloat>
parseF64Parameter(mlir::AsmParser &parser) {
  double value;
  if (parser.parseFloat(value))
    return mlir::failure();
  return llvm::APFloat(value);
}
} // namespace hyc

#include "dialects/hyc/HycDialect.h.inc"
#include "dialects/hyc/HycEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/hyc/HycAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hyc/HycTypes.h.inc"

#endif // HYC_DIALECTS_HYC_HYCDIALECT_H
