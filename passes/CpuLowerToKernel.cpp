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
//===----------------------------------------------------------------------===//

#include "passes/KvDequant.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"
#include "passes/RopeFrequencies.h"
#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"
#include "hyrt/gemm_layout.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace hyc {
#define GEN_PASS_DEF_HYCCPULOWERTOKERNEL
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// Where a tensor value lives at run time.
struct Storage {
  enum Kind { Arena, Weight, StepTokens, StepPositions, StepLogits } kind;
  int64_t offset = 0; // Arena: byte offset; Weight: table index
};

/// One dim of a tensor at run time: an index value.
struct Dim {
  Value value;
};

/// The activation quantization that the strategy folded into `producer`'s
/// kernel (its only reader, with `fused_producer`), or null.
QuantizeOp fusedQuantizeOf(Operation *producer) {
  Value out = producer->getResult(0);
  if (!out.hasOneUse())
    return {};
  auto q = dyn_cast<QuantizeOp>(*out.getUsers().begin());
  cpu::LoweringConfigAttr c = q ? configOf(q) : cpu::LoweringConfigAttr();
  return c && c.getFusedProducer() ? q : QuantizeOp();
}

/// This rank's index among the tensor-parallel ranks (the module's
/// hyc.tensor_parallel, written by hyc-global-shard), for collectives whose
/// work depends on it.
FailureOr<int64_t> tensorParallelRank(Operation *op) {
  auto tp = op->getParentOfType<ModuleOp>()->getAttrOfType<DictionaryAttr>(
      "hyc.tensor_parallel");
  auto rank = tp ? tp.getAs<IntegerAttr>("rank") : IntegerAttr();
  if (!rank)
    return op->emitError() << op->getName() << " needs the module's hyc.tensor_parallel rank";
  return rank.getInt();
}

class EntryLowering {
public:
  EntryLowering(func::FuncOp fn, bool bf16Activations)
      : fn(fn), b(fn.getContext()), bf16Activations(bf16Activations) {}

  /// Rewrites the entry's body into hyc_kernel ops.
  LogicalResult run();

private:
  /// Reads the plan of hyc-cpu-plan-memory into `storage`.
  LogicalResult readPlan();
  LogicalResult emitOp(Operation *op);
  FailureOr<SmallVector<Dim>> dimsOf(Value v);
  /// The buffer of tensor `v` as a memref of its shape.
  Value ptrOf(Value v);
  Value i64(int64_t v);
  Value i32(int64_t v);
  Value f32(double v);
  Value null();
  Value mul(Value x, Value y);
  Value product(ArrayRef<Dim> dims, size_t begin, size_t end);
  Value scratch();
  void call(StringRef callee, ArrayRef<Value> args, bool kvStep = false);
  void callKv(StringRef callee, ArrayRef<Value> args) { call(callee, args, true); }
  Value ropeTable(RopeOp op, float &mscale);
  LogicalResult emitKernelMatmul(Operation *m);
  LogicalResult emitReferenceMatmul(Operation *m);

  func::FuncOp fn;
  OpBuilder b;
  bool bf16Activations;
  /// Arena bytes after the planned buffers, shared by kernels that need
  /// scratch (converted activations, [gate | up] rows).
  int64_t scratchOffset = 0;
  Location loc = UnknownLoc::get(fn.getContext());

  DenseMap<Value, Storage> storage;         // root value -> storage
  DenseMap<Value, SmallVector<Dim>> dims;
  DenseMap<Value, Value> indexValues;       // index SSA -> kernel-level index
  Value numTokens;
};

LogicalResult EntryLowering::readPlan() {
  auto scratch = fn->getAttrOfType<IntegerAttr>(plan::kScratchOffset);
  if (!scratch)
    return fn.emitError() << "entry has no memory plan (run "
                             "hyc-cpu-plan-memory before hyc-cpu-lower-to-kernel)";
  scratchOffset = scratch.getInt();
  Block &body = fn.getBody().front();
  storage[body.getArgument(0)] = {Storage::StepTokens};
  storage[body.getArgument(1)] = {Storage::StepPositions};
  for (Operation &op : body) {
    if (auto p = dyn_cast<ParamOp>(op)) {
      auto index = p->getAttrOfType<IntegerAttr>(plan::kWeightIndex);
      if (!index)
        return p.emitError("weight without a table slot in the memory plan");
      storage[p.getResult()] = {Storage::Weight, index.getInt()};
      continue;
    }
    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>(plan::kArenaOffsets);
    for (auto [i, r] : llvm::enumerate(op.getResults())) {
      if (!isa<RankedTensorType>(r.getType()) || plan::aliasSource(r))
        continue;
      if (!offsets || int64_t(i) >= offsets.size() ||
          offsets[i] == plan::kNotInArena)
        return op.emitError() << "result " << i << " has no buffer in the memory plan";
      storage[r] = offsets[i] == plan::kStepLogits
                       ? Storage{Storage::StepLogits, 0}
                       : Storage{Storage::Arena, offsets[i]};
    }
  }
  return success();
}

Value EntryLowering::i64(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value EntryLowering::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}
Value EntryLowering::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(v)));
}
Value EntryLowering::null() {
  return kernel::BufferOp::create(b, loc, MemRefType::get({0}, b.getF32Type()),
                                  "null", 0, ValueRange());
}
Value EntryLowering::mul(Value x, Value y) {
  return arith::MulIOp::create(b, loc, x, y);
}
Value EntryLowering::scratch() {
  return kernel::BufferOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()), "scratch",
      scratchOffset, ValueRange{i64(0)});
}

Value EntryLowering::product(ArrayRef<Dim> ds, size_t begin, size_t end) {
  Value p = i64(1);
  for (size_t i = begin; i < end; ++i)
    p = mul(p, ds[i].value);
  return p;
}

