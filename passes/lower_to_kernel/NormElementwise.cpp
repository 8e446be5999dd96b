//===- NormElementwise.cpp - norm/elementwise lowering --------------------===//
//
// Lowers hyc-cpu-lower-to-kernel's row-wise ops: hyc.rms_norm (with its fused
// residual add), hyc.add and hyc.silu_mul, onto the hyrt_cpu_* kernels or
// their references. A norm or silu_mul whose activation quantization the
// strategy folded into one kernel is lowered with it (Quantize.cpp).
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

/// Whether the strategy folded an activation quantization into `producer`'s
/// kernel (its only reader, with `fused_producer`).
static bool hasFusedQuantize(Operation *producer) {
  Value out = producer->getResult(0);
  if (!out.hasOneUse())
    return false;
  auto q = dyn_cast<QuantizeOp>(*out.getUsers().begin());
  cpu::LoweringConfigAttr c = q ? configOf(q) : cpu::LoweringConfigAttr();
  return c && c.getFusedProducer();
}

static LogicalResult lowerRmsNorm(RMSNormOp n, KernelEmitter &e) {
  if (hasFusedQuantize(n))
    return success(); // computed by the quantization's kernel
  auto x = e.dims(n.getInput());
  size_t r = x.size();
  e.call(runsOn(n, "rms_norm") ? "hyrt_cpu_rms_norm" : "hyrt_ref_rms_norm",
         {e.ptrOf(n.getInput()),
          n.getResidual() ? e.ptrOf(n.getResidual()) : e.null(),
          e.ptrOf(n.getWeight()), e.product(x, 0, r - 1), x[r - 1].value,
          e.f32(n.getEpsilon().convertToFloat()), e.ptrOf(n.getResult()),
          n.getResidualOut() ? e.ptrOf(n.getResidualOut()) : e.null()});
  return success();
}

static LogicalResult lowerAdd(AddOp a, KernelEmitter &e) {
  auto d = e.dims(a.getResult());
  e.call(runsOn(a, "add") ? "hyrt_cpu_add" : "hyrt_ref_add",
         {e.ptrOf(a.getLhs()), e.ptrOf(a.getRhs()), e.product(d, 0, d.size()),
          e.ptrOf(a.getResult())});
  return success();
}

static LogicalResult lowerSiluMul(SiluMulOp s, KernelEmitter &e) {
  if (hasFusedQuantize(s))
    return success(); // computed by the quantization's kernel
  auto d = e.dims(s.getResult());
  if (runsOn(s, "silu_mul"))
    e.call("hyrt_cpu_silu_mul", {e.ptrOf(s.getGate()), e.ptrOf(s.getUp()),
                                 e.product(d, 0, d.size() - 1), d.back().value,
                                 e.ptrOf(s.getResult())});
  else
    e.call("hyrt_ref_silu_mul",
           {e.ptrOf(s.getGate()), e.ptrOf(s.getUp()), e.product(d, 0, d.size()),
            e.ptrOf(s.getResult())});
  return success();
}

void hyc::lowering::populateNormElementwiseLowerings(LoweringTable &table) {
  table.add<RMSNormOp>(lowerRmsNorm);
  table.add<AddOp>(lowerAdd);
  table.add<SiluMulOp>(lowerSiluMul);
}
