//===- Gemm.cpp - GEMM lowering of hyc-cpu-lower-to-kernel ----------------===//
//
// Lowers hyc.quant.matmul and hyc.moe.grouped_matmul: on a generated
// brgemm kernel (a `hyc_kernel.brgemm.dispatch` per kernel variant and one
// hyrt_cpu_*gemm* driver call that does the blocking), or on the hyrt_ref_*
// reference GEMMs with their epilogues.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"
#include "hyrt/gemm_layout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

namespace {

/// A GEMM scheduled on a generated kernel: what its lowering reads from the
/// op, and the values it builds before the driver call.
struct KernelGemm {
  explicit KernelGemm(Operation *op)
      : op(op), scheme(*brgemmScheme(op)), config(configOf(op)),
        dense(dyn_cast<QuantMatmulOp>(op)),
        grouped(dyn_cast<MoeGroupedMatmulOp>(op)) {}

  Operation *op;
  const KernelScheme &scheme;
  cpu::LoweringConfigAttr config;
  QuantMatmulOp dense;        // null for a grouped GEMM
  MoeGroupedMatmulOp grouped; // null for a dense GEMM
  RankedTensorType weightType;
  int64_t n = 0, k = 0;
  int64_t mMax = 0;   // rows of the tile the strategy chose
  SmallVector<Dim> x; // the input's dims
  Value minMacs, scratch;
  // The block kernel and what the driver needs to know of it; selects
  // between variants where the step's rows pick one.
  Value kernel, rowsPerBlock, schemeId;
};

} // namespace

/// The MLIR element type of a kernel operand type.
static Type elementTypeOf(codegen::DataType t, Builder &b) {
  switch (t) {
  case codegen::DataType::bf16:
    return b.getBF16Type();
  case codegen::DataType::u8:
  case codegen::DataType::s8:
  case codegen::DataType::u4: // codes: one per element (two per byte packed)
    return b.getI8Type();
  case codegen::DataType::f8:
    return b.getType<Float8E4M3FNType>();
  default:
    return b.getF32Type();
  }
}

/// The block kernel of `scheme` for tiles of `rows` rows, described once
/// (Pure: CSE merges equal dispatches); convert-hyc-kernel-to-llvm turns it
/// into the address of the kernel the compiler generates and embeds.
/// Per-group weights: a K = groupK kernel run once per group by the driver,
/// adding into C (W8A8) or writing the block product the driver scales
/// (FP8); otherwise one kernel over the whole K.
static Value dispatchKernel(KernelEmitter &e, const KernelScheme &scheme,
                            int64_t rows, int64_t k, bool streamC = false) {
  OpBuilder &b = e.builder();
  StringRef layout = scheme.layout;
  // Integer codes name their packed layout ("q4_g32", "q4k", ...): the
  // element types alone do not tell the formats apart.
  const bool codes = hyrt_gemm_is_codes(scheme.scratchId);
  StringRef bLayout = codes                      ? layout
                      : layout.contains("vnni2") ? "vnni2"
                      : layout.contains("vnni4") ? "vnni4"
                                                 : "row";
  // bf16 x f8 kernels run over the whole K, padded to whole blocks.
  const int64_t blockK =
      scheme.bType == codegen::DataType::f8 ? HYRT_GEMM_GROUP_K : 0;
  const int64_t kernelK = scheme.groupK ? scheme.groupK
                          : blockK      ? (k + blockK - 1) / blockK * blockK
                          : codes       ? hyrt_gemm_activation_k(scheme.scratchId, k)
                                        : k;
  // Grouped activations are rows padded to whole groups.
  const int64_t lda =
      scheme.groupK ? (k + kernelK - 1) / kernelK * kernelK : kernelK;
  return kernel::BrgemmDispatchOp::create(
      b, e.getLoc(), b.getI64Type(),
      b.getDenseI64ArrayAttr({rows, 32, kernelK}),
      b.getDenseI64ArrayAttr({lda, 32, 32}),
      TypeAttr::get(elementTypeOf(scheme.aType, b)),
      TypeAttr::get(elementTypeOf(scheme.bType, b)),
      TypeAttr::get(b.getF32Type()), b.getStringAttr(bLayout),
      scheme.groupK && !hyrt_gemm_is_fp8(scheme.scratchId) ? UnitAttr()
                                                           : b.getUnitAttr(),
      EpilogueAttr::get(b.getContext(), Epilogue::none),
      b.getStringAttr(scheme.isaName), streamC ? b.getUnitAttr() : UnitAttr());
}

