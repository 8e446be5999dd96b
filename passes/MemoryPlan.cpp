//===- MemoryPlan.cpp - aliasing and token-dim facts of hyc IR ------------===//

#include "passes/MemoryPlan.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/CheckedArithmetic.h"

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

/// Bounds of every dim: static dims as they are, dynamic dims from
/// hyc.assume_bounds, propagated along the producing op (token dims follow
/// the token-dim source; MoE permuted rows are tokens * top_k).
FailureOr<SmallVector<int64_t>> Bounds::of(Value v) {
  auto it = cache.find(v);
  if (it != cache.end())
    return it->second;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> result(type.getShape());
  if (type.hasStaticShape())
    return cache[v] = result;
  Operation *def = v.getDefiningOp();
  if (!def) {
    // An entry argument takes the bounds asserted on it.
    for (Operation *user : v.getUsers())
      if (auto ab = dyn_cast<AssumeBoundsOp>(user))
        return of(ab.getResult());
    return fn.emitError() << "entry argument " << v
                          << " has a dynamic dim without hyc.assume_bounds";
  }
  if (auto ab = dyn_cast<AssumeBoundsOp>(def)) {
    ArrayRef<int64_t> ub = ab.getUpperBounds();
    size_t j = 0;
    for (int64_t &d : result)
      if (ShapedType::isDynamic(d))
        d = ub[j++];
    return cache[v] = result;
  }
  int64_t tokenBound = -1;
  if (auto permute = dyn_cast<MoePermuteOp>(def)) {
    auto in = of(permute.getInput());
    if (failed(in))
      return failure();
    std::optional<int64_t> rows = llvm::checkedMul(
        (*in)[0],
        cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1));
    if (!rows)
      return def->emitError() << "permuted rows of " << (*in)[0]
                              << " tokens overflow int64";
    tokenBound = *rows;
  } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
    auto in = of(collapse.getSrc());
    if (failed(in))
      return failure();
    for (auto [i, group] : llvm::enumerate(collapse.getReassociationIndices())) {
      std::optional<int64_t> n = 1;
      for (int64_t j : group)
        if (!(n = llvm::checkedMul(*n, (*in)[j])))
          return def->emitError() << "collapsed dim " << i << " overflows int64";
      result[i] = *n;
    }
    return cache[v] = result;
  } else if (def->getNumOperands() > 0 &&
             isa<RankedTensorType>(def->getOperand(0).getType())) {
    auto in = of(tokenDimSource(def));
    if (failed(in))
      return failure();
    tokenBound = (*in)[0];
  }
  for (int64_t i = 0, e = result.size(); i < e; ++i) {
    if (!ShapedType::isDynamic(result[i]))
      continue;
    if (i != 0 || tokenBound < 0)
      return def->emitError() << "dim " << i << " of result type " << type
                              << " is dynamic; only the leading token dim may be";
    result[i] = tokenBound;
  }
  return cache[v] = result;
}

} // namespace hyc::plan
