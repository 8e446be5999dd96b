//===- Mlp.cpp - SwiGLU and mixture-of-experts MLPs in hyc IR -------------===//

#include "models/ir/Families.h"

using namespace mlir;

namespace hyc::models {

std::string stackedExpertName(const std::string &prefix, const std::string &proj) {
  return prefix + "experts.*." + proj;
}

Value emitSwiGLU(GraphBuilder &g, const std::string &prefix, Value h,
                 int64_t hidden, int64_t intermediate) {
  Value gate = g.linear(h, prefix + "gate_proj.weight", intermediate, hidden);
  Value up = g.linear(h, prefix + "up_proj.weight", intermediate, hidden);
  Value act = g.siluMul(gate, up);
  return g.linear(act, prefix + "down_proj.weight", hidden, intermediate);
}

Value emitMoe(GraphBuilder &g, const ModelSpec &s, int64_t layer, Value h) {
  OpBuilder &b = g.builder();
  Location loc = g.location();
  MLIRContext *ctx = b.getContext();
  const MoeSpec &m = *s.moe;
  std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
  int64_t e = m.num_experts, k = m.top_k, hidden = s.hidden_size,
          inter = m.expert_intermediate_size;

  Value logits = g.linear(h, p + "gate.weight", e, hidden);
  Value bias = m.has_correction_bias
                   ? g.weight(p + "gate.e_score_correction_bias", {e})
                   : Value();
  auto gating = MoeGatingAttr::get(
      ctx, m.scoring == "sigmoid" ? MoeScoring::sigmoid : MoeScoring::softmax, k,
      m.n_group, m.topk_group,
      m.group_score == "top2_sum" ? MoeGroupScore::top2_sum : MoeGroupScore::max,
      m.renormalize, llvm::APFloat(m.routed_scaling_factor));
  auto routeType = [&](Type el) {
    return RankedTensorType::get({ShapedType::kDynamic, k}, el);
  };
  auto route = MoeRouteOp::create(b, loc, routeType(b.getF32Type()),
                                  routeType(b.getI32Type()), logits, bias, gating);

  auto rowsType = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  auto offsetsType = RankedTensorType::get({e + 1}, b.getI32Type());
  auto permute = MoePermuteOp::create(b, loc, g.activation({hidden}), offsetsType,
                                      rowsType, h, route.getIds(),
                                      b.getI64IntegerAttr(e));
  auto quant = QuantAttr::get(ctx, QuantScheme::f32, 0, {});
  auto none = EpilogueAttr::get(ctx, Epilogue::none);
  auto expertGemm = [&](Value x, const std::string &proj, int64_t n, int64_t kk) {
    Value w = g.weight(stackedExpertName(p, proj), {e, n, kk});
    return MoeGroupedMatmulOp::create(b, loc, g.activation({n}), x, w,
                                      permute.getOffsets(), Value(), quant, none)
        .getResult();
  };
  Value gate = expertGemm(permute.getResult(), "gate_proj.weight", inter, hidden);
  Value up = expertGemm(permute.getResult(), "up_proj.weight", inter, hidden);
  Value down = expertGemm(g.siluMul(gate, up), "down_proj.weight", hidden, inter);
  Value out = MoeUnpermuteOp::create(b, loc, g.activation({hidden}), down,
                                     permute.getRows(), route.getWeights(),
                                     ValueRange());
  if (m.num_shared_experts > 0)
    out = g.add(out, emitSwiGLU(g, p + "shared_experts.", h, hidden,
                                m.shared_intermediate_size * m.num_shared_experts));
  return out;
}

} // namespace hyc::models