/// Refuses what the drivers cannot do: they apply no residual, and the
/// gate/up driver no bias; a schedule that says otherwise (hand-written, or
/// stale after a rewrite) is refused instead of silently dropping them.
static LogicalResult checkKernelGemm(const KernelGemm &g) {
  if (QuantMatmulOp mm = g.dense;
      mm && (mm.getEpilogue() == Epilogue::residual_add ||
             (mm.getEpilogue() == Epilogue::silu_mul && mm.getBias())))
    return g.op->emitError()
           << "a brgemm schedule cannot apply the "
           << stringifyEpilogue(mm.getEpilogue()) << " epilogue"
           << (mm.getBias() ? " with a bias" : "");
  if (g.mMax <= 0 || g.mMax > 64)
    return g.op->emitError()
           << "no " << g.scheme.isaName << " brgemm tile with 1..64 rows (got "
           << g.mMax << ")";
  return success();
}

/// The permute whose token rows the grouped GEMM reads when the strategy
/// fused a producer into it, else null.
static MoePermuteOp fusedPermuteOf(const KernelGemm &g) {
  MoeGroupedMatmulOp gm = g.grouped;
  if (!gm || !g.config.getFusedProducer())
    return {};
  return gm.getInput().getDefiningOp<MoePermuteOp>();
}

/// The amx variant: steps of many rows take the AMX kernel (same types and
/// packed layout, 32-row blocks). A grouped GEMM switches on the average
/// rows per expert.
static LogicalResult selectAmxKernel(KernelEmitter &e, KernelGemm &g) {
  auto minRows = g.op->getAttrOfType<IntegerAttr>(cpu::kAmxMinRowsName);
  if (!minRows)
    return success();
  const KernelScheme *amx = amxSchemeFor(g.scheme, g.k);
  if (!amx)
    return g.op->emitError()
           << cpu::kAmxMinRowsName << " on a " << g.scheme.isaName << " "
           << g.scheme.typesName << " GEMM with K = " << g.k
           << ", which has no AMX kernel";
  Value rows = g.x[0].value;
  if (auto permute = fusedPermuteOf(g))
    rows = e.mul(
        e.dims(permute.getInput())[0].value,
        e.i64(
            cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1)));
  Value threshold =
      e.i64(minRows.getInt() * (g.grouped ? g.weightType.getDimSize(0) : 1));
  OpBuilder &b = e.builder();
  Value useAmx = arith::CmpIOp::create(b, e.getLoc(), arith::CmpIPredicate::sge,
                                       rows, threshold);
  g.kernel = arith::SelectOp::create(
      b, e.getLoc(), useAmx, dispatchKernel(e, *amx, kernelRows(*amx), g.k),
      g.kernel);
  g.rowsPerBlock = arith::SelectOp::create(
      b, e.getLoc(), useAmx, e.i64(kernelRows(*amx)), e.i64(g.mMax));
  return success();
}

/// Steps whose output outgrows the caches (hyc-cpu-select-lowering-
/// strategy's hyc_cpu.stream_c_min_rows): the same kernel with non-temporal
/// C stores. A grouped GEMM compares its (token, expert) rows. The stores
/// need every C row 64-byte aligned: the plan aligns arena buffers to 64
/// bytes and the strategy only marks rows of whole lines.
static LogicalResult selectStreamKernel(KernelEmitter &e, KernelGemm &g) {
  auto minRows = g.op->getAttrOfType<IntegerAttr>(cpu::kStreamCMinRowsName);
  if (!minRows)
    return success();
  auto out = e.ptrOf(g.op->getResult(0)).getDefiningOp<kernel::BufferOp>();
  if (!streamsC(g.scheme) || !out || out.getSpace() != "arena" || out.getOffset() % 64 != 0 ||
      (g.n * int64_t(sizeof(float))) % 64 != 0)
    return g.op->emitError()
           << cpu::kStreamCMinRowsName << " needs an AVX-512 kernel writing C itself into "
           << "an arena buffer of 64-byte aligned rows; got " << g.scheme.isaName << " "
           << g.scheme.typesName << ", N = " << g.n << ", "
           << (out ? out.getSpace().str() + " offset " + std::to_string(out.getOffset())
                   : std::string("no buffer"));
  Value rows = g.x[0].value;
  if (auto permute = fusedPermuteOf(g))
    rows = e.mul(
        e.dims(permute.getInput())[0].value,
        e.i64(cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1)));
  OpBuilder &b = e.builder();
  Value many = arith::CmpIOp::create(b, e.getLoc(), arith::CmpIPredicate::sge, rows,
                                     e.i64(minRows.getInt()));
  g.kernel = arith::SelectOp::create(b, e.getLoc(), many,
                                     dispatchKernel(e, g.scheme, g.mMax, g.k, true), g.kernel);
  return success();
}

