//===- Pipeline.cpp - the hyc compile pass pipeline, phase by phase -------===//

#include "compiler/Pipeline.h"

#include "compiler/Targets.h"

#include "dialects/hyc_cpu/HycCpuDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include "llvm/Support/raw_ostream.h"

namespace hyc::compiler {

bool parsePhase(const std::string &name, Phase &phase) {
  if (name == "import")
    phase = Phase::Import;
  else if (name == "global")
    phase = Phase::Global;
  else if (name == "strategy")
    phase = Phase::Strategy;
  else if (name == "kernel")
    phase = Phase::Kernel;
  else if (name == "llvm" || name == "lower")
    phase = Phase::Llvm;
  else
    return false;
  return true;
}

const std::vector<std::string> &disablablePasses() {
  static const std::vector<std::string> names = {
      "hyc-global-absorb-mla",
      "hyc-global-fuse-activation-quant",
      "hyc-global-fuse-gate-up-silu",
      "hyc-global-fuse-kv-append-into-attention",
      "hyc-global-fuse-moe-combine",
      "hyc-global-fuse-residual-norm",
  };
  return names;
}

bool addPipeline(mlir::PassManager &pm, const PipelineOptions &options,
                 Phase done, Phase last, std::string &error) {
  const auto &known = disablablePasses();
  for (const std::string &name : options.disabled)
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      error = "--disable-pass: '" + name + "' is not a pass that can be left out (";
      for (size_t i = 0; i < known.size(); ++i)
        error += (i ? ", " : "") + known[i];
      error += ")";
      return false;
    }
  auto enabled = [&](const char *name) { return !options.disabled.count(name); };
  auto runs = [&](Phase p) { return done < p && p <= last; };

  // The rank's shard first: every later pass sees the rank's shapes.
  if (runs(Phase::Global) && options.tpSize > 1) {
    HycGlobalShardOptions shard;
    shard.tpSize = options.tpSize;
    shard.tpRank = options.tpRank;
    shard.epSize = options.epSize;
    shard.epExchange = options.epExchange;
    pm.addPass(createHycGlobalShard(shard));
  }
  // Both look at the model as imported: observers before fusions fold the
  // observed rows into their consumers, groups before the quantize policy
  // rewrites the GEMMs they are made of.
  if (runs(Phase::Global) && options.observeActivations)
    pm.addPass(createHycGlobalObserveActivations());
  if (runs(Phase::Global) && options.smoothAlpha >= 0) {
    HycGlobalSmoothActivationsOptions smooth;
    smooth.alpha = options.smoothAlpha;
    pm.addPass(createHycGlobalSmoothActivations(smooth));
  }
  // Under f32 on a kernel target the policy only gives a tied head its own
  // copy of the table (packed for the f32 kernels).
  if (runs(Phase::Global) && (options.quant != "f32" || options.target != "reference")) {
    HycGlobalQuantizePolicyOptions policy;
    policy.scheme = options.quant;
    policy.keepBf16.assign(options.keepBf16.begin(), options.keepBf16.end());
    policy.keepInt8.assign(options.keepInt8.begin(), options.keepInt8.end());
    policy.lmHead = options.quantLmHead;
    policy.keepF32.assign(options.keepF32.begin(), options.keepF32.end());
    policy.storedCodes.assign(options.storedCodes.begin(), options.storedCodes.end());
    pm.addPass(createHycGlobalQuantizePolicy(policy));
  }
  if (runs(Phase::Global) && enabled("hyc-global-fuse-gate-up-silu"))
    pm.addPass(createHycGlobalFuseGateUpSilu());
  if (runs(Phase::Global) && enabled("hyc-global-fuse-residual-norm"))
    pm.addPass(createHycGlobalFuseResidualNorm());
  if (runs(Phase::Global) && enabled("hyc-global-fuse-moe-combine"))
    pm.addPass(createHycGlobalFuseMoeCombine());
  if (runs(Phase::Global) && enabled("hyc-global-fuse-kv-append-into-attention"))
    pm.addPass(createHycGlobalFuseKvAppendIntoAttention());
  if (runs(Phase::Global) && enabled("hyc-global-absorb-mla"))
    pm.addPass(createHycGlobalAbsorbMla());
  if (runs(Phase::Global) && enabled("hyc-global-fuse-activation-quant"))
    pm.addPass(createHycGlobalFuseActivationQuant());
  // Not optional: an int8 cache has no other way to be read.
  if (runs(Phase::Global)) {
    HycGlobalFuseDequantIntoAttentionOptions dequant;
    dequant.kvCache = options.kvCache;
    pm.addPass(createHycGlobalFuseDequantIntoAttention(dequant));
  }

