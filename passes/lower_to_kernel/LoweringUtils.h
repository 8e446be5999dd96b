//===- LoweringUtils.h - shared parts of the kernel lowering ----*- C++ -*-===//
//
// What every per-family lowering of hyc-cpu-lower-to-kernel shares: the
// KernelEmitter (where each tensor lives, its run-time dims, constants and
// `hyc_kernel.ukernel` calls at the insertion point of the kernel-level
// entry) and the LoweringTable that maps an op kind to its lowering. Each
// family file (Gemm.cpp, Attention.cpp, ...) adds its lowerings to the table
// through its populate*Lowerings function.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_LOWER_TO_KERNEL_LOWERINGUTILS_H
#define HYC_PASSES_LOWER_TO_KERNEL_LOWERINGUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace hyc::lowering {

using mlir::ArrayRef;
using mlir::FailureOr;
using mlir::Location;
using mlir::LogicalResult;
using mlir::Operation;
using mlir::SmallVector;
using mlir::StringRef;
using mlir::Value;

/// Where a tensor value lives at run time.
struct Storage {
  enum Kind { Arena, Weight, StepTokens, StepPositions, StepLogits } kind;
  int64_t offset = 0; // Arena: byte offset; Weight: table index
};

/// One dim of a tensor at run time: an index value.
struct Dim {
  Value value;
};

/// Builds the body of one kernel-level entry: planned buffers, run-time
/// dims, constants and microkernel calls, at the builder's insertion point.
class KernelEmitter {
public:
  KernelEmitter(mlir::MLIRContext *ctx, bool bf16Activations);

  /// Reads the plan hyc-cpu-plan-memory wrote on `fn`: the scratch offset
  /// and where each tensor lives.
  LogicalResult readPlan(mlir::func::FuncOp fn);
  /// Starts emitting into `body`: the step's token count comes first.
  void startBody(mlir::Block *body, Location entryLoc);

  mlir::OpBuilder &builder() { return b; }
  Location getLoc() const { return loc; }
  /// The location of the op being lowered, given to every op emitted next.
  void setLoc(Location l) { loc = l; }
  /// GEMM activations rounded to bf16 on the reference target.
  bool roundsActivationsToBf16() const { return bf16Activations; }

  /// The run-time dims of tensor `v`, emitted on first use.
  FailureOr<SmallVector<Dim>> dimsOf(Value v);
  /// The dims of a tensor whose dims are known to exist (the lowered op's
  /// operands and results are checked before its lowering runs).
  SmallVector<Dim> dims(Value v) { return *dimsOf(v); }
  /// The buffer of tensor `v` as a memref of its shape.
  Value ptrOf(Value v);
  /// The arena's scratch region, after the planned buffers: shared by
  /// kernels that need scratch (converted activations, [gate | up] rows).
  Value scratch();
  /// An empty buffer for an absent optional operand.
  Value null();

  Value i64(int64_t v);
  Value i32(int64_t v);
  Value f32(double v);
  Value mul(Value x, Value y);
  /// The product of dims [begin, end).
  Value product(ArrayRef<Dim> dims, size_t begin, size_t end);

  /// Records the kernel-level index value that `index` stands for.
  void mapIndex(Value index, Value kernelIndex) {
    indexValues[index] = kernelIndex;
  }

  /// A `hyc_kernel.ukernel` call of `callee`.
  void call(StringRef callee, ArrayRef<Value> args, bool kvStep = false);
  /// A call that reads or writes the step's KV cache.
  void callKv(StringRef callee, ArrayRef<Value> args) {
    call(callee, args, true);
  }

private:
  mlir::OpBuilder b;
  bool bf16Activations;
  int64_t scratchOffset = 0;
  Location loc;

  llvm::DenseMap<Value, Storage> storage; // root value -> storage
  llvm::DenseMap<Value, SmallVector<Dim>> dimCache;
  llvm::DenseMap<Value, Value> indexValues; // index SSA -> kernel-level index
  Value numTokens;
};

/// One op's lowering: emits the hyc_kernel ops that run it.
using OpLowering = std::function<LogicalResult(Operation *, KernelEmitter &)>;

/// The lowering of each op kind, like a conversion pattern set keyed by the
/// root op: `table.add<RMSNormOp>(lowerRmsNorm)`.
class LoweringTable {
public:
  /// Registers `lower`, callable as `lower(OpTy, KernelEmitter &)`, for
  /// every op kind in OpTys.
  template <typename... OpTys, typename Fn> void add(Fn lower) {
    (addOne<OpTys>(lower), ...);
  }

  /// The lowering of `op`, or null when no registered kind matches it.
  const OpLowering *lookup(Operation *op) const;

private:
  struct Entry {
    bool (*matches)(Operation *);
    OpLowering lower;
  };

  template <typename OpTy, typename Fn> void addOne(Fn lower) {
    entries[OpTy::getOperationName()] =
        Entry{[](Operation *op) { return mlir::isa<OpTy>(op); },
              [lower](Operation *op, KernelEmitter &e) -> LogicalResult {
                return lower(mlir::cast<OpTy>(op), e);
              }};
  }

  llvm::StringMap<Entry> entries;
};

/// The families, one file each.
void populateAttentionLowerings(LoweringTable &table);
void populateCollectiveLowerings(LoweringTable &table);
void populateEmbeddingLowerings(LoweringTable &table);
void populateGemmLowerings(LoweringTable &table);
void populateMlaLowerings(LoweringTable &table);
void populateMoeLowerings(LoweringTable &table);
void populateNormElementwiseLowerings(LoweringTable &table);
void populateQuantizeLowerings(LoweringTable &table);
void populateRopeLowerings(LoweringTable &table);
void populateTensorShapeLowerings(LoweringTable &table);

} // namespace hyc::lowering

#endif // HYC_PASSES_LOWER_TO_KERNEL_LOWERINGUTILS_H
