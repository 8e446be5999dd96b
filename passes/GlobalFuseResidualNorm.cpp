//===- GlobalFuseResidualNorm.cpp - add + rms_norm -> one rms_norm --------===//
//
// The residual stream of a pre-norm decoder is `x = x + f(x)` followed by
// the next RMSNorm of x. Unfused, the sum is written by `hyc.add` and read
// back by `hyc.rms_norm`; fused, the norm adds the residual while it reads
// its input and returns the sum as its second result, one pass over the
// rows instead of two. The arithmetic is unchanged (the same fp32 sum), so
// fused and unfused artifacts agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/IR/Builders.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALFUSERESIDUALNORM
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// The norm that can absorb `add`: an rms_norm without residual reading the
/// sum, with every other reader of the sum after it in the same block (they
/// will read the norm's residual output instead).
RMSNormOp fusableNorm(AddOp add) {
  RMSNormOp norm;
  for (Operation *user : add->getUsers()) {
    auto n = dyn_cast<RMSNormOp>(user);
    if (n && n.getInput() == add.getResult() && !n.getResidual() &&
        n->getBlock() == add->getBlock() &&
        (!norm || n->isBeforeInBlock(norm)))
      norm = n;
  }
  if (!norm)
    return {};
  for (Operation *user : add->getUsers())
    if (user != norm.getOperation() &&
        (user->getBlock() != norm->getBlock() || user->isBeforeInBlock(norm)))
      return {};
  return norm;
}

struct HycGlobalFuseResidualNormPass
    : public hyc::impl::HycGlobalFuseResidualNormBase<
          HycGlobalFuseResidualNormPass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
      RMSNormOp norm = fusableNorm(add);
      if (!norm)
        continue;
      OpBuilder b(norm);
      Type t = add.getType();
      auto fused = RMSNormOp::create(b, norm.getLoc(), norm.getResult().getType(),
                                     t, add.getLhs(), norm.getWeight(),
                                     add.getRhs(), norm.getEpsilonAttr());
      norm.getResult().replaceAllUsesWith(fused.getResult());
      norm.erase();
      add.getResult().replaceAllUsesWith(fused.getResidualOut());
      add.erase();
    }
  }
};

} // namespace
