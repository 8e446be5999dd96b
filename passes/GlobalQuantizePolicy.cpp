//===- GlobalQuantizePolicy.cpp - weight precision of each linear layer ---===//
//
// "Choose" half of quantization: writes the scheme on each hyc.quant.matmul;
// the lowering and the artifact writer apply it.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/hyc/HycOps.h"
#include "passes/KernelSchemes.h"
#include "hyrt/gemm_layout.h"

#include "llvm/ADT/StringMap.h"

#include <optional>
#include <tuple>

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

/// FP8 weight-only: e4m3 codes with one factor per 128 x 128 block
/// (DeepSeek's own format).
constexpr int64_t kFp8Block = 128;

/// Whether `target` stores integer codes with their scales inside the
/// weight (q4, q8 and the stored formats: no scale operand).
bool isCodes(QuantScheme target) { return isCodesScheme(target); }

/// The stored-codes format of `param` under a codes `target` (the
/// stored-codes option's entries), or nullopt: the scheme that keeps it
/// exactly, and its sub-group.
/// A tensor-parallel rank's part of it (hyc-global-shard's `hyc.shard`)
/// keeps the format when it is whole rows, or columns in whole units of
/// the format's scales (super-blocks, else groups), unpadded; a cut
/// super-block would need new scales, so such a part becomes q4z (Q4_K
/// halves) or 8-bit codes of groups of 32 quantized from its exact values.
/// An expert-parallel rank's stack (`experts.*+F.`) looks up its format
/// under the stack's name (`experts.*.`).
std::optional<std::pair<QuantScheme, int64_t>>
storedCodesOf(ParamOp param, QuantScheme target, const llvm::StringMap<std::string> &stored) {
  std::string tensor = param.getRef().getTensor().str();
  if (size_t at = tensor.find("experts.*+"); at != std::string::npos) {
    const size_t dot = tensor.find('.', at + 10);
    if (dot != std::string::npos)
      tensor.erase(at + 9, dot - at - 9);
  }
  auto it = stored.find(tensor);
  if (!isCodes(target) || it == stored.end())
    return std::nullopt;
  const std::string &f = it->second;
  std::optional<QuantScheme> s = symbolizeQuantScheme(f);
  if (!s || !isCodes(*s))
    return std::nullopt;
  if (auto shard = param->getAttrOfType<DenseI64ArrayAttr>("hyc.shard")) {
    auto type = cast<RankedTensorType>(param.getType());
    // K elements the format's scales are whole in (hyrt/gemm_layout.h).
    const int64_t unit = hyrt_gemm_code_unit(codesSchemeIdOfLayout(codesLayoutOf(*s)));
    ArrayRef<int64_t> spec = shard.asArrayRef();
    const int64_t k = type.getShape().back();
    if (!spec.empty() && spec[0] == type.getRank() - 1 &&
        (spec.size() > 3 || unit <= 0 || k % unit != 0)) {
      // Q4_K cut at a half super-block: each half keeps its d and dmin,
      // which is q4z's layout (d, dmin per 128; sc, m per 32), exactly.
      if (*s == QuantScheme::q4k && spec.size() == 3 && k % 128 == 0)
        return std::make_pair(QuantScheme::q4z, int64_t(32));
      // Anything else cut keeps the file's precision in 8-bit codes from
      // its exact values (4-bit codes would round them a second time).
      return std::make_pair(QuantScheme::q8, int64_t(32));
    }
  }
  // Q4_0 under 8-bit codes: its nibbles read as 8-bit codes (n + 120).
  if (*s == QuantScheme::q4 && target == QuantScheme::q8)
    s = QuantScheme::q8;
  // The sub-group of the format's layout (hyrt/gemm_layout.h: 32, Q6_K's
  // 16, q4z128's 128).
  return std::make_pair(*s, int64_t(hyrt_gemm_code_format(
                                        codesSchemeIdOfLayout(codesLayoutOf(*s)))
                                        .group));
}

