//===- CpuSelectLoweringStrategy.cpp - per-op CPU schedule decisions ------===//
//
// The "choose" half of CPU code generation: every compute op of an entry
// function gets a #hyc_cpu.lowering_config saying which implementation runs
// it and with what blocking and threading. hyc-cpu-lower-to-kernel applies
// the decisions and decides nothing itself.
//
//===----------------------------------------------------------------------===//

#include "passes/CpuCostModel.h"
#include "passes/KernelSchemes.h"
#include "passes/MemoryPlan.h"
#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"
#include "hyrt/gemm_layout.h"
#include "dialects/hyc_cpu/HycCpuDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <functional>

namespace hyc {
#define GEN_PASS_DEF_HYCCPUSELECTLOWERINGSTRATEGY
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// Ops that compute (as opposed to params, bound assertions and reshapes).
bool isComputeOp(Operation *op) {
  return op->getDialect() && op->getDialect()->getNamespace() == "hyc" &&
         !isa<ParamOp, AssumeBoundsOp>(op);
}

/// Extend attention whose keys and values are the ones this step appended
/// to the cache it reads: the cache then holds every key it needs.
bool readsItsOwnAppend(AttentionOp a) {
  auto append = a.getCache().getDefiningOp<KVCacheAppendOp>();
  return append && append.getKey() == a.getKey() &&
         append.getValue() == a.getValue() && append.getLayer() == a.getLayer();
}

/// The kernel scheme a GEMM can run on: the target has one for its weight
/// scheme, and every reader of its weight is a GEMM of that same scheme (the
/// weight is stored once, in that kernel's packed layout; a weight also read
/// as a table, like tied embeddings, stays row-major on the reference path).
const KernelScheme *brgemmSchemeOf(Operation *op, KernelTarget target) {
  const KernelScheme *ks = kernelSchemeOf(op, target);
  if (!ks)
    return nullptr;
  for (Operation *user : gemmWeight(op).getUsers())
    if (gemmWeight(user) != gemmWeight(op) ||
        kernelSchemeOf(user, target) != ks)
      return nullptr;
  return ks;
}

/// The rows from which a GEMM's output passes minBytes, when its
/// kernel can store C non-temporally and the compile bounds let a step get
/// there; none otherwise.
std::optional<int64_t> streamCMinRows(Operation *op, const KernelScheme &ks,
                                      int64_t minBytes, plan::Bounds &bounds) {
  auto mm = dyn_cast<QuantMatmulOp>(op);
  auto gm = dyn_cast<MoeGroupedMatmulOp>(op);
  if (!streamsC(ks) || (mm && (mm.getBias() || mm.getEpilogue() != Epilogue::none)) ||
      (gm && gm.getEpilogue() != Epilogue::none))
    return std::nullopt;
  auto out = cast<RankedTensorType>(op->getResult(0).getType());
  const int64_t n = out.getDimSize(out.getRank() - 1);
  if (ShapedType::isDynamic(n) || n % 16 != 0 || out.getRank() != 2)
    return std::nullopt;
  // Results of the entry (logits) live in the caller's buffer, whose
  // alignment the plan does not set; the arena's buffers are 64-byte
  // aligned. A view of the result (a reshape) returned counts as returned.
  std::function<bool(Value)> returned = [&](Value v) {
    for (Operation *user : v.getUsers()) {
      if (isa<func::ReturnOp>(user))
        return true;
      for (Value r : user->getResults())
        if (plan::aliasSource(r) == v && returned(r))
          return true;
    }
    return false;
  };
  if (returned(op->getResult(0)))
    return std::nullopt;
  // A step without bounds is the memory plan's error to report, not ours.
  ScopedDiagnosticHandler quiet(op->getContext(), [](Diagnostic &) { return success(); });
  FailureOr<SmallVector<int64_t>> outBounds = bounds.of(op->getResult(0));
  const int64_t rowBytes = n * int64_t(sizeof(float));
  const int64_t minRows = (minBytes + rowBytes - 1) / rowBytes;
  if (failed(outBounds) || (*outBounds)[0] < minRows)
    return std::nullopt;
  return minRows;
}

struct HycCpuSelectLoweringStrategyPass
    : public hyc::impl::HycCpuSelectLoweringStrategyBase<
          HycCpuSelectLoweringStrategyPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (amx && (target != "avx512" || !nativeBf16)) {
      module.emitError() << "hyc-cpu-select-lowering-strategy: amx needs target avx512 "
                            "with native-bf16 (AMX hosts have AVX-512 BF16)";
      return signalPassFailure();
    }
    if (target != "reference" && target != "avx2" && target != "avx512") {
      module.emitError() << "hyc-cpu-select-lowering-strategy: target '" << target
                         << "' is not supported (reference, avx2, avx512)";
      return signalPassFailure();
    }
    if (threads < 1) {
      module.emitError() << "hyc-cpu-select-lowering-strategy: threads must be "
                            "at least 1, got "
                         << threads;
      return signalPassFailure();
    }
    machine.threads = threads;
    kernels = target != "reference";
    kernelTarget = KernelTarget{nativeBf16, target == "avx2"};
    WalkResult r = module.walk([&](func::FuncOp fn) {
      if (!fn->hasAttr("hyc.entry"))
        return WalkResult::advance();
      // One bounds analysis per entry: its cache serves every GEMM's query.
      plan::Bounds fnBounds(fn);
      bounds = &fnBounds;
      for (Operation &op : fn.getBody().getOps()) {
        if (isComputeOp(&op) && failed(decide(&op)))
          return WalkResult::interrupt();
        // Last-dim slices and concats (MLA's nope/rope split, the latent
        // concat) copy rows of columns: the threaded copy on kernel targets.
        if (kernels && isa<tensor::ExtractSliceOp, tensor::ConcatOp>(op))
          op.setAttr(cpu::kLoweringConfigName, simpleConfig("copy"));
      }
      bounds = nullptr;
      return WalkResult::advance();
    });
    if (r.wasInterrupted() || failed(decideKvCacheDtype(module)))
      signalPassFailure();
  }

