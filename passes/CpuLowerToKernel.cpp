//===- CpuLowerToKernel.cpp - hyc ops -> hyc_kernel microkernel calls -----===//
//
// Applies the CPU decisions to every entry function: each hyc op becomes
// the hyc_kernel ops that run it with the run-time sizes: planned buffers
// (`hyc_kernel.buffer`, where hyc-cpu-plan-memory put each tensor), sizes
// read from the step, a `hyc_kernel.brgemm.dispatch` for each generated GEMM
// kernel, and one `hyc_kernel.ukernel` call of the kernel its
// #hyc_cpu.lowering_config names (a GEMM driver with the dispatched kernel,
// the paged-attention kernel) or of its hyrt_ref_* reference. The kernels'
// semantics are in runtime/include/hyrt/reference.h and cpu_kernels.h.
// The entry function keeps its name and `hyc.entry` but takes and returns
// nothing: its inputs and outputs are buffers of the step.
//
// This file is the driver: it walks each entry in order and applies the
// lowering of each op kind from a table. The lowerings live one family per
// file in passes/lower_to_kernel/ (Gemm.cpp, Attention.cpp, ...), with the
// shared buffers, dims and calls in LoweringUtils.{h,cpp}.
//
//===----------------------------------------------------------------------===//

#include "passes/KvDequant.h"
#include "passes/Passes.h"
#include "passes/lower_to_kernel/LoweringUtils.h"

#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_cpu/HycCpuDialect.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hyc {
#define GEN_PASS_DEF_HYCCPULOWERTOKERNEL
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

/// The entry's structure: weights and bound assertions run nothing (the
/// memory plan placed them); the return becomes a plain `func.return`.
static void populateEntryLowerings(LoweringTable &table) {
  table.add<ParamOp, AssumeBoundsOp>(
      [](auto, KernelEmitter &) { return success(); });
  table.add<func::ReturnOp>([](func::ReturnOp, KernelEmitter &e) {
    func::ReturnOp::create(e.builder(), e.getLoc());
    return success();
  });
}

/// Every op kind this pass lowers, one family per file.
static LoweringTable buildLoweringTable() {
  LoweringTable table;
  populateEntryLowerings(table);
  populateTensorShapeLowerings(table);
  populateEmbeddingLowerings(table);
  populateNormElementwiseLowerings(table);
  populateRopeLowerings(table);
  populateGemmLowerings(table);
  populateAttentionLowerings(table);
  populateMlaLowerings(table);
  populateMoeLowerings(table);
  populateQuantizeLowerings(table);
  populateCollectiveLowerings(table);
  return table;
}

/// Lowers one op of the entry: its tensors' dims first (so that every
/// lowering can read them), then the lowering its kind has in `table`.
static LogicalResult lowerOp(Operation *op, KernelEmitter &e,
                             const LoweringTable &table) {
  for (Value r : op->getResults())
    if (isa<RankedTensorType>(r.getType()) && failed(e.dimsOf(r)))
      return failure();
  for (Value o : op->getOperands())
    if (isa<RankedTensorType>(o.getType()) && failed(e.dimsOf(o)))
      return failure();
  if (const OpLowering *lower = table.lookup(op))
    return (*lower)(op, e);
  return op->emitError() << "no reference lowering for '" << op->getName()
                         << "'";
}

/// What `op` is, for diagnostics about the calls it lowers to (the
/// location of each, read by hyc-cpu-check-no-reference-kernels): its kind,
/// the weights it reads (with their derivation), its layer, and for an op
/// with neither the op that produced its first operand.
static std::string describeOp(Operation *op, int depth = 0) {
  std::string text = op->getName().getStringRef().str();
  bool named = false;
  for (Value v : op->getOperands())
    if (auto param = v.getDefiningOp<ParamOp>()) {
      text += " " + param.getRef().getTensor().str();
      if (auto d = param->getAttrOfType<StringAttr>("hyc.quantize"))
        text += "#" + d.getValue().str();
      named = true;
    }
  if (auto layer = op->getAttrOfType<IntegerAttr>("layer")) {
    text += " layer " + std::to_string(layer.getInt());
    named = true;
  }
  if (!named && depth == 0 && op->getNumOperands() > 0)
    if (Operation *def = op->getOperand(0).getDefiningOp())
      text += " of " + describeOp(def, depth + 1);
  return text;
}