FailureOr<SmallVector<Dim>> EntryLowering::dimsOf(Value v) {
  auto it = dims.find(v);
  if (it != dims.end())
    return it->second;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<Dim> result;
  Operation *def = v.getDefiningOp();
  // The value standing for a dynamic leading dim.
  Value dynamicLeading;
  if (!type.hasStaticShape()) {
    if (!def) {
      dynamicLeading = numTokens;
    } else if (isa<LogitRowsOp>(def)) {
      dynamicLeading = kernel::StepSizeOp::create(b, loc, b.getIndexType(),
                                                    b.getStringAttr("num_logit_rows"));
    } else if (auto permute = dyn_cast<MoePermuteOp>(def)) {
      auto in = dimsOf(permute.getInput());
      if (failed(in))
        return failure();
      int64_t topK = cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1);
      dynamicLeading = mul((*in)[0].value, i64(topK));
    } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
      auto in = dimsOf(collapse.getSrc());
      if (failed(in))
        return failure();
      for (auto [i, group] : llvm::enumerate(collapse.getReassociationIndices()))
        result.push_back({product(*in, group.front(), group.back() + 1)});
      dims[v] = result;
      return result;
    } else {
      auto in = dimsOf(plan::tokenDimSource(def));
      if (failed(in))
        return failure();
      dynamicLeading = (*in)[0].value;
    }
  }
  for (int64_t i = 0, e = type.getRank(); i < e; ++i) {
    int64_t d = type.getDimSize(i);
    result.push_back({ShapedType::isDynamic(d) ? dynamicLeading : i64(d)});
  }
  dims[v] = result;
  return result;
}

Value EntryLowering::ptrOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  auto memref = MemRefType::get(type.getShape(), type.getElementType());
  SmallVector<Value> sizes;
  auto d = dimsOf(v);
  for (int64_t i = 0, e = type.getRank(); i < e; ++i)
    if (type.isDynamicDim(i))
      sizes.push_back((*d)[i].value);
  Storage s = storage.lookup(plan::aliasRoot(v));
  static const char *const kSpace[] = {"arena", "weight", "step_tokens",
                                       "step_positions", "step_logits"};
  return kernel::BufferOp::create(b, loc, memref, kSpace[s.kind], s.offset, sizes);
}

void EntryLowering::call(StringRef callee, ArrayRef<Value> args, bool kvStep) {
  kernel::UkernelOp::create(b, loc, b.getStringAttr(callee),
                            kvStep ? b.getUnitAttr() : UnitAttr(), ValueRange(args));
}

/// A constant table with the op's inverse frequencies.
Value EntryLowering::ropeTable(RopeOp op, float &mscale) {
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
  RopeTable table = computeRopeTable(op.getTheta().convertToDouble(),
                                     op.getRotaryDim(), params);
  mscale = table.mscale;
  int64_t n = table.inv_freq.size();
  auto values = DenseElementsAttr::get(RankedTensorType::get({n}, b.getF32Type()),
                                       ArrayRef<float>(table.inv_freq));
  return kernel::ConstantTableOp::create(
      b, loc, MemRefType::get({n}, b.getF32Type()), values);
}

