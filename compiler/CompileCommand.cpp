//===- CompileCommand.cpp - `hyc compile`: checkpoint -> artifact ---------===//
//
// Phases (each printable with --emit=mlir --compile-to=<phase>):
//   import    checkpoint -> hyc IR (@extend, @decode) at the requested bounds
//   global    graph-level passes (quantize policy, fusions)
//   strategy  every compute op carries its #hyc_cpu.lowering_config and
//             every tensor its place in memory
//   kernel    hyc_kernel ops: planned buffers and microkernel calls
//   llvm      LLVM dialect (compiler/Pipeline.h)
// then LLVM IR -> object -> model.so (+ weights.bin, manifest.json, tokenizer).
//
// runCompileCommand is the command's steps in order (options, targets,
// calibration, import, each variant's pipeline, the artifact); each step is
// a function of its own below. The options are declared in CompileOptions.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompileCommand.h"

#include "compiler/ArtifactWriter.h"
#include "compiler/Calibration.h"
#include "compiler/CompileIdentity.h"
#include "compiler/CompileOptions.h"
#include "compiler/KernelEmitter.h"
#include "compiler/Linker.h"
#include "compiler/ObjectEmitter.h"
#include "compiler/Pipeline.h"
#include "compiler/QuantChoice.h"
#include "compiler/ServingBounds.h"
#include "compiler/ShardedWeights.h"
#include "compiler/SmoothedWeights.h"
#include "compiler/Targets.h"
#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_cpu/HycCpuDialect.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"
#include "hyrt/artifact/artifact.h"
#include "models/checkpoint/model_spec.h"
#include "models/io/mapped_file.h"
#include "models/ir/GraphBuilder.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace hyc::compiler {

namespace {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

int fail(const std::string &message) {
  std::fprintf(stderr, "hyc compile: error: %s\n", message.c_str());
  return 1;
}

/// Usage errors (exit 2) as `hyc compile: MESSAGE`, with the usage text
/// when the command line itself is malformed; refused requests as errors.
int reportRefusedOptions(const OptionError &refused) {
  if (refused.exitCode == 1)
    return fail(refused.message);
  std::fprintf(stderr, "hyc compile: %s\n%s", refused.message.c_str(),
               refused.showUsage ? compileUsage().c_str() : "");
  return refused.exitCode;
}

bool writeFile(const std::string &path, const std::string &data, std::string &error) {
  if (path == "-") {
    std::fwrite(data.data(), 1, data.size(), stdout);
    return true;
  }
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), data.size());
  if (!out) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

/// Writes the command's one output file (or stdout for "-"): its exit code.
int writeOutput(const std::string &path, const std::string &data) {
  std::string error;
  return writeFile(path, data, error) ? 0 : fail(error);
}

std::string printModule(mlir::ModuleOp module) {
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  return s;
}

void registerDialects(mlir::MLIRContext &ctx) {
  mlir::DialectRegistry registry;
  registry.insert<hyc::HycDialect, hyc::kernel::HycKernelDialect, hyc::cpu::HycCpuDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect, mlir::LLVM::LLVMDialect>();
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
}

/// A FIFO or device given as an input file would block or never end.
bool regularOrMissing(const std::string &path, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode))
    return true;
  error = path + ": is " + io::non_regular_kind(st.st_mode) + ", expected a regular file";
  return false;
}

//===----------------------------------------------------------------------===//
// Before the model: targets, calibration, tensor-parallel ranks
//===----------------------------------------------------------------------===//

/// The ISA variants --target names, lowest first. --emit=mlir|llvm|obj
/// writes one file: it keeps the best variant alone.
bool resolveVariants(const CompileOptions &options, std::vector<IsaVariant> &variants,
                     std::string &error) {
  if (!parseTargets(options.target, options.quant, variants, error))
    return false;
  if (variants.size() > 1 && !options.emitsArtifact()) {
    std::fprintf(stderr,
                 "hyc compile: note: --emit=%s shows one variant: %s, the best "
                 "of --target %s (name one variant to see another)\n",
                 options.emit.c_str(), variants.back().name.c_str(),
                 options.target.c_str());
    variants.erase(variants.begin(), variants.end() - 1);
  }
  const bool kernels = variants.front().name != "reference";
  if (options.bf16Activations && (kernels || options.quant != "bf16")) {
    error = "--bf16-activations applies to --target=reference --quant=bf16 only (got "
            "--target=" +
            options.target + " --quant=" + options.quant + ")";
    return false;
  }
  return true;
}

