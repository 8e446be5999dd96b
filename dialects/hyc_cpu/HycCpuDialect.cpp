//===- HycCpuDialect.cpp - hyc_cpu registration and verifiers -------------===//

#include "dialects/hyc_cpu/HycCpuDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hyc::cpu;

#include "dialects/hyc_cpu/HycCpuDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/hyc_cpu/HycCpuAttrs.cpp.inc"

void HycCpuDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/hyc_cpu/HycCpuAttrs.cpp.inc"
      >();
}

LogicalResult LoweringConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef kernel,
    StringAttr isa, StringAttr types, StringAttr layout, DenseI64ArrayAttr tileAttr,
    int64_t threads, int64_t parallelMinMacs, int64_t kvSplits,
    StringAttr fusedProducer) {
  // The kernel families CpuLowerToKernel knows how to call.
  static constexpr const char *kKernels[] = {
      "reference", "brgemm", "paged_attention", "quantize_u8", "rope",     "rms_norm",
      "silu_mul",  "moe",    "mla_absorbed",    "copy",        "kv_append", "add",
      "collective"};
  if (llvm::none_of(kKernels, [&](const char *k) { return kernel == k; }))
    return emitError() << "kernel must be one of reference, brgemm, paged_attention, "
                          "quantize_u8, rope, rms_norm, silu_mul, moe, mla_absorbed, "
                          "copy, kv_append, add, collective; got '"
                       << kernel << "'";
  ArrayRef<int64_t> tile = tileAttr ? tileAttr.asArrayRef() : ArrayRef<int64_t>();
  if (kernel == "brgemm") {
    if (!isa || !types || !layout)
      return emitError() << "a brgemm config needs isa, types and layout";
    if (tile.size() != 3)
      return emitError() << "a brgemm config needs tile = [m, n, k], got "
                         << tile.size() << " values";
    for (int64_t t : tile)
      if (t <= 0)
        return emitError() << "tile sizes must be positive, got " << t;
  }
  if (threads < 1)
    return emitError() << "threads must be at least 1, got " << threads;
  if (parallelMinMacs < 0)
    return emitError() << "parallel_min_macs must be non-negative, got "
                       << parallelMinMacs;
  if (kvSplits < 1)
    return emitError() << "kv_splits must be at least 1, got " << kvSplits;
  if (fusedProducer && fusedProducer.getValue() != "rms_norm" &&
      fusedProducer.getValue() != "silu_mul" && fusedProducer.getValue() != "moe_permute")
    return emitError() << "fused_producer must be rms_norm, silu_mul or moe_permute, got '"
                       << fusedProducer.getValue() << "'";
  return success();
}
