//===- CpuPlanMemory.cpp - the static memory plan at the maximum shape ----===//
//
// Every activation of an entry function gets a byte offset in one arena,
// sized at its maximum shape (dynamic dims from hyc.assume_bounds):
// liveness-based first-fit reuse, 64-byte aligned, results allocated before
// operands are freed so that no kernel runs in place. Weights get a slot in
// the weight table and the layout the artifact writer packs them in (the
// layout of the kernel their GEMMs were scheduled on). Kernel drivers share
// one scratch region above every buffer. The decisions are attributes
// (MemoryPlan.h) that hyc-cpu-lower-to-kernel reads.
//
//===----------------------------------------------------------------------===//

#include "passes/ArenaAllocator.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <map>
#include <optional>

namespace hyc {
#define GEN_PASS_DEF_HYCCPUPLANMEMORY
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// The largest activation arena a plan may need. Compile bounds far beyond
/// any host's memory (e.g. --max-batch-tokens 2^62) would otherwise wrap
/// the int64 size arithmetic and let the artifact write past its arena.
constexpr int64_t kMaxArenaBytes = int64_t(1) << 38; // 256 GiB

std::string arenaLimitText() {
  return std::to_string(kMaxArenaBytes) + " bytes (256 GiB)";
}

/// Bytes of a tensor at its maximum shape; nullopt past kMaxArenaBytes
/// (overflow included).
std::optional<int64_t> maxBytes(RankedTensorType t, ArrayRef<int64_t> bounds) {
  std::optional<int64_t> n = t.getElementTypeBitWidth() / 8;
  for (int64_t d : bounds)
    if (!(n = llvm::checkedMul(*n, d)) || *n > kMaxArenaBytes)
      return std::nullopt;
  return n;
}

/// A weight of the table: its type and the layout it is packed in.
struct WeightEntry {
  RankedTensorType type;
  std::string layout;
};

/// Weights in table order, keyed by weightKey().
using WeightTable =
    llvm::MapVector<std::string, WeightEntry, std::map<std::string, unsigned>>;

/// The weight-table key of a param: its tensor name, plus "#<derivation>"
/// for tensors the compiler derives (e.g. "#w8a8", "#w8a8.scale").
std::string weightKey(ParamOp p) {
  std::string key = p.getRef().getTensor().str();
  if (auto d = p->getAttrOfType<StringAttr>("hyc.quantize"))
    key += "#" + d.str();
  return key;
}

/// The layout a weight is stored in: the packed layout of the kernel its
/// GEMMs were scheduled on (the strategy puts every reader of a weight on
/// the same kernel or none on a kernel), else row-major: f32, bf16-rounded
/// f32 for reference bf16 GEMMs, int8 for reference W8A8, e4m3 codes for
/// reference FP8; integer codes (q4, q8) always in their packed panels.
std::string layoutOf(ParamOp p) {
  // MLA's kv_b rounded to bf16 (hyc-global-quantize-policy): bf16 rows for
  // the absorbed kernel, the rounded values as fp32 for the reference.
  if (auto d = p->getAttrOfType<StringAttr>("hyc.quantize"); d && d.getValue() == "bf16")
    return llvm::all_of(p->getUsers(),
                        [](Operation *u) {
                          cpu::LoweringConfigAttr c = configOf(u);
                          return c && c.getKernel() == "mla_absorbed";
                        })
               ? "bf16"
               : "bf16_as_f32";
  bool allBf16 = !p->use_empty();
  for (Operation *user : p->getUsers()) {
    if (gemmWeight(user) == p.getResult())
      if (const KernelScheme *ks = brgemmScheme(user))
        return ks->layout;
    auto mm = dyn_cast<QuantMatmulOp>(user);
    auto gm = dyn_cast<MoeGroupedMatmulOp>(user);
    // Integer codes keep their packed panels on the reference target too
    // (their scales live inside them).
    if ((mm || gm) && gemmWeight(user) == p.getResult())
      if (QuantAttr q = mm ? mm.getQuant() : gm.getQuant(); q.isCodes())
        return codesLayoutOf(q.getScheme()).str();
    allBf16 = allBf16 && gemmWeight(user) == p.getResult() &&
              (mm ? mm.getQuant() : gm.getQuant()).getScheme() == QuantScheme::bf16;
  }
  if (allBf16)
    return "bf16_as_f32";
  Type element = cast<RankedTensorType>(p.getType()).getElementType();
  if (element.isInteger(8))
    return "i8";
  if (isa<Float8E4M3FNType>(element))
    return "f8e4m3";
  return "f32";
}

class EntryPlan {
public:
  EntryPlan(func::FuncOp fn, WeightTable &weights, int64_t alignment)
      : fn(fn), weights(weights), allocator(alignment), bounds(fn) {}