/// FP8 steps of few rows: the bf16 x f8 kernel (HYRT_GEMM_FP8_FUSED) in
/// place of the blockwise path. The driver blocks rows by rowsPerBlock, so
/// any step is correct on either kernel; the threshold only picks the
/// faster. A grouped GEMM compares its rows per expert's bound: the tokens.
static LogicalResult selectFp8FusedKernel(KernelEmitter &e, KernelGemm &g) {
  auto maxRows = g.op->getAttrOfType<IntegerAttr>(cpu::kFp8FusedMaxRowsName);
  if (!maxRows)
    return success();
  const KernelScheme *f8 = fp8FusedSchemeFor(g.scheme);
  if (!f8)
    return g.op->emitError()
           << cpu::kFp8FusedMaxRowsName << " on a " << g.scheme.isaName << " "
           << g.scheme.typesName << " GEMM, which has no bf16 x f8 kernel";
  Value rows = g.x[0].value;
  if (auto permute = fusedPermuteOf(g))
    rows = e.dims(permute.getInput())[0].value;
  OpBuilder &b = e.builder();
  Location loc = e.getLoc();
  Value useFused = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                         e.i64(maxRows.getInt()), rows);
  g.kernel = arith::SelectOp::create(
      b, loc, useFused, dispatchKernel(e, *f8, kernelRows(*f8), g.k), g.kernel);
  g.rowsPerBlock = arith::SelectOp::create(
      b, loc, useFused, e.i64(kernelRows(*f8)), g.rowsPerBlock);
  g.schemeId = arith::SelectOp::create(b, loc, useFused, e.i32(f8->scratchId),
                                       g.schemeId);
  return success();
}

/// The strategy fused the permute's copies into the grouped driver: it
/// reads the token rows through the permute's row map. [gate; up] weights:
/// the driver pairs panel p of each half and writes silu(gate) * up, N =
/// half the weight rows.
static LogicalResult callGroupedTokensDriver(KernelEmitter &e,
                                             const KernelGemm &g) {
  MoeGroupedMatmulOp gm = g.grouped;
  auto permute = gm.getInput().getDefiningOp<MoePermuteOp>();
  if (!permute)
    return g.op->emitError()
           << "fused_producer = moe_permute needs the input of a "
              "hyc.moe.permute";
  // Only kernels that read converted rows gather them (into scratch the
  // memory plan sized for that); fp32 kernels read the permuted copies.
  if (!convertsActivations(g.scheme))
    return g.op->emitError()
           << "fused_producer = moe_permute needs a bf16 or w8a8 "
              "brgemm scheme, got "
           << g.scheme.typesName;
  auto t = e.dims(permute.getInput());
  int64_t topK =
      cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1);
  Value scale = gm.getScale();
  const bool siluMul = gm.getEpilogue() == Epilogue::silu_mul;
  e.call("hyrt_cpu_grouped_gemm_tokens",
         {g.schemeId, e.ptrOf(permute.getInput()), t[0].value, e.i64(topK),
          e.ptrOf(permute.getRows()), e.i64(g.k), e.ptrOf(gm.getOffsets()),
          e.i64(g.weightType.getDimSize(0)), e.ptrOf(gm.getWeight()),
          scale ? e.ptrOf(scale) : e.null(), e.i64(siluMul ? g.n / 2 : g.n),
          e.i32(siluMul ? 1 : 0), e.ptrOf(gm.getResult()), g.scratch, g.kernel,
          g.rowsPerBlock, g.minMacs});
  return success();
}

