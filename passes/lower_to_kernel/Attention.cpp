//===- Attention.cpp - attention lowering of hyc-cpu-lower-to-kernel ------===//
//
// Lowers the ops that read and write the step's KV cache: hyc.kv_cache.append,
// hyc.attention (extend), hyc.paged_attention (decode) and
// hyc.paged_attention.append (decode with its fused append), onto the paged
// attention kernels or their hyrt_ref_* references. Every call carries
// `kv_step`: it reads the step's cache view.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

static LogicalResult lowerKvCacheAppend(KVCacheAppendOp a, KernelEmitter &e) {
  e.callKv(runsOn(a, "kv_append") ? "hyrt_cpu_kv_cache_append"
                                   : "hyrt_ref_kv_cache_append",
           {e.i64(a.getLayer()), e.ptrOf(a.getKey()),
            a.getValue() ? e.ptrOf(a.getValue()) : e.null()});
  return success();
}

/// The strategy chose the paged kernel only when this step's keys and
/// values were appended to the cache this attention reads: extend attention
/// is then paged attention over [0, p].
static LogicalResult lowerAttention(AttentionOp a, KernelEmitter &e) {
  auto q = e.dims(a.getQuery());
  if (runsOn(a, "paged_attention")) {
    e.callKv("hyrt_cpu_paged_attention",
             {e.i64(a.getLayer()), e.ptrOf(a.getQuery()), q[1].value,
              e.f32(a.getScale().convertToFloat()), e.ptrOf(a.getResult()),
              e.i64(configOf(a).getKvSplits())});
    return success();
  }
  e.callKv("hyrt_ref_attention",
           {e.i64(a.getLayer()), e.ptrOf(a.getQuery()), e.ptrOf(a.getKey()),
            e.ptrOf(a.getValue()), q[1].value,
            e.f32(a.getScale().convertToFloat()), e.ptrOf(a.getResult())});
  return success();
}

static LogicalResult lowerPagedAttention(PagedAttentionOp a, KernelEmitter &e) {
  auto q = e.dims(a.getQuery());
  if (runsOn(a, "paged_attention"))
    e.callKv("hyrt_cpu_paged_attention",
             {e.i64(a.getLayer()), e.ptrOf(a.getQuery()), q[1].value,
              e.f32(a.getScale().convertToFloat()), e.ptrOf(a.getResult()),
              e.i64(configOf(a).getKvSplits())});
  else
    e.callKv("hyrt_ref_paged_attention",
             {e.i64(a.getLayer()), e.ptrOf(a.getQuery()), q[1].value,
              e.f32(a.getScale().convertToFloat()), e.ptrOf(a.getResult())});
  return success();
}

/// Decode's fused append: one kernel call, or the reference append
/// followed by the reference paged attention.
static LogicalResult lowerPagedAttentionAppend(PagedAttentionAppendOp a,
                                               KernelEmitter &e) {
  auto q = e.dims(a.getQuery());
  Value layer = e.i64(a.getLayer()),
        scale = e.f32(a.getScale().convertToFloat());
  if (runsOn(a, "paged_attention")) {
    e.callKv("hyrt_cpu_paged_attention_append",
             {layer, e.ptrOf(a.getKey()), e.ptrOf(a.getValue()),
              e.ptrOf(a.getQuery()), q[1].value, scale, e.ptrOf(a.getResult()),
              e.i64(configOf(a).getKvSplits())});
    return success();
  }
  e.callKv("hyrt_ref_kv_cache_append",
           {layer, e.ptrOf(a.getKey()), e.ptrOf(a.getValue())});
  e.callKv("hyrt_ref_paged_attention",
           {layer, e.ptrOf(a.getQuery()), q[1].value, scale,
            e.ptrOf(a.getResult())});
  return success();
}

void hyc::lowering::populateAttentionLowerings(LoweringTable &table) {
  table.add<KVCacheAppendOp>(lowerKvCacheAppend);
  table.add<AttentionOp>(lowerAttention);
  table.add<PagedAttentionOp>(lowerPagedAttention);
  table.add<PagedAttentionAppendOp>(lowerPagedAttentionAppend);
}
