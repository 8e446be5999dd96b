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

namespace hyc {
/// Integer codes whose scales are part of the weight: q4, q8 and the
/// formats kept as checkpoints store them (q4k ... q4z128).
inline bool isCodesScheme(QuantScheme s) {
  return s == QuantScheme::q4 || s == QuantScheme::q8 ||
         (int(s) >= int(QuantScheme::q4k) && int(s) <= int(QuantScheme::q4z128));
}
} // namespace hyc

#define GET_ATTRDEF_CLASSES
#include "dialects/hyc/HycAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hyc/HycTypes.h.inc"

#endif // HYC_DIALECTS_HYC_HYCDIALECT_H