/// The maxima --calibration names (nothing without it). Names and widths
/// are checked against the groups later; a checkpoint of the same shape
/// under another path is worth a word, not a failure (it may be a copy).
bool readCalibrationFor(const CompileOptions &options, Calibration &calibration,
                        std::string &error) {
  if (!options.isGiven("calibration"))
    return true;
  if (!readCalibration(options.calibration, calibration, error))
    return false;
  if (calibration.checkpoint.empty())
    return true;
  char *a = ::realpath(calibration.checkpoint.c_str(), nullptr);
  char *b = ::realpath(options.input.c_str(), nullptr);
  if (!a || !b || std::strcmp(a, b) != 0)
    std::fprintf(stderr, "hyc compile: note: %s was calibrated on %s, not on %s\n",
                 options.calibration.c_str(), calibration.checkpoint.c_str(),
                 options.input.c_str());
  std::free(a);
  std::free(b);
  return true;
}

/// --tp N --emit=lib without --tp-rank: every rank's artifact, rank 0's at
/// OUT and rank r's at OUT/ranks/r (the runtime starts one process per rank).
bool compilesEveryRank(const CompileOptions &options) {
  return options.tp > 1 && options.emit == "lib" && !options.isGiven("tp-rank");
}

/// Compiles each rank as `hyc compile ... --tp-rank R -o DIR` would.
int compileEveryRank(int argc, char **argv, const CompileOptions &options,
                     const CompileProgress &progress) {
  const std::string &output = options.output;
  std::error_code ec; // as `mkdir -p`: missing parents too
  std::filesystem::create_directories(output + "/ranks", ec);
  // Rank 0 last: a compile that fails part-way leaves no new rank 0 beside
  // old rank directories (the runtime also checks each rank's manifest
  // against rank 0's).
  for (int64_t r = options.tp - 1; r >= 0; --r) {
    std::vector<std::string> rankArgs(argv, argv + argc);
    rankArgs.insert(rankArgs.end(),
                    {"--tp-rank", std::to_string(r), "-o",
                     r == 0 ? output : output + "/ranks/" + std::to_string(r)});
    std::vector<char *> rankArgv;
    for (std::string &a : rankArgs)
      rankArgv.push_back(a.data());
    rankArgv.push_back(nullptr);
    if (progress)
      progress("rank " + std::to_string(r) + " of " + std::to_string(options.tp));
    if (int rc = runCompileCommand(int(rankArgs.size()), rankArgv.data(), progress);
        rc != 0)
      return rc;
  }
  if (progress) // the caller reports the result
    return 0;
  std::fprintf(stderr,
               "hyc compile: wrote %s: %lld tensor-parallel ranks (rank 0 here, "
               "ranks 1..%lld in %s/ranks/)\n",
               output.c_str(), static_cast<long long>(options.tp),
               static_cast<long long>(options.tp - 1), output.c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// The model: a checkpoint or a .mlir file as hyc IR
//===----------------------------------------------------------------------===//

/// The hyc IR every variant starts from, and the checkpoint it reads.
struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<models::Checkpoint> checkpoint; ///< none for a .mlir input
  int64_t maxSeqLen = 0; ///< --max-seq-len, or defaultMaxSeqLen()
  int64_t context = 0;   ///< the model's positions
};

bool parseMlirInput(mlir::MLIRContext &ctx, const std::string &input,
                    ImportedModel &model, std::string &error) {
  if (!regularOrMissing(input, error))
    return false;
  llvm::SourceMgr sourceMgr;
  auto file = mlir::openInputFile(input, &error);
  if (!file)
    return false;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  model.module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &ctx);
  if (!model.module)
    error = "could not parse " + input;
  return bool(model.module);
}

/// Bytes a weight element takes under --quant (scales left out).
int64_t quantBytes(const std::string &quant) {
  return quant == "f32" ? 4 : quant == "bf16" ? 2 : 1;
}

/// Bytes a KV cache element takes: --kv-cache, or what auto picks (bf16 on
/// kernel targets, f32 on the reference one).
double kvElementBytes(const CompileOptions &options) {
  const std::string &kv = options.kvCache;
  if (kv == "f32")
    return 4;
  if (kv == "int8")
    return 1;
  if (kv == "bf16")
    return 2;
  return options.target == "reference" ? 4 : 2;
}

/// Bytes of KV cache one position takes over every layer (MLA: the latent
/// and the rope key; else K and V of every kv head).
int64_t kvBytesPerToken(const models::ModelSpec &s, double elementBytes) {
  const int64_t perLayer = s.mla ? s.mla->kv_lora_rank + s.mla->qk_rope_head_dim
                                 : 2 * s.num_kv_heads * s.head_dim;
  return int64_t(double(s.num_layers * perLayer) * elementBytes);
}

