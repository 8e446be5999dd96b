//===- TensorShapes.cpp - tensor/index op lowering ------------------------===//
//
// Lowers the tensor and index ops of an entry in hyc-cpu-lower-to-kernel:
// reshapes (aliases: checked, nothing to run), tensor.dim and index
// constants (the kernel-level index values they stand for), and slices and
// concats of the last dim (hyrt_cpu_copy_columns where the strategy chose
// `copy`, else hyrt_ref_copy_columns).
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

/// Reshapes are aliases whose dynamic token dim passes through unchanged;
/// splitting or merging it would change the row count.
template <typename ReshapeOp>
static LogicalResult checkReshape(ReshapeOp r, KernelEmitter &) {
  auto groups = r.getReassociationIndices();
  if (groups.empty() || groups.front().size() != 1)
    return r.emitError("reshapes may not split or merge the leading "
                       "token dim on this target");
  return success();
}

static LogicalResult lowerDim(tensor::DimOp d, KernelEmitter &e) {
  auto idx = d.getConstantIndex();
  if (!idx)
    return d.emitError("tensor.dim needs a constant index"), failure();
  e.mapIndex(d.getResult(), e.dims(d.getSource())[*idx].value);
  return success();
}

static LogicalResult lowerIndexConstant(arith::ConstantIndexOp c,
                                        KernelEmitter &e) {
  e.mapIndex(c.getResult(), e.i64(c.value()));
  return success();
}

/// The column copy the strategy chose for a slice or concat.
static StringRef copyColumnsKernel(Operation *op) {
  return runsOn(op, "copy") ? "hyrt_cpu_copy_columns" : "hyrt_ref_copy_columns";
}

/// Only slices of the last dim: [.., offset : offset + size].
static LogicalResult lowerExtractSlice(tensor::ExtractSliceOp sl,
                                       KernelEmitter &e) {
  auto src = e.dims(sl.getSource());
  int64_t rank = src.size();
  ArrayRef<int64_t> offsets = sl.getStaticOffsets();
  ArrayRef<int64_t> strides = sl.getStaticStrides();
  auto resultType = sl.getResultType();
  auto srcType = sl.getSourceType();
  for (int64_t i = 0; i < rank; ++i) {
    bool last = i == rank - 1;
    if (strides[i] != 1 || (!last && offsets[i] != 0) ||
        (!last && resultType.getDimSize(i) != srcType.getDimSize(i)) ||
        ShapedType::isDynamic(offsets[i]))
      return sl.emitError("the reference target lowers unit-stride "
                          "slices of the last dim only");
  }
  if (resultType.getRank() != rank)
    return sl.emitError("rank-reducing slices are not supported");
  int64_t cols = resultType.getDimSize(rank - 1);
  e.call(copyColumnsKernel(sl),
         {e.ptrOf(sl.getSource()), src[rank - 1].value,
          e.i64(offsets[rank - 1]), e.product(src, 0, rank - 1), e.i64(cols),
          e.ptrOf(sl.getResult()), e.i64(cols), e.i64(0)});
  return success();
}

static LogicalResult lowerConcat(tensor::ConcatOp c, KernelEmitter &e) {
  auto out = e.dims(c.getResult());
  int64_t rank = out.size();
  if (static_cast<int64_t>(c.getDim()) != rank - 1)
    return c.emitError("the reference target concatenates along the "
                       "last dim only");
  int64_t offset = 0;
  for (Value in : c.getInputs()) {
    auto d = e.dims(in);
    int64_t cols = cast<RankedTensorType>(in.getType()).getDimSize(rank - 1);
    e.call(copyColumnsKernel(c),
           {e.ptrOf(in), e.i64(cols), e.i64(0), e.product(d, 0, rank - 1),
            e.i64(cols), e.ptrOf(c.getResult()), out[rank - 1].value,
            e.i64(offset)});
    offset += cols;
  }
  return success();
}

void hyc::lowering::populateTensorShapeLowerings(LoweringTable &table) {
  table.add<tensor::ExpandShapeOp>(checkReshape<tensor::ExpandShapeOp>);
  table.add<tensor::CollapseShapeOp>(checkReshape<tensor::CollapseShapeOp>);
  table.add<tensor::DimOp>(lowerDim);
  table.add<arith::ConstantIndexOp>(lowerIndexConstant);
  table.add<tensor::ExtractSliceOp>(lowerExtractSlice);
  table.add<tensor::ConcatOp>(lowerConcat);
}
