//===- GlobalFuseDequantIntoAttention.cpp - int8 KV read inside attention -===//
//
// An int8 KV cache halves the bytes every attention step streams against
// bf16 (a quarter of fp32); decode attention is bandwidth-bound, so that is
// its speed. Dequantizing the cache into an fp32 copy before attending
// would write and re-read what the quantization saved; instead each
// attention kernel loads int8 rows and their per-row scales and widens
// them in registers (the 770B deployment measured under 8% attention cost
// that way). This pass records that decision for every op that attends over
// the cache (extend, decode with or without its fused append, MLA latent)
// as `hyc.kv_dequant = "int8"`; hyc-cpu-lower-to-kernel consumes it and
// refuses an int8-cache module whose attention op lacks it, so no kernel
// can be handed int8 rows it would read as floats.
//
// With any other cache element type (`kv-cache` f32, bf16, auto) the pass
// changes nothing.
//
//===----------------------------------------------------------------------===//

#include "passes/KvDequant.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALFUSEDEQUANTINTOATTENTION
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

struct HycGlobalFuseDequantIntoAttentionPass
    : public hyc::impl::HycGlobalFuseDequantIntoAttentionBase<
          HycGlobalFuseDequantIntoAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (kvCache != "int8")
      return;
    getOperation().walk([&](Operation *op) {
      if (attendsOverCache(op))
        op->setAttr(kKvDequantName, StringAttr::get(op->getContext(), "int8"));
    });
  }
};

} // namespace