/// The driver call of a GEMM that reads its own input rows: [gate; up] with
/// SiLU, grouped, W8A8 on pre-quantized activations, or the scheme's plain
/// driver.
static void callGemmDriver(KernelEmitter &e, const KernelGemm &g) {
  MoeGroupedMatmulOp gm = g.grouped;
  QuantMatmulOp mm = g.dense;
  Value input = g.op->getOperand(0);
  Value tail[] = {g.scratch, g.kernel, g.rowsPerBlock, g.minMacs};
  if ((gm ? gm.getEpilogue() : mm.getEpilogue()) == Epilogue::silu_mul) {
    Value scale = gm ? gm.getScale() : mm.getScale();
    SmallVector<Value> args = {g.schemeId, e.ptrOf(input), g.x[0].value,
                               e.i64(g.k)};
    if (gm)
      args.append(
          {e.ptrOf(gm.getOffsets()), e.i64(g.weightType.getDimSize(0))});
    args.append({e.ptrOf(gemmWeight(g.op)), scale ? e.ptrOf(scale) : e.null(),
                 e.i64(g.n / 2), e.ptrOf(g.op->getResult(0))});
    args.append(std::begin(tail), std::end(tail));
    e.call(gm ? "hyrt_cpu_grouped_gemm_silu_mul" : "hyrt_cpu_gemm_silu_mul",
           args);
    return;
  }
  if (gm) {
    SmallVector<Value> args = {g.schemeId,
                               e.ptrOf(input),
                               g.x[0].value,
                               e.i64(g.k),
                               e.ptrOf(gm.getOffsets()),
                               e.i64(g.weightType.getDimSize(0)),
                               e.ptrOf(gm.getWeight()),
                               gm.getScale() ? e.ptrOf(gm.getScale())
                                             : e.null(),
                               e.i64(g.n),
                               e.ptrOf(gm.getResult())};
    args.append(std::begin(tail), std::end(tail));
    e.call("hyrt_cpu_grouped_gemm", args);
    return;
  }
  if (mm.getInputScale()) {
    // Activations quantized once by hyc.quant.quantize (quantize_u8).
    e.call("hyrt_cpu_gemm_w8a8_quantized",
           {e.ptrOf(input), e.ptrOf(mm.getInputScale()), g.x[0].value,
            e.i64(g.k), e.ptrOf(mm.getWeight()), e.ptrOf(mm.getScale()),
            e.i64(g.n), mm.getBias() ? e.ptrOf(mm.getBias()) : e.null(),
            e.ptrOf(mm.getResult()), g.kernel, g.rowsPerBlock, g.minMacs});
    return;
  }
  SmallVector<Value> args;
  // One driver for both FP8 activations / both code widths.
  if (hyrt_gemm_is_fp8(g.scheme.scratchId) || hyrt_gemm_is_codes(g.scheme.scratchId))
    args.push_back(g.schemeId);
  args.append(
      {e.ptrOf(input), g.x[0].value, e.i64(g.k), e.ptrOf(mm.getWeight())});
  if (takesWeightScales(g.scheme))
    args.push_back(e.ptrOf(mm.getScale()));
  args.append({e.i64(g.n), mm.getBias() ? e.ptrOf(mm.getBias()) : e.null(),
               e.ptrOf(mm.getResult())});
  args.append(std::begin(tail), std::end(tail));
  e.call(g.scheme.driver, args);
}

