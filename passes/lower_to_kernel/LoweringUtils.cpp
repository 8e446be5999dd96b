//===- LoweringUtils.cpp - buffers, dims and calls of kernel lowering -----===//
//
// The KernelEmitter shared by every lowering of hyc-cpu-lower-to-kernel:
// where a tensor lives (the memory plan), its run-time dims (constants, the
// step's sizes, products of the dims it derives from), the constants and
// the `hyc_kernel.ukernel` calls; and the LoweringTable's lookup.
//
//===----------------------------------------------------------------------===//

#include "passes/lower_to_kernel/LoweringUtils.h"

#include "passes/MemoryPlan.h"

#include "dialects/hyc/HycOps.h"
#include "dialects/hyc_kernel/HycKernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace hyc;
using namespace hyc::lowering;

KernelEmitter::KernelEmitter(MLIRContext *ctx, bool bf16Activations)
    : b(ctx), bf16Activations(bf16Activations), loc(UnknownLoc::get(ctx)) {}

LogicalResult KernelEmitter::readPlan(func::FuncOp fn) {
  auto scratch = fn->getAttrOfType<IntegerAttr>(plan::kScratchOffset);
  if (!scratch)
    return fn.emitError()
           << "entry has no memory plan (run "
              "hyc-cpu-plan-memory before hyc-cpu-lower-to-kernel)";
  scratchOffset = scratch.getInt();
  Block &body = fn.getBody().front();
  storage[body.getArgument(0)] = {Storage::StepTokens};
  storage[body.getArgument(1)] = {Storage::StepPositions};
  for (Operation &op : body) {
    if (auto p = dyn_cast<ParamOp>(op)) {
      auto index = p->getAttrOfType<IntegerAttr>(plan::kWeightIndex);
      if (!index)
        return p.emitError("weight without a table slot in the memory plan");
      storage[p.getResult()] = {Storage::Weight, index.getInt()};
      continue;
    }
    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>(plan::kArenaOffsets);
    for (auto [i, r] : llvm::enumerate(op.getResults())) {
      if (!isa<RankedTensorType>(r.getType()) || plan::aliasSource(r))
        continue;
      if (!offsets || int64_t(i) >= offsets.size() ||
          offsets[i] == plan::kNotInArena)
        return op.emitError()
               << "result " << i << " has no buffer in the memory plan";
      storage[r] = offsets[i] == plan::kStepLogits
                       ? Storage{Storage::StepLogits, 0}
                       : Storage{Storage::Arena, offsets[i]};
    }
  }
  return success();
}

void KernelEmitter::startBody(Block *body, Location entryLoc) {
  b.setInsertionPointToStart(body);
  loc = entryLoc;
  numTokens = kernel::StepSizeOp::create(b, loc, b.getIndexType(),
                                         b.getStringAttr("num_tokens"));
}

Value KernelEmitter::i64(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value KernelEmitter::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}
Value KernelEmitter::f32(double v) {
  return arith::ConstantOp::create(b, loc,
                                   b.getF32FloatAttr(static_cast<float>(v)));
}
Value KernelEmitter::null() {
  return kernel::BufferOp::create(b, loc, MemRefType::get({0}, b.getF32Type()),
                                  "null", 0, ValueRange());
}
Value KernelEmitter::mul(Value x, Value y) {
  return arith::MulIOp::create(b, loc, x, y);
}
Value KernelEmitter::scratch() {
  return kernel::BufferOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()), "scratch",
      scratchOffset, ValueRange{i64(0)});
}

Value KernelEmitter::product(ArrayRef<Dim> ds, size_t begin, size_t end) {
  Value p = i64(1);
  for (size_t i = begin; i < end; ++i)
    p = mul(p, ds[i].value);
  return p;
}

FailureOr<SmallVector<Dim>> KernelEmitter::dimsOf(Value v) {
  auto it = dimCache.find(v);
  if (it != dimCache.end())
    return it->second;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<Dim> result;
  Operation *def = v.getDefiningOp();
  // The value standing for a dynamic leading dim.
  Value dynamicLeading;
  if (!type.hasStaticShape()) {
    if (!def) {
      dynamicLeading = numTokens;
    } else if (isa<LogitRowsOp>(def)) {
      dynamicLeading = kernel::StepSizeOp::create(
          b, loc, b.getIndexType(), b.getStringAttr("num_logit_rows"));
    } else if (auto permute = dyn_cast<MoePermuteOp>(def)) {
      auto in = dimsOf(permute.getInput());
      if (failed(in))
        return failure();
      int64_t topK =
          cast<RankedTensorType>(permute.getIds().getType()).getDimSize(1);
      dynamicLeading = mul((*in)[0].value, i64(topK));
    } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
      auto in = dimsOf(collapse.getSrc());
      if (failed(in))
        return failure();
      for (auto [i, group] :
           llvm::enumerate(collapse.getReassociationIndices()))
        result.push_back({product(*in, group.front(), group.back() + 1)});
      dimCache[v] = result;
      return result;
    } else {
      auto in = dimsOf(plan::tokenDimSource(def));
      if (failed(in))
        return failure();
      dynamicLeading = (*in)[0].value;
    }
  }
  for (int64_t i = 0, e = type.getRank(); i < e; ++i) {
    int64_t d = type.getDimSize(i);
    result.push_back({ShapedType::isDynamic(d) ? dynamicLeading : i64(d)});
  }
  dimCache[v] = result;
  return result;
}

Value KernelEmitter::ptrOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  auto memref = MemRefType::get(type.getShape(), type.getElementType());
  SmallVector<Value> sizes;
  auto d = dimsOf(v);
  for (int64_t i = 0, e = type.getRank(); i < e; ++i)
    if (type.isDynamicDim(i))
      sizes.push_back((*d)[i].value);
  Storage s = storage.lookup(plan::aliasRoot(v));
  static const char *const kSpace[] = {"arena", "weight", "step_tokens",
                                       "step_positions", "step_logits"};
  return kernel::BufferOp::create(b, loc, memref, kSpace[s.kind], s.offset,
                                  sizes);
}

void KernelEmitter::call(StringRef callee, ArrayRef<Value> args, bool kvStep) {
  kernel::UkernelOp::create(b, loc, b.getStringAttr(callee),
                            kvStep ? b.getUnitAttr() : UnitAttr(),
                            ValueRange(args));
}

const OpLowering *LoweringTable::lookup(Operation *op) const {
  auto it = entries.find(op->getName().getStringRef());
  if (it == entries.end() || !it->second.matches(op))
    return nullptr;
  return &it->second.lower;
}