/// x · Wᵀ through the generated brgemm kernel for this scheme and K: the
/// kernel is declared here and recorded in `hyc.kernels` for the driver to
/// generate and embed; a hyrt_cpu_gemm_* driver does the blocking.
LogicalResult EntryLowering::emitKernelMatmul(Operation *m) {
  const KernelScheme &ks = *brgemmScheme(m);
  cpu::LoweringConfigAttr config = configOf(m);
  // The drivers apply no residual, and the gate/up driver no bias: a
  // schedule that says otherwise (hand-written, or stale after a rewrite)
  // is refused instead of silently dropping them.
  if (auto mm = dyn_cast<QuantMatmulOp>(m);
      mm && (mm.getEpilogue() == Epilogue::residual_add ||
             (mm.getEpilogue() == Epilogue::silu_mul && mm.getBias())))
    return m->emitError() << "a brgemm schedule cannot apply the "
                          << stringifyEpilogue(mm.getEpilogue())
                          << " epilogue" << (mm.getBias() ? " with a bias" : "");
  int64_t mMax = config.getTile() ? config.getTile()[0] : 0;
  if (mMax <= 0 || mMax > 64)
    return m->emitError() << "no " << ks.isaName
                          << " brgemm tile with 1..64 rows (got " << mMax << ")";
  Value minMacs = i64(config.getParallelMinMacs());
  auto w = cast<RankedTensorType>(gemmWeight(m).getType());
  bool grouped = isa<MoeGroupedMatmulOp>(m);
  int64_t n = w.getDimSize(grouped ? 1 : 0), k = w.getDimSize(grouped ? 2 : 1);
  // The block kernel, described once (Pure: CSE merges equal dispatches);
  // convert-hyc-kernel-to-llvm turns it into the address of the kernel the
  // compiler generates and embeds.
  auto mlirType = [&](codegen::DataType t) -> Type {
    switch (t) {
    case codegen::DataType::bf16:
      return b.getBF16Type();
    case codegen::DataType::u8:
    case codegen::DataType::s8:
      return b.getI8Type();
    case codegen::DataType::f8:
      return b.getType<Float8E4M3FNType>();
    default:
      return b.getF32Type();
    }
  };
  // Per-group weights: a K = groupK kernel run once per group by the
  // driver, adding into C (W8A8) or writing the block product the driver
  // scales (FP8); otherwise one kernel over the whole K.
  auto dispatch = [&](const KernelScheme &scheme, int64_t rows) -> Value {
    StringRef layout = scheme.layout;
    StringRef bLayout = layout.contains("vnni2")   ? "vnni2"
                        : layout.contains("vnni4") ? "vnni4"
                                                   : "row";
    // bf16 x f8 kernels run over the whole K, padded to whole blocks.
    const int64_t blockK = scheme.bType == codegen::DataType::f8 ? HYRT_GEMM_GROUP_K : 0;
    const int64_t kernelK = scheme.groupK ? scheme.groupK
                            : blockK      ? (k + blockK - 1) / blockK * blockK
                                          : k;
    // Grouped activations are rows padded to whole groups.
    const int64_t lda = scheme.groupK ? (k + kernelK - 1) / kernelK * kernelK : kernelK;
    return kernel::BrgemmDispatchOp::create(
        b, loc, b.getI64Type(), b.getDenseI64ArrayAttr({rows, 32, kernelK}),
        b.getDenseI64ArrayAttr({lda, 32, 32}), TypeAttr::get(mlirType(scheme.aType)),
        TypeAttr::get(mlirType(scheme.bType)), TypeAttr::get(b.getF32Type()),
        b.getStringAttr(bLayout),
        scheme.groupK && !hyrt_gemm_is_fp8(scheme.scratchId) ? UnitAttr() : b.getUnitAttr(),
        EpilogueAttr::get(b.getContext(), Epilogue::none),
        b.getStringAttr(scheme.isaName));
  };
  Value kernel = dispatch(ks, mMax);
  Value input = m->getOperand(0);
  auto x = *dimsOf(input);
  Value scratch = this->scratch();
  auto gm = dyn_cast<MoeGroupedMatmulOp>(m);
  auto mm = dyn_cast<QuantMatmulOp>(m);
  // The amx variant: steps of many rows take the AMX kernel (same types
  // and packed layout, 32-row blocks). A grouped GEMM switches on the
  // average rows per expert.
  Value rowsPerBlock = i64(mMax);
  if (auto minRows = m->getAttrOfType<IntegerAttr>(cpu::kAmxMinRowsName)) {
    const KernelScheme *amx = amxSchemeFor(ks, k);
    if (!amx)
      return m->emitError() << cpu::kAmxMinRowsName << " on a " << ks.isaName << " "
                            << ks.typesName << " GEMM with K = " << k
                            << ", which has no AMX kernel";
    Value rows = x[0].value;
    if (gm && config.getFusedProducer())
      if (auto permute = gm.getInput().getDefiningOp<MoePermuteOp>())
        rows = mul((*dimsOf(permute.getInput()))[0].value,
                   i64(cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1)));
    Value threshold = i64(minRows.getInt() * (gm ? w.getDimSize(0) : 1));
    Value useAmx =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, rows, threshold);
    kernel = arith::SelectOp::create(b, loc, useAmx, dispatch(*amx, kernelRows(*amx)), kernel);
    rowsPerBlock = arith::SelectOp::create(b, loc, useAmx, i64(kernelRows(*amx)), i64(mMax));
  }
  // FP8 steps of few rows: the bf16 x f8 kernel (HYRT_GEMM_FP8_FUSED) in
  // place of the blockwise path. The driver blocks rows by rowsPerBlock, so
  // any step is correct on either kernel; the threshold only picks the
  // faster. A grouped GEMM compares its rows per expert's bound: the tokens.
  Value schemeId = i32(ks.scratchId);
  if (auto maxRows = m->getAttrOfType<IntegerAttr>(cpu::kFp8FusedMaxRowsName)) {
    const KernelScheme *f8 = fp8FusedSchemeFor(ks);
    if (!f8)
      return m->emitError() << cpu::kFp8FusedMaxRowsName << " on a " << ks.isaName << " "
                            << ks.typesName << " GEMM, which has no bf16 x f8 kernel";
    Value rows = x[0].value;
    if (gm && config.getFusedProducer())
      if (auto permute = gm.getInput().getDefiningOp<MoePermuteOp>())
        rows = (*dimsOf(permute.getInput()))[0].value;
    Value useFused = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                           i64(maxRows.getInt()), rows);
    kernel = arith::SelectOp::create(b, loc, useFused, dispatch(*f8, kernelRows(*f8)), kernel);
    rowsPerBlock =
        arith::SelectOp::create(b, loc, useFused, i64(kernelRows(*f8)), rowsPerBlock);
    schemeId = arith::SelectOp::create(b, loc, useFused, i32(f8->scratchId), schemeId);
  }
  // [gate; up] weights: the driver pairs panel p of each half and writes
  // silu(gate) * up, N = half the weight rows.
  if (gm && config.getFusedProducer() &&
      config.getFusedProducer().getValue() == "moe_permute") {
    // The strategy fused the permute's copies into the driver: it reads
    // the token rows through the permute's row map.
    auto permute = gm.getInput().getDefiningOp<MoePermuteOp>();
    if (!permute)
      return m->emitError() << "fused_producer = moe_permute needs the input of a "
                               "hyc.moe.permute";
    // Only kernels that read converted rows gather them (into scratch the
    // memory plan sized for that); fp32 kernels read the permuted copies.
    if (!convertsActivations(ks))
      return m->emitError() << "fused_producer = moe_permute needs a bf16 or w8a8 "
                               "brgemm scheme, got "
                            << ks.typesName;
    auto t = *dimsOf(permute.getInput());
    int64_t topK = cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1);
    Value scale = gm.getScale();
    call("hyrt_cpu_grouped_gemm_tokens",
         {schemeId, ptrOf(permute.getInput()), t[0].value, i64(topK),
          ptrOf(permute.getRows()), i64(k), ptrOf(gm.getOffsets()), i64(w.getDimSize(0)),
          ptrOf(gm.getWeight()), scale ? ptrOf(scale) : null(),
          i64(gm.getEpilogue() == Epilogue::silu_mul ? n / 2 : n),
          i32(gm.getEpilogue() == Epilogue::silu_mul ? 1 : 0), ptrOf(gm.getResult()), scratch,
          kernel, rowsPerBlock, minMacs});
    return success();
  }
  if ((gm ? gm.getEpilogue() : mm.getEpilogue()) == Epilogue::silu_mul) {
    Value scale = gm ? gm.getScale() : mm.getScale();
    SmallVector<Value> args = {schemeId, ptrOf(input), x[0].value, i64(k)};
    if (gm)
      args.append({ptrOf(gm.getOffsets()), i64(w.getDimSize(0))});
    args.append({ptrOf(gemmWeight(m)), scale ? ptrOf(scale) : null(), i64(n / 2),
                 ptrOf(m->getResult(0)), scratch, kernel, rowsPerBlock, minMacs});
    call(gm ? "hyrt_cpu_grouped_gemm_silu_mul" : "hyrt_cpu_gemm_silu_mul", args);
    return success();
  }
  if (gm) {
    call("hyrt_cpu_grouped_gemm",
         {schemeId, ptrOf(input), x[0].value, i64(k),
          ptrOf(gm.getOffsets()), i64(w.getDimSize(0)), ptrOf(gm.getWeight()),
          gm.getScale() ? ptrOf(gm.getScale()) : null(), i64(n),
          ptrOf(gm.getResult()), scratch, kernel, rowsPerBlock, minMacs});
    return success();
  }
  if (mm.getInputScale()) {
    // Activations quantized once by hyc.quant.quantize (quantize_u8).
    call("hyrt_cpu_gemm_w8a8_quantized",
         {ptrOf(input), ptrOf(mm.getInputScale()), x[0].value, i64(k),
          ptrOf(mm.getWeight()), ptrOf(mm.getScale()), i64(n),
          mm.getBias() ? ptrOf(mm.getBias()) : null(), ptrOf(mm.getResult()),
          kernel, rowsPerBlock, minMacs});
    return success();
  }
  SmallVector<Value> args;
  if (hyrt_gemm_is_fp8(ks.scratchId)) // one driver for both activation forms
    args.push_back(schemeId);
  args.append({ptrOf(input), x[0].value, i64(k), ptrOf(mm.getWeight())});
  if (takesWeightScales(ks))
    args.push_back(ptrOf(mm.getScale()));
  args.append({i64(n), mm.getBias() ? ptrOf(mm.getBias()) : null(),
               ptrOf(mm.getResult()), scratch, kernel, rowsPerBlock, minMacs});
  call(ks.driver, args);
  return success();
}