/// Under 4-bit codes, a matrix whose K is not whole groups keeps 8 bits
/// (per-channel int8): its last group would be padded, and no 4-bit GGUF
/// type stores such rows either (llama-quantize falls back to a wider type
/// or refuses). stories260K's down projection (K = 172) costs 0.11 of
/// perplexity at 4 bits (bench/README.md "4-bit weights").
bool keepsInt8ForPartialGroups(QuantScheme target, int64_t group, ParamOp param) {
  auto type = cast<RankedTensorType>(param.getType());
  return target == QuantScheme::q4 && group && type.getShape().back() % group != 0;
}

/// The derivation names the artifact writer applies: per-channel
/// ("w8a8", "w8a8.scale"), per-group-128 ("w8a8g128", ...), FP8 blocks
/// ("fp8", "fp8.scale") or integer codes with their group scales ("q4g32",
/// "q8g32").
std::string derivation(QuantScheme target, int64_t group, bool scale) {
  if (target == QuantScheme::q4 || target == QuantScheme::q8)
    return std::string(target == QuantScheme::q4 ? "q4g" : "q8g") + std::to_string(group);
  if (isCodes(target)) // a stored format, kept as the checkpoint has it
    return stringifyQuantScheme(target).str();
  std::string d = target == QuantScheme::fp8_e4m3 ? "fp8"
                  : group                         ? "w8a8g" + std::to_string(group)
                                                  : "w8a8";
  return scale ? d + ".scale" : d;
}

/// The scheme attribute of a quantized weight.
QuantAttr quantAttr(MLIRContext *ctx, QuantScheme target, int64_t group) {
  if (target == QuantScheme::fp8_e4m3)
    return QuantAttr::get(ctx, target, 0, {kFp8Block, kFp8Block});
  return QuantAttr::get(
      ctx, target, target == QuantScheme::w8a8 || isCodes(target) ? group : 0, {});
}

/// The stored weight and its scales for a W8A8 / FP8 scheme, derived from
/// `param` ([N, K], or [E, N, K] expert stacks) when the artifact is
/// written: int8 with scales [.., N] (per channel) or [.., N, groups]; e4m3
/// with block factors [.., ceil(N/128), ceil(K/128)]; for integer codes
/// the codes alone (the scale param is null: its scales are inside).
std::pair<ParamOp, ParamOp> quantizedParams(OpBuilder &b, ParamOp param, QuantScheme target,
                                            int64_t group) {
  auto wType = cast<RankedTensorType>(param.getType());
  const int64_t rank = wType.getRank();
  const int64_t n = wType.getDimSize(rank - 2), k = wType.getDimSize(rank - 1);
  const bool fp8 = target == QuantScheme::fp8_e4m3;
  Type element = fp8 ? Type(b.getType<Float8E4M3FNType>()) : Type(b.getI8Type());
  auto q = ParamOp::create(b, param.getLoc(),
                           RankedTensorType::get(wType.getShape(), element), param.getRef());
  q->setAttr("hyc.quantize", b.getStringAttr(derivation(target, group, false)));
  if (isCodes(target))
    return {q, ParamOp()};
  SmallVector<int64_t> scaleShape(wType.getShape().drop_back(2));
  if (fp8) {
    scaleShape.append({groupsOf(n, kFp8Block), groupsOf(k, kFp8Block)});
  } else {
    scaleShape.push_back(n);
    if (group)
      scaleShape.push_back(groupsOf(k, group));
  }
  auto s = ParamOp::create(b, param.getLoc(), RankedTensorType::get(scaleShape, b.getF32Type()),
                           param.getRef());
  s->setAttr("hyc.quantize", b.getStringAttr(derivation(target, group, true)));
  return {q, s};
}

