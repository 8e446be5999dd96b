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
#include "compiler/KernelEmitter.h"
#include "compiler/Linker.h"
#include "compiler/Pipeline.h"
#include "compiler/ObjectEmitter.h"
#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_cpu/HycCpuDialect.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"
#include "models/checkpoint/model_spec.h"
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
#include <fstream>
#include <set>
#include <iostream>
#include <sys/stat.h>

namespace hyc::compiler {

const char *kCompileUsage = R"(usage: hyc compile INPUT -o OUT [options]

INPUT is a GGUF file, a llama2.c .bin, a Hugging Face directory
(config.json + model.safetensors) or a hyc IR .mlir file.

options:
  -o, --output PATH        artifact directory (or file for mlir/llvm/obj)
  --target NAME            reference (fp32 reference kernels; default) |
                           avx512 (generated AVX-512 brgemm kernels for the
                           linear layers, reference kernels for the rest) |
                           avx512-bf16 (as avx512, bf16 GEMMs on vdpbf16ps;
                           needs avx512_bf16 at run time) | avx2 (AVX2/FMA
                           fp32 kernels: the floor for older CPUs)
  --quant SCHEME           f32 (default) | bf16 (bf16 weights; fp32 FMA on
                           avx512) | w8a8 (per-channel int8 weights,
                           per-token int8 activations, VNNI); the MoE
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
  --kv-cache TYPE          KV cache elements: auto (default: bf16 on kernel
                           targets when every attention kernel reads bf16,
                           else f32; f32 on --target=reference) | f32 | bf16
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

int fail(const std::string &message) {
  std::fprintf(stderr, "hyc compile: error: %s\n", message.c_str());
  return 1;
}

} // namespace