/// Loads the checkpoint and builds its hyc IR at the requested bounds.
bool importCheckpoint(mlir::MLIRContext &ctx, const CompileOptions &options,
                      ImportedModel &model, std::string &error) {
  models::LoadOptions loadOptions;
  loadOptions.tokenizer_path = options.tokenizer;
  auto loaded = models::load_checkpoint(options.input, loadOptions);
  if (!loaded.ok()) {
    error = loaded.error();
    return false;
  }
  models::Checkpoint &checkpoint = model.checkpoint.emplace(std::move(loaded.value()));
  // What the loader skipped or ignored changes what the artifact does: the
  // user hears about it.
  for (const std::string &warning : checkpoint.warnings)
    std::fprintf(stderr, "hyc compile: warning: %s\n", warning.c_str());
  const models::ModelSpec &spec = checkpoint.spec;
  const int64_t context =
      spec.max_position_embeddings > 0 ? spec.max_position_embeddings : 2048;
  model.context = context;
  if (!options.maxSeqLen) {
    int64_t elements = 0;
    for (const models::WeightInfo &w : checkpoint.weights->weights()) {
      int64_t n = 1;
      for (int64_t d : w.shape)
        n *= std::max<int64_t>(d, 1); // shapes were checked at load
      elements += n;
    }
    model.maxSeqLen =
        defaultMaxSeqLen(context, elements * quantBytes(options.quant),
                         kvBytesPerToken(spec, kvElementBytes(options)), options.maxSeqs,
                         machineMemoryBytes());
  } else {
    model.maxSeqLen = options.maxSeqLen;
  }
  if (model.maxSeqLen > context) {
    error = "--max-seq-len " + std::to_string(model.maxSeqLen) +
            " exceeds the model's context of " + std::to_string(context) +
            " positions (" + options.input + ")";
    return false;
  }
  models::ShapeBounds bounds{model.maxSeqLen, options.maxBatchTokens, options.maxSeqs};
  const std::string weightFile =
      checkpoint.format == "hf" ? "model.safetensors" : options.input;
  auto built = models::buildModelModule(ctx, spec, bounds, weightFile, error);
  if (failed(built))
    return false;
  model.module = std::move(*built);
  return true;
}

bool importModel(mlir::MLIRContext &ctx, const CompileOptions &options,
                 ImportedModel &model, std::string &error) {
  return options.isMlirInput() ? parseMlirInput(ctx, options.input, model, error)
                               : importCheckpoint(ctx, options, model, error);
}

//===----------------------------------------------------------------------===//
// Each variant: the pipeline, then its file or its part of the artifact
//===----------------------------------------------------------------------===//

PipelineOptions pipelineOptionsFor(const CompileOptions &options) {
  PipelineOptions pipeline;
  pipeline.quant = options.quant;
  pipeline.bf16Activations = options.bf16Activations;
  pipeline.threads = options.threads;
  pipeline.kvCache = options.kvCache;
  pipeline.quantLmHead = options.quantLmHead;
  pipeline.tpSize = options.tp;
  pipeline.tpRank = options.tpRank;
  pipeline.epSize = options.ep;
  pipeline.epExchange = options.epExchange;
  pipeline.observeActivations = options.calibrationBuild;
  pipeline.allowReference = options.allowReference;
  if (options.isGiven("calibration"))
    pipeline.smoothAlpha = options.smoothAlpha;
  pipeline.disabled.insert(options.disabledPasses.begin(), options.disabledPasses.end());
  pipeline.keepBf16 = options.keepBf16;
  pipeline.keepInt8 = options.keepInt8;
  pipeline.keepF32 = options.keepF32;
  return pipeline;
}

/// A variant's library, linked once weights.bin is written: the library
/// carries the table's checksums in its description.
struct PendingLink {
  std::string stem;
  std::vector<std::string> inputs; ///< the model object (+ kernels' assembly)
  bool kernels;
};

/// What the variants add up to. Every variant compiles its own copy of the
/// imported module; the weights they read are stored once per (name,
/// layout, shape).
struct ArtifactPlan {
  std::vector<PlannedWeight> weights;
  std::map<std::string, int64_t> weightIndex; ///< "name|layout|dims" -> weights
  ArtifactInfo info;
  std::vector<PendingLink> links;        ///< per variant, in variant order
  std::vector<SmoothGroup> smoothGroups; ///< with --calibration
};

/// What every step after the import reads and adds to.
struct Compilation {
  const CompileOptions &options;
  mlir::MLIRContext &ctx;
  ImportedModel &model;
  const Calibration &calibration;
  const std::vector<IsaVariant> &variants;
  PipelineOptions pipeline;
  ArtifactPlan plan;

  bool isFirst(const IsaVariant &v) const { return &v == &variants.front(); }
};