/// x · Wᵀ through the generated brgemm kernel for this scheme and K: the
/// kernel is declared here and recorded in `hyc.kernels` for the driver to
/// generate and embed; a hyrt_cpu_gemm_* driver does the blocking.
static LogicalResult lowerKernelGemm(Operation *m, KernelEmitter &e) {
  KernelGemm g(m);
  cpu::LoweringConfigAttr config = g.config;
  g.mMax = config.getTile() ? config.getTile()[0] : 0;
  if (failed(checkKernelGemm(g)))
    return failure();
  g.minMacs = e.i64(config.getParallelMinMacs());
  g.weightType = cast<RankedTensorType>(gemmWeight(m).getType());
  g.n = g.weightType.getDimSize(g.grouped ? 1 : 0);
  g.k = g.weightType.getDimSize(g.grouped ? 2 : 1);
  g.kernel = dispatchKernel(e, g.scheme, g.mMax, g.k);
  g.x = e.dims(m->getOperand(0));
  g.scratch = e.scratch();
  g.rowsPerBlock = e.i64(g.mMax);
  if (failed(selectStreamKernel(e, g)))
    return failure();
  if (failed(selectAmxKernel(e, g)))
    return failure();
  g.schemeId = e.i32(g.scheme.scratchId);
  if (failed(selectFp8FusedKernel(e, g)))
    return failure();
  if (g.grouped && config.getFusedProducer() &&
      config.getFusedProducer().getValue() == "moe_permute")
    return callGroupedTokensDriver(e, g);
  callGemmDriver(e, g);
  return success();
}

namespace {

/// A (grouped) GEMM on the reference kernels, and its weight scheme.
struct ReferenceGemm {
  explicit ReferenceGemm(Operation *op)
      : dense(dyn_cast<QuantMatmulOp>(op)),
        grouped(dyn_cast<MoeGroupedMatmulOp>(op)) {}

  QuantMatmulOp dense;        // null for a grouped GEMM
  MoeGroupedMatmulOp grouped; // null for a dense GEMM
  Value input, weight, scale;
  QuantScheme scheme = QuantScheme::f32;
  bool w8a8 = false; // per-channel W8A8
  int64_t group = 0; // W8A8 with one scale per `group` K-elements
  bool fp8 = false;  // e4m3 with 128 x 128 blocks
  int32_t codes = -1; // integer codes with in-weight scales: their HYRT_GEMM_* id
};

} // namespace

/// The reference kernel call that writes x · Wᵀ of `g` into `out`.
static void callReferenceGemm(KernelEmitter &e, const ReferenceGemm &g,
                              ArrayRef<Dim> w, Value out, Value bias,
                              Value parts) {
  QuantMatmulOp mm = g.dense;
  MoeGroupedMatmulOp gm = g.grouped;
  Value rows = e.dims(g.input)[0].value, n = w[w.size() - 2].value,
        k = w.back().value;
  bool roundActivations =
      e.roundsActivationsToBf16() && g.scheme == QuantScheme::bf16;
  auto ptr = [&](Value v) { return e.ptrOf(v); };
  Value input = g.input, weight = g.weight, scale = g.scale;
  if (g.codes >= 0 && mm)
    e.call("hyrt_ref_matmul_codes",
           {ptr(input), ptr(weight), bias, rows, n, k, e.i64(g.codes), parts, out});
  else if (g.codes >= 0)
    e.call("hyrt_ref_moe_grouped_matmul_codes",
           {ptr(input), ptr(weight), ptr(gm.getOffsets()), rows, w[0].value, n, k,
            e.i64(g.codes), parts, out});
  else if (g.fp8 && mm)
    e.call("hyrt_ref_matmul_fp8",
           {ptr(input), ptr(weight), ptr(scale), bias, rows, n, k, parts, out});
  else if (g.fp8)
    e.call("hyrt_ref_moe_grouped_matmul_fp8",
           {ptr(input), ptr(weight), ptr(scale), ptr(gm.getOffsets()), rows,
            w[0].value, n, k, parts, out});
  else if (g.group && mm)
    e.call("hyrt_ref_matmul_w8a8_grouped",
           {ptr(input), ptr(weight), ptr(scale), bias, rows, n, k,
            e.i64(g.group), out});
  else if (g.group)
    e.call("hyrt_ref_moe_grouped_matmul_w8a8_grouped",
           {ptr(input), ptr(weight), ptr(scale), ptr(gm.getOffsets()), rows,
            w[0].value, n, k, e.i64(g.group), out});
  else if (mm && mm.getInputScale())
    e.call("hyrt_ref_matmul_w8a8_quantized",
           {ptr(input), ptr(mm.getInputScale()), ptr(weight), ptr(scale), bias,
            rows, n, k, out});
  else if (mm && g.w8a8)
    e.call("hyrt_ref_matmul_w8a8",
           {ptr(input), ptr(weight), ptr(scale), bias, rows, n, k, out});
  else if (mm)
    e.call(roundActivations ? "hyrt_ref_matmul_bf16_activations"
                            : "hyrt_ref_matmul",
           {ptr(input), ptr(weight), bias, rows, n, k, out});
  else if (g.w8a8)
    e.call("hyrt_ref_moe_grouped_matmul_w8a8",
           {ptr(input), ptr(weight), ptr(scale), ptr(gm.getOffsets()), rows,
            w[0].value, n, k, out});
  else
    e.call(roundActivations ? "hyrt_ref_moe_grouped_matmul_bf16_activations"
                            : "hyrt_ref_moe_grouped_matmul",
           {ptr(input), ptr(weight), ptr(gm.getOffsets()), rows, w[0].value, n,
            k, out});
}