int runCompileCommand(int argc, char **argv) {
  cli::Args args({"output", "o", "target", "emit", "compile-to", "max-seq-len",
                  "max-batch-tokens", "max-seqs", "tokenizer", "quant",
                  "disable-pass", "threads", "keep-bf16", "keep-f32", "kv-cache",
                  "quant-lm-head"},
                 {"help", "bf16-activations", "print-ir-after-all",
                  "print-schedule"});
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
  std::string target = args.get("target", "reference");
  const std::string kvCache = args.get("kv-cache", "auto");
  if (kvCache != "auto" && kvCache != "f32" && kvCache != "bf16") {
    std::fprintf(stderr, "hyc compile: --kv-cache expects auto|f32|bf16, got '%s'\n",
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
  if (target != "reference" && target != "avx512" && target != "avx512-bf16" &&
      target != "avx2")
    return fail("unknown --target '" + target +
                "' (this build supports: reference, avx2, avx512, avx512-bf16)");
  std::string quant = args.get("quant", "f32");
  if (quant != "f32" && quant != "bf16" && quant != "w8a8")
    return fail("--quant expects f32|bf16|w8a8, got '" + quant + "'");
  const std::string quantLmHead = args.get("quant-lm-head", "bf16");
  if (quantLmHead != "bf16" && quantLmHead != "int8")
    return fail("--quant-lm-head expects bf16|int8, got '" + quantLmHead + "'");
  if (quantLmHead == "int8" && quant != "w8a8")
    return fail("--quant-lm-head int8 needs --quant w8a8 (the head's activations are "
                "quantized per token like the other W8A8 layers), got --quant " + quant);
  if (target == "avx2" && quant != "f32")
    return fail("--target avx2 has fp32 kernels only; --quant " + quant +
                " needs --target avx512");
  bool kernels = target != "reference";
  bool bf16Activations = args.has("bf16-activations");
  if (bf16Activations && (kernels || quant != "bf16"))
    return fail("--bf16-activations applies to --target=reference --quant=bf16 "
                "only (got --target=" + target + " --quant=" + quant + ")");

  int64_t maxSeqLen = 0, maxBatchTokens = 0, maxSeqs = 0;
  if (!args.getInt("max-seq-len", 0, maxSeqLen, error) ||
      !args.getInt("max-batch-tokens", 64, maxBatchTokens, error) ||
      !args.getInt("max-seqs", 8, maxSeqs, error)) {
    std::fprintf(stderr, "hyc compile: %s\n", error.c_str());
    return 2;
  }
  if (args.has("max-seq-len") && maxSeqLen <= 0)
    return fail("--max-seq-len must be positive, got " + std::to_string(maxSeqLen));
  if (maxBatchTokens <= 0)
    return fail("--max-batch-tokens must be positive, got " +
                std::to_string(maxBatchTokens));
  if (maxSeqs <= 0)
    return fail("--max-seqs must be positive, got " + std::to_string(maxSeqs));
  int64_t threads = 2;
  if (!args.getInt("threads", 2, threads, error)) {
    std::fprintf(stderr, "hyc compile: %s\n", error.c_str());
    return 2;
  }
  if (threads < 1 || threads > 4096)
    return fail("--threads must be in [1, 4096], got " + std::to_string(threads));

  mlir::MLIRContext ctx;
  registerDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::optional<models::Checkpoint> checkpoint;

  bool isMlir = input.size() > 5 && input.substr(input.size() - 5) == ".mlir";
  if (isMlir) {
    if (emit == "lib" || emit == "exe")
      return fail("a .mlir input has no weights; use --emit=mlir|llvm|obj");
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
  pipeline.target = target;
  pipeline.quant = quant;
  pipeline.bf16Activations = bf16Activations;
  pipeline.threads = threads;
  pipeline.kvCache = kvCache;
  pipeline.quantLmHead = quantLmHead;
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
    if (mlir::succeeded(pm.run(*module)))
      return true;
    error = "compilation failed (see the diagnostics above)";
    return false;
  };
  Phase runTo = emit == "mlir" ? lastPhase : Phase::Llvm;
  if (!runPhases(std::min(runTo, Phase::Strategy)))
    return fail(error);
  if (args.has("print-schedule"))
    std::fputs(scheduleTable(*module).c_str(), stderr);
  if (runTo > Phase::Strategy && !runPhases(runTo))
    return fail(error);
  if (emit == "mlir")
    return writeFile(output, printModule(*module), error) ? 0 : fail(error);

  CodegenTarget codegen;
  std::string code;
  if (!emitLLVM(*module, codegen, emit != "llvm", code, error))
    return fail(error);
  if (emit == "llvm" || emit == "obj")
    return writeFile(output, code, error) ? 0 : fail(error);

  // An artifact directory.
  ::mkdir(output.c_str(), 0755);
  struct stat st;
  if (::stat(output.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail("cannot create artifact directory " + output);
  std::string object = output + "/model.o";
  if (!writeFile(object, code, error))
    return fail(error);
  std::vector<std::string> linkInputs = {object};
  std::set<std::string> features = {"sse2"};
  std::string kernelsAsm = output + "/kernels.s";
  if (kernels) {
    if (!emitKernels(*module, kernelsAsm, features, error))
      return fail(error);
    linkInputs.push_back(kernelsAsm);
  }
  if (!linkSharedLibrary(linkInputs, output + "/model.so", kernels, error))
    return fail(error);
  if (emit == "exe" &&
      !linkExecutable(linkInputs, output + "/model", kernels, error))
    return fail(error);
  std::remove(object.c_str());
  std::remove(kernelsAsm.c_str());

  std::vector<PlannedWeight> weights;
  auto names = (*module)->getAttrOfType<mlir::ArrayAttr>("hyc.weights");
  auto types = (*module)->getAttrOfType<mlir::ArrayAttr>("hyc.weight_types");
  auto layouts = (*module)->getAttrOfType<mlir::ArrayAttr>("hyc.weight_layouts");
  for (auto [n, t, l] : llvm::zip(names, types, layouts)) {
    auto type = llvm::cast<mlir::RankedTensorType>(
        llvm::cast<mlir::TypeAttr>(t).getValue());
    weights.push_back({llvm::cast<mlir::StringAttr>(n).str(),
                       std::vector<int64_t>(type.getShape().begin(),
                                            type.getShape().end()),
                       llvm::cast<mlir::StringAttr>(l).str()});
  }
  ArtifactInfo info;
  info.target = target;
  info.cpuFeatures.assign(features.begin(), features.end());
  info.arenaBytes =
      (*module)->getAttrOfType<mlir::IntegerAttr>("hyc.arena_bytes").getInt();
  if (auto dtype = (*module)->getAttrOfType<mlir::StringAttr>(hyc::cpu::kKvCacheDtypeName))
    info.kvCacheDtype = dtype.getValue().str();
  info.maxSeqLen = maxSeqLen;
  info.maxBatchTokens = maxBatchTokens;
  info.maxSeqs = maxSeqs;
  info.source = input;
  if (!writeArtifactFiles(output, *checkpoint, weights, info, error))
    return fail(error);
  std::fprintf(stderr, "hyc compile: wrote %s (%zu weights, arena %lld bytes)\n",
               output.c_str(), weights.size(),
               static_cast<long long>(info.arenaBytes));
  return 0;
}

} // namespace hyc::compiler