/// A (grouped) GEMM on the reference kernels: f32 (or bf16-rounded) weights,
/// optionally with bf16-rounded activations, or per-channel W8A8. A
/// silu_mul epilogue computes [gate | up] into the scratch region and
/// combines the halves; residual_add adds afterwards.
LogicalResult EntryLowering::emitReferenceMatmul(Operation *op) {
  auto mm = dyn_cast<QuantMatmulOp>(op);
  auto gm = dyn_cast<MoeGroupedMatmulOp>(op);
  QuantAttr quant = mm ? mm.getQuant() : gm.getQuant();
  Epilogue epilogue = mm ? mm.getEpilogue() : gm.getEpilogue();
  Value input = op->getOperand(0), weight = gemmWeight(op);
  Value scale = mm ? mm.getScale() : gm.getScale();
  QuantScheme scheme = quant.getScheme();
  bool w8a8 = scheme == QuantScheme::w8a8 && quant.getGroup() == 0;
  const int64_t group = scheme == QuantScheme::w8a8 ? quant.getGroup() : 0;
  const bool fp8 = scheme == QuantScheme::fp8_e4m3 && quant.getBlock().size() == 2 &&
                   quant.getBlock()[0] == 128 && quant.getBlock()[1] == 128;
  if (scheme != QuantScheme::f32 && scheme != QuantScheme::bf16 && !w8a8 && !group && !fp8)
    return op->emitError() << "the reference target computes in f32, on "
                              "bf16-rounded weights, w8a8 (per channel or group) or fp8 "
                              "with 128 x 128 blocks; got "
                           << quant;
  if (gm && epilogue == Epilogue::residual_add)
    return op->emitError("the reference target has no residual_add epilogue "
                         "for expert GEMMs");
  auto x = *dimsOf(input);
  auto w = *dimsOf(weight);
  Value rows = x[0].value, n = w[w.size() - 2].value, k = w.back().value;
  Value out = epilogue == Epilogue::silu_mul ? scratch() : ptrOf(op->getResult(0));
  Value bias = mm && mm.getBias() ? ptrOf(mm.getBias()) : null();
  bool roundActivations = bf16Activations && scheme == QuantScheme::bf16;
  // A [gate; up] weight is two matrices, each with its own FP8 row blocks.
  Value parts = i64(epilogue == Epilogue::silu_mul ? 2 : 1);
  if (fp8 && mm)
    call("hyrt_ref_matmul_fp8",
         {ptrOf(input), ptrOf(weight), ptrOf(scale), bias, rows, n, k, parts, out});
  else if (fp8)
    call("hyrt_ref_moe_grouped_matmul_fp8",
         {ptrOf(input), ptrOf(weight), ptrOf(scale), ptrOf(gm.getOffsets()), rows,
          w[0].value, n, k, parts, out});
  else if (group && mm)
    call("hyrt_ref_matmul_w8a8_grouped", {ptrOf(input), ptrOf(weight), ptrOf(scale), bias,
                                          rows, n, k, i64(group), out});
  else if (group)
    call("hyrt_ref_moe_grouped_matmul_w8a8_grouped",
         {ptrOf(input), ptrOf(weight), ptrOf(scale), ptrOf(gm.getOffsets()), rows,
          w[0].value, n, k, i64(group), out});
  else if (mm && mm.getInputScale())
    call("hyrt_ref_matmul_w8a8_quantized",
         {ptrOf(input), ptrOf(mm.getInputScale()), ptrOf(weight), ptrOf(scale),
          bias, rows, n, k, out});
  else if (mm && w8a8)
    call("hyrt_ref_matmul_w8a8", {ptrOf(input), ptrOf(weight), ptrOf(scale), bias,
                                  rows, n, k, out});
  else if (mm)
    call(roundActivations ? "hyrt_ref_matmul_bf16_activations" : "hyrt_ref_matmul",
         {ptrOf(input), ptrOf(weight), bias, rows, n, k, out});
  else if (w8a8)
    call("hyrt_ref_moe_grouped_matmul_w8a8",
         {ptrOf(input), ptrOf(weight), ptrOf(scale), ptrOf(gm.getOffsets()), rows,
          w[0].value, n, k, out});
  else
    call(roundActivations ? "hyrt_ref_moe_grouped_matmul_bf16_activations"
                          : "hyrt_ref_moe_grouped_matmul",
         {ptrOf(input), ptrOf(weight), ptrOf(gm.getOffsets()), rows, w[0].value, n,
          k, out});
  if (epilogue == Epilogue::silu_mul) {
    auto r = *dimsOf(op->getResult(0));
    call("hyrt_ref_silu_mul_halves", {out, rows, r[1].value, ptrOf(op->getResult(0))});
  } else if (epilogue == Epilogue::residual_add) {
    Value count = mul(rows, n);
    call("hyrt_ref_add", {out, ptrOf(mm.getResidual()), count, out});
  }
  return success();
}

