//===- GraphBuilder.cpp - helpers for emitting hyc IR ---------------------===//

#include "models/ir/GraphBuilder.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace hyc::models {

RankedTensorType GraphBuilder::activation(ArrayRef<int64_t> innerDims) {
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  shape.append(innerDims.begin(), innerDims.end());
  return RankedTensorType::get(shape, f32());
}

Value GraphBuilder::weight(const std::string &name, ArrayRef<int64_t> shape) {
  auto it = weights.find(name);
  if (it != weights.end())
    return it->second;
  auto type = RankedTensorType::get(shape, f32());
  auto ref = ParamAttr::get(b.getContext(), weightFile, name);
  Value v = ParamOp::create(b, loc, type, ref);
  weights[name] = v;
  return v;
}

Value GraphBuilder::linear(Value x, const std::string &weightName, int64_t n,
                           int64_t k, const std::string &biasName) {
  Value w = weight(weightName, {n, k});
  Value bias = biasName.empty() ? Value() : weight(biasName, {n});
  auto quant = QuantAttr::get(b.getContext(), QuantScheme::f32, 0, {});
  auto epilogue = EpilogueAttr::get(b.getContext(), Epilogue::none);
  return QuantMatmulOp::create(b, loc, activation({n}), x, w, /*scale=*/Value(),
                               bias, /*residual=*/Value(),
                               /*input_scale=*/Value(), quant, epilogue);
}

Value GraphBuilder::rmsNorm(Value x, const std::string &weightName,
                            double eps) {
  auto xt = cast<RankedTensorType>(x.getType());
  Value w = weight(weightName, {xt.getDimSize(xt.getRank() - 1)});
  return RMSNormOp::create(b, loc, xt, /*residual_out=*/Type(), x, w,
                           /*residual=*/Value(),
                           b.getF32FloatAttr(static_cast<float>(eps)))
      .getResult();
}

Value GraphBuilder::add(Value lhs, Value rhs) {
  return AddOp::create(b, loc, lhs, rhs);
}

Value GraphBuilder::siluMul(Value gate, Value up) {
  return SiluMulOp::create(b, loc, gate, up);
}

Value GraphBuilder::splitHeads(Value x, int64_t heads, int64_t headDim) {
  auto type = RankedTensorType::get({ShapedType::kDynamic, heads, headDim},
                                    f32());
  Value tokens = tensor::DimOp::create(b, loc, x, 0);
  SmallVector<OpFoldResult> outputShape = {tokens, b.getIndexAttr(heads),
                                           b.getIndexAttr(headDim)};
  SmallVector<ReassociationIndices> reassoc = {{0}, {1, 2}};
  return tensor::ExpandShapeOp::create(b, loc, type, x, reassoc, outputShape);
}

Value GraphBuilder::mergeHeads(Value x) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto type = activation({xt.getDimSize(1) * xt.getDimSize(2)});
  SmallVector<ReassociationIndices> reassoc = {{0}, {1, 2}};
  return tensor::CollapseShapeOp::create(b, loc, type, x, reassoc);
}

Value GraphBuilder::rope(Value x, Value positions, const RopeSpec &r) {
  MLIRContext *ctx = b.getContext();
  RopeScalingKind kind = RopeScalingKind::none;
  if (r.scaling == "linear")
    kind = RopeScalingKind::linear;
  else if (r.scaling == "llama3")
    kind = RopeScalingKind::llama3;
  else if (r.scaling == "yarn")
    kind = RopeScalingKind::yarn;
  auto f = [](double v) { return llvm::APFloat(v); };
  auto scaling = RopeScalingAttr::get(
      ctx, kind, f(r.factor), f(r.low_freq_factor), f(r.high_freq_factor),
      r.original_max_position, f(r.beta_fast), f(r.beta_slow), f(r.mscale),
      f(r.mscale_all_dim));
  auto style = RopeStyleAttr::get(ctx, r.neox ? RopeStyle::neox : RopeStyle::normal);
  // ntk_alpha only changes the base (kind none with the scaled theta), so
  // it needs no scaling mode of its own in the op.
  return RopeOp::create(b, loc, x.getType(), x, positions, style,
                        b.getI64IntegerAttr(r.rotary_dim),
                        b.getF64FloatAttr(rope_base(r)), scaling);
}

Value GraphBuilder::sliceLastDim(Value x, int64_t offset, int64_t size) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(rank, b.getIndexAttr(1));
  SmallVector<int64_t> shape(xt.getShape());
  for (int64_t i = 0; i < rank; ++i) {
    if (ShapedType::isDynamic(shape[i]))
      sizes.push_back(tensor::DimOp::create(b, loc, x, i).getResult());
    else
      sizes.push_back(b.getIndexAttr(shape[i]));
  }
  offsets.back() = b.getIndexAttr(offset);
  sizes.back() = b.getIndexAttr(size);
  shape.back() = size;
  auto type = RankedTensorType::get(shape, xt.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, type, x, offsets, sizes, strides);
}

Value GraphBuilder::concatLastDim(Value a, Value c) {
  auto at = cast<RankedTensorType>(a.getType());
  return tensor::ConcatOp::create(b, loc, at.getRank() - 1, ValueRange{a, c});
}

Value GraphBuilder::unitHeads(Value x) {
  auto xt = cast<RankedTensorType>(x.getType());
  return splitHeads(x, 1, xt.getDimSize(xt.getRank() - 1));
}

} // namespace hyc::models
