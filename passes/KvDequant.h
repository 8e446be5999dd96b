//===- KvDequant.h - the int8 KV cache's contract between passes ---------===//
//
// hyc-global-fuse-dequant-into-attention writes `hyc.kv_dequant = "int8"`
// on every op that attends over the cache; hyc-cpu-lower-to-kernel refuses
// an int8-cache module with an attention op that lacks it. Both name the
// attribute and the ops here, so that they cannot drift apart.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_KVDEQUANT_H
#define HYC_PASSES_KVDEQUANT_H

#include "dialects/hyc/HycOps.h"

namespace hyc {

/// The attribute: the attention reads int8 rows plus one fp32 scale per
/// (token, KV head) row and dequantizes while loading.
inline constexpr const char *kKvDequantName = "hyc.kv_dequant";

/// Ops that read keys or values from the cache: extend, decode (plain and
/// with its fused append) and MLA latent attention.
inline bool attendsOverCache(mlir::Operation *op) {
  return mlir::isa<AttentionOp, PagedAttentionOp, PagedAttentionAppendOp, MLAAttentionOp>(op);
}

} // namespace hyc

#endif // HYC_PASSES_KVDEQUANT_H
