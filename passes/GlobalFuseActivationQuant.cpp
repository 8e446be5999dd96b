//===- GlobalFuseActivationQuant.cpp - quantize activations once ----------===//
//
// A W8A8 GEMM quantizes its activations per token before multiplying. When
// several W8A8 GEMMs read the same activations (q, k and v after a norm;
// DeepSeek's q_a and kv_a projections), each quantizes them again; and a
// norm or SiLU-multiply writes fp32 rows that the next GEMM reads only to
// quantize. This pass makes the quantization an op of its own, right after
// the producer: `hyc.quant.quantize` writes the int8 values and per-token
// scales once, the GEMMs read them (`input_scale`), and the strategy may
// fold it into the producer's kernel. The quantization is the same function
// either way, so results are bit-identical.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/IR/Builders.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALFUSEACTIVATIONQUANT
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// A W8A8 (per-channel) GEMM that quantizes `x` itself.
bool quantizesItself(Operation *user, Value x) {
  auto mm = dyn_cast<QuantMatmulOp>(user);
  return mm && mm.getInput() == x && !mm.getInputScale() &&
         mm.getEpilogue() != Epilogue::silu_mul &&
         mm.getQuant().getScheme() == QuantScheme::w8a8 &&
         mm.getQuant().getGroup() == 0;
}

/// Whether `x` is read only by such GEMMs, at least two of them or one whose
/// input comes from an RMSNorm or SiLU-multiply (which can write int8
/// itself), with K a multiple of 4 (the kernels read the quantized rows in
/// place, in 4-byte VNNI groups).
bool worthQuantizingOnce(Value x) {
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type || type.getRank() != 2 || !isa<FloatType>(type.getElementType()) ||
      type.isDynamicDim(1) || type.getDimSize(1) % 4 != 0 || !x.getDefiningOp())
    return false;
  int64_t readers = 0;
  for (Operation *user : x.getUsers()) {
    if (!quantizesItself(user, x))
      return false;
    ++readers;
  }
  // One reader gains when the producer can write the int8 rows itself (the
  // strategy then fuses the quantization into the norm or SiLU kernel).
  Operation *def = x.getDefiningOp();
  bool producerQuantizes =
      (isa<RMSNormOp>(def) && def->getResult(0) == x) || isa<SiluMulOp>(def);
  return readers >= 2 || (readers == 1 && producerQuantizes);
}

struct HycGlobalFuseActivationQuantPass
    : public hyc::impl::HycGlobalFuseActivationQuantBase<
          HycGlobalFuseActivationQuantPass> {
  void runOnOperation() override {
    SmallVector<Value> candidates;
    getOperation().walk([&](Operation *op) {
      for (Value r : op->getResults())
        if (worthQuantizingOnce(r))
          candidates.push_back(r);
    });
    for (Value x : candidates) {
      OpBuilder b(x.getContext());
      b.setInsertionPointAfter(x.getDefiningOp());
      auto type = cast<RankedTensorType>(x.getType());
      auto quant = QuantAttr::get(b.getContext(), QuantScheme::w8a8, 0, {});
      auto q = QuantizeOp::create(
          b, x.getLoc(), RankedTensorType::get(type.getShape(), b.getI8Type()),
          RankedTensorType::get({type.getDimSize(0), 1}, b.getF32Type()), x, quant);
      for (Operation *user : llvm::make_early_inc_range(x.getUsers())) {
        auto mm = dyn_cast<QuantMatmulOp>(user);
        if (!mm) // the quantize op itself
          continue;
        OpBuilder ub(mm);
        auto fused = QuantMatmulOp::create(
            ub, mm.getLoc(), mm.getType(), q.getResult(), mm.getWeight(),
            mm.getScale(), mm.getBias(), mm.getResidual(), q.getScale(),
            mm.getQuantAttr(), mm.getEpilogueAttr());
        fused->setDiscardableAttrs(mm->getDiscardableAttrDictionary());
        mm.replaceAllUsesWith(fused.getResult());
        mm.erase();
      }
    }
  }
};

} // namespace