  /// Plans the entry; returns the arena bytes it needs.
  FailureOr<int64_t> run();

private:
  FailureOr<SmallVector<int64_t>> boundsOf(Value v) { return bounds.of(v); }
  LogicalResult placeWeights();
  int64_t scratchNeeded(Operation &op, ArrayRef<int64_t> inputBounds);

  func::FuncOp fn;
  WeightTable &weights;
  ArenaAllocator allocator;
  plan::Bounds bounds;
};

LogicalResult EntryPlan::placeWeights() {
  for (auto p : fn.getBody().getOps<ParamOp>()) {
    std::string name = weightKey(p);
    auto type = cast<RankedTensorType>(p.getType());
    std::string layout = layoutOf(p);
    auto it = weights.find(name);
    if (it == weights.end())
      it = weights.insert({name, WeightEntry{type, layout}}).first;
    else if (it->second.type != type || it->second.layout != layout)
      return p.emitError() << "weight '" << name << "' is used as " << type << " ("
                           << layout << ") and as " << it->second.type << " ("
                           << it->second.layout << ")";
    p->setAttr(plan::kWeightIndex,
               IntegerAttr::get(IntegerType::get(p.getContext(), 64),
                                int64_t(it - weights.begin())));
  }
  return success();
}

/// Scratch bytes `op` needs above the planned buffers: a kernel driver's
/// converted activations, or the [gate | up] rows of a reference silu_mul
/// GEMM.
int64_t EntryPlan::scratchNeeded(Operation &op, ArrayRef<int64_t> in) {
  Value w = gemmWeight(&op);
  if (!w)
    return 0;
  if (const KernelScheme *ks = brgemmScheme(&op)) {
    // Activations quantized beforehand need no conversion scratch.
    auto x = cast<RankedTensorType>(op.getOperand(0).getType());
    if (x.getElementType().isInteger(8))
      return 0;
    // Experts reading the permute's token rows: the converted tokens, then
    // their grouped copies (hyrt_cpu_grouped_gemm_tokens; tokens <= rows).
    cpu::LoweringConfigAttr config = configOf(&op);
    if (config && config.getFusedProducer() &&
        config.getFusedProducer().getValue() == "moe_permute")
      return (driverScratch(*ks, in[0], in[1]) + 63) / 64 * 64 + driverScratch(*ks, in[0], in[1]);
    return driverScratch(*ks, in[0], in[1]);
  }
  auto mm = dyn_cast<QuantMatmulOp>(op);
  auto gm = dyn_cast<MoeGroupedMatmulOp>(op);
  if ((mm ? mm.getEpilogue() : gm.getEpilogue()) != Epilogue::silu_mul)
    return 0;
  auto wt = cast<RankedTensorType>(w.getType());
  return in[0] * wt.getDimSize(wt.getRank() - 2) * 4;
}

FailureOr<int64_t> EntryPlan::run() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("entry functions must be a single block");
  Block &body = fn.getBody().front();
  if (failed(placeWeights()))
    return failure();

  // The returned logits are written straight into step->logits.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value logits = plan::aliasRoot(ret.getOperand(0));
  if (!logits.getDefiningOp() || isa<ParamOp>(logits.getDefiningOp()))
    return ret.emitError() << "the returned logits must be computed in the step";

  // Liveness: position of the last op reading each buffer (through aliases).
  DenseMap<Operation *, int64_t> order;
  for (Operation &op : body)
    order[&op] = int64_t(order.size());
  DenseMap<Value, int64_t> lastUse;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      if (isa<RankedTensorType>(operand.getType())) {
        Value root = plan::aliasRoot(operand);
        lastUse[root] = std::max(lastUse.lookup(root), order[&op]);
      }
  // A quantization folded into its producer's kernel runs at the producer's
  // place: the producer's operands stay live until the quantized rows are
  // written, so the outputs never overlap inputs still being read.
  for (auto q : body.getOps<QuantizeOp>()) {
    cpu::LoweringConfigAttr c = configOf(q);
    Operation *producer = q.getInput().getDefiningOp();
    if (!c || !c.getFusedProducer() || !producer)
      continue;
    for (Value operand : producer->getOperands())
      if (isa<RankedTensorType>(operand.getType())) {
        Value root = plan::aliasRoot(operand);
        lastUse[root] = std::max(lastUse.lookup(root), order[q]);
      }
  }

