//===- GlobalQuantizePolicy.cpp - weight precision of each linear layer ---===//
//
// "Choose" half of quantization: writes the scheme on each hyc.quant.matmul;
// the lowering and the artifact writer apply it.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"

namespace hyc {
#define GEN_PASS_DEF_HYCGLOBALQUANTIZEPOLICY
#include "passes/Passes.h.inc"
} // namespace hyc

using namespace mlir;
using namespace hyc;

namespace {

/// Whether the param's tensor name contains one of `names`.
bool nameMatches(ParamOp param, const std::vector<std::string> &names) {
  StringRef name = param.getRef().getTensor();
  for (const std::string &k : names)
    if (name.contains(k))
      return true;
  return false;
}

/// Groups of `group` K-elements (the last may be shorter).
int64_t groupsOf(int64_t k, int64_t group) { return (k + group - 1) / group; }

/// The derivation names the artifact writer applies: per-channel
/// ("w8a8", "w8a8.scale") or per-group-128 ("w8a8g128", ...).
std::string derivation(int64_t group, bool scale) {
  std::string d = group ? "w8a8g" + std::to_string(group) : "w8a8";
  return scale ? d + ".scale" : d;
}

/// The expert GEMMs of an MoE layer take the scheme too ([E, N, K] weights;
/// w8a8 scales are [E, N], or [E, N, groups] per group).
void applyToExperts(MoeGroupedMatmulOp op, QuantScheme target, int64_t group,
                    const std::vector<std::string> &keep) {
  auto param = op.getWeight().getDefiningOp<ParamOp>();
  if (!param || op.getQuant().isQuantized() || nameMatches(param, keep))
    return;
  MLIRContext *ctx = op.getContext();
  auto quant = QuantAttr::get(ctx, target, target == QuantScheme::w8a8 ? group : 0, {});
  if (target != QuantScheme::w8a8) {
    op.setQuantAttr(quant);
    return;
  }
  OpBuilder b(op);
  auto wType = cast<RankedTensorType>(param.getType());
  auto q = ParamOp::create(b, param.getLoc(),
                           RankedTensorType::get(wType.getShape(), b.getI8Type()),
                           param.getRef());
  q->setAttr("hyc.quantize", b.getStringAttr(derivation(group, false)));
  SmallVector<int64_t> scaleShape = {wType.getDimSize(0), wType.getDimSize(1)};
  if (group)
    scaleShape.push_back(groupsOf(wType.getDimSize(2), group));
  auto s = ParamOp::create(b, param.getLoc(), RankedTensorType::get(scaleShape, b.getF32Type()),
                           param.getRef());
  s->setAttr("hyc.quantize", b.getStringAttr(derivation(group, true)));
  auto mm = MoeGroupedMatmulOp::create(b, op.getLoc(), op.getType(), op.getInput(),
                                       q, op.getOffsets(), s, quant,
                                       op.getEpilogueAttr());
  op.replaceAllUsesWith(mm.getResult());
  op.erase();
  if (param->use_empty())
    param.erase();
}

struct HycGlobalQuantizePolicyPass
    : public hyc::impl::HycGlobalQuantizePolicyBase<HycGlobalQuantizePolicyPass> {
  using Base::Base;

  void runOnOperation() override {
    QuantScheme target;
    int64_t group = 0;
    if (scheme == "w8a8-g128") {
      target = QuantScheme::w8a8;
      group = 128;
    } else if (scheme == "bf16") {
      target = QuantScheme::bf16;
    } else if (scheme == "f32") {
      target = QuantScheme::f32;
    } else if (scheme == "w8a8") {
      target = QuantScheme::w8a8;
    } else {
      getOperation().emitError() << "hyc-global-quantize-policy: scheme '"
                                 << scheme
                                 << "' is not supported (f32, bf16, w8a8, w8a8-g128)";
      return signalPassFailure();
    }
    if (lmHead != "bf16" && lmHead != "int8") {
      getOperation().emitError() << "hyc-global-quantize-policy: lm-head must be bf16 "
                                    "or int8, got '"
                                 << lmHead << "'";
      return signalPassFailure();
    }
    if (lmHead == "int8" && target != QuantScheme::w8a8) {
      getOperation().emitError() << "hyc-global-quantize-policy: an int8 lm_head needs "
                                    "scheme w8a8 (its activations are quantized per "
                                    "token), got scheme '"
                                 << scheme << "'";
      return signalPassFailure();
    }
    // The output head: its own weight, or the embedding table when tied.
    const std::vector<std::string> headNames = {"lm_head.weight", "embed_tokens.weight"};
    std::vector<std::string> f32Names(keepF32.begin(), keepF32.end());
    std::vector<std::string> bf16Names = {"mlp.gate.weight", "lm_head.weight",
                                          "embed_tokens.weight"};
    bf16Names.insert(bf16Names.end(), keepBf16.begin(), keepBf16.end());

    MLIRContext *ctx = &getContext();
    auto quant = QuantAttr::get(ctx, target, 0, {});
    auto bf16 = QuantAttr::get(ctx, QuantScheme::bf16, 0, {});
    SmallVector<QuantMatmulOp> matmuls;
    getOperation().walk([&](QuantMatmulOp op) { matmuls.push_back(op); });
    SmallVector<MoeGroupedMatmulOp> grouped;
    getOperation().walk([&](MoeGroupedMatmulOp op) { grouped.push_back(op); });
    for (MoeGroupedMatmulOp op : grouped)
      applyToExperts(op, target, group, f32Names);
    for (QuantMatmulOp op : matmuls) [&] {
      auto param = op.getWeight().getDefiningOp<ParamOp>();
      if (!param || op.getQuant().isQuantized() ||
          op.getEpilogue() != Epilogue::none || nameMatches(param, f32Names))
        return;
      // Sensitive layers (router, lm_head, and what --keep-bf16 adds) stay
      // 16-bit. A weight also read as a table (tied embeddings used as the
      // lm_head) gets a second copy for the GEMM (derivation "copy"): the
      // embedding keeps its fp32 rows, the head its bf16 kernel layout,
      // instead of the head running on the fp32 table through the
      // reference matmul.
      const bool int8Head = lmHead == "int8" && nameMatches(param, headNames);
      if (nameMatches(param, bf16Names) && !int8Head) {
        if (target == QuantScheme::f32)
          return;
        bool onlyGemms = llvm::all_of(param->getUsers(), [&](Operation *u) {
          auto mm = dyn_cast<QuantMatmulOp>(u);
          return mm && mm.getWeight() == param.getResult();
        });
        if (!onlyGemms) {
          OpBuilder b(op);
          auto copy = ParamOp::create(b, param.getLoc(), param.getType(),
                                      param.getRef());
          copy->setAttr("hyc.quantize", b.getStringAttr("copy"));
          op.getWeightMutable().assign(copy.getResult());
        }
        op.setQuantAttr(bf16);
        return;
      }
      if (target != QuantScheme::w8a8) {
        op.setQuantAttr(quant);
        return;
      }
      // W8A8: the weight becomes symmetric int8 plus its scales (per output
      // channel, or per channel and group of 128 K-elements; an int8 head
      // stays per channel), derived from the checkpoint tensor when the
      // artifact is written.
      OpBuilder b(op);
      auto wType = cast<RankedTensorType>(param.getType());
      int64_t n = wType.getDimSize(0);
      const int64_t g = int8Head ? 0 : group;
      auto q = ParamOp::create(
          b, param.getLoc(),
          RankedTensorType::get(wType.getShape(), b.getI8Type()), param.getRef());
      q->setAttr("hyc.quantize", b.getStringAttr(derivation(g, false)));
      SmallVector<int64_t> scaleShape = {n};
      if (g)
        scaleShape.push_back(groupsOf(wType.getDimSize(1), g));
      auto s = ParamOp::create(b, param.getLoc(),
                               RankedTensorType::get(scaleShape, b.getF32Type()),
                               param.getRef());
      s->setAttr("hyc.quantize", b.getStringAttr(derivation(g, true)));
      auto mm = QuantMatmulOp::create(b, op.getLoc(), op.getType(), op.getInput(),
                                      q, s, op.getBias(), op.getResidual(),
                                      op.getInputScale(),
                                      QuantAttr::get(ctx, target, g, {}),
                                      op.getEpilogueAttr());
      op.replaceAllUsesWith(mm.getResult());
      op.erase();
      if (param->use_empty())
        param.erase();
    }();
    // MLA's kv_b (a linear layer of the plain form, read in place by the
    // attention in either form) is stored 16-bit under a 16-bit or int8
    // scheme, like the other weights read outside the int8 GEMMs: the
    // derivation "bf16" rounds it (the absorbed kernel reads bf16 rows, the
    // reference the rounded values as fp32).
    if (target == QuantScheme::f32)
      return;
    getOperation().walk([&](MLAAttentionOp a) {
      auto param = a.getKvB().getDefiningOp<ParamOp>();
      if (!param || param->getAttr("hyc.quantize") || nameMatches(param, f32Names) ||
          !llvm::all_of(param->getUsers(), [&](Operation *u) {
            auto m = dyn_cast<MLAAttentionOp>(u);
            return m && m.getKvB() == param.getResult();
          }))
        return;
      param->setAttr("hyc.quantize", StringAttr::get(ctx, "bf16"));
    });
  }
};

} // namespace