/// Runs the phases after `done` up to `last` on `module`.
bool runPhases(Compilation &c, mlir::ModuleOp module, Phase done, Phase last,
               std::string &error) {
  mlir::PassManager pm(&c.ctx);
  if (c.options.printIrAfterAll)
    pm.enableIRPrinting([](mlir::Pass *, mlir::Operation *) { return false; },
                        [](mlir::Pass *, mlir::Operation *) { return true; },
                        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  if (!addPipeline(pm, c.pipeline, done, last, error))
    return false;
  if (mlir::succeeded(pm.run(module)))
    return true;
  error = "compilation failed (see the diagnostics above)";
  return false;
}

/// The SmoothQuant groups are the same in every variant: they are matched
/// to the calibration once, before anything is linked or written.
bool matchSmoothGroups(Compilation &c, mlir::ModuleOp module, std::string &error) {
  if (!c.options.isGiven("calibration") || !module->hasAttr("hyc.smooth_groups"))
    return true;
  c.plan.smoothGroups = smoothGroupsOf(module);
  if (!matchCalibration(c.plan.smoothGroups, c.calibration, *c.model.checkpoint->weights,
                        error))
    return false;
  std::fprintf(stderr, "hyc compile: SmoothQuant on %zu norm -> GEMM groups from %s\n",
               c.plan.smoothGroups.size(), c.options.calibration.c_str());
  return true;
}

/// A tensor-parallel rank reads its part of each split tensor (the shard
/// pass's `hyc.tensor_parallel.shards`), once for every variant.
bool shardCheckpointForRank(Compilation &c, mlir::ModuleOp module, std::string &error) {
  if (c.options.tp <= 1 || !c.model.checkpoint)
    return true;
  auto tpAttr = module->getAttrOfType<mlir::DictionaryAttr>("hyc.tensor_parallel");
  auto shards = tpAttr ? tpAttr.getAs<mlir::DictionaryAttr>("shards") : nullptr;
  if (!shards) {
    error = "hyc-global-shard left no hyc.tensor_parallel.shards";
    return false;
  }
  // A dim (rank r of tp equal parts), or [dim, parts, index, whole].
  std::map<std::string, ShardSpec> splits;
  for (mlir::NamedAttribute a : shards) {
    ShardSpec spec{0, c.options.tp, c.options.tpRank, 0};
    if (auto dim = llvm::dyn_cast<mlir::IntegerAttr>(a.getValue()))
      spec.dim = dim.getInt();
    else if (auto v = llvm::dyn_cast<mlir::DenseI64ArrayAttr>(a.getValue());
             v && v.size() == 4)
      spec = {v[0], v[1], v[2], v[3]};
    else {
      error = "hyc.tensor_parallel.shards: " + a.getName().str() +
              " is neither a dim nor [dim, parts, index, whole]";
      return false;
    }
    splits[a.getName().str()] = spec;
  }
  models::Checkpoint &checkpoint = *c.model.checkpoint;
  checkpoint.weights = shardWeights(std::move(checkpoint.weights), splits, error);
  if (!checkpoint.weights)
    return false;
  c.plan.info.tpRank = c.options.tpRank;
  c.plan.info.tpSize = c.options.tp;
  if (auto bounds = module->getAttrOfType<mlir::DictionaryAttr>("hyc.step_bounds"))
    if (auto heads = bounds.getAs<mlir::IntegerAttr>("kv_num_kv_heads"))
      c.plan.info.kvCacheHeads = heads.getInt();
  return true;
}

/// Runs the pipeline on one variant's module, as far as --emit needs: up
/// to the strategy phase, then the decisions taken once for all variants
/// (SmoothQuant groups, this rank's weights) and --print-schedule, then on.
bool lowerVariant(Compilation &c, const IsaVariant &variant, mlir::ModuleOp module,
                  std::string &error) {
  module->setAttr("hyc.variant", mlir::StringAttr::get(&c.ctx, variant.name));
  c.pipeline.target = variant.name;
  const std::string label = c.variants.size() > 1 ? variant.name + ": " : "";
  const Phase runTo = c.options.emit == "mlir" ? c.options.lastPhase : Phase::Llvm;
  const Phase strategy = std::min(runTo, Phase::Strategy);
  if (!runPhases(c, module, Phase::Import, strategy, error)) {
    error = label + error;
    return false;
  }
  if (c.isFirst(variant) &&
      (!matchSmoothGroups(c, module, error) || !shardCheckpointForRank(c, module, error)))
    return false;
  if (c.options.printSchedule) {
    if (c.variants.size() > 1)
      std::fprintf(stderr, "variant %s:\n", variant.name.c_str());
    std::fputs(scheduleTable(module).c_str(), stderr);
  }
  if (runTo > strategy && !runPhases(c, module, strategy, runTo, error)) {
    error = label + error;
    return false;
  }
  return true;
}

/// --emit=mlir|llvm|obj: the one variant's IR, LLVM IR or object.
int emitSingleFile(mlir::ModuleOp module, const IsaVariant &variant,
                   const CompileOptions &options) {
  const std::string &output = options.output;
  if (options.emit == "mlir")
    return writeOutput(output, printModule(module));
  std::string code, error;
  if (!emitLLVM(module, CodegenTarget(), options.emit != "llvm", code, error))
    return fail(error);
  if (options.emit == "llvm" || variant.name == "reference")
    return writeOutput(output, code);
  // The model's object and its generated kernels, partially linked:
  // objdump shows every kernel the artifact would embed.
  std::set<std::string> features;
  const std::string object = output + ".model.o", kernelsAsm = output + ".kernels.s";
  const bool ok = writeFile(object, code, error) &&
                  emitKernels(module, kernelsAsm, features, error) &&
                  linkRelocatable({object, kernelsAsm}, output, error);
  std::remove(object.c_str());
  std::remove(kernelsAsm.c_str());
  return ok ? 0 : fail(error);
}

/// Writes the variant's object (and its kernels' assembly) into the
/// artifact directory and queues its library for linking.
bool writeVariantObjects(Compilation &c, const IsaVariant &variant, mlir::ModuleOp module,
                         VariantInfo &out, std::string &error) {
  std::string code;
  if (!emitLLVM(module, CodegenTarget(), /*emitObject=*/true, code, error))
    return false;
  const std::string &output = c.options.output;
  std::error_code ec; // as `mkdir -p`: missing parents too
  std::filesystem::create_directories(output, ec);
  struct stat st;
  if (::stat(output.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = "cannot create artifact directory " + output + (ec ? ": " + ec.message() : "");
    return false;
  }
  const bool kernels = variant.name != "reference";
  const std::string stem =
      c.variants.size() > 1 ? "model." + variant.name : std::string("model");
  const std::string object = output + "/" + stem + ".o";
  if (!writeFile(object, code, error))
    return false;
  std::vector<std::string> linkInputs = {object};
  std::set<std::string> features = {"sse2"};
  const std::string kernelsAsm = output + "/" + stem + ".kernels.s";
  if (kernels) {
    if (!emitKernels(module, kernelsAsm, features, error))
      return false;
    linkInputs.push_back(kernelsAsm);
  }
  c.plan.links.push_back({stem, linkInputs, kernels});
  out.library = stem + ".so";
  out.cpuFeatures.assign(features.begin(), features.end());
  return true;
}

/// The variant's weight table: indices into the artifact's weights, each
/// (name, layout, shape) stored once for all variants.
void planVariantWeights(ArtifactPlan &plan, mlir::ModuleOp module, VariantInfo &out) {
  auto names = module->getAttrOfType<mlir::ArrayAttr>("hyc.weights");
  auto types = module->getAttrOfType<mlir::ArrayAttr>("hyc.weight_types");
  auto layouts = module->getAttrOfType<mlir::ArrayAttr>("hyc.weight_layouts");
  for (auto [n, t, l] : llvm::zip(names, types, layouts)) {
    auto type =
        llvm::cast<mlir::RankedTensorType>(llvm::cast<mlir::TypeAttr>(t).getValue());
    PlannedWeight w{llvm::cast<mlir::StringAttr>(n).str(),
                    std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
                    llvm::cast<mlir::StringAttr>(l).str()};
    std::string key = w.name + "|" + w.layout;
    for (int64_t d : w.shape)
      key += "|" + std::to_string(d);
    auto [it, inserted] = plan.weightIndex.emplace(key, int64_t(plan.weights.size()));
    if (inserted)
      plan.weights.push_back(std::move(w));
    out.weights.push_back(it->second);
  }
}

/// Adds a lowered variant to the artifact: its objects, its weight table,
/// and its KV cache type, which every variant shares with the first.
bool addVariantToArtifact(Compilation &c, const IsaVariant &variant,
                          mlir::ModuleOp module, std::string &error) {
  VariantInfo out;
  out.name = variant.name;
  if (!writeVariantObjects(c, variant, module, out, error))
    return false;
  if (c.options.emit == "exe" && c.isFirst(variant))
    c.plan.info.executableVariant = variant.name;
  out.arenaBytes = module->getAttrOfType<mlir::IntegerAttr>("hyc.arena_bytes").getInt();
  planVariantWeights(c.plan, module, out);
  std::string dtype = "f32";
  if (auto d = module->getAttrOfType<mlir::StringAttr>(hyc::cpu::kKvCacheDtypeName))
    dtype = d.getValue().str();
  ArtifactInfo &info = c.plan.info;
  if (c.isFirst(variant)) {
    info.kvCacheDtype = dtype;
    c.pipeline.kvCache = dtype;
  } else if (dtype != info.kvCacheDtype) {
    error = "variant " + variant.name + " chose a " + dtype + " KV cache, variant " +
            c.variants.front().name + " a " + info.kvCacheDtype + " one";
    return false;
  }
  info.variants.push_back(std::move(out));
  return true;
}

//===----------------------------------------------------------------------===//
// The artifact: weights.bin, manifest.json, the linked libraries
//===----------------------------------------------------------------------===//

/// Links each variant's library, and with `exe` the executable (the first,
/// lowest variant: it runs wherever the artifact runs; on a host with a
/// better one it loads that library), each with its description
/// (hyc_artifact_desc_v0) built from the manifest just written, so the
/// runtime can tell the library belongs to it.
bool linkVariants(const std::string &output, const std::vector<PendingLink> &links,
                  bool exe, std::string &error) {
  const std::string manifestPath = output + "/manifest.json";
  std::ifstream in(manifestPath);
  std::stringstream text;
  text << in.rdbuf();
  hyrt::Manifest manifest;
  if (hyrt::Status st = hyrt::parse_manifest(text.str(), manifestPath, &manifest);
      !st.ok()) {
    error = "internal error: " + st.message();
    return false;
  }
  for (size_t v = 0; v < links.size(); ++v) {
    const PendingLink &l = links[v];
    const std::string descAsm = output + "/" + l.stem + ".desc.s";
    std::vector<std::string> inputs = l.inputs;
    inputs.push_back(descAsm);
    if (!writeDescriptionAsm(descAsm,
                             hyrt::description_json(hyrt::describe_variant(manifest, v)),
                             error) ||
        !linkSharedLibrary(inputs, output + "/" + l.stem + ".so", l.kernels, error) ||
        (exe && v == 0 && !linkExecutable(inputs, output + "/model", l.kernels, error)))
      return false;
    for (const std::string &f : inputs)
      std::remove(f.c_str());
  }
  return true;
}

/// weights.bin (smoothed with --calibration), manifest.json and tokenizer,
/// then the variants' libraries linked against them.
bool writeArtifact(Compilation &c, std::string &error) {
  ArtifactInfo &info = c.plan.info;
  info.target = c.options.target;
  info.maxSeqLen = c.model.maxSeqLen;
  info.maxBatchTokens = c.options.maxBatchTokens;
  info.maxSeqs = c.options.maxSeqs;
  info.source = c.options.input;
  if (info.tpSize > 1)
    info.compileId = compileIdentity(c.options);
  models::Checkpoint &checkpoint = *c.model.checkpoint;
  if (!c.plan.smoothGroups.empty()) {
    checkpoint.weights =
        smoothWeights(std::move(checkpoint.weights), c.plan.smoothGroups, error);
    if (!checkpoint.weights)
      return false;
  }
  return writeArtifactFiles(c.options.output, checkpoint, c.plan.weights, info, error) &&
         linkVariants(c.options.output, c.plan.links, c.options.emit == "exe", error);
}

/// Bytes of the regular files under `dir`.
int64_t directoryBytes(const std::string &dir) {
  std::error_code ec;
  int64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec))
      total += int64_t(it->file_size(ec));
  return total;
}