LogicalResult EntryLowering::emitOp(Operation *op) {
  auto D = [&](Value v) { return *dimsOf(v); };
  auto ok = [&](Value v) { return succeeded(dimsOf(v)); };
  for (Value r : op->getResults())
    if (isa<RankedTensorType>(r.getType()) && !ok(r))
      return failure();
  for (Value o : op->getOperands())
    if (isa<RankedTensorType>(o.getType()) && !ok(o))
      return failure();
  MLIRContext *ctx = b.getContext();
  (void)ctx;

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ParamOp, AssumeBoundsOp>([&](auto) { return success(); })
      .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
          [&](auto r) -> LogicalResult {
            // Reshapes are aliases whose dynamic token dim passes through
            // unchanged; splitting or merging it would change the row count.
            auto groups = r.getReassociationIndices();
            if (groups.empty() || groups.front().size() != 1)
              return r.emitError("reshapes may not split or merge the leading "
                                 "token dim on this target");
            return success();
          })
      .Case<tensor::DimOp>([&](tensor::DimOp d) {
        auto idx = d.getConstantIndex();
        if (!idx)
          return d.emitError("tensor.dim needs a constant index"), failure();
        indexValues[d.getResult()] = D(d.getSource())[*idx].value;
        return success();
      })
      .Case<arith::ConstantIndexOp>([&](arith::ConstantIndexOp c) {
        indexValues[c.getResult()] = i64(c.value());
        return success();
      })
      .Case<tensor::ExtractSliceOp>([&](tensor::ExtractSliceOp sl) -> LogicalResult {
        // Only slices of the last dim: [.., offset : offset + size].
        auto src = D(sl.getSource());
        int64_t rank = src.size();
        ArrayRef<int64_t> offsets = sl.getStaticOffsets();
        ArrayRef<int64_t> strides = sl.getStaticStrides();
        auto resultType = sl.getResultType();
        auto srcType = sl.getSourceType();
        for (int64_t i = 0; i < rank; ++i) {
          bool last = i == rank - 1;
          if (strides[i] != 1 || (!last && offsets[i] != 0) ||
              (!last && resultType.getDimSize(i) != srcType.getDimSize(i)) ||
              ShapedType::isDynamic(offsets[i]))
            return sl.emitError("the reference target lowers unit-stride "
                                "slices of the last dim only");
        }
        if (resultType.getRank() != rank)
          return sl.emitError("rank-reducing slices are not supported");
        int64_t cols = resultType.getDimSize(rank - 1);
        call("hyrt_ref_copy_columns",
             {ptrOf(sl.getSource()), src[rank - 1].value, i64(offsets[rank - 1]),
              product(src, 0, rank - 1), i64(cols), ptrOf(sl.getResult()),
              i64(cols), i64(0)});
        return success();
      })
      .Case<tensor::ConcatOp>([&](tensor::ConcatOp c) -> LogicalResult {
        auto out = D(c.getResult());
        int64_t rank = out.size();
        if (static_cast<int64_t>(c.getDim()) != rank - 1)
          return c.emitError("the reference target concatenates along the "
                             "last dim only");
        int64_t offset = 0;
        for (Value in : c.getInputs()) {
          auto d = D(in);
          int64_t cols = cast<RankedTensorType>(in.getType()).getDimSize(rank - 1);
          call("hyrt_ref_copy_columns",
               {ptrOf(in), i64(cols), i64(0), product(d, 0, rank - 1), i64(cols),
                ptrOf(c.getResult()), out[rank - 1].value, i64(offset)});
          offset += cols;
        }
        return success();
      })
      .Case<EmbeddingOp>([&](EmbeddingOp e) {
        auto t = D(e.getTable());
        call("hyrt_ref_embedding", {ptrOf(e.getTable()), t[0].value, t[1].value,
                                    ptrOf(e.getIds()), D(e.getIds())[0].value,
                                    ptrOf(e.getResult())});
        return success();
      })
      .Case<LogitRowsOp>([&](LogitRowsOp r) {
        auto out = D(r.getResult());
        Value rows = kernel::BufferOp::create(
            b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
            "step_logit_rows", 0, ValueRange{out[0].value});
        call("hyrt_ref_gather_rows",
             {ptrOf(r.getInput()), rows,
              out[0].value, out[1].value, ptrOf(r.getResult())});
        return success();
      })
      .Case<QuantizeOp>([&](QuantizeOp q) {
        auto x = D(q.getInput());
        bool u8 = runsOn(q, "quantize_u8");
        // Folded into the producer's kernel: it writes the int8 rows itself.
        if (auto n = q.getInput().getDefiningOp<RMSNormOp>();
            n && configOf(q).getFusedProducer()) {
          auto nx = D(n.getInput());
          size_t r = nx.size();
          call(u8 ? "hyrt_cpu_rms_norm_quantize_u8" : "hyrt_ref_rms_norm_quantize",
               {ptrOf(n.getInput()), n.getResidual() ? ptrOf(n.getResidual()) : null(),
                ptrOf(n.getWeight()), product(nx, 0, r - 1), nx[r - 1].value,
                f32(n.getEpsilon().convertToFloat()), ptrOf(q.getResult()),
                ptrOf(q.getScale()),
                n.getResidualOut() ? ptrOf(n.getResidualOut()) : null()});
          return success();
        }
        if (auto s = q.getInput().getDefiningOp<SiluMulOp>();
            s && configOf(q).getFusedProducer()) {
          call(u8 ? "hyrt_cpu_silu_mul_quantize_u8" : "hyrt_ref_silu_mul_quantize",
               {ptrOf(s.getGate()), ptrOf(s.getUp()), x[0].value, x[1].value,
                ptrOf(q.getResult()), ptrOf(q.getScale())});
          return success();
        }
        if (u8)
          call("hyrt_cpu_quantize_rows_u8",
               {ptrOf(q.getInput()), x[0].value, x[1].value, x[1].value,
                ptrOf(q.getResult()), ptrOf(q.getScale())});
        else
          call("hyrt_ref_quantize_rows", {ptrOf(q.getInput()), x[0].value, x[1].value,
                                          ptrOf(q.getResult()), ptrOf(q.getScale())});
        return success();
      })
      .Case<RMSNormOp>([&](RMSNormOp n) {
        if (fusedQuantizeOf(n))
          return success(); // computed by the quantization's kernel
        auto x = D(n.getInput());
        size_t r = x.size();
        call(runsOn(n, "rms_norm") ? "hyrt_cpu_rms_norm" : "hyrt_ref_rms_norm",
             {ptrOf(n.getInput()), n.getResidual() ? ptrOf(n.getResidual()) : null(),
              ptrOf(n.getWeight()), product(x, 0, r - 1), x[r - 1].value,
              f32(n.getEpsilon().convertToFloat()), ptrOf(n.getResult()),
              n.getResidualOut() ? ptrOf(n.getResidualOut()) : null()});
        return success();
      })
      .Case<RopeOp>([&](RopeOp r) {
        float mscale = 1.0f;
        Value table = ropeTable(r, mscale);
        auto x = D(r.getInput());
        call(runsOn(r, "rope") ? "hyrt_cpu_rope" : "hyrt_ref_rope",
             {ptrOf(r.getInput()), ptrOf(r.getPositions()), x[0].value, x[1].value,
              x[2].value, i64(r.getRotaryDim()),
              i32(r.getStyle() == RopeStyle::neox ? 1 : 0), table, f32(mscale),
              ptrOf(r.getResult())});
        return success();
      })
      .Case<QuantMatmulOp, MoeGroupedMatmulOp>([&](auto m) -> LogicalResult {
        if (brgemmScheme(m))
          return emitKernelMatmul(m);
        return emitReferenceMatmul(m);
      })
      .Case<ObserveOp>([&](ObserveOp o) {
        // The feeds travel with the call as a NUL-terminated constant, so
        // the artifact describes its own observers (abi.h).
        std::string feeds;
        for (Attribute f : o.getFeeds())
          feeds += (feeds.empty() ? "" : ",") + cast<StringAttr>(f).str();
        std::vector<int8_t> bytes(feeds.begin(), feeds.end());
        bytes.push_back(0);
        const int64_t n = int64_t(bytes.size());
        auto text = kernel::ConstantTableOp::create(
            b, loc, MemRefType::get({n}, b.getI8Type()),
            DenseElementsAttr::get(RankedTensorType::get({n}, b.getI8Type()),
                                   ArrayRef<int8_t>(bytes)));
        auto x = D(o.getInput());
        call("hyrt_ref_observe_absmax",
             {ptrOf(o.getInput()), x[0].value, x[1].value, i64(o.getSlotAttr().getInt()), text});
        return success();
      })
      .Case<AddOp>([&](AddOp a) {
        auto d = D(a.getResult());
        call("hyrt_ref_add", {ptrOf(a.getLhs()), ptrOf(a.getRhs()),
                              product(d, 0, d.size()), ptrOf(a.getResult())});
        return success();
      })
      .Case<SiluMulOp>([&](SiluMulOp s) {
        if (fusedQuantizeOf(s))
          return success(); // computed by the quantization's kernel
        auto d = D(s.getResult());
        if (runsOn(s, "silu_mul"))
          call("hyrt_cpu_silu_mul",
               {ptrOf(s.getGate()), ptrOf(s.getUp()), product(d, 0, d.size() - 1),
                d.back().value, ptrOf(s.getResult())});
        else
          call("hyrt_ref_silu_mul", {ptrOf(s.getGate()), ptrOf(s.getUp()),
                                     product(d, 0, d.size()), ptrOf(s.getResult())});
        return success();
      })
      .Case<KVCacheAppendOp>([&](KVCacheAppendOp a) {
        callKv("hyrt_ref_kv_cache_append", {i64(a.getLayer()), ptrOf(a.getKey()),
              a.getValue() ? ptrOf(a.getValue()) : null()});
        return success();
      })
      .Case<AttentionOp>([&](AttentionOp a) {
        auto q = D(a.getQuery());
        // The strategy chose the paged kernel only when this step's keys and
        // values were appended to the cache this attention reads: extend
        // attention is then paged attention over [0, p].
        if (runsOn(a, "paged_attention")) {
          callKv("hyrt_cpu_paged_attention", {i64(a.getLayer()), ptrOf(a.getQuery()), q[1].value,
                f32(a.getScale().convertToFloat()), ptrOf(a.getResult()),
                i64(configOf(a).getKvSplits())});
          return success();
        }
        callKv("hyrt_ref_attention", {i64(a.getLayer()), ptrOf(a.getQuery()),
              ptrOf(a.getKey()), ptrOf(a.getValue()), q[1].value,
              f32(a.getScale().convertToFloat()), ptrOf(a.getResult())});
        return success();
      })
      .Case<PagedAttentionOp>([&](PagedAttentionOp a) {
        auto q = D(a.getQuery());
        if (runsOn(a, "paged_attention"))
          callKv("hyrt_cpu_paged_attention",
                 {i64(a.getLayer()), ptrOf(a.getQuery()), q[1].value,
                  f32(a.getScale().convertToFloat()), ptrOf(a.getResult()),
                  i64(configOf(a).getKvSplits())});
        else
          callKv("hyrt_ref_paged_attention",
                 {i64(a.getLayer()), ptrOf(a.getQuery()), q[1].value,
                  f32(a.getScale().convertToFloat()), ptrOf(a.getResult())});
        return success();
      })
      .Case<PagedAttentionAppendOp>([&](PagedAttentionAppendOp a) {
        auto q = D(a.getQuery());
        Value layer = i64(a.getLayer()), scale = f32(a.getScale().convertToFloat());
        if (runsOn(a, "paged_attention")) {
          callKv("hyrt_cpu_paged_attention_append", {layer, ptrOf(a.getKey()), ptrOf(a.getValue()),
                ptrOf(a.getQuery()), q[1].value, scale, ptrOf(a.getResult()),
                i64(configOf(a).getKvSplits())});
          return success();
        }
        callKv("hyrt_ref_kv_cache_append", {layer, ptrOf(a.getKey()), ptrOf(a.getValue())});
        callKv("hyrt_ref_paged_attention", {layer, ptrOf(a.getQuery()),
                                          q[1].value, scale, ptrOf(a.getResult())});
        return success();
      })
      .Case<MLAAttentionOp>([&](MLAAttentionOp a) {
        auto qn = D(a.getQNope());
        auto qp = D(a.getQPe());
        auto kvb = D(a.getKvB());
        if (runsOn(a, "mla_absorbed")) {
          cpu::LoweringConfigAttr config = configOf(a);
          // kv_b rounded by the quantize policy is stored as bf16 rows for
          // this kernel (hyc-cpu-plan-memory's layout "bf16").
          auto kvParam = a.getKvB().getDefiningOp<ParamOp>();
          auto derivation =
              kvParam ? kvParam->getAttrOfType<StringAttr>("hyc.quantize") : StringAttr();
          const bool bf16KvB = derivation && derivation.getValue() == "bf16";
          callKv("hyrt_cpu_mla_attention", {i64(a.getLayer()), ptrOf(a.getQNope()),
                ptrOf(a.getQPe()), ptrOf(a.getKvB()), i32(bf16KvB ? 1 : 0), qn[1].value, qn[2].value,
                qp[2].value, i64(a.getVHeadDim()), kvb[1].value,
                f32(a.getScale().convertToFloat()), ptrOf(a.getResult()),
                i64(config.getKvSplits()),
                i64(config.getTile() && !config.getTile().empty() ? config.getTile()[0] : 0)});
          return success();
        }
        callKv("hyrt_ref_mla_attention", {i64(a.getLayer()), ptrOf(a.getQNope()),
              ptrOf(a.getQPe()), ptrOf(a.getKvB()), qn[1].value, qn[2].value,
              qp[2].value, i64(a.getVHeadDim()), kvb[1].value,
              f32(a.getScale().convertToFloat()), ptrOf(a.getResult())});
        return success();
      })
      .Case<MoeRouteOp>([&](MoeRouteOp r) {
        auto l = D(r.getLogits());
        MoeGatingAttr g = r.getGating();
        call(runsOn(r, "moe") ? "hyrt_cpu_moe_route" : "hyrt_ref_moe_route",
             {ptrOf(r.getLogits()),
              r.getCorrectionBias() ? ptrOf(r.getCorrectionBias()) : null(),
              l[0].value, l[1].value, i64(g.getTopK()),
              i32(g.getScoring() == MoeScoring::sigmoid ? 1 : 0),
              i64(g.getNGroup()), i64(g.getTopkGroup()),
              i32(g.getGroupScore() == MoeGroupScore::top2_sum ? 1 : 0),
              i32(g.getRenormalize() ? 1 : 0),
              f32(g.getRoutedScalingFactor().convertToDouble()),
              ptrOf(r.getWeights()), ptrOf(r.getIds())});
        return success();
      })
      .Case<MoePermuteOp>([&](MoePermuteOp p) {
        auto x = D(p.getInput());
        auto ids = D(p.getIds());
        // Readers that gather the token rows themselves need no copies.
        const bool gathered =
            runsOn(p, "moe") && llvm::all_of(p.getResult().getUsers(), [](Operation *u) {
              cpu::LoweringConfigAttr c = configOf(u);
              return c && c.getFusedProducer() &&
                     c.getFusedProducer().getValue() == "moe_permute";
            });
        call(runsOn(p, "moe") ? "hyrt_cpu_moe_permute" : "hyrt_ref_moe_permute",
             {ptrOf(p.getInput()), ptrOf(p.getIds()), x[0].value, x[1].value,
              ids[1].value, i64(p.getNumExperts()), i64(p.getFirstExpert()),
              gathered ? null() : ptrOf(p.getResult()),
              ptrOf(p.getOffsets()), ptrOf(p.getRows())});
        return success();
      })
      .Case<MoeUnpermuteOp>([&](MoeUnpermuteOp u) {
        auto y = D(u.getInput());
        auto w = D(u.getWeights());
        auto addends = u.getAddends();
        if (runsOn(u, "moe")) {
          call("hyrt_cpu_moe_unpermute_add",
               {ptrOf(u.getInput()), ptrOf(u.getRows()), ptrOf(u.getWeights()),
                w[0].value, w[1].value, y[1].value,
                addends.size() > 0 ? ptrOf(addends[0]) : null(),
                addends.size() > 1 ? ptrOf(addends[1]) : null(), ptrOf(u.getResult())});
          return success();
        }
        if (addends.empty()) {
          call("hyrt_ref_moe_unpermute",
               {ptrOf(u.getInput()), ptrOf(u.getRows()), ptrOf(u.getWeights()),
                w[0].value, w[1].value, y[1].value, ptrOf(u.getResult())});
          return success();
        }
        call("hyrt_ref_moe_unpermute_add",
             {ptrOf(u.getInput()), ptrOf(u.getRows()), ptrOf(u.getWeights()),
              w[0].value, w[1].value, y[1].value, ptrOf(addends[0]),
              addends.size() > 1 ? ptrOf(addends[1]) : null(),
              ptrOf(u.getResult())});
        return success();
      })
      .Case<AllReduceOp>([&](AllReduceOp a) -> LogicalResult {
        // In place (the memory plan makes the result an alias of the
        // input); a group of 1 is the identity.
        if (a.getGroupSize() == 1)
          return success();
        if (a.getKind() != ReduceKind::sum)
          return a.emitError() << "all_reduce across ranks supports sum, got "
                               << stringifyReduceKind(a.getKind());
        auto d = *dimsOf(a.getInput());
        Value n = d[0].value;
        for (size_t i = 1; i < d.size(); ++i)
          n = mul(n, d[i].value);
        call("hyrt_ref_all_reduce_sum", {ptrOf(a.getInput()), n, i64(a.getGroupSize())});
        return success();
      })
      .Case<MoeDispatchOp>([&](MoeDispatchOp d) -> LogicalResult {
        // The staged all-to-all of expert parallel (abi.h all_to_all_v);
        // this rank's index is the module's tensor-parallel rank.
        auto rank = tensorParallelRank(d);
        if (failed(rank))
          return failure();
        auto x = D(d.getInput());
        auto ids = D(d.getIds());
        call("hyrt_ref_moe_dispatch",
             {ptrOf(d.getInput()), ptrOf(d.getIds()), ptrOf(d.getWeights()), x[0].value,
              x[1].value, ids[1].value, i64(d.getExpertsPerRank()), i64(d.getGroupSize()),
              i64(*rank), ptrOf(d.getRows()), ptrOf(d.getRowIds()), ptrOf(d.getRowWeights()),
              ptrOf(d.getSent()), ptrOf(d.getCounts())});
        return success();
      })
      .Case<MoeUndispatchOp>([&](MoeUndispatchOp u) -> LogicalResult {
        auto rank = tensorParallelRank(u);
        if (failed(rank))
          return failure();
        auto y = D(u.getResults());
        call("hyrt_ref_moe_undispatch",
             {ptrOf(u.getResults()), ptrOf(u.getSent()), ptrOf(u.getCounts()), y[0].value,
              y[1].value, i64(u.getGroupSize()), i64(*rank), ptrOf(u.getResult())});
        return success();
      })
      .Case<AllGatherOp>([&](AllGatherOp g) -> LogicalResult {
        // Blocks side by side along the last dim, through the all-reduce
        // (hyrt_ref_all_gather_cols); this rank's block index is the
        // module's tensor-parallel rank (hyc-global-shard).
        auto in = cast<RankedTensorType>(g.getInput().getType());
        if (g.getDim() != in.getRank() - 1)
          return g.emitError() << "all_gather across ranks supports the last dim, got dim "
                               << g.getDim();
        auto rank = tensorParallelRank(g);
        if (failed(rank))
          return failure();
        auto d = *dimsOf(g.getInput());
        Value rows = i64(1);
        for (size_t i = 0; i + 1 < d.size(); ++i)
          rows = mul(rows, d[i].value);
        call("hyrt_ref_all_gather_cols", {ptrOf(g.getInput()), rows, d.back().value,
                                          ptrOf(g.getResult()), i64(g.getGroupSize()),
                                          i64(*rank)});
        return success();
      })
      .Case<func::ReturnOp>([&](func::ReturnOp) {
        func::ReturnOp::create(b, loc);
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitError() << "no reference lowering for '" << o->getName()
                              << "'";
      });
}

