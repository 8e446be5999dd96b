//===- MemoryPlan.h - where tensors live, as recorded in the IR --*- C++ -*-===//
//
// hyc-cpu-plan-memory decides where every tensor of an entry function lives
// (an arena offset, a weight-table slot, a field of the step) and records
// it as attributes; the lowering reads them. Also the two structural facts
// both need: which values alias another value's buffer, and which operand
// carries a result's token dim.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_MEMORYPLAN_H
#define HYC_PASSES_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/IR/Value.h"

#include <cstdint>

namespace hyc::plan {

/// On a compute op: `array<i64: ...>`, one entry per result: its byte offset
/// in the arena, kNotInArena (an alias or a non-tensor result) or
/// kStepLogits (the entry's returned logits, written into step->logits).
inline constexpr const char *kArenaOffsets = "hyc_cpu.arena_offsets";
inline constexpr int64_t kNotInArena = -1;
inline constexpr int64_t kStepLogits = -2;
/// On a hyc.param: its index in the weight table.
inline constexpr const char *kWeightIndex = "hyc_cpu.weight_index";
/// On an entry function: the byte offset of the scratch region shared by
/// the kernel drivers (converted activations, [gate | up] rows), above every
/// planned buffer.
inline constexpr const char *kScratchOffset = "hyc_cpu.scratch_offset";

/// The value whose buffer `v` shares (reshapes, bound assertions, an
/// all_reduce over one rank), or a null value.
mlir::Value aliasSource(mlir::Value v);

/// Follows aliasSource to the value that owns the buffer.
mlir::Value aliasRoot(mlir::Value v);

/// The operand whose leading dim is the token dim of `def`'s results:
/// operand 0, except for ops whose first operand is a table or rows of
/// another extent.
mlir::Value tokenDimSource(mlir::Operation *def);

/// Upper bounds of every dim of an entry function's tensors: static dims as
/// they are, dynamic ones from hyc.assume_bounds (the compile bounds),
/// propagated along producers. Used by the memory plan (buffers sized at
/// the maximum shape) and by schedule decisions that depend on how large a
/// step can get.
class Bounds {
public:
  explicit Bounds(mlir::func::FuncOp fn) : fn(fn) {}
  /// The bounds of v's dims, or failure (reported on the IR) when a dynamic
  /// dim has no bound.
  mlir::FailureOr<llvm::SmallVector<int64_t>> of(mlir::Value v);

private:
  mlir::func::FuncOp fn;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<int64_t>> cache;
};

} // namespace hyc::plan

#endif // HYC_PASSES_MEMORYPLAN_H