/// A (grouped) GEMM on the reference kernels: f32 (or bf16-rounded) weights,
/// optionally with bf16-rounded activations, or per-channel W8A8. A
/// silu_mul epilogue computes [gate | up] into the scratch region and
/// combines the halves; residual_add adds afterwards.
static LogicalResult lowerReferenceGemm(Operation *op, KernelEmitter &e) {
  ReferenceGemm g(op);
  QuantMatmulOp mm = g.dense;
  QuantAttr quant = mm ? mm.getQuant() : g.grouped.getQuant();
  Epilogue epilogue = mm ? mm.getEpilogue() : g.grouped.getEpilogue();
  g.input = op->getOperand(0);
  g.weight = gemmWeight(op);
  g.scale = mm ? mm.getScale() : g.grouped.getScale();
  g.scheme = quant.getScheme();
  g.w8a8 = g.scheme == QuantScheme::w8a8 && quant.getGroup() == 0;
  g.group = g.scheme == QuantScheme::w8a8 ? quant.getGroup() : 0;
  g.fp8 = g.scheme == QuantScheme::fp8_e4m3 && quant.getBlock().size() == 2 &&
          quant.getBlock()[0] == 128 && quant.getBlock()[1] == 128;
  g.codes = quant.isCodes() ? codesSchemeIdOfLayout(codesLayoutOf(g.scheme)) : -1;
  if (g.scheme != QuantScheme::f32 && g.scheme != QuantScheme::bf16 &&
      !g.w8a8 && !g.group && !g.fp8 && g.codes < 0)
    return op->emitError() << "the reference target computes in f32, on "
                              "bf16-rounded weights, w8a8 (per channel or "
                              "group), integer codes or fp8 with 128 x 128 blocks; got "
                           << quant;
  if (g.grouped && epilogue == Epilogue::residual_add)
    return op->emitError("the reference target has no residual_add epilogue "
                         "for expert GEMMs");
  auto w = e.dims(g.weight);
  Value out =
      epilogue == Epilogue::silu_mul ? e.scratch() : e.ptrOf(op->getResult(0));
  Value bias = mm && mm.getBias() ? e.ptrOf(mm.getBias()) : e.null();
  // A [gate; up] weight is two matrices, each with its own FP8 row blocks.
  Value parts = e.i64(epilogue == Epilogue::silu_mul ? 2 : 1);
  callReferenceGemm(e, g, w, out, bias, parts);
  Value rows = e.dims(g.input)[0].value;
  if (epilogue == Epilogue::silu_mul) {
    auto r = e.dims(op->getResult(0));
    e.call("hyrt_ref_silu_mul_halves",
           {out, rows, r[1].value, e.ptrOf(op->getResult(0))});
  } else if (epilogue == Epilogue::residual_add) {
    Value count = e.mul(rows, w[w.size() - 2].value);
    e.call("hyrt_ref_add", {out, e.ptrOf(mm.getResidual()), count, out});
  }
  return success();
}

void hyc::lowering::populateGemmLowerings(LoweringTable &table) {
  table.add<QuantMatmulOp, MoeGroupedMatmulOp>(
      [](Operation *m, KernelEmitter &e) -> LogicalResult {
        if (brgemmScheme(m))
          return lowerKernelGemm(m, e);
        return lowerReferenceGemm(m, e);
      });
}