/// Whether `target` stores a derived weight (int8 / e4m3 with separate
/// scales, or integer codes with their scales inside).
bool storesDerived(QuantScheme target) {
  return target == QuantScheme::w8a8 || target == QuantScheme::fp8_e4m3 || isCodes(target);
}

/// The scheme and group a weight takes under `target` (a scheme that stores
/// derived weights): under codes, the names --keep-int8 gives are
/// per-channel int8; then the checkpoint's own codes (an int8 head too:
/// GGUF's Q6_K head stays Q6_K); then an int8 head and 4-bit matrices of
/// partial groups are per-channel int8; else the target.
std::pair<QuantScheme, int64_t> schemeFor(ParamOp param, QuantScheme target, int64_t group,
                                          bool int8Head, const std::vector<std::string> &keepInt8,
                                          const llvm::StringMap<std::string> &stored) {
  if (isCodes(target) && nameMatches(param, keepInt8))
    return {QuantScheme::w8a8, 0};
  if (auto kept = storedCodesOf(param, target, stored))
    return *kept;
  if (int8Head || keepsInt8ForPartialGroups(target, group, param))
    return {QuantScheme::w8a8, 0};
  return {target, group};
}

/// The expert GEMMs of an MoE layer take the scheme too ([E, N, K] weights);
/// under codes, those named by `keepInt8` per-channel W8A8 instead, those
/// the checkpoint stores as codes their stored format.
void applyToExperts(MoeGroupedMatmulOp op, QuantScheme target, int64_t group,
                    const std::vector<std::string> &keep,
                    const std::vector<std::string> &keepInt8,
                    const llvm::StringMap<std::string> &stored) {
  auto param = op.getWeight().getDefiningOp<ParamOp>();
  if (!param || op.getQuant().isStoredQuantized() || nameMatches(param, keep))
    return;
  std::tie(target, group) = schemeFor(param, target, group, false, keepInt8, stored);
  QuantAttr quant = quantAttr(op.getContext(), target, group);
  if (!storesDerived(target)) {
    op.setQuantAttr(quant);
    return;
  }
  OpBuilder b(op);
  auto [q, s] = quantizedParams(b, param, target, group);
  auto mm = MoeGroupedMatmulOp::create(b, op.getLoc(), op.getType(), op.getInput(),
                                       q, op.getOffsets(), s ? s.getResult() : Value(),
                                       quant, op.getEpilogueAttr());
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
    } else if (scheme == "fp8") {
      target = QuantScheme::fp8_e4m3;
    } else if (scheme == "w4a8" || scheme == "w8a8-g32") {
      target = scheme == "w4a8" ? QuantScheme::q4 : QuantScheme::q8;
      group = 32;
    } else {
      getOperation().emitError() << "hyc-global-quantize-policy: scheme '"
                                 << scheme
                                 << "' is not supported (f32, bf16, w8a8, w8a8-g128, "
                                    "w8a8-g32, w4a8, fp8)";
      return signalPassFailure();
    }
    if (lmHead != "bf16" && lmHead != "int8") {
      getOperation().emitError() << "hyc-global-quantize-policy: lm-head must be bf16 "
                                    "or int8, got '"
                                 << lmHead << "'";
      return signalPassFailure();
    }
    if (lmHead == "int8" && target != QuantScheme::w8a8 && !isCodes(target)) {
      getOperation().emitError() << "hyc-global-quantize-policy: an int8 lm_head needs "
                                    "an integer scheme (its activations are quantized per "
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
    auto quant = quantAttr(ctx, target, 0);
    auto bf16 = QuantAttr::get(ctx, QuantScheme::bf16, 0, {});
    SmallVector<QuantMatmulOp> matmuls;
    getOperation().walk([&](QuantMatmulOp op) { matmuls.push_back(op); });
    SmallVector<MoeGroupedMatmulOp> grouped;
    getOperation().walk([&](MoeGroupedMatmulOp op) { grouped.push_back(op); });
    const std::vector<std::string> int8Names(keepInt8.begin(), keepInt8.end());
    const std::vector<std::string> userBf16(keepBf16.begin(), keepBf16.end());
    llvm::StringMap<std::string> stored;
    for (const std::string &entry : storedCodes) {
      const size_t eq = entry.rfind('=');
      if (eq == std::string::npos || !symbolizeQuantScheme(entry.substr(eq + 1)) ||
          !isCodesScheme(*symbolizeQuantScheme(entry.substr(eq + 1)))) {
        std::string formats; // the integer-code schemes, in enum order
        for (uint32_t v = 0; v <= getMaxEnumValForQuantScheme(); ++v)
          if (auto q = symbolizeQuantScheme(v); q && isCodesScheme(*q))
            formats += (formats.empty() ? "" : ", ") + stringifyQuantScheme(*q).str();
        getOperation().emitError() << "hyc-global-quantize-policy: stored-codes entry '"
                                   << entry
                                   << "' is not tensor=format with an integer-code format ("
                                   << formats << ")";
        return signalPassFailure();
      }
      stored[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (MoeGroupedMatmulOp op : grouped)
      applyToExperts(op, target, group, f32Names, int8Names, stored);
    for (QuantMatmulOp op : matmuls) [&] {
      auto param = op.getWeight().getDefiningOp<ParamOp>();
      if (!param || op.getQuant().isStoredQuantized() || op.getEpilogue() != Epilogue::none)
        return;
      // A weight also read as a table (tied embeddings used as the lm_head)
      // gets a second copy for the GEMM (derivation "copy"), whatever its
      // precision: the embedding keeps its fp32 rows, the head its kernel's
      // packed layout, instead of the head running on the fp32 table through
      // the reference matmul.
      bool onlyGemms = llvm::all_of(param->getUsers(), [&](Operation *u) {
        auto mm = dyn_cast<QuantMatmulOp>(u);
        return mm && mm.getWeight() == param.getResult();
      });
      if (!onlyGemms) {
        OpBuilder b(op);
        auto copy = ParamOp::create(b, param.getLoc(), param.getType(), param.getRef());
        copy->setAttr("hyc.quantize", b.getStringAttr("copy"));
        op.getWeightMutable().assign(copy.getResult());
        param = copy;
      }
      if (nameMatches(param, f32Names))
        return;
      // Sensitive layers (router, lm_head, and what --keep-bf16 adds) stay
      // 16-bit.
      const bool int8Head = lmHead == "int8" && nameMatches(param, headNames);
      // A sensitive layer the checkpoint stores as codes hyc keeps (GGUF's
      // Q6_K head) stays as stored unless --keep-bf16 names it.
      const bool storedSensitive =
          storedCodesOf(param, target, stored).has_value() && !nameMatches(param, userBf16);
      if (nameMatches(param, bf16Names) && !int8Head && !storedSensitive) {
        if (target != QuantScheme::f32)
          op.setQuantAttr(bf16);
        return;
      }
      if (!storesDerived(target)) {
        op.setQuantAttr(quant);
        return;
      }
      // W8A8: the weight becomes symmetric int8 plus its scales (per output
      // channel, or per channel and group of 128 K-elements; an int8 head
      // stays per channel); FP8: e4m3 plus 128 x 128 block factors. Both
      // are derived from the checkpoint tensor (or kept as it stores them)
      // when the artifact is written. Integer codes: the codes alone, their
      // group scales inside (an int8 head under them is per-channel W8A8).
      OpBuilder b(op);
      const auto [t, g] = schemeFor(param, target, group, int8Head, int8Names, stored);
      auto [q, s] = quantizedParams(b, param, t, g);
      auto mm = QuantMatmulOp::create(b, op.getLoc(), op.getType(), op.getInput(),
                                      q, s ? s.getResult() : Value(), op.getBias(),
                                      op.getResidual(), op.getInputScale(),
                                      quantAttr(ctx, t, g), op.getEpilogueAttr());
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
