//===- GraphBuilder.h - helpers for emitting hyc IR from a ModelSpec -*- C++ -*-===//
//
// Thin layer over OpBuilder with the vocabulary model definitions use:
// named weights, linear layers, norms, rope, head reshapes. Activations are
// [tokens, ...] with a dynamic leading dim.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_MODELS_IR_GRAPHBUILDER_H
#define HYC_MODELS_IR_GRAPHBUILDER_H

#include "dialects/hyc/HycOps.h"
#include "models/checkpoint/model_spec.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>

namespace hyc::models {

/// Emits hyc ops for one entry function into the builder's insertion point.
class GraphBuilder {
public:
  GraphBuilder(mlir::OpBuilder &builder, mlir::Location loc,
               const ModelSpec &spec, std::string weightFile)
      : b(builder), loc(loc), spec(spec), weightFile(std::move(weightFile)) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }
  mlir::Type f32() { return b.getF32Type(); }

  /// `tensor<?xd0x...xf32>` with a dynamic token dim.
  mlir::RankedTensorType activation(llvm::ArrayRef<int64_t> innerDims);

  /// A named fp32 weight of the given shape (`hyc.param`); one op per
  /// distinct name within a function.
  mlir::Value weight(const std::string &name, llvm::ArrayRef<int64_t> shape);

  /// x [T, K] · w[N, K]ᵀ (+ bias) -> [T, N].
  mlir::Value linear(mlir::Value x, const std::string &weightName, int64_t n,
                     int64_t k, const std::string &biasName = "");
  mlir::Value rmsNorm(mlir::Value x, const std::string &weightName,
                      double eps);
  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value siluMul(mlir::Value gate, mlir::Value up);
  /// [T, H*D] -> [T, H, D] (and back).
  mlir::Value splitHeads(mlir::Value x, int64_t heads, int64_t headDim);
  mlir::Value mergeHeads(mlir::Value x);
  mlir::Value rope(mlir::Value x, mlir::Value positions, const RopeSpec &rope);
  /// x[..., offset : offset + size] along the last dim.
  mlir::Value sliceLastDim(mlir::Value x, int64_t offset, int64_t size);
  /// Concatenation along the last dim.
  mlir::Value concatLastDim(mlir::Value a, mlir::Value b);
  /// [T, D] -> [T, 1, D] and similar: insert a unit dim before the last.
  mlir::Value unitHeads(mlir::Value x);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
  const ModelSpec &spec;
  std::string weightFile;
  std::map<std::string, mlir::Value> weights;
};

/// Maximum shapes an artifact is compiled for.
struct ShapeBounds {
  int64_t maxSeqLen = 256;
  int64_t maxBatchTokens = 64;
  int64_t maxSeqs = 8;
};

/// Builds the module with `@extend` and `@decode` for `spec`. Weights are
/// `hyc.param`s naming `weightFile`. Fails with a message for an unsupported
/// architecture or inconsistent spec.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildModelModule(mlir::MLIRContext &ctx, const ModelSpec &spec,
                 const ShapeBounds &bounds, const std::string &weightFile,
                 std::string &error);

} // namespace hyc::models

#endif // HYC_MODELS_IR_GRAPHBUILDER_H
