//===- GlobalFuseGateUpSilu.cpp - gate + up + SiLU -> one GEMM -----------===//
//
// A SwiGLU MLP computes gate = x Wg^T and up = x Wu^T from the same x, then
// silu(gate) * up. Unfused that is two GEMMs that each read x (and, for
// W8A8, quantize it), two [M, N] results written and read back, and an
// elementwise pass. Fused (SGLang's A x [B1, B2]) it is one GEMM over the
// row-concatenated weight [Wg; Wu] whose epilogue combines the two halves of
// each output block while they are in registers or L1. The weight is a new
// parameter named `<prefix>{gate,up}<suffix>` that the artifact writer
// assembles (each half packed on its own, so the driver pairs panel p of
// the gate with panel p of the up projection).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

#include "mlir/IR/Builders.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALFUSEGATEUPSILU
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// `<common prefix>{a-part,b-part}<common suffix>` of two tensor names.
std::string braceName(StringRef a, StringRef b) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre])
    ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  return (a.take_front(pre) + "{" + a.slice(pre, a.size() - suf) + "," +
          b.slice(pre, b.size() - suf) + "}" + a.take_back(suf))
      .str();
}

/// Two distinct params that can be concatenated along their row dim: same
/// file, type and derivation, neither name containing brace syntax already.
bool concatenable(ParamOp a, ParamOp b) {
  return a && b && a != b && a.getType() == b.getType() &&
         a.getRef().getFile() == b.getRef().getFile() &&
         a->getAttr("hyc.quantize") == b->getAttr("hyc.quantize") &&
         !a.getRef().getTensor().contains('{') &&
         !b.getRef().getTensor().contains('{');
}

/// The param [a; b] concatenated along `dim`, created at the builder.
ParamOp concatParams(OpBuilder &builder, ParamOp a, ParamOp b, int64_t dim) {
  auto type = cast<RankedTensorType>(a.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] *= 2;
  auto ref = ParamAttr::get(builder.getContext(), a.getRef().getFile(),
                            braceName(a.getRef().getTensor(), b.getRef().getTensor()));
  auto fused = ParamOp::create(builder, a.getLoc(),
                               RankedTensorType::get(shape, type.getElementType()), ref);
  if (Attribute d = a->getAttr("hyc.quantize"))
    fused->setAttr("hyc.quantize", d);
  return fused;
}

/// Common checks for a (gate, up) pair of GEMMs feeding `silu`: each result
/// read only by it, same input and quantization, no epilogue, weights and
/// scales that can be concatenated.
template <typename Gemm>
bool pairable(Gemm gate, Gemm up, SiluMulOp silu) {
  if (!gate || !up || gate == up || !gate->hasOneUse() || !up->hasOneUse() ||
      gate.getInput() != up.getInput() || gate.getQuant() != up.getQuant() ||
      gate.getEpilogue() != Epilogue::none || up.getEpilogue() != Epilogue::none ||
      gate->getBlock() != silu->getBlock() || up->getBlock() != silu->getBlock())
    return false;
  if (!concatenable(gate.getWeight().template getDefiningOp<ParamOp>(),
                    up.getWeight().template getDefiningOp<ParamOp>()))
    return false;
  if (bool(gate.getScale()) != bool(up.getScale()))
    return false;
  return !gate.getScale() ||
         concatenable(gate.getScale().template getDefiningOp<ParamOp>(),
                      up.getScale().template getDefiningOp<ParamOp>());
}

void eraseIfUnused(Value v) {
  if (Operation *def = v ? v.getDefiningOp() : nullptr; def && def->use_empty())
    def->erase();
}

/// Replaces silu(gate) * up by the fused GEMM; returns whether it fired.
bool fuse(SiluMulOp silu) {
  OpBuilder b(silu);
  auto epilogue = EpilogueAttr::get(b.getContext(), Epilogue::silu_mul);
  Operation *fused = nullptr;
  Value weights[2], scales[2];
  if (auto gate = silu.getGate().getDefiningOp<QuantMatmulOp>()) {
    auto up = silu.getUp().getDefiningOp<QuantMatmulOp>();
    if (!pairable(gate, up, silu) || gate.getBias() || up.getBias() ||
        gate.getResidual() || up.getResidual())
      return false;
    weights[0] = gate.getWeight(), weights[1] = up.getWeight();
    scales[0] = gate.getScale(), scales[1] = up.getScale();
    Value w = concatParams(b, weights[0].getDefiningOp<ParamOp>(),
                           weights[1].getDefiningOp<ParamOp>(), 0);
    Value s = scales[0] ? concatParams(b, scales[0].getDefiningOp<ParamOp>(),
                                       scales[1].getDefiningOp<ParamOp>(), 0)
                        : Value();
    fused = QuantMatmulOp::create(b, silu.getLoc(), silu.getType(), gate.getInput(),
                                  w, s, /*bias=*/Value(), /*residual=*/Value(),
                                  gate.getInputScale(), gate.getQuantAttr(), epilogue);
    silu.replaceAllUsesWith(fused->getResult(0));
    silu.erase();
    gate.erase();
    up.erase();
  } else if (auto gate = silu.getGate().getDefiningOp<MoeGroupedMatmulOp>()) {
    auto up = silu.getUp().getDefiningOp<MoeGroupedMatmulOp>();
    if (!pairable(gate, up, silu) || gate.getOffsets() != up.getOffsets())
      return false;
    weights[0] = gate.getWeight(), weights[1] = up.getWeight();
    scales[0] = gate.getScale(), scales[1] = up.getScale();
    Value w = concatParams(b, weights[0].getDefiningOp<ParamOp>(),
                           weights[1].getDefiningOp<ParamOp>(), 1);
    Value s = scales[0] ? concatParams(b, scales[0].getDefiningOp<ParamOp>(),
                                       scales[1].getDefiningOp<ParamOp>(), 1)
                        : Value();
    fused = MoeGroupedMatmulOp::create(b, silu.getLoc(), silu.getType(),
                                       gate.getInput(), w, gate.getOffsets(), s,
                                       gate.getQuantAttr(), epilogue);
    silu.replaceAllUsesWith(fused->getResult(0));
    silu.erase();
    gate.erase();
    up.erase();
  } else {
    return false;
  }
  for (Value v : {weights[0], weights[1], scales[0], scales[1]})
    eraseIfUnused(v);
  return true;
}

struct HycGlobalFuseGateUpSiluPass
    : public hyc::impl::HycGlobalFuseGateUpSiluBase<HycGlobalFuseGateUpSiluPass> {
  void runOnOperation() override {
    SmallVector<SiluMulOp> silus;
    getOperation().walk([&](SiluMulOp s) { silus.push_back(s); });
    for (SiluMulOp s : silus)
      fuse(s);
  }
};

} // namespace
