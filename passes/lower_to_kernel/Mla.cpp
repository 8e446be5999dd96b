//===- Mla.cpp - MLA attention lowering of hyc-cpu-lower-to-kernel --------===//
//
// Lowers hyc.mla.attention (DeepSeek's multi-head latent attention over the
// cached latent rows) onto the absorbed MLA kernel or its reference.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

/// Whether kv_b was rounded by the quantize policy: it is then stored as
/// bf16 rows for the absorbed kernel (hyc-cpu-plan-memory's layout "bf16").
static bool storesKvBAsBf16(MLAAttentionOp a) {
  auto kvParam = a.getKvB().getDefiningOp<ParamOp>();
  auto derivation = kvParam ? kvParam->getAttrOfType<StringAttr>("hyc.quantize")
                            : StringAttr();
  return derivation && derivation.getValue() == "bf16";
}

/// The schedule's plain-form weights (tile = [on bf16 dot products, on fp32
/// kernels]); 0 (never) where it wrote none.
static int64_t plainWeight(cpu::LoweringConfigAttr config, size_t i) {
  return config.getTile() && config.getTile().size() > i ? config.getTile()[i] : 0;
}

static LogicalResult lowerMlaAttention(MLAAttentionOp a, KernelEmitter &e) {
  auto qn = e.dims(a.getQNope());
  auto qp = e.dims(a.getQPe());
  auto kvb = e.dims(a.getKvB());
  if (runsOn(a, "mla_absorbed")) {
    cpu::LoweringConfigAttr config = configOf(a);
    const bool bf16KvB = storesKvBAsBf16(a);
    e.callKv("hyrt_cpu_mla_attention",
             {e.i64(a.getLayer()), e.ptrOf(a.getQNope()), e.ptrOf(a.getQPe()),
              e.ptrOf(a.getKvB()), e.i32(bf16KvB ? 1 : 0), qn[1].value,
              qn[2].value, qp[2].value, e.i64(a.getVHeadDim()), kvb[1].value,
              e.f32(a.getScale().convertToFloat()), e.ptrOf(a.getResult()),
              e.i64(config.getKvSplits()), e.i64(plainWeight(config, 0)),
              e.i64(plainWeight(config, 1))});
    return success();
  }
  e.callKv("hyrt_ref_mla_attention",
           {e.i64(a.getLayer()), e.ptrOf(a.getQNope()), e.ptrOf(a.getQPe()),
            e.ptrOf(a.getKvB()), qn[1].value, qn[2].value, qp[2].value,
            e.i64(a.getVHeadDim()), kvb[1].value,
            e.f32(a.getScale().convertToFloat()), e.ptrOf(a.getResult())});
  return success();
}

void hyc::lowering::populateMlaLowerings(LoweringTable &table) {
  table.add<MLAAttentionOp>(lowerMlaAttention);
}
