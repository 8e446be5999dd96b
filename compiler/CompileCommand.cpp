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
//===----------------------------------------------------------------------===//

#include "compiler/CompileCommand.h"

#include "compiler/Args.h"
#include "compiler/ArtifactWriter.h"
#include "compiler/Calibration.h"
#include "compiler/KernelEmitter.h"
#include "compiler/Linker.h"
#include "compiler/Pipeline.h"
#include "compiler/Targets.h"
#include "compiler/ObjectEmitter.h"
#include "compiler/ShardedWeights.h"
#include "compiler/SmoothedWeights.h"
#include "dialects/hyc/HycOps.h"
#include "hyrt/artifact/artifact.h"
#include "dialects/hyc_cpu/HycCpuDialect.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"
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

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <iostream>
#include <sys/stat.h>

namespace hyc::compiler {

const char *kCompileUsage = R"(usage: hyc compile INPUT -o OUT [options]

INPUT is a GGUF file, a llama2.c .bin, a Hugging Face directory
(config.json + model.safetensors) or a hyc IR .mlir file.

options:
  -o, --output PATH        artifact directory (or file for mlir/llvm/obj)
  --target NAMES           ISA variants to embed (comma-separated; the
                           loader runs the best one the host supports,
                           HYC_ISA=NAME forces one): portable (default:
                           avx2, avx512, and avx512-bf16 / amx where the
                           --quant has kernels for them) | avx2 | avx512 |
                           avx512-bf16 | amx | native (this host's best) |
                           a CPU level or name: x86-64-v3, x86-64-v4,
                           znver4, sapphirerapids, ... (docs/targets.md) |
                           reference (fp32 reference kernels, one variant)
  --quant SCHEME           f32 (default) | bf16 (bf16 weights; fp32 FMA on
                           avx512) | w8a8 (per-channel int8 weights,
                           per-token int8 activations, VNNI) | w8a8-g128
                           (one weight scale per 128 K-elements) | fp8
                           (e4m3 weights, one factor per 128x128 block,
                           weight-only: widened to bf16 in the GEMM; an
                           FP8 checkpoint keeps its own codes); the MoE
                           router and the lm_head stay bf16 (a tied head
                           gets its own bf16 copy of the table). On
                           --target=reference, bf16 and w8a8 are the plain
                           semantics the kernels are tested against
  --bf16-activations       with --target=reference --quant=bf16: round GEMM
                           activations to bf16 too (the semantics of the
                           native avx512-bf16 kernels, to compare with them)
  --quant-lm-head TYPE     with --quant w8a8: bf16 (default) or int8 output
                           head (half the bytes of decode's largest read;
                           a tied head quantizes its own copy)
  --keep-bf16 NAMES        with --quant w8a8: weights whose name contains one
                           of these (comma-separated, e.g. q_proj,k_proj)
                           stay bf16 like the router and lm_head always do
  --keep-f32 NAMES         weights whose name contains one of these stay fp32
                           (e.g. mlp.gate,lm_head for the old behaviour)
  --emit KIND              lib (artifact directory, default) | exe (artifact
                           plus a standalone executable OUT/model) | mlir |
                           llvm | obj
  --compile-to PHASE       with --emit=mlir: import (hyc IR, default) |
                           global (after the graph passes: quantize
                           policy, fusions) | strategy (every op carries
                           its #hyc_cpu.lowering_config and buffer) |
                           kernel (hyc_kernel microkernel calls) | llvm
                           (LLVM dialect; `lower` is an alias)
  --disable-pass NAMES     leave out these graph passes (comma-separated:
                           hyc-global-fuse-gate-up-silu,
                           hyc-global-fuse-activation-quant,
                           hyc-global-fuse-residual-norm,
                           hyc-global-fuse-moe-combine,
                           hyc-global-fuse-kv-append-into-attention), e.g. to compare
                           fused and unfused artifacts
  --threads N              threads the schedule plans for (default 2)
  --tp N                   tensor parallel over N ranks (hyc-global-shard:
                           attention heads and MLP columns split, an
                           all-reduce after o_proj and down); rank 0's
                           artifact in OUT, rank r's in OUT/ranks/r; run
                           with `hyc run|bench|serve` (they start the ranks)
  --tp-rank R              with --tp: compile rank R alone (what --emit=mlir
                           shows; default 0)
  --ep N                   with --tp N: expert parallel over the same ranks
                           (each holds E/N whole experts) instead of every
                           expert's ffn columns split
  --ep-exchange HOW        with --ep: all-to-all (default: each rank sends its
                           own tokens' pairs to the experts' ranks and gets
                           the rows back, a staged all-to-all each way) |
                           all-reduce (every rank routes every token, keeps
                           its experts' pairs, the combines all-reduced)
  --kv-cache TYPE          KV cache elements: auto (default: bf16 on kernel
                           targets when every attention kernel reads bf16,
                           else f32; f32 on --target=reference) | f32 | bf16
                           | int8 (one fp32 scale per token and KV head,
                           dequantized inside the attention kernels)
  --calibration-build      an fp32 artifact that records per-channel max |x|
                           of every quantizable GEMM input (hyc.observe);
                           run it with `hyc calibrate ART --text FILE`
  --calibration FILE       SmoothQuant: the maxima `hyc calibrate` wrote move
                           activation outliers into the weights (factor s
                           per channel, norm weight / s, GEMM columns * s;
                           attention and MLP input norms); exact in fp32
  --smooth-alpha A         with --calibration: migration strength in [0, 1]
                           (default 0.5): s = max|X|^A / max|W|^(1-A)
  --print-schedule         print each op's kernel, tile and threading
  --print-ir-after-all     print the IR after every pass (stderr)
  --max-seq-len N          longest sequence the artifact serves (default:
                           min(2048, model context))
  --max-batch-tokens N     most tokens in one extend step (default 64)
  --max-seqs N             most sequences in one decode step (default 8)
  --tokenizer PATH         llama2.c tokenizer.bin for a .bin checkpoint
)";

namespace {

bool writeFile(const std::string &path, const std::string &data,
               std::string &error) {
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

/// Links each variant's library, and with `exe` the executable (the first,
/// lowest variant: it runs wherever the artifact runs; on a host with a
/// better one it loads that library), each with its description
/// (hyc_artifact_desc_v0) built from the manifest just written, so the
/// runtime can tell the library belongs to it.
template <typename Link>
bool linkVariants(const std::string &output, const std::vector<Link> &links, bool exe,
                  std::string &error) {
  const std::string manifestPath = output + "/manifest.json";
  std::ifstream in(manifestPath);
  std::stringstream text;
  text << in.rdbuf();
  hyrt::Manifest manifest;
  if (hyrt::Status st = hyrt::parse_manifest(text.str(), manifestPath, &manifest); !st.ok()) {
    error = "internal error: " + st.message();
    return false;
  }
  for (size_t v = 0; v < links.size(); ++v) {
    const Link &l = links[v];
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

int fail(const std::string &message) {
  std::fprintf(stderr, "hyc compile: error: %s\n", message.c_str());
  return 1;
}

// The compile bounds' largest values: a million tokens per extend step,
// 65536 sequences per decode step, 16M positions per sequence. Each is far
// past what a CPU serves and keeps every bound product inside int64.
constexpr int64_t kMaxBatchTokensBound = int64_t(1) << 20;
constexpr int64_t kMaxSeqsBound = int64_t(1) << 16;
constexpr int64_t kMaxSeqLenBound = int64_t(1) << 24;

/// A FIFO or device given as an input file would block or never end.
bool regularOrMissing(const std::string &path, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode))
    return true;
  error = path + ": is " + io::non_regular_kind(st.st_mode) +
          ", expected a regular file";
  return false;
}

} // namespace

int runCompileCommand(int argc, char **argv) {
  cli::Args args({"output", "o", "target", "emit", "compile-to", "max-seq-len",
                  "max-batch-tokens", "max-seqs", "tokenizer", "quant",
                  "disable-pass", "threads", "keep-bf16", "keep-f32", "kv-cache",
                  "quant-lm-head", "calibration", "smooth-alpha", "tp", "tp-rank", "ep",
                  "ep-exchange"},
                 {"help", "bf16-activations", "print-ir-after-all",
                  "print-schedule", "calibration-build"});
  std::string error;
  if (!args.parse(argc, argv, 1, error)) {
    std::fprintf(stderr, "hyc compile: %s\n%s", error.c_str(), kCompileUsage);
    return 2;
  }
  if (args.has("help")) {
    std::fputs(kCompileUsage, stdout);
    return 0;
  }
  if (args.positionals().size() != 1) {
    std::fprintf(stderr, "hyc compile: expected one INPUT, got %zu\n%s",
                 args.positionals().size(), kCompileUsage);
    return 2;
  }
  std::string input = args.positionals()[0];
  std::string output = args.get("o", args.get("output"));
  std::string emit = args.get("emit", "lib");
  std::string phase = args.get("compile-to", "import");
  std::string target = args.get("target", "portable");
  const std::string kvCache = args.get("kv-cache", "auto");
  if (kvCache != "auto" && kvCache != "f32" && kvCache != "bf16" && kvCache != "int8") {
    std::fprintf(stderr, "hyc compile: --kv-cache expects auto|f32|bf16|int8, got '%s'\n",
                 kvCache.c_str());
    return 2;
  }
  if (output.empty()) {
    std::fprintf(stderr, "hyc compile: missing -o OUT\n%s", kCompileUsage);
    return 2;
  }
  if (emit != "lib" && emit != "exe" && emit != "mlir" && emit != "llvm" &&
      emit != "obj") {
    std::fprintf(stderr,
                 "hyc compile: --emit expects lib|exe|mlir|llvm|obj, got '%s'\n",
                 emit.c_str());
    return 2;
  }
  Phase lastPhase;
  if (!parsePhase(phase, lastPhase)) {
    std::fprintf(stderr,
                 "hyc compile: --compile-to expects import|global|strategy|kernel|llvm, "
                 "got '%s'\n",
                 phase.c_str());
    return 2;
  }
  std::string quant = args.get("quant", "f32");
  if (quant != "f32" && quant != "bf16" && quant != "w8a8" && quant != "w8a8-g128" &&
      quant != "fp8")
    return fail("--quant expects f32|bf16|w8a8|w8a8-g128|fp8, got '" + quant + "'");
  std::vector<IsaVariant> variants;
  if (!parseTargets(target, quant, variants, error))
    return fail(error);
  const std::string quantLmHead = args.get("quant-lm-head", "bf16");
  if (quantLmHead != "bf16" && quantLmHead != "int8")
    return fail("--quant-lm-head expects bf16|int8, got '" + quantLmHead + "'");
  if (quantLmHead == "int8" && quant != "w8a8" && quant != "w8a8-g128")
    return fail("--quant-lm-head int8 needs --quant w8a8 (the head's activations are "
                "quantized per token like the other W8A8 layers), got --quant " + quant);
  if (variants.size() > 1 && emit != "lib" && emit != "exe") {
    std::fprintf(stderr, "hyc compile: note: --emit=%s shows one variant: %s, the best "
                 "of --target %s (name one variant to see another)\n",
                 emit.c_str(), variants.back().name.c_str(), target.c_str());
    variants.erase(variants.begin(), variants.end() - 1);
  }
  bool kernels = variants.front().name != "reference";
  bool bf16Activations = args.has("bf16-activations");
  if (bf16Activations && (kernels || quant != "bf16"))
    return fail("--bf16-activations applies to --target=reference --quant=bf16 "
                "only (got --target=" + target + " --quant=" + quant + ")");

  // Calibration: an observing fp32 build, or SmoothQuant from its maxima.
  const bool calibrationBuild = args.has("calibration-build");
  const std::string calibrationPath = args.get("calibration");
  if (calibrationBuild && quant != "f32")
    return fail("--calibration-build records fp32 activations: it needs --quant f32, got "
                "--quant " + quant);
  if (calibrationBuild && args.has("calibration"))
    return fail("--calibration-build observes the model as it is: drop --calibration");
  double smoothAlpha = 0.5;
  if (args.has("smooth-alpha")) {
    const std::string a = args.get("smooth-alpha");
    char *end = nullptr;
    smoothAlpha = std::strtod(a.c_str(), &end);
    if (a.empty() || *end || !(smoothAlpha >= 0 && smoothAlpha <= 1))
      return fail("--smooth-alpha expects a number in [0, 1], got '" + a + "'");
    if (!args.has("calibration"))
      return fail("--smooth-alpha needs --calibration FILE");
  }
  Calibration calibration;
  if (args.has("calibration") && !readCalibration(calibrationPath, calibration, error))
    return fail(error);
  // Names and widths are checked against the groups below; a checkpoint of
  // the same shape under another path is worth a word, not a failure (it
  // may be a copy).
  if (args.has("calibration") && !calibration.checkpoint.empty()) {
    char *a = ::realpath(calibration.checkpoint.c_str(), nullptr);
    char *b = ::realpath(input.c_str(), nullptr);
    if (!a || !b || std::strcmp(a, b) != 0)
      std::fprintf(stderr, "hyc compile: note: %s was calibrated on %s, not on %s\n",
                   calibrationPath.c_str(), calibration.checkpoint.c_str(), input.c_str());
    std::free(a);
    std::free(b);
  }

  int64_t maxSeqLen = 0, maxBatchTokens = 0, maxSeqs = 0;
  if (!args.getInt("max-seq-len", 0, maxSeqLen, error) ||
      !args.getInt("max-batch-tokens", 64, maxBatchTokens, error) ||
      !args.getInt("max-seqs", 8, maxSeqs, error)) {
    std::fprintf(stderr, "hyc compile: %s\n", error.c_str());
    return 2;
  }
  // Bounds far past any host's memory would wrap the arena and KV size
  // arithmetic; positions are int32 in the ABI.
  struct Bound {
    const char *flag;
    int64_t value, max;
    bool given;
  };
  for (const Bound &bound :
       {Bound{"--max-seq-len", maxSeqLen, kMaxSeqLenBound, args.has("max-seq-len")},
        Bound{"--max-batch-tokens", maxBatchTokens, kMaxBatchTokensBound, true},
        Bound{"--max-seqs", maxSeqs, kMaxSeqsBound, true}})
    if (bound.given && (bound.value <= 0 || bound.value > bound.max))
      return fail(std::string(bound.flag) + " expects 1.." +
                  std::to_string(bound.max) + ", got " +
                  std::to_string(bound.value));
  int64_t threads = 2;
  if (!args.getInt("threads", 2, threads, error)) {
    std::fprintf(stderr, "hyc compile: %s\n", error.c_str());
    return 2;
  }
  if (threads < 1 || threads > 4096)
    return fail("--threads must be in [1, 4096], got " + std::to_string(threads));

  // Tensor parallel: every rank's artifact, rank 0's at OUT and rank r's at
  // OUT/ranks/r (the runtime starts one process per rank); --tp-rank R
  // compiles one rank (what each of those compiles is, and what --emit=mlir
  // shows).
  int64_t tp = 1, tpRank = 0, ep = 1;
  if (!args.getInt("tp", 1, tp, error) || !args.getInt("tp-rank", 0, tpRank, error) ||
      !args.getInt("ep", 1, ep, error)) {
    std::fprintf(stderr, "hyc compile: %s\n", error.c_str());
    return 2;
  }
  if (tp < 1 || tp > 64)
    return fail("--tp expects 1..64 ranks, got " + std::to_string(tp));
  if (tpRank < 0 || tpRank >= tp)
    return fail("--tp-rank expects 0.." + std::to_string(tp - 1) + " (--tp " +
                std::to_string(tp) + "), got " + std::to_string(tpRank));
  if (ep != 1 && ep != tp)
    return fail("--ep " + std::to_string(ep) + " expects 1 or the --tp count " +
                std::to_string(tp) + " (experts are placed over the tensor-parallel ranks)");
  const std::string epExchange = args.get("ep-exchange", "all-to-all");
  if (epExchange != "all-to-all" && epExchange != "all-reduce")
    return fail("--ep-exchange expects all-to-all or all-reduce, got '" + epExchange + "'");
  if (args.has("ep-exchange") && ep == 1)
    return fail("--ep-exchange needs --ep N (expert parallel)");
  if (tp > 1 && args.has("calibration"))
    return fail("--calibration with --tp: SmoothQuant factors of split weights are not "
                "supported yet; compile without one of them");
  if (tp > 1 && emit == "exe")
    return fail("--emit=exe with --tp: a standalone executable runs one rank; use "
                "--emit=lib and `hyc run --tp " + std::to_string(tp) + "`");
  if (tp > 1 && emit == "lib" && !args.has("tp-rank")) {
    ::mkdir(output.c_str(), 0755);
    ::mkdir((output + "/ranks").c_str(), 0755);
    // Rank 0 last: a compile that fails part-way leaves no new rank 0
    // beside old rank directories (the runtime also checks each rank's
    // manifest against rank 0's).
    for (int64_t r = tp - 1; r >= 0; --r) {
      std::vector<std::string> rankArgs(argv, argv + argc);
      rankArgs.insert(rankArgs.end(),
                      {"--tp-rank", std::to_string(r), "-o",
                       r == 0 ? output : output + "/ranks/" + std::to_string(r)});
      std::vector<char *> rankArgv;
      for (std::string &a : rankArgs)
        rankArgv.push_back(a.data());
      rankArgv.push_back(nullptr);
      if (int rc = runCompileCommand(int(rankArgs.size()), rankArgv.data()); rc != 0)
        return rc;
    }
    std::fprintf(stderr, "hyc compile: wrote %s: %lld tensor-parallel ranks (rank 0 here, "
                 "ranks 1..%lld in %s/ranks/)\n",
                 output.c_str(), static_cast<long long>(tp), static_cast<long long>(tp - 1),
                 output.c_str());
    return 0;
  }

  mlir::MLIRContext ctx;
  registerDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<models::Checkpoint> checkpoint;

  bool isMlir = input.size() > 5 && input.substr(input.size() - 5) == ".mlir";
  if (isMlir) {
    if (args.has("calibration"))
      return fail("--calibration smooths a checkpoint's weights; a .mlir input has none");
    if (emit == "lib" || emit == "exe")
      return fail("a .mlir input has no weights; use --emit=mlir|llvm|obj");
    if (!regularOrMissing(input, error))
      return fail(error);
    llvm::SourceMgr sourceMgr;
    std::string errorMessage;
    auto file = mlir::openInputFile(input, &errorMessage);
    if (!file)
      return fail(errorMessage);
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &ctx);
    if (!module)
      return fail("could not parse " + input);
  } else {
    models::LoadOptions loadOptions;
    loadOptions.tokenizer_path = args.get("tokenizer");
    auto loaded = models::load_checkpoint(input, loadOptions);
    if (!loaded.ok())
      return fail(loaded.error());
    checkpoint.emplace(std::move(loaded.value()));
    // What the loader skipped or ignored changes what the artifact does:
    // the user hears about it.
    for (const std::string &warning : checkpoint->warnings)
      std::fprintf(stderr, "hyc compile: warning: %s\n", warning.c_str());
    const models::ModelSpec &spec = checkpoint->spec;
    int64_t context = spec.max_position_embeddings > 0
                          ? spec.max_position_embeddings
                          : 2048;
    if (maxSeqLen == 0)
      maxSeqLen = std::min<int64_t>(2048, context);
    if (maxSeqLen > context)
      return fail("--max-seq-len " + std::to_string(maxSeqLen) +
                  " exceeds the model's context of " + std::to_string(context) +
                  " positions (" + input + ")");
    models::ShapeBounds bounds{maxSeqLen, maxBatchTokens, maxSeqs};
    std::string weightFile = checkpoint->format == "hf" ? "model.safetensors"
                                                         : input;
    auto built = models::buildModelModule(ctx, spec, bounds, weightFile, error);
    if (failed(built))
      return fail(error);
    module = std::move(*built);
  }

  if (emit == "mlir" && lastPhase == Phase::Import)
    return writeFile(output, printModule(*module), error) ? 0 : fail(error);

  PipelineOptions pipeline;
  pipeline.quant = quant;
  pipeline.bf16Activations = bf16Activations;
  pipeline.threads = threads;
  pipeline.kvCache = kvCache;
  pipeline.quantLmHead = quantLmHead;
  pipeline.tpSize = tp;
  pipeline.tpRank = tpRank;
  pipeline.epSize = ep;
  pipeline.epExchange = epExchange;
  pipeline.observeActivations = calibrationBuild;
  if (args.has("calibration"))
    pipeline.smoothAlpha = smoothAlpha;
  std::vector<SmoothGroup> smoothGroups;
  auto commaList = [&](const std::string &flag) {
    std::vector<std::string> out;
    const std::string value = args.get(flag);
    for (llvm::StringRef rest = value; !rest.empty();) {
      auto [name, tail] = rest.split(',');
      if (!name.trim().empty())
        out.push_back(name.trim().str());
      rest = tail;
    }
    return out;
  };
  for (const std::string &name : commaList("disable-pass"))
    pipeline.disabled.insert(name);
  pipeline.keepBf16 = commaList("keep-bf16");
  pipeline.keepF32 = commaList("keep-f32");
  if (args.has("print-ir-after-all"))
    ctx.disableMultithreading();

  const bool artifact = emit == "lib" || emit == "exe";
  // Every variant compiles its own copy of the imported module; the
  // weights they read are stored once per (name, layout, shape).
  std::vector<PlannedWeight> weights;
  std::map<std::string, int64_t> weightIndex;
  ArtifactInfo info;
  struct PendingLink {
    std::string stem;
    std::vector<std::string> inputs; ///< the model object (+ kernels' assembly)
    bool kernels;
  };
  std::vector<PendingLink> links; ///< per variant, in variant order
  info.target = target;
  for (const IsaVariant &variant : variants) {
    mlir::OwningOpRef<mlir::ModuleOp> owned =
        variants.size() > 1 ? mlir::OwningOpRef<mlir::ModuleOp>((*module).clone())
                            : std::move(module);
    mlir::ModuleOp vm = *owned;
    vm->setAttr("hyc.variant", mlir::StringAttr::get(&ctx, variant.name));
    pipeline.target = variant.name;
    // Runs the phases after the last one run so far, up to `last`.
    Phase done = Phase::Import;
    auto runPhases = [&](Phase last) {
      mlir::PassManager pm(&ctx);
      if (args.has("print-ir-after-all"))
        pm.enableIRPrinting(
            [](mlir::Pass *, mlir::Operation *) { return false; },
            [](mlir::Pass *, mlir::Operation *) { return true; },
            /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
      if (!addPipeline(pm, pipeline, done, last, error))
        return false;
      done = last;
      if (mlir::succeeded(pm.run(vm)))
        return true;
      error = "compilation failed (see the diagnostics above)";
      return false;
    };
    Phase runTo = emit == "mlir" ? lastPhase : Phase::Llvm;
    if (!runPhases(std::min(runTo, Phase::Strategy)))
      return fail(variants.size() > 1 ? variant.name + ": " + error : error);
    // The groups are the same in every variant: match them to the
    // calibration once, before anything is linked or written.
    if (args.has("calibration") && &variant == &variants.front() &&
        vm->hasAttr("hyc.smooth_groups")) {
      smoothGroups = smoothGroupsOf(vm);
      if (!matchCalibration(smoothGroups, calibration, *checkpoint->weights, error))
        return fail(error);
      std::fprintf(stderr, "hyc compile: SmoothQuant on %zu norm -> GEMM groups from %s\n",
                   smoothGroups.size(), calibrationPath.c_str());
    }
    // A tensor-parallel rank reads its part of each split tensor (the
    // shard pass's `hyc.tensor_parallel.shards`), once for every variant.
    if (tp > 1 && checkpoint && &variant == &variants.front()) {
      auto tpAttr = vm->getAttrOfType<mlir::DictionaryAttr>("hyc.tensor_parallel");
      auto shards = tpAttr ? tpAttr.getAs<mlir::DictionaryAttr>("shards") : nullptr;
      if (!shards)
        return fail("hyc-global-shard left no hyc.tensor_parallel.shards");
      // A dim (rank r of tp equal parts), or [dim, parts, index, whole].
      std::map<std::string, ShardSpec> splits;
      for (mlir::NamedAttribute a : shards) {
        ShardSpec spec{0, tp, tpRank, 0};
        if (auto dim = llvm::dyn_cast<mlir::IntegerAttr>(a.getValue()))
          spec.dim = dim.getInt();
        else if (auto v = llvm::dyn_cast<mlir::DenseI64ArrayAttr>(a.getValue());
                 v && v.size() == 4)
          spec = {v[0], v[1], v[2], v[3]};
        else
          return fail("hyc.tensor_parallel.shards: " + a.getName().str() +
                      " is neither a dim nor [dim, parts, index, whole]");
        splits[a.getName().str()] = spec;
      }
      checkpoint->weights = shardWeights(std::move(checkpoint->weights), splits, error);
      if (!checkpoint->weights)
        return fail(error);
      info.tpRank = tpRank;
      info.tpSize = tp;
      if (auto bounds = vm->getAttrOfType<mlir::DictionaryAttr>("hyc.step_bounds"))
        if (auto heads = bounds.getAs<mlir::IntegerAttr>("kv_num_kv_heads"))
          info.kvCacheHeads = heads.getInt();
    }
    if (args.has("print-schedule")) {
      if (variants.size() > 1)
        std::fprintf(stderr, "variant %s:\n", variant.name.c_str());
      std::fputs(scheduleTable(vm).c_str(), stderr);
    }
    if (runTo > Phase::Strategy && !runPhases(runTo))
      return fail(variants.size() > 1 ? variant.name + ": " + error : error);
    if (emit == "mlir")
      return writeFile(output, printModule(vm), error) ? 0 : fail(error);

    CodegenTarget codegen;
    std::string code;
    if (!emitLLVM(vm, codegen, emit != "llvm", code, error))
      return fail(error);
    if (emit == "llvm" || (emit == "obj" && variant.name == "reference"))
      return writeFile(output, code, error) ? 0 : fail(error);
    if (emit == "obj") {
      // The model's object and its generated kernels, partially linked:
      // objdump shows every kernel the artifact would embed.
      std::set<std::string> features;
      const std::string object = output + ".model.o", kernelsAsm = output + ".kernels.s";
      const bool ok = writeFile(object, code, error) &&
                      emitKernels(vm, kernelsAsm, features, error) &&
                      linkRelocatable({object, kernelsAsm}, output, error);
      std::remove(object.c_str());
      std::remove(kernelsAsm.c_str());
      return ok ? 0 : fail(error);
    }

    // This variant's library.
    ::mkdir(output.c_str(), 0755);
    struct stat st;
    if (::stat(output.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return fail("cannot create artifact directory " + output);
    const bool kernels = variant.name != "reference";
    const std::string stem =
        variants.size() > 1 ? "model." + variant.name : std::string("model");
    std::string object = output + "/" + stem + ".o";
    if (!writeFile(object, code, error))
      return fail(error);
    std::vector<std::string> linkInputs = {object};
    std::set<std::string> features = {"sse2"};
    std::string kernelsAsm = output + "/" + stem + ".kernels.s";
    if (kernels) {
      if (!emitKernels(vm, kernelsAsm, features, error))
        return fail(error);
      linkInputs.push_back(kernelsAsm);
    }
    // Linked once weights.bin is written: the library carries the table's
    // checksums in its description.
    links.push_back({stem, linkInputs, kernels});
    if (emit == "exe" && &variant == &variants.front())
      info.executableVariant = variant.name;

    VariantInfo out;
    out.name = variant.name;
    out.library = stem + ".so";
    out.cpuFeatures.assign(features.begin(), features.end());
    out.arenaBytes = vm->getAttrOfType<mlir::IntegerAttr>("hyc.arena_bytes").getInt();
    auto names = vm->getAttrOfType<mlir::ArrayAttr>("hyc.weights");
    auto types = vm->getAttrOfType<mlir::ArrayAttr>("hyc.weight_types");
    auto layouts = vm->getAttrOfType<mlir::ArrayAttr>("hyc.weight_layouts");
    for (auto [n, t, l] : llvm::zip(names, types, layouts)) {
      auto type = llvm::cast<mlir::RankedTensorType>(llvm::cast<mlir::TypeAttr>(t).getValue());
      PlannedWeight w{llvm::cast<mlir::StringAttr>(n).str(),
                      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
                      llvm::cast<mlir::StringAttr>(l).str()};
      std::string key = w.name + "|" + w.layout;
      for (int64_t d : w.shape)
        key += "|" + std::to_string(d);
      auto [it, inserted] = weightIndex.emplace(key, int64_t(weights.size()));
      if (inserted)
        weights.push_back(std::move(w));
      out.weights.push_back(it->second);
    }
    // Every variant shares the KV cache the first one decided on.
    std::string dtype = "f32";
    if (auto d = vm->getAttrOfType<mlir::StringAttr>(hyc::cpu::kKvCacheDtypeName))
      dtype = d.getValue().str();
    if (&variant == &variants.front()) {
      info.kvCacheDtype = dtype;
      pipeline.kvCache = dtype;
    } else if (dtype != info.kvCacheDtype) {
      return fail("variant " + variant.name + " chose a " + dtype + " KV cache, variant " +
                  variants.front().name + " a " + info.kvCacheDtype + " one");
    }
    info.variants.push_back(std::move(out));
  }

  info.maxSeqLen = maxSeqLen;
  info.maxBatchTokens = maxBatchTokens;
  info.maxSeqs = maxSeqs;
  info.source = input;
  if (!smoothGroups.empty()) {
    checkpoint->weights = smoothWeights(std::move(checkpoint->weights), smoothGroups, error);
    if (!checkpoint->weights)
      return fail(error);
  }
  if (!writeArtifactFiles(output, *checkpoint, weights, info, error))
    return fail(error);
  if (!linkVariants(output, links, emit == "exe", error))
    return fail(error);
  std::string names;
  for (const VariantInfo &v : info.variants)
    names += (names.empty() ? "" : ", ") + v.name;
  std::fprintf(stderr, "hyc compile: wrote %s (%zu weights, variants: %s)\n",
               output.c_str(), weights.size(), names.c_str());
  return 0;
}

} // namespace hyc::compiler
