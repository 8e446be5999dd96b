//===- GlobalFuseKvAppendIntoAttention.cpp - KV write inside decode attn --===//
//
// Decode writes each new token's key and value into its cache page and then
// attends over the page table including that row. Unfused these are two
// kernels (a serial copy, then the threaded attention); fused, one parallel
// region writes the rows across the threads and attends right after, while
// the rows are in cache (SGLang's fused KV-buffer write). The arithmetic is unchanged: fused and unfused decode
// agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/IR/Builders.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALFUSEKVAPPENDINTOATTENTION
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// The append whose result `attn` reads, when the pair can become one op:
/// same layer, keys and values, and every other reader of the appended
/// cache after the attention in the same block (the fused op defines the
/// updated cache at the attention's place).
KVCacheAppendOp fusableAppend(PagedAttentionOp attn) {
  auto append = attn.getCache().getDefiningOp<KVCacheAppendOp>();
  if (!append || !append.getValue() || append.getLayer() != attn.getLayer() ||
      append->getBlock() != attn->getBlock())
    return {};
  for (Operation *user : append.getResult().getUsers())
    if (user != attn.getOperation() &&
        (user->getBlock() != attn->getBlock() || user->isBeforeInBlock(attn)))
      return {};
  return append;
}

struct HycGlobalFuseKvAppendIntoAttentionPass
    : public hyc::impl::HycGlobalFuseKvAppendIntoAttentionBase<
          HycGlobalFuseKvAppendIntoAttentionPass> {
  void runOnOperation() override {
    SmallVector<PagedAttentionOp> attns;
    getOperation().walk([&](PagedAttentionOp a) { attns.push_back(a); });
    for (PagedAttentionOp attn : attns) {
      KVCacheAppendOp append = fusableAppend(attn);
      if (!append)
        continue;
      OpBuilder b(attn);
      auto fused = PagedAttentionAppendOp::create(
          b, attn.getLoc(), attn.getResult().getType(),
          append.getResult().getType(), attn.getQuery(), append.getKey(),
          append.getValue(), append.getCache(), attn.getLayerAttr(),
          attn.getScaleAttr(), attn.getKvSplitsAttr());
      attn.getResult().replaceAllUsesWith(fused.getResult());
      attn.erase();
      append.getResult().replaceAllUsesWith(fused.getCacheOut());
      append.erase();
    }
  }
};

} // namespace