  // Walk in order: allocate results, then free buffers whose last use is here.
  DenseMap<int64_t, SmallVector<int64_t>> freeAt;
  Builder b(fn.getContext());
  for (Operation &op : body) {
    if (isa<ParamOp>(op) || op.getNumResults() == 0)
      continue;
    SmallVector<int64_t> offsets;
    for (Value r : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(r.getType());
      if (!type || plan::aliasSource(r)) {
        offsets.push_back(plan::kNotInArena);
        continue;
      }
      if (r == logits) {
        offsets.push_back(plan::kStepLogits);
        continue;
      }
      auto bnd = boundsOf(r);
      if (failed(bnd))
        return failure();
      std::optional<int64_t> bytes = maxBytes(type, *bnd);
      if (!bytes)
        return op.emitError()
               << "result of " << type << " at its bound shape ["
               << ArrayRef<int64_t>(*bnd)
               << "] needs more than the largest arena of " << arenaLimitText()
               << "; lower the compile bounds (--max-batch-tokens, --max-seqs)";
      int64_t offset = allocator.allocate(*bytes);
      offsets.push_back(offset);
      // A result nobody reads (e.g. an unused residual) dies right away.
      freeAt[std::max(lastUse.lookup(r), order[&op])].push_back(offset);
    }
    if (llvm::any_of(offsets, [](int64_t o) { return o != plan::kNotInArena; }))
      op.setAttr(plan::kArenaOffsets, b.getDenseI64ArrayAttr(offsets));
    for (int64_t offset : freeAt.lookup(order[&op]))
      allocator.release(offset);
  }
  // Every dim must have a bound, aliases included.
  for (Operation &op : body)
    for (Value r : op.getResults())
      if (isa<RankedTensorType>(r.getType()) && failed(boundsOf(r)))
        return failure();
  // Scratch is live across every call that uses it, so it sits above all
  // buffers.
  int64_t scratch = 0;
  for (Operation &op : body)
    if (gemmWeight(&op)) {
      auto in = boundsOf(op.getOperand(0));
      if (failed(in))
        return failure();
      scratch = std::max(scratch, scratchNeeded(op, *in));
    }
  // Every buffer is below the limit, so the sums cannot wrap before this.
  if (scratch > kMaxArenaBytes ||
      allocator.peakBytes() > kMaxArenaBytes - scratch - 2 * 64)
    return fn.emitError() << "the activation arena (" << allocator.peakBytes()
                          << " bytes of buffers + " << scratch
                          << " of kernel scratch) exceeds the largest arena of "
                          << arenaLimitText()
                          << "; lower the compile bounds (--max-batch-tokens, "
                             "--max-seqs)";
  int64_t scratchOffset = scratch > 0 ? allocator.reserveAtEnd(scratch) : 0;
  fn->setAttr(plan::kScratchOffset, b.getI64IntegerAttr(scratchOffset));
  return allocator.peakBytes();
}

struct HycCpuPlanMemoryPass
    : public hyc::impl::HycCpuPlanMemoryBase<HycCpuPlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    WeightTable weights;
    int64_t arenaBytes = 0;
    bool any = false;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn->hasAttr("hyc.entry"))
        continue;
      any = true;
      EntryPlan plan(fn, weights, arenaAlignment);
      FailureOr<int64_t> bytes = plan.run();
      if (failed(bytes))
        return signalPassFailure();
      arenaBytes = std::max(arenaBytes, *bytes);
    }
    if (!any) {
      module.emitError("no function with a hyc.entry attribute to plan");
      return signalPassFailure();
    }
    // The weight table for the artifact writer: names, types and layouts in
    // table order.
    Builder b(module.getContext());
    SmallVector<Attribute> names, types, layouts;
    for (auto &[name, entry] : weights) {
      names.push_back(b.getStringAttr(name));
      types.push_back(TypeAttr::get(entry.type));
      layouts.push_back(b.getStringAttr(entry.layout));
    }
    module->setAttr("hyc.weights", b.getArrayAttr(names));
    module->setAttr("hyc.weight_types", b.getArrayAttr(types));
    module->setAttr("hyc.weight_layouts", b.getArrayAttr(layouts));
    module->setAttr("hyc.arena_bytes", b.getI64IntegerAttr(arenaBytes));
  }
};

} // namespace
