//===- MemoryPlan.cpp - aliasing and token-dim facts of hyc IR ------------===//

#include "passes/MemoryPlan.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace hyc::plan {

Value aliasSource(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return {};
  if (auto ab = dyn_cast<AssumeBoundsOp>(def))
    return ab.getInput();
  if (auto e = dyn_cast<tensor::ExpandShapeOp>(def))
    return e.getSrc();
  if (auto c = dyn_cast<tensor::CollapseShapeOp>(def))
    return c.getSrc();
  if (auto ar = dyn_cast<AllReduceOp>(def))
    return ar.getInput();
  return {};
}

Value aliasRoot(Value v) {
  while (Value src = aliasSource(v))
    v = src;
  return v;
}

Value tokenDimSource(Operation *def) {
  if (auto e = dyn_cast<EmbeddingOp>(def))
    return e.getIds();
  if (auto u = dyn_cast<MoeUnpermuteOp>(def))
    return u.getWeights();
  return def->getOperand(0);
}

} // namespace hyc::plan