LogicalResult EntryLowering::run() {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("entry functions must be a single block");
  if (fn.getNumArguments() != 3)
    return fn.emitError() << "entry function needs (tokens, positions, cache), got "
                          << fn.getNumArguments() << " arguments";
  if (failed(readPlan()))
    return failure();

  // The kernel-level entry reads and writes only planned buffers.
  b.setInsertionPoint(fn);
  auto kernelFn = func::FuncOp::create(b, fn.getLoc(), fn.getSymName(),
                                       b.getFunctionType({}, {}));
  for (NamedAttribute a : fn->getDiscardableAttrs())
    kernelFn->setAttr(a.getName(), a.getValue());
  b.setInsertionPointToStart(kernelFn.addEntryBlock());
  loc = fn.getLoc();
  numTokens = kernel::StepSizeOp::create(b, loc, b.getIndexType(),
                                         b.getStringAttr("num_tokens"));
  for (Operation &op : fn.getBody().front()) {
    loc = op.getLoc();
    if (failed(emitOp(&op))) {
      kernelFn.erase();
      return failure();
    }
  }
  fn.getBody().front().dropAllDefinedValueUses();
  fn.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// The attention kernels take the cache's element type from the cache view
/// at run time, so nothing in a call says "int8": what makes an int8 cache
/// safe to lower is hyc-global-fuse-dequant-into-attention's decision on
/// every op that reads it. Consumed here: an int8-cache module
/// (hyc_cpu.kv_cache_dtype) lowers only when every attention op carries
/// hyc.kv_dequant = "int8", and no op carries it over another cache type.
LogicalResult checkKvDequant(ModuleOp module) {
  auto dtypeAttr = module->getAttrOfType<StringAttr>(cpu::kKvCacheDtypeName);
  const StringRef dtype = dtypeAttr ? dtypeAttr.getValue() : StringRef("f32");
  const bool int8 = dtype == "int8";
  WalkResult r = module.walk([&](Operation *op) {
    if (!attendsOverCache(op))
      return WalkResult::advance();
    auto mark = op->getAttrOfType<StringAttr>(kKvDequantName);
    if (int8 && (!mark || mark.getValue() != "int8")) {
      op->emitOpError() << "reads an int8 KV cache (module " << cpu::kKvCacheDtypeName
                        << " = \"int8\") but has "
                        << (mark ? "hyc.kv_dequant = \"" + mark.getValue().str() + "\""
                                 : std::string("no hyc.kv_dequant"))
                        << ", expected hyc.kv_dequant = \"int8\" "
                           "(hyc-global-fuse-dequant-into-attention with kv-cache=int8)";
      return WalkResult::interrupt();
    }
    if (!int8 && mark) {
      op->emitOpError() << "has hyc.kv_dequant = \"" << mark.getValue()
                        << "\" but the module's KV cache is " << dtype
                        << ", expected an int8 cache (hyc-cpu-select-lowering-strategy "
                           "kv-cache=int8)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

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
    for (func::FuncOp fn : entries) {
      EntryLowering lowering(fn, bf16Activations);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