  IsaVariant variant;
  if (!isaVariantNamed(options.target, variant)) {
    error = "unknown ISA variant '" + options.target + "'";
    return false;
  }
  HycCpuSelectLoweringStrategyOptions strategy;
  strategy.target = variant.strategyTarget;
  strategy.nativeBf16 = variant.nativeBf16;
  strategy.amx = variant.amx;
  strategy.threads = options.threads;
  strategy.kvCache = options.kvCache;
  if (runs(Phase::Strategy)) {
    pm.addPass(createHycCpuSelectLoweringStrategy(strategy));
    pm.addPass(createHycCpuPlanMemory());
  }

  HycCpuLowerToKernelOptions lowering;
  lowering.bf16Activations = options.bf16Activations;
  if (runs(Phase::Kernel)) {
    pm.addPass(createHycCpuLowerToKernel(lowering));
    // Dispatches and buffer views are Pure: equal ones merge (a kernel is
    // dispatched once per entry, however many GEMMs share it).
    pm.addPass(mlir::createCSEPass());
    // An optimized variant runs no op on a reference kernel. A calibration
    // build's observers are reference kernels by design (it is an fp32
    // measuring run, not a deployment).
    if (variant.name != "reference" && !options.allowReference &&
        !options.observeActivations)
      pm.addPass(createHycCpuCheckNoReferenceKernels());
  }
  if (runs(Phase::Llvm))
    pm.addPass(createConvertHycKernelToLLVM());
  return true;
}

std::string scheduleTable(mlir::ModuleOp module) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%-8s %-22s %-16s %-11s %-12s %-14s %7s %14s\n", "entry", "op",
                     "kernel", "isa", "types", "tile", "threads",
                     "min_par_macs");
  module.walk([&](mlir::func::FuncOp fn) {
    auto entry = fn->getAttrOfType<mlir::StringAttr>("hyc.entry");
    if (!entry)
      return;
    fn.walk([&](mlir::Operation *op) {
      auto c = op->getAttrOfType<cpu::LoweringConfigAttr>(cpu::kLoweringConfigName);
      if (!c)
        return;
      std::string tile;
      for (int64_t t : c.getTile() ? c.getTile().asArrayRef() : llvm::ArrayRef<int64_t>())
        tile += (tile.empty() ? "" : "x") + std::to_string(t);
      std::string minMacs =
          c.getKernel() == "brgemm" ? std::to_string(c.getParallelMinMacs()) : "-";
      if (c.getParallelMinMacs() == INT64_MAX)
        minMacs = "never";
      os << llvm::format("%-8s %-22s %-16s %-11s %-12s %-14s %7lld %14s\n",
                         entry.getValue().str().c_str(),
                         op->getName().getStringRef().str().c_str(),
                         c.getKernel().str().c_str(),
                         c.getIsa() ? c.getIsa().getValue().str().c_str() : "-",
                         c.getTypes() ? c.getTypes().getValue().str().c_str() : "-",
                         tile.empty() ? "-" : tile.c_str(),
                         static_cast<long long>(c.getThreads()), minMacs.c_str());
    });
  });
  return out;
}

} // namespace hyc::compiler
