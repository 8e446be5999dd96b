//===- Moe.cpp - MoE lowering of hyc-cpu-lower-to-kernel ------------------===//
//
// Lowers the mixture-of-experts ops around the expert GEMMs (Gemm.cpp):
// hyc.moe.route (top-k gating), hyc.moe.permute (token rows grouped by
// expert) and hyc.moe.unpermute (the weighted combine, with the addends
// fused into it), onto the hyrt_cpu_moe_* kernels or their references.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

static LogicalResult lowerMoeRoute(MoeRouteOp r, KernelEmitter &e) {
  auto l = e.dims(r.getLogits());
  MoeGatingAttr g = r.getGating();
  e.call(runsOn(r, "moe") ? "hyrt_cpu_moe_route" : "hyrt_ref_moe_route",
         {e.ptrOf(r.getLogits()),
          r.getCorrectionBias() ? e.ptrOf(r.getCorrectionBias()) : e.null(),
          l[0].value, l[1].value, e.i64(g.getTopK()),
          e.i32(g.getScoring() == MoeScoring::sigmoid ? 1 : 0),
          e.i64(g.getNGroup()), e.i64(g.getTopkGroup()),
          e.i32(g.getGroupScore() == MoeGroupScore::top2_sum ? 1 : 0),
          e.i32(g.getRenormalize() ? 1 : 0),
          e.f32(g.getRoutedScalingFactor().convertToDouble()),
          e.ptrOf(r.getWeights()), e.ptrOf(r.getIds())});
  return success();
}

/// Whether every reader of the permuted rows gathers the token rows itself
/// (its driver fused the permute), so that the permute writes no copies.
static bool readersGatherRows(MoePermuteOp p) {
  return llvm::all_of(p.getResult().getUsers(), [](Operation *u) {
    cpu::LoweringConfigAttr c = configOf(u);
    return c && c.getFusedProducer() &&
           c.getFusedProducer().getValue() == "moe_permute";
  });
}

static LogicalResult lowerMoePermute(MoePermuteOp p, KernelEmitter &e) {
  auto x = e.dims(p.getInput());
  auto ids = e.dims(p.getIds());
  const bool gathered = runsOn(p, "moe") && readersGatherRows(p);
  e.call(runsOn(p, "moe") ? "hyrt_cpu_moe_permute" : "hyrt_ref_moe_permute",
         {e.ptrOf(p.getInput()), e.ptrOf(p.getIds()), x[0].value, x[1].value,
          ids[1].value, e.i64(p.getNumExperts()), e.i64(p.getFirstExpert()),
          gathered ? e.null() : e.ptrOf(p.getResult()), e.ptrOf(p.getOffsets()),
          e.ptrOf(p.getRows())});
  return success();
}

static LogicalResult lowerMoeUnpermute(MoeUnpermuteOp u, KernelEmitter &e) {
  auto y = e.dims(u.getInput());
  auto w = e.dims(u.getWeights());
  auto addends = u.getAddends();
  if (runsOn(u, "moe")) {
    e.call("hyrt_cpu_moe_unpermute_add",
           {e.ptrOf(u.getInput()), e.ptrOf(u.getRows()),
            e.ptrOf(u.getWeights()), w[0].value, w[1].value, y[1].value,
            addends.size() > 0 ? e.ptrOf(addends[0]) : e.null(),
            addends.size() > 1 ? e.ptrOf(addends[1]) : e.null(),
            e.ptrOf(u.getResult())});
    return success();
  }
  if (addends.empty()) {
    e.call("hyrt_ref_moe_unpermute",
           {e.ptrOf(u.getInput()), e.ptrOf(u.getRows()),
            e.ptrOf(u.getWeights()), w[0].value, w[1].value, y[1].value,
            e.ptrOf(u.getResult())});
    return success();
  }
  e.call("hyrt_ref_moe_unpermute_add",
         {e.ptrOf(u.getInput()), e.ptrOf(u.getRows()), e.ptrOf(u.getWeights()),
          w[0].value, w[1].value, y[1].value, e.ptrOf(addends[0]),
          addends.size() > 1 ? e.ptrOf(addends[1]) : e.null(),
          e.ptrOf(u.getResult())});
  return success();
}

void hyc::lowering::populateMoeLowerings(LoweringTable &table) {
  table.add<MoeRouteOp>(lowerMoeRoute);
  table.add<MoePermuteOp>(lowerMoePermute);
  table.add<MoeUnpermuteOp>(lowerMoeUnpermute);
}
