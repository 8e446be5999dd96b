//===- GlobalFuseMoeCombine.cpp - adds into the MoE combine ---------------===//
//
// After the routed experts, an MoE layer sums their weighted outputs back
// into token order (`hyc.moe.unpermute`), then adds the shared experts'
// output and, unless the residual went into the next norm, the residual.
// Each `hyc.add` is another pass over [T, hidden]; folded into the
// unpermute, they are added while each output row is still in registers.
// Same fp32 additions in the same order: bit-identical results.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/IR/Builders.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALFUSEMOECOMBINE
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// The add that can absorb `u`'s result: its only reader, in the same block,
/// with room for one more addend. (The other operand, e.g. the shared
/// experts computed after the routed ones, may come later than `u`: the
/// fused op takes the add's place, where every operand is available.)
AddOp absorbingAdd(MoeUnpermuteOp u) {
  if (!u->hasOneUse() || u.getAddends().size() >= 2)
    return {};
  auto add = dyn_cast<AddOp>(*u->user_begin());
  if (!add || add->getBlock() != u->getBlock() || add.getLhs() == add.getRhs())
    return {};
  return add;
}

struct HycGlobalFuseMoeCombinePass
    : public hyc::impl::HycGlobalFuseMoeCombineBase<HycGlobalFuseMoeCombinePass> {
  void runOnOperation() override {
    SmallVector<MoeUnpermuteOp> unpermutes;
    getOperation().walk([&](MoeUnpermuteOp u) { unpermutes.push_back(u); });
    for (MoeUnpermuteOp u : unpermutes) {
      // Absorb a chain of adds (shared experts, then the residual).
      while (AddOp add = absorbingAdd(u)) {
        Value other = add.getLhs() == u.getResult() ? add.getRhs() : add.getLhs();
        SmallVector<Value> addends(u.getAddends());
        addends.push_back(other);
        OpBuilder b(add);
        auto fused = MoeUnpermuteOp::create(b, u.getLoc(), u.getType(), u.getInput(),
                                            u.getRows(), u.getWeights(), addends);
        add.getResult().replaceAllUsesWith(fused.getResult());
        add.erase();
        u.erase();
        u = fused;
      }
    }
  }
};

} // namespace
