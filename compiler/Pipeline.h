//===- Pipeline.h - the hyc compile pass pipeline, phase by phase -*- C++ -*-===//
//
//   global    graph-level rewrites on hyc ops: calibration observers or
//             SmoothQuant groups, quantize policy, fusions
//   strategy  hyc-cpu-select-lowering-strategy writes every op's schedule,
//             hyc-cpu-plan-memory every tensor's place (arena, weights)
//   kernel    hyc-cpu-lower-to-kernel: hyc_kernel ops on planned buffers
//   llvm      convert-hyc-kernel-to-llvm: the LLVM dialect
//
// `hyc compile --compile-to=<phase> --emit=mlir` stops after a phase;
// `--disable-pass=<name>` drops a graph pass so tests can compare fused and
// unfused artifacts of the same model.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_PIPELINE_H
#define HYC_COMPILER_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <set>
#include <string>
#include <vector>

namespace hyc::compiler {

enum class Phase { Import, Global, Strategy, Kernel, Llvm };

/// Parses a --compile-to value (`lower` is the old name of `llvm`).
bool parsePhase(const std::string &name, Phase &phase);

struct PipelineOptions {
  /// One ISA variant (compiler/Targets.h): reference | avx2 | avx512 |
  /// avx512-bf16 | amx.
  std::string target = "reference";
  std::string quant = "f32";        ///< f32 | bf16 | w8a8
  bool bf16Activations = false;
  int64_t threads = 2;
  std::string kvCache = "auto";     ///< auto | f32 | bf16
  std::set<std::string> disabled;   ///< pass names left out
  std::vector<std::string> keepBf16, keepF32, keepInt8; ///< weight-name substrings
  /// `tensor=format` of the weights kept as the checkpoint's own integer
  /// codes (QuantChoice.h storedCodesEntries).
  std::vector<std::string> storedCodes;
  std::string quantLmHead = "bf16";  ///< bf16 | int8 (with quant w8a8)
  /// Let an optimized variant call hyrt_ref_* kernels (--allow-reference):
  /// hyc-cpu-check-no-reference-kernels is left out.
  bool allowReference = false;
  /// Calibration build: hyc.observe on every quantizable GEMM input.
  bool observeActivations = false;
  /// SmoothQuant groups (hyc-global-smooth-activations) with this alpha;
  /// negative: none (no --calibration).
  double smoothAlpha = -1.0;
  /// Tensor parallel (hyc-global-shard): this rank of tpSize; 1: whole.
  int64_t tpSize = 1, tpRank = 0, epSize = 1;
  std::string epExchange = "all-to-all"; ///< hyc-global-shard ep-exchange
};

/// Passes --disable-pass accepts (the optional graph-level rewrites).
const std::vector<std::string> &disablablePasses();

/// Adds the passes of the phases after `done` up to and including `last`.
/// Fails with `error` set when a disabled name is not a pass of the pipeline.
bool addPipeline(mlir::PassManager &pm, const PipelineOptions &options,
                 Phase done, Phase last, std::string &error);

/// The schedule table of a module after the strategy phase: one line per
/// compute op with its kernel, ISA, types, tile and threading.
std::string scheduleTable(mlir::ModuleOp module);

} // namespace hyc::compiler

#endif // HYC_COMPILER_PIPELINE_H
