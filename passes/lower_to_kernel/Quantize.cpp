//===- Quantize.cpp - quantization lowering of hyc-cpu-lower-to-kernel ----===//
//
// Lowers hyc.quant.quantize (per-row int8 activations for W8A8 GEMMs), alone
// or with the RMSNorm / SiLU-mul producer the strategy folded into its kernel,
// and hyc.observe (the calibration build's per-channel absmax observers).
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

/// The norm and the quantization in one kernel: it writes the int8 rows
/// (and the residual sum) itself.
static void callRmsNormQuantize(RMSNormOp n, QuantizeOp q, bool u8,
                                KernelEmitter &e) {
  auto nx = e.dims(n.getInput());
  size_t r = nx.size();
  e.call(u8 ? "hyrt_cpu_rms_norm_quantize_u8" : "hyrt_ref_rms_norm_quantize",
         {e.ptrOf(n.getInput()),
          n.getResidual() ? e.ptrOf(n.getResidual()) : e.null(),
          e.ptrOf(n.getWeight()), e.product(nx, 0, r - 1), nx[r - 1].value,
          e.f32(n.getEpsilon().convertToFloat()), e.ptrOf(q.getResult()),
          e.ptrOf(q.getScale()),
          n.getResidualOut() ? e.ptrOf(n.getResidualOut()) : e.null()});
}

static LogicalResult lowerQuantize(QuantizeOp q, KernelEmitter &e) {
  auto x = e.dims(q.getInput());
  bool u8 = runsOn(q, "quantize_u8");
  // Folded into the producer's kernel: it writes the int8 rows itself.
  if (auto n = q.getInput().getDefiningOp<RMSNormOp>();
      n && configOf(q).getFusedProducer()) {
    callRmsNormQuantize(n, q, u8, e);
    return success();
  }
  if (auto s = q.getInput().getDefiningOp<SiluMulOp>();
      s && configOf(q).getFusedProducer()) {
    e.call(u8 ? "hyrt_cpu_silu_mul_quantize_u8" : "hyrt_ref_silu_mul_quantize",
           {e.ptrOf(s.getGate()), e.ptrOf(s.getUp()), x[0].value, x[1].value,
            e.ptrOf(q.getResult()), e.ptrOf(q.getScale())});
    return success();
  }
  if (u8)
    e.call("hyrt_cpu_quantize_rows_u8",
           {e.ptrOf(q.getInput()), x[0].value, x[1].value, x[1].value,
            e.ptrOf(q.getResult()), e.ptrOf(q.getScale())});
  else
    e.call("hyrt_ref_quantize_rows",
           {e.ptrOf(q.getInput()), x[0].value, x[1].value,
            e.ptrOf(q.getResult()), e.ptrOf(q.getScale())});
  return success();
}

/// The feeds travel with the call as a NUL-terminated constant, so the
/// artifact describes its own observers (abi.h).
static LogicalResult lowerObserve(ObserveOp o, KernelEmitter &e) {
  std::string feeds;
  for (Attribute f : o.getFeeds())
    feeds += (feeds.empty() ? "" : ",") + cast<StringAttr>(f).str();
  std::vector<int8_t> bytes(feeds.begin(), feeds.end());
  bytes.push_back(0);
  const int64_t n = int64_t(bytes.size());
  OpBuilder &b = e.builder();
  auto text = kernel::ConstantTableOp::create(
      b, e.getLoc(), MemRefType::get({n}, b.getI8Type()),
      DenseElementsAttr::get(RankedTensorType::get({n}, b.getI8Type()),
                             ArrayRef<int8_t>(bytes)));
  auto x = e.dims(o.getInput());
  e.call("hyrt_ref_observe_absmax",
         {e.ptrOf(o.getInput()), x[0].value, x[1].value,
          e.i64(o.getSlotAttr().getInt()), text});
  return success();
}

void hyc::lowering::populateQuantizeLowerings(LoweringTable &table) {
  table.add<QuantizeOp>(lowerQuantize);
  table.add<ObserveOp>(lowerObserve);
}
