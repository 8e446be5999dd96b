//===- Embedding.cpp - embedding/row gather lowering ----------------------===//
//
// Lowers the row gathers: hyc.embedding (token ids -> table rows) and
// hyc.logit_rows (the rows the step asks logits for, listed in the step's
// `step_logit_rows`), onto the threaded copies when the strategy chose
// `copy`, else their reference kernels.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

static LogicalResult lowerEmbedding(EmbeddingOp op, KernelEmitter &e) {
  auto t = e.dims(op.getTable());
  e.call(runsOn(op, "copy") ? "hyrt_cpu_embedding" : "hyrt_ref_embedding",
         {e.ptrOf(op.getTable()), t[0].value, t[1].value, e.ptrOf(op.getIds()),
          e.dims(op.getIds())[0].value, e.ptrOf(op.getResult())});
  return success();
}

static LogicalResult lowerLogitRows(LogitRowsOp r, KernelEmitter &e) {
  auto out = e.dims(r.getResult());
  OpBuilder &b = e.builder();
  Value rows = kernel::BufferOp::create(
      b, e.getLoc(), MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
      "step_logit_rows", 0, ValueRange{out[0].value});
  e.call(runsOn(r, "copy") ? "hyrt_cpu_gather_rows" : "hyrt_ref_gather_rows", {e.ptrOf(r.getInput()), rows, out[0].value,
                                  out[1].value, e.ptrOf(r.getResult())});
  return success();
}

void hyc::lowering::populateEmbeddingLowerings(LoweringTable &table) {
  table.add<EmbeddingOp>(lowerEmbedding);
  table.add<LogitRowsOp>(lowerLogitRows);
}
