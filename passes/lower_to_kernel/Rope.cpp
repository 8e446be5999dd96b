//===- Rope.cpp - rotary embedding lowering of hyc-cpu-lower-to-kernel ----===//
//
// Lowers hyc.rope onto hyrt_cpu_rope or its reference, with the op's inverse
// frequencies (and the YaRN mscale) computed at compile time into a
// `hyc_kernel.constant_table`.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/RopeFrequencies.h"
#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

/// The scaling parameters of `op` for computeRopeTable.
static RopeScalingParams scalingParamsOf(RopeOp op) {
  RopeScalingAttr s = op.getScaling();
  RopeScalingParams params;
  params.kind = stringifyRopeScalingKind(s.getKind()).str();
  params.factor = s.getFactor().convertToDouble();
  params.low_freq_factor = s.getLowFreqFactor().convertToDouble();
  params.high_freq_factor = s.getHighFreqFactor().convertToDouble();
  params.original_max_position = s.getOriginalMaxPosition();
  params.beta_fast = s.getBetaFast().convertToDouble();
  params.beta_slow = s.getBetaSlow().convertToDouble();
  params.mscale = s.getMscale().convertToDouble();
  params.mscale_all_dim = s.getMscaleAllDim().convertToDouble();
  return params;
}

/// A constant table with the op's inverse frequencies; sets `mscale`.
static Value ropeTable(RopeOp op, KernelEmitter &e, float &mscale) {
  RopeTable table = computeRopeTable(op.getTheta().convertToDouble(),
                                     op.getRotaryDim(), scalingParamsOf(op));
  mscale = table.mscale;
  OpBuilder &b = e.builder();
  int64_t n = table.inv_freq.size();
  auto values =
      DenseElementsAttr::get(RankedTensorType::get({n}, b.getF32Type()),
                             ArrayRef<float>(table.inv_freq));
  return kernel::ConstantTableOp::create(
      b, e.getLoc(), MemRefType::get({n}, b.getF32Type()), values);
}

static LogicalResult lowerRope(RopeOp r, KernelEmitter &e) {
  float mscale = 1.0f;
  Value table = ropeTable(r, e, mscale);
  auto x = e.dims(r.getInput());
  e.call(runsOn(r, "rope") ? "hyrt_cpu_rope" : "hyrt_ref_rope",
         {e.ptrOf(r.getInput()), e.ptrOf(r.getPositions()), x[0].value,
          x[1].value, x[2].value, e.i64(r.getRotaryDim()),
          e.i32(r.getStyle() == RopeStyle::neox ? 1 : 0), table, e.f32(mscale),
          e.ptrOf(r.getResult())});
  return success();
}

void hyc::lowering::populateRopeLowerings(LoweringTable &table) {
  table.add<RopeOp>(lowerRope);
}