/// Rewrites the entry's body into hyc_kernel ops: a new function of the same
/// name and attributes that reads and writes only planned buffers.
static LogicalResult lowerEntry(func::FuncOp fn, const LoweringTable &table,
                                bool bf16Activations) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("entry functions must be a single block");
  if (fn.getNumArguments() != 3)
    return fn.emitError()
           << "entry function needs (tokens, positions, cache), got "
           << fn.getNumArguments() << " arguments";
  KernelEmitter e(fn.getContext(), bf16Activations);
  if (failed(e.readPlan(fn)))
    return failure();

  OpBuilder &b = e.builder();
  b.setInsertionPoint(fn);
  auto kernelFn = func::FuncOp::create(b, fn.getLoc(), fn.getSymName(),
                                       b.getFunctionType({}, {}));
  for (NamedAttribute a : fn->getDiscardableAttrs())
    kernelFn->setAttr(a.getName(), a.getValue());
  e.startBody(kernelFn.addEntryBlock(), fn.getLoc());
  const std::string entry = " in @" + fn.getSymName().str();
  for (Operation &op : fn.getBody().front()) {
    e.setLoc(NameLoc::get(StringAttr::get(fn.getContext(), describeOp(&op) + entry),
                          op.getLoc()));
    if (failed(lowerOp(&op, e, table))) {
      kernelFn.erase();
      return failure();
    }
  }
  fn.getBody().front().dropAllDefinedValueUses();
  fn.erase();
  return success();
}

/// The attention kernels take the cache's element type from the cache view
/// at run time, so nothing in a call says "int8": what makes an int8 cache
/// safe to lower is hyc-global-fuse-dequant-into-attention's decision on
/// every op that reads it. Consumed here: an int8-cache module
/// (hyc_cpu.kv_cache_dtype) lowers only when every attention op carries
/// hyc.kv_dequant = "int8", and no op carries it over another cache type.
static LogicalResult checkKvDequant(ModuleOp module) {
  auto dtypeAttr = module->getAttrOfType<StringAttr>(cpu::kKvCacheDtypeName);
  const StringRef dtype = dtypeAttr ? dtypeAttr.getValue() : StringRef("f32");
  const bool int8 = dtype == "int8";
  WalkResult r =
      module.walk([&](Operation *op) {
        if (!attendsOverCache(op))
          return WalkResult::advance();
        auto mark = op->getAttrOfType<StringAttr>(kKvDequantName);
        if (int8 && (!mark || mark.getValue() != "int8")) {
          op->emitOpError()
              << "reads an int8 KV cache (module " << cpu::kKvCacheDtypeName
              << " = \"int8\") but has "
              << (mark ? "hyc.kv_dequant = \"" + mark.getValue().str() + "\""
                       : std::string("no hyc.kv_dequant"))
              << ", expected hyc.kv_dequant = \"int8\" "
                 "(hyc-global-fuse-dequant-into-attention with kv-cache=int8)";
          return WalkResult::interrupt();
        }
        if (!int8 && mark) {
          op->emitOpError()
              << "has hyc.kv_dequant = \"" << mark.getValue()
              << "\" but the module's KV cache is " << dtype
              << ", expected an int8 cache (hyc-cpu-select-lowering-strategy "
                 "kv-cache=int8)";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
  return failure(r.wasInterrupted());
}

namespace {

struct HycCpuLowerToKernelPass
    : public hyc::impl::HycCpuLowerToKernelBase<HycCpuLowerToKernelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("hyc.entry"))
        entries.push_back(fn);
    if (entries.empty()) {
      module.emitError("no function with a hyc.entry attribute to lower");
      return signalPassFailure();
    }
    if (failed(checkKvDequant(module)))
      return signalPassFailure();
    const LoweringTable table = buildLoweringTable();
    for (func::FuncOp fn : entries)
      if (failed(lowerEntry(fn, table, bf16Activations)))
        return signalPassFailure();
  }
};

} // namespace