private:
  /// The KV cache's element type, for the whole model. `f32`, `bf16` and
  /// `int8` are the user's; every kernel reads all three (the reference ones
  /// by widening the layer, a semantic baseline rather than a fast path;
  /// int8 through hyc-global-fuse-dequant-into-attention's contract).
  /// `auto` takes bf16 (half the bytes every attention step reads) on kernel
  /// targets when every op that reads the cache runs on an optimized
  /// attention kernel (appends only write), and fp32 otherwise: on the
  /// reference target, and where a reference attention would widen the
  /// cache on every call.
  LogicalResult decideKvCacheDtype(ModuleOp module) {
    if (kvCache != "auto" && kvCache != "f32" && kvCache != "bf16" && kvCache != "int8")
      return module.emitError() << "hyc-cpu-select-lowering-strategy: kv-cache must be "
                                   "auto, f32, bf16 or int8, got '"
                                << kvCache << "'";
    bool allOptimized = true;
    module.walk([&](Operation *op) {
      // Only hyc ops read the cache (func.return merely passes it on).
      if (!isComputeOp(op) || isa<KVCacheAppendOp>(op) ||
          llvm::none_of(op->getOperandTypes(),
                        [](Type t) { return isa<KVCacheType>(t); }))
        return;
      auto config = op->getAttrOfType<cpu::LoweringConfigAttr>(cpu::kLoweringConfigName);
      if (!config || (config.getKernel() != "paged_attention" &&
                      config.getKernel() != "mla_absorbed"))
        allOptimized = false;
    });
    StringRef dtype = kvCache;
    if (kvCache == "auto")
      dtype = kernels && allOptimized ? "bf16" : "f32";
    module->setAttr(cpu::kKvCacheDtypeName, StringAttr::get(module.getContext(), dtype));
    return success();
  }

  LogicalResult decide(Operation *op) {
    MLIRContext *ctx = op->getContext();
    cpu::LoweringConfigAttr config;
    if (auto q = dyn_cast<QuantizeOp>(op)) {
      // Quantized activations are stored the way their GEMMs read them: the
      // kernels' u8 (q + 128) rows, or the reference's int8.
      int64_t onKernels = 0, readers = 0;
      for (Operation *user : q.getResult().getUsers()) {
        ++readers;
        onKernels += kernels && brgemmSchemeOf(user, kernelTarget) != nullptr;
      }
      if (onKernels != 0 && onKernels != readers)
        return q.emitError() << "quantized activations are read by " << onKernels
                             << " kernel GEMMs and " << readers - onKernels
                             << " reference GEMMs; they need one layout";
      // A norm or SiLU-multiply read only by this quantization computes it in
      // its own kernel: the fp32 rows are never written back.
      StringAttr producer;
      Operation *def = q.getInput().getDefiningOp();
      if (def && q.getInput().hasOneUse() &&
          ((isa<RMSNormOp>(def) && def->getResult(0) == q.getInput()) ||
           isa<SiluMulOp>(def)))
        producer = StringAttr::get(ctx, isa<RMSNormOp>(def) ? "rms_norm" : "silu_mul");
      config = cpu::LoweringConfigAttr::get(
          ctx, onKernels ? "quantize_u8" : "reference", {}, {}, {}, {}, 1, 0, 1,
          producer);
      op->setAttr(cpu::kLoweringConfigName, config);
      return success();
    }
    if (const KernelScheme *ks = kernels ? brgemmSchemeOf(op, kernelTarget) : nullptr) {
      int64_t rows = kernelRows(*ks);
      if (rows <= 0)
        return op->emitError() << "no " << ks->isaName << " brgemm tile for "
                               << ks->typesName;
      auto w = cast<RankedTensorType>(gemmWeight(op).getType());
      int64_t rank = w.getRank();
      GemmSchedule s = scheduleGemm(machine, w.getDimSize(rank - 2),
                                    w.getDimSize(rank - 1), rows,
                                    ks->macsPerCycle, ks->weightBits);
      // MoE experts whose kernels read converted / quantized rows take them
      // from the token rows through the permute's row map: each token is
      // converted once, not once per (token, slot) copy.
      StringAttr producer;
      if (auto gm = dyn_cast<MoeGroupedMatmulOp>(op);
          gm && convertsActivations(*ks)) {
        auto permute = gm.getInput().getDefiningOp<MoePermuteOp>();
        if (permute && permute.getResult() == gm.getInput())
          producer = StringAttr::get(ctx, "moe_permute");
      }
      // The amx variant: many-row steps on the AMX kernel of the same
      // types and layout, the schedule's kernel below amxMinRows.
      if (amx && amxSchemeFor(*ks, w.getDimSize(rank - 1)))
        op->setAttr(cpu::kAmxMinRowsName,
                    IntegerAttr::get(IntegerType::get(ctx, 64), amxMinRows()));
      // Outputs that can outgrow the caches: steps from the row count where
      // C passes streamStoreMinBytes store it non-temporally. Only drivers
      // whose kernel writes C itself (no SiLU pairing in a local tile, no
      // bias added afterwards), rows of whole 64-byte lines.
      // (The amx variant's large steps run the AMX kernel instead.)
      if (std::optional<int64_t> minRows =
              op->hasAttr(cpu::kAmxMinRowsName)
                  ? std::nullopt
                  : streamCMinRows(op, *ks,
                                   streamMinBytes > 0 ? streamMinBytes : streamStoreMinBytes(),
                                   *bounds))
        op->setAttr(cpu::kStreamCMinRowsName,
                    IntegerAttr::get(IntegerType::get(ctx, 64), *minRows));
      // FP8 on native bf16: steps up to the bf16 x f8 kernel's block rows
      // (decode, small batches) widen the codes in registers as they stream
      // in; larger ones widen each panel once and reuse it from L2.
      if (const KernelScheme *f8 = fp8FusedSchemeFor(*ks))
        op->setAttr(cpu::kFp8FusedMaxRowsName,
                    IntegerAttr::get(IntegerType::get(ctx, 64), kernelRows(*f8)));
      config = cpu::LoweringConfigAttr::get(
          ctx, "brgemm", StringAttr::get(ctx, ks->isaName),
          StringAttr::get(ctx, ks->typesName), StringAttr::get(ctx, ks->layout),
          DenseI64ArrayAttr::get(ctx, {s.tileM, s.tileN, s.tileK}), s.threads,
          s.parallelMinMacs, 1, producer);
    } else if (kernels && (isa<PagedAttentionOp, PagedAttentionAppendOp>(op) ||
                           (isa<AttentionOp>(op) &&
                            readsItsOwnAppend(cast<AttentionOp>(op))))) {
      // Work items are (token block, KV head); a decode step with fewer KV
      // heads than threads splits each token's positions so every thread
      // has a range (flash decoding; the kernel keeps each range >= 256
      // positions and merges the partial softmaxes).
      auto q = cast<RankedTensorType>(op->getOperand(0).getType());
      int64_t kvHeads = 1;
      for (Type t : op->getOperandTypes())
        if (auto c = dyn_cast<KVCacheType>(t))
          kvHeads = c.getNumKvHeads();
      const bool decode = isa<PagedAttentionOp, PagedAttentionAppendOp>(op);
      config = cpu::LoweringConfigAttr::get(
          ctx, "paged_attention", {}, {}, {}, {},
          attentionThreads(machine, q.getDimSize(1)), 0,
          decode ? attentionKvSplits(machine, kvHeads) : 1, StringAttr());
    } else if (kernels && isa<MLAAttentionOp>(op) &&
               op->getAttrOfType<StringAttr>("hyc.mla_form") &&
               op->getAttrOfType<StringAttr>("hyc.mla_form").getValue() == "absorbed") {
      // hyc-global-absorb-mla chose MQA over the latent rows: one KV head,
      // so a decode token splits its positions across the threads.
      auto fn = op->getParentOfType<func::FuncOp>();
      auto entry = fn ? fn->getAttrOfType<StringAttr>("hyc.entry") : StringAttr();
      const bool decode = entry && entry.getValue() == "decode";
      auto q = cast<RankedTensorType>(op->getOperand(0).getType());
      // tile: the weights (in hundredths) of the plain form's expansion
      // against the attention work it saves, with which the kernel picks
      // the form of each extend step (cost in multiply-adds,
      // hyrt_cpu_mla_attention): [on bf16 dot products, on fp32 kernels].
      // Which kernels run is the host's: the attention kernels take bf16
      // dot products on AVX-512 BF16 hosts whatever the GEMMs' variant.
      // Expanding the cached latents costs R (nope + v) per position and
      // head; absorbed attention costs 2R + rope per attended position and
      // head, plain nope + rope + v.
      // - On bf16 dot products (a bf16 cache on an AVX-512 BF16 host) an
      //   expansion multiply-add costs ~0.65-0.7 of an absorbed one
      //   (hyc_attention_bench, 2-vCPU Zen 5: 128 heads, 128 tokens at
      //   1024, absorbed / plain 1.24; 16 heads, 512 tokens at 4096, 2.87):
      //   weight 70.
      // - On fp32 kernels the expansion is about three times slower (16
      //   heads: 512 tokens from position 0 plain 41.5 ms vs absorbed 54.5;
      //   256 tokens at 4096, 365 vs 242): weight 300.
      // 0 (never) for decode, and where the plain attention saves nothing
      // (2R <= nope + v).
      auto mla = cast<MLAAttentionOp>(op);
      const int64_t nope = q.getDimSize(2), v = mla.getVHeadDim();
      const int64_t rank = cast<RankedTensorType>(mla.getKvB().getType()).getDimSize(1);
      const bool never = decode || 2 * rank <= nope + v;
      const int64_t weights[2] = {never ? 0 : 70, never ? 0 : 300};
      config = cpu::LoweringConfigAttr::get(
          ctx, "mla_absorbed", {}, {}, {}, DenseI64ArrayAttr::get(ctx, weights),
          attentionThreads(machine, q.getDimSize(1)), 0,
          decode ? attentionKvSplits(machine, 1) : 1, StringAttr());
    } else if (kernels && isa<RMSNormOp, SiluMulOp>(op)) {
      // Vectorized row kernels, rows split across the threads from 2^15
      // elements (runtime/cpu/elementwise.cpp).
      config = cpu::LoweringConfigAttr::get(ctx, isa<RMSNormOp>(op) ? "rms_norm" : "silu_mul",
                                            {}, {}, {}, {}, machine.threads, 0, 1,
                                            StringAttr());
    } else if (kernels && isa<RopeOp>(op)) {
      // Tokens split across the threads; the kernel forks only when the
      // step has enough of them (runtime/cpu/rope.cpp).
      config = cpu::LoweringConfigAttr::get(ctx, "rope", {}, {}, {}, {}, machine.threads,
                                            0, 1, StringAttr());
    } else if (kernels && isa<AddOp>(op)) {
      // A residual add left unfused (runtime/cpu/elementwise.cpp).
      config = simpleConfig("add");
    } else if (kernels && isa<AllReduceOp, AllGatherOp, MoeDispatchOp, MoeUndispatchOp>(op)) {
      // Exchanges between tensor-parallel ranks: the registered group moves
      // the data; the rows around it are packed and summed across the
      // threads (runtime/cpu/collectives.cpp).
      config = simpleConfig("collective");
    } else if (kernels && isa<EmbeddingOp, LogitRowsOp>(op)) {
      // Row gathers (runtime/cpu/copy.cpp), rows split across the threads.
      config = simpleConfig("copy");
    } else if (kernels && isa<KVCacheAppendOp>(op)) {
      // Extend's KV writes (and MLA's latent rows): the rows the fused
      // decode append writes, (token, KV head) rows across the threads.
      config = simpleConfig("kv_append");
    } else if (kernels && isa<MoeRouteOp, MoePermuteOp, MoeUnpermuteOp>(op)) {
      // Routing split by tokens, row copies and the weighted combine by
      // rows (runtime/cpu/moe.cpp; the reference's arithmetic, so routing
      // ids and sums do not depend on the target).
      config = cpu::LoweringConfigAttr::get(ctx, "moe", {}, {}, {}, {}, machine.threads,
                                            0, 1, StringAttr());
    } else {
      config = cpu::LoweringConfigAttr::get(ctx, "reference", {}, {}, {}, {}, 1,
                                            0, 1, StringAttr());
    }
    op->setAttr(cpu::kLoweringConfigName, config);
    return success();
  }

  /// A kernel that needs no decision but its name and the threads.
  cpu::LoweringConfigAttr simpleConfig(StringRef kernel) {
    return cpu::LoweringConfigAttr::get(&getContext(), kernel, {}, {}, {}, {},
                                        machine.threads, 0, 1, StringAttr());
  }

  CpuMachine machine;
  bool kernels = false;
  KernelTarget kernelTarget;
  /// The bounds of the entry being decided (set for the walk over it).
  plan::Bounds *bounds = nullptr;
};

} // namespace
