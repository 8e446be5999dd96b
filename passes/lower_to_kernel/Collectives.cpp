//===- Collectives.cpp - collective lowering of hyc-cpu-lower-to-kernel ---===//
//
// Lowers the ops that exchange data between tensor-parallel ranks:
// hyc.all_reduce (sum, in place), hyc.all_gather (blocks along the last
// dim) and expert parallel's hyc.moe.dispatch / hyc.moe.undispatch (the
// staged all-to-all of abi.h all_to_all_v), onto calls that go through the
// artifact's collectives: hyrt_cpu_* where the strategy chose the
// "collective" kernel (optimized targets), hyrt_ref_* otherwise.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

/// This rank's index among the tensor-parallel ranks (the module's
/// hyc.tensor_parallel, written by hyc-global-shard), for collectives whose
/// work depends on it.
static FailureOr<int64_t> tensorParallelRank(Operation *op) {
  auto tp = op->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
      "hyc.tensor_parallel");
  auto rank = tp ? tp.getAs<IntegerAttr>("rank") : IntegerAttr();
  if (!rank)
    return op->emitError() << op->getName()
                           << " needs the module's hyc.tensor_parallel rank";
  return rank.getInt();
}

/// The entry point of `name` ("all_reduce_sum", ...) for `op`.
static std::string collectiveKernel(Operation *op, StringRef name) {
  return (runsOn(op, "collective") ? "hyrt_cpu_" : "hyrt_ref_") + name.str();
}

/// In place (the memory plan makes the result an alias of the input); a
/// group of 1 is the identity.
static LogicalResult lowerAllReduce(AllReduceOp a, KernelEmitter &e) {
  if (a.getGroupSize() == 1)
    return success();
  if (a.getKind() != ReduceKind::sum)
    return a.emitError() << "all_reduce across ranks supports sum, got "
                         << stringifyReduceKind(a.getKind());
  auto d = e.dims(a.getInput());
  Value n = d[0].value;
  for (size_t i = 1; i < d.size(); ++i)
    n = e.mul(n, d[i].value);
  e.call(collectiveKernel(a, "all_reduce_sum"),
         {e.ptrOf(a.getInput()), n, e.i64(a.getGroupSize())});
  return success();
}

/// The staged all-to-all of expert parallel (abi.h all_to_all_v); this
/// rank's index is the module's tensor-parallel rank.
static LogicalResult lowerMoeDispatch(MoeDispatchOp d, KernelEmitter &e) {
  auto rank = tensorParallelRank(d);
  if (failed(rank))
    return failure();
  auto x = e.dims(d.getInput());
  auto ids = e.dims(d.getIds());
  e.call(collectiveKernel(d, "moe_dispatch"),
         {e.ptrOf(d.getInput()), e.ptrOf(d.getIds()), e.ptrOf(d.getWeights()),
          x[0].value, x[1].value, ids[1].value, e.i64(d.getExpertsPerRank()),
          e.i64(d.getGroupSize()), e.i64(*rank), e.ptrOf(d.getRows()),
          e.ptrOf(d.getRowIds()), e.ptrOf(d.getRowWeights()),
          e.ptrOf(d.getSent()), e.ptrOf(d.getCounts())});
  return success();
}

static LogicalResult lowerMoeUndispatch(MoeUndispatchOp u, KernelEmitter &e) {
  auto rank = tensorParallelRank(u);
  if (failed(rank))
    return failure();
  auto y = e.dims(u.getResults());
  e.call(collectiveKernel(u, "moe_undispatch"),
         {e.ptrOf(u.getResults()), e.ptrOf(u.getSent()), e.ptrOf(u.getCounts()),
          y[0].value, y[1].value, e.i64(u.getGroupSize()), e.i64(*rank),
          e.ptrOf(u.getResult())});
  return success();
}

/// Blocks side by side along the last dim (*_all_gather_cols); this rank's
/// block index is the module's tensor-parallel rank (hyc-global-shard).
static LogicalResult lowerAllGather(AllGatherOp g, KernelEmitter &e) {
  auto in = cast<RankedTensorType>(g.getInput().getType());
  if (g.getDim() != in.getRank() - 1)
    return g.emitError()
           << "all_gather across ranks supports the last dim, got dim "
           << g.getDim();
  auto rank = tensorParallelRank(g);
  if (failed(rank))
    return failure();
  auto d = e.dims(g.getInput());
  Value rows = e.i64(1);
  for (size_t i = 0; i + 1 < d.size(); ++i)
    rows = e.mul(rows, d[i].value);
  e.call(collectiveKernel(g, "all_gather_cols"),
         {e.ptrOf(g.getInput()), rows, d.back().value, e.ptrOf(g.getResult()),
          e.i64(g.getGroupSize()), e.i64(*rank)});
  return success();
}

void hyc::lowering::populateCollectiveLowerings(LoweringTable &table) {
  table.add<AllReduceOp>(lowerAllReduce);
  table.add<AllGatherOp>(lowerAllGather);
  table.add<MoeDispatchOp>(lowerMoeDispatch);
  table.add<MoeUndispatchOp>(lowerMoeUndispatch);
}