/// Matrices the checkpoint stores as codes hyc keeps but this rank's part
/// re-quantizes (a tensor-parallel split along K that cuts their scale
/// blocks: hyc-global-quantize-policy's storedCodesOf).
int64_t requantizedParts(const Compilation &c) {
  std::map<std::string, std::string> stored; // tensor -> format
  for (const std::string &entry : c.pipeline.storedCodes)
    stored[entry.substr(0, entry.rfind('='))] = entry.substr(entry.rfind('=') + 1);
  int64_t count = 0;
  for (const PlannedWeight &w : c.plan.weights) {
    const size_t hash = w.name.find('#');
    if (hash == std::string::npos)
      continue;
    std::string tensor = w.name.substr(0, hash);
    const std::string derivation = w.name.substr(hash + 1);
    if (size_t at = tensor.find("experts.*+"); at != std::string::npos)
      tensor.erase(at + 9, tensor.find('.', at + 9) - at - 9);
    auto it = stored.find(tensor);
    count += it != stored.end() && derivation == "q8g32" && it->second != "q8" &&
             it->second != "q4";
  }
  return count;
}

/// What the compile chose, a line each (the defaults are what most users
/// get, so each says what it is), then what it wrote.
void printSummary(const CompileOptions &options, const Compilation &c,
                  const std::string &quantLine) {
  const ArtifactPlan &plan = c.plan;
  std::string names;
  for (const VariantInfo &v : plan.info.variants)
    names += (names.empty() ? "" : ", ") + v.name;
  const bool tied = c.model.checkpoint && c.model.checkpoint->spec.tie_word_embeddings;
  const bool keepF32Head = std::any_of(options.keepF32.begin(), options.keepF32.end(),
                                       [](const std::string &k) { return k == "lm_head"; });
  std::string head =
      options.quant == "f32" || keepF32Head ? "f32"
      : options.quantLmHead == "int8" && integerQuant(options.quant) ? "int8"
                                                                     : "bf16";
  std::vector<std::string> kept = options.keepF32;
  kept.insert(kept.end(), options.keepBf16.begin(), options.keepBf16.end());
  std::string precision = quantLine.empty()
                              ? "precision: " + options.quant + " (--quant " + options.quant + ")"
                              : quantLine;
  if (const int64_t partial = options.quant == "w4a8" && c.model.checkpoint
                                  ? partialGroupMatrices(*c.model.checkpoint->weights, kept)
                                  : 0)
    precision += "; " + std::to_string(partial) + " matri" + (partial == 1 ? "x" : "ces") +
                 " whose K is not whole groups of 32 keep" + (partial == 1 ? "s" : "") +
                 " int8 per channel";
  if (const int64_t cut = options.tp > 1 ? requantizedParts(c) : 0)
    precision += "; " + std::to_string(cut) + " matri" + (cut == 1 ? "x" : "ces") +
                 " whose rank part cuts the stored scale blocks (a K split of " +
                 std::to_string(options.tp) + " not in whole super-blocks) " +
                 (cut == 1 ? "is" : "are") +
                 " re-quantized from " + (cut == 1 ? "its" : "their") +
                 " exact values to 8-bit codes in groups of 32";
  std::fprintf(stderr, "hyc compile: %s\n", precision.c_str());
  std::string why =
      head == "int8" && !options.isGiven("quant-lm-head")
          ? " (--quant " + options.quant +
                ": per-channel int8; --keep-bf16 lm_head keeps it bf16)"
          : "";
  // A head the checkpoint stores as codes hyc keeps (GGUF's Q6_K) stays so.
  const bool bf16Kept = std::any_of(options.keepBf16.begin(), options.keepBf16.end(),
                                    [](const std::string &k) { return k == "lm_head"; });
  for (const std::string &entry : c.pipeline.storedCodes)
    if (head != "f32" && !bf16Kept &&
        (entry.rfind("lm_head.weight=", 0) == 0 ||
         (tied && entry.rfind("model.embed_tokens.weight=", 0) == 0))) {
      head = entry.substr(entry.find('=') + 1) + " codes";
      why = " (as the checkpoint stores it)";
    }
  std::fprintf(stderr, "hyc compile: output head: %s%s%s\n", head.c_str(), why.c_str(),
               !tied ? "" : head == "f32" ? " (tied: reads the embedding table)"
                                          : " (tied: its own copy of the embedding table)");
  std::fprintf(stderr, "hyc compile: KV cache: %s%s\n", plan.info.kvCacheDtype.c_str(),
               options.isGiven("kv-cache")          ? ""
               : plan.info.kvCacheDtype == "bf16" ? " (--kv-cache auto; int8: half the memory, "
                                                     "faster long prompts on AVX-512 VNNI)"
                                                   : " (--kv-cache auto)");
  std::fprintf(stderr, "hyc compile: variants: %s (the loader runs the best this CPU has)\n",
               names.c_str());
  const int64_t seqLen = c.model.maxSeqLen;
  std::fprintf(stderr,
               "hyc compile: bounds: max_seq_len %lld (%s), max_batch_tokens %lld, "
               "max_seqs %lld\n",
               static_cast<long long>(seqLen),
               (options.maxSeqLen ? std::string("--max-seq-len")
                : seqLen == c.model.context ? std::string("the model's context")
                : seqLen == std::min<int64_t>(c.model.context, 8192)
                    ? "the model's context " + std::to_string(c.model.context) +
                          ", capped at 8192"
                    : "the model's context " + std::to_string(c.model.context) +
                          ", halved to fit 80% of this machine's memory")
                   .c_str(),
               static_cast<long long>(options.maxBatchTokens),
               static_cast<long long>(options.maxSeqs));
  const double weights = double(directoryBytes(options.output));
  int64_t arena = 0;
  for (const VariantInfo &v : plan.info.variants)
    arena = std::max(arena, v.arenaBytes);
  if (c.model.checkpoint) {
    const std::string &kv = plan.info.kvCacheDtype;
    const double kvBytes =
        double(options.maxSeqs) * double(seqLen) *
        double(kvBytesPerToken(c.model.checkpoint->spec, kv == "f32" ? 4 : kv == "int8" ? 1 : 2)) /
        double(std::max<int64_t>(1, options.tp));
    std::fprintf(stderr,
                 "hyc compile: memory at bounds: %s artifact + %s KV cache (%lld sequences x "
                 "%lld positions) + %s arena = %s (this machine: %s)\n",
                 humanBytes(weights).c_str(), humanBytes(kvBytes).c_str(),
                 static_cast<long long>(options.maxSeqs), static_cast<long long>(seqLen),
                 humanBytes(double(arena)).c_str(),
                 humanBytes(weights + kvBytes + double(arena)).c_str(),
                 humanBytes(double(machineMemoryBytes())).c_str());
  }
  std::fprintf(stderr, "hyc compile: wrote %s (%zu weights)\n", options.output.c_str(),
               plan.weights.size());
}

} // namespace

int runCompileCommand(int argc, char **argv, const CompileProgress &progress) {
  CompileOptions options;
  if (OptionError refused; !parseCompileOptions(argc, argv, options, refused))
    return reportRefusedOptions(refused);
  if (options.help) {
    std::fputs(compileUsage().c_str(), stdout);
    return 0;
  }
  std::string error, quantLine;
  // The command line first (a --target name), then the checkpoint auto reads.
  if (std::vector<IsaVariant> names; options.quant == "auto") {
    CompileOptions named = options;
    named.quant = "f32";
    if (!resolveVariants(named, names, error))
      return fail(error);
  }
  if (!resolveAutoQuant(options, &quantLine, error))
    return fail(error);
  // Integer weights: the head (the largest single read of a decode step)
  // is per-channel int8 unless asked otherwise; bf16 would read twice the
  // bytes of an int8 layer of its size (3.5x a 4-bit one). Its perplexity
  // cost on the four real models is within 0.06% (bench/quant/
  // perplexity_head.sh; the bar is 0.5%).
  const bool keepBf16Head = std::any_of(options.keepBf16.begin(), options.keepBf16.end(),
                                        [](const std::string &k) { return k == "lm_head"; });
  if (integerQuant(options.quant) && !options.isGiven("quant-lm-head") && !keepBf16Head)
    options.quantLmHead = "int8";
  if (!checkOptionCombinations(options, error))
    return fail(error);
  std::vector<IsaVariant> variants;
  if (!resolveVariants(options, variants, error))
    return fail(error);
  Calibration calibration;
  if (!readCalibrationFor(options, calibration, error))
    return fail(error);
  if (compilesEveryRank(options))
    return compileEveryRank(argc, argv, options, progress);
  auto step = [&](const std::string &what) {
    if (progress)
      progress(what);
  };

  mlir::MLIRContext ctx;
  registerDialects(ctx);
  ImportedModel model;
  step("importing " + options.input);
  if (!importModel(ctx, options, model, error))
    return fail(error);
  if (options.emit == "mlir" && options.lastPhase == Phase::Import)
    return writeOutput(options.output, printModule(*model.module));
  if (options.printIrAfterAll)
    ctx.disableMultithreading();

  Compilation c{options,       ctx,      model,
                calibration,   variants, pipelineOptionsFor(options),
                ArtifactPlan()};
  // Under integer codes, the weights the checkpoint stores as codes hyc
  // holds exactly keep them (GGUF blocks, AWQ): the policy's entries.
  if ((options.quant == "w4a8" || options.quant == "w8a8-g32") && model.checkpoint)
    c.pipeline.storedCodes = storedCodesEntries(*model.checkpoint->weights);
  for (const IsaVariant &variant : variants) {
    step("variant " + variant.name + " (" + std::to_string(&variant - variants.data() + 1) +
         "/" + std::to_string(variants.size()) + ")");
    mlir::OwningOpRef<mlir::ModuleOp> module =
        variants.size() > 1 ? mlir::OwningOpRef<mlir::ModuleOp>((*model.module).clone())
                            : std::move(model.module);
    if (!lowerVariant(c, variant, *module, error))
      return fail(error);
    if (!options.emitsArtifact())
      return emitSingleFile(*module, variant, options);
    if (!addVariantToArtifact(c, variant, *module, error))
      return fail(error);
  }
  step("writing weights.bin and linking " + std::to_string(variants.size()) +
       (variants.size() == 1 ? " library" : " libraries"));
  if (!writeArtifact(c, error))
    return fail(error);
  // What the compile chose, also under `hyc run CKPT` (its caller then
  // reports the time): the defaults must say what they are.
  if (options.tpRank == 0)
    printSummary(options, c, quantLine);
  return 0;
}

} // namespace hyc::compiler
