//===- HycOps.cpp - hyc op verifiers ---------------------------------------===//
//
// Every rule names the values involved, so a model-definition bug reads as
// "K = 64 of the input does not match K = 96 of the weight" rather than a
// generic type error.
//
//===----------------------------------------------------------------------===//

#include "dialects/hyc/HycOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

#include <string>

using namespace mlir;
using namespace hyc;

namespace {

/// Renders a dim as a number or '?'.
std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// True when two dims may be equal at run time.
bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

RankedTensorType rtt(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks rank and reports "<what> must have rank R, got type".
LogicalResult expectRank(Operation *op, Value v, int64_t rank,
                         StringRef what) {
  auto t = rtt(v);
  if (t.getRank() != rank)
    return op->emitOpError() << what << " must have rank " << rank << ", got "
                             << t;
  return success();
}

/// Checks that dim `i` of `a` can equal `expected`.
LogicalResult expectDim(Operation *op, StringRef what, int64_t found,
                        int64_t expected, StringRef expectedWhat) {
  if (!compatible(found, expected))
    return op->emitOpError()
           << what << " = " << dimStr(found) << " does not match "
           << expectedWhat << " = " << dimStr(expected);
  return success();
}

/// Checks that the weight scale of a quantized tensor [N, K] has the shape
/// its scheme needs.
LogicalResult verifyWeightScale(Operation *op, QuantAttr quant, int64_t n,
                                int64_t k, Value scale, int64_t parts = 1) {
  switch (quant.getScheme()) {
  case QuantScheme::f32:
  case QuantScheme::bf16:
  case QuantScheme::q4:
  case QuantScheme::q8:
    if (scale)
      return op->emitOpError() << "scheme " << stringifyQuantScheme(quant.getScheme())
                               << " takes no scale operand"
                               << (quant.isCodes() ? " (its scales are in the weight)" : "");
    return success();
  case QuantScheme::w8a8: {
    if (!scale)
      return op->emitOpError() << "w8a8 needs a weight scale operand";
    auto st = rtt(scale);
    int64_t group = quant.getGroup();
    if (group != 0) {
      // One scale per `group` K-elements; the last group may be shorter.
      int64_t groups = ShapedType::isDynamic(k) ? k : (k + group - 1) / group;
      if (st.getRank() != 2 || !compatible(st.getDimSize(0), n) ||
          !compatible(st.getDimSize(1), groups))
        return op->emitOpError() << "w8a8 group-" << group
                                 << " scale must be [" << dimStr(n) << ", "
                                 << dimStr(groups) << "], got " << st;
      return success();
    }
    bool ok = (st.getRank() == 1 && compatible(st.getDimSize(0), n)) ||
              (st.getRank() == 2 && compatible(st.getDimSize(0), n) &&
               st.getDimSize(1) == 1);
    if (!ok)
      return op->emitOpError() << "w8a8 per-channel scale must be [" << dimStr(n)
                               << "] or [" << dimStr(n) << ", 1], got " << st;
    return success();
  }
  case QuantScheme::fp8_e4m3: {
    if (!scale)
      return op->emitOpError() << "fp8_e4m3 needs a block scale operand";
    auto st = rtt(scale);
    int64_t bn = quant.getBlock()[0], bk = quant.getBlock()[1];
    auto ceilDiv = [](int64_t a, int64_t b) {
      return ShapedType::isDynamic(a) ? a : (a + b - 1) / b;
    };
    // A [gate; up] weight (silu_mul epilogue) is two matrices of n / 2
    // rows, each with its own blocks.
    const int64_t rows = ShapedType::isDynamic(n) ? n : parts * ceilDiv(n / parts, bn);
    if (st.getRank() != 2 || !compatible(st.getDimSize(0), rows) ||
        !compatible(st.getDimSize(1), ceilDiv(k, bk)))
      return op->emitOpError()
             << "fp8_e4m3 block scale for a [" << dimStr(n) << ", " << dimStr(k)
             << "] weight with block [" << bn << ", " << bk << "] must be ["
             << dimStr(rows) << ", " << dimStr(ceilDiv(k, bk))
             << "], got " << st;
    return success();
  }
  }
  return success();
}

/// Checks the element type a weight must have under `quant`.
LogicalResult verifyWeightElementType(Operation *op, QuantAttr quant,
                                      Type elementType) {
  switch (quant.getScheme()) {
  case QuantScheme::f32:
    if (!elementType.isF32())
      return op->emitOpError() << "scheme f32 needs an f32 weight, got "
                               << elementType;
    return success();
  case QuantScheme::bf16:
    if (!elementType.isBF16() && !elementType.isF32())
      return op->emitOpError() << "scheme bf16 needs a bf16 (or f32, converted "
                                  "when packed) weight, got "
                               << elementType;
    return success();
  case QuantScheme::w8a8:
  case QuantScheme::q4:
  case QuantScheme::q8:
    if (!elementType.isInteger(8))
      return op->emitOpError() << "scheme " << stringifyQuantScheme(quant.getScheme())
                               << " needs an i8 weight, got " << elementType;
    return success();
  case QuantScheme::fp8_e4m3:
    if (!isa<Float8E4M3FNType>(elementType))
      return op->emitOpError()
             << "scheme fp8_e4m3 needs an f8E4M3FN weight, got " << elementType;
    return success();
  }
  return success();
}

/// Checks the shape produced by an epilogue: N' outputs of the GEMM become
/// N' (none, residual_add) or N'/2 (silu_mul) result columns.
LogicalResult verifyEpilogueWidth(Operation *op, Epilogue epilogue,
                                  int64_t gemmN, int64_t resultN) {
  if (epilogue == Epilogue::silu_mul) {
    if (!ShapedType::isDynamic(gemmN) && gemmN % 2 != 0)
      return op->emitOpError() << "silu_mul epilogue needs an even number of "
                                  "weight rows (gate | up), got "
                               << gemmN;
    int64_t half = ShapedType::isDynamic(gemmN) ? gemmN : gemmN / 2;
    return expectDim(op, "result N", resultN, half,
                     "half the weight rows (silu_mul)");
  }
  return expectDim(op, "result N", resultN, gemmN, "weight rows N");
}

} // namespace

//===----------------------------------------------------------------------===//
// Parameters and elementwise
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getRef().getTensor().empty())
    return emitOpError() << "needs a non-empty tensor name";
  if (!getResult().getType().hasStaticShape())
    return emitOpError() << "weights must have a static shape, got "
                         << getResult().getType();
  return success();
}

LogicalResult ObserveOp::verify() {
  auto t = rtt(getInput());
  if (t.getRank() != 2)
    return emitOpError() << "observes [tokens, channels] rows, got rank " << t.getRank()
                         << " (" << t << ")";
  if (ShapedType::isDynamic(t.getDimSize(1)))
    return emitOpError() << "needs a static channel count, got " << t;
  // I64Attr reads back as uint64_t: the sign is in the attribute.
  if (getSlotAttr().getInt() < 0)
    return emitOpError() << "slot must be non-negative, got " << getSlotAttr().getInt();
  if (getFeeds().empty())
    return emitOpError("feeds must name at least one weight");
  return success();
}

LogicalResult AssumeBoundsOp::verify() {
  auto t = rtt(getInput());
  ArrayRef<int64_t> bounds = getUpperBounds();
  int64_t dynamic = t.getNumDynamicDims();
  if (static_cast<int64_t>(bounds.size()) != dynamic)
    return emitOpError() << "needs one upper bound per dynamic dim: " << t
                         << " has " << dynamic << ", got " << bounds.size();
  for (int64_t b : bounds)
    if (b <= 0)
      return emitOpError() << "upper bounds must be positive, got " << b;
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding, norm, rope
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(expectRank(*this, getTable(), 2, "table")) ||
      failed(expectRank(*this, getIds(), 1, "ids")) ||
      failed(expectRank(*this, getResult(), 2, "result")))
    return failure();
  auto table = rtt(getTable()), res = rtt(getResult());
  if (failed(expectDim(*this, "result rows", res.getDimSize(0),
                       rtt(getIds()).getDimSize(0), "number of ids")) ||
      failed(expectDim(*this, "result width", res.getDimSize(1),
                       table.getDimSize(1), "table width")))
    return failure();
  return success();
}

LogicalResult RMSNormOp::verify() {
  auto x = rtt(getInput()), w = rtt(getWeight());
  if (x.getRank() < 1)
    return emitOpError() << "input must have rank >= 1, got " << x;
  if (w.getRank() != 1)
    return emitOpError() << "weight must have rank 1, got " << w;
  if (failed(expectDim(*this, "weight size", w.getDimSize(0),
                       x.getDimSize(x.getRank() - 1), "input last dim")))
    return failure();
  if (getResult().getType() != x)
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal input type " << x;
  if (getResidual() && getResidual().getType() != x)
    return emitOpError() << "residual type " << getResidual().getType()
                         << " must equal input type " << x;
  if (static_cast<bool>(getResidual()) != static_cast<bool>(getResidualOut()))
    return emitOpError() << "residual_out is returned exactly when a residual "
                            "operand is given";
  if (getResidualOut() && getResidualOut().getType() != x)
    return emitOpError() << "residual_out type must equal input type " << x;
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive, got "
                         << getEpsilon().convertToFloat();
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(expectRank(*this, getInput(), 3, "input [tokens, heads, head_dim]")) ||
      failed(expectRank(*this, getPositions(), 1, "positions")))
    return failure();
  auto x = rtt(getInput());
  if (getResult().getType() != x)
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal input type " << x;
  if (failed(expectDim(*this, "positions", rtt(getPositions()).getDimSize(0),
                       x.getDimSize(0), "input tokens")))
    return failure();
  int64_t rot = getRotaryDim(), hd = x.getDimSize(2);
  if (rot <= 0 || rot % 2 != 0)
    return emitOpError() << "rotary_dim must be positive and even, got " << rot;
  if (!ShapedType::isDynamic(hd) && rot > hd)
    return emitOpError() << "rotary_dim " << rot << " exceeds head_dim " << hd;
  if (getTheta().convertToDouble() <= 0)
    return emitOpError() << "theta must be positive, got "
                         << getTheta().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Quantization and matmul
//===----------------------------------------------------------------------===//

LogicalResult QuantizeOp::verify() {
  if (getQuant().getScheme() != QuantScheme::w8a8)
    return emitOpError() << "activation quantization supports w8a8 only, got "
                         << stringifyQuantScheme(getQuant().getScheme());
  if (failed(expectRank(*this, getInput(), 2, "input")))
    return failure();
  auto x = rtt(getInput());
  auto q = rtt(getResult()), s = rtt(getScale());
  if (q.getShape() != x.getShape())
    return emitOpError() << "quantized result shape of " << q
                         << " must equal the input shape of " << x;
  int64_t k = x.getDimSize(1), group = getQuant().getGroup();
  int64_t groups = 1;
  if (group != 0) {
    if (!ShapedType::isDynamic(k) && k % group != 0)
      return emitOpError() << "group size " << group << " does not divide K = "
                           << k;
    groups = ShapedType::isDynamic(k) ? k : k / group;
  }
  if (s.getRank() != 2 || !compatible(s.getDimSize(0), x.getDimSize(0)) ||
      !compatible(s.getDimSize(1), groups))
    return emitOpError() << "scale must be [" << dimStr(x.getDimSize(0)) << ", "
                         << dimStr(groups) << "], got " << s;
  return success();
}

LogicalResult DequantizeOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")))
    return failure();
  auto q = rtt(getInput());
  if (rtt(getResult()).getShape() != q.getShape())
    return emitOpError() << "result shape of " << getResult().getType()
                         << " must equal the input shape of " << q;
  QuantAttr quant = getQuant();
  if (!quant.isQuantized())
    return emitOpError() << "needs a w8a8 or fp8_e4m3 scheme, got "
                         << stringifyQuantScheme(quant.getScheme());
  if (failed(verifyWeightElementType(*this, quant, q.getElementType())))
    return failure();
  return verifyWeightScale(*this, quant, q.getDimSize(0), q.getDimSize(1),
                           getScale());
}

LogicalResult QuantMatmulOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getWeight(), 2, "weight [N, K]")) ||
      failed(expectRank(*this, getResult(), 2, "result")))
    return failure();
  auto x = rtt(getInput()), w = rtt(getWeight()), r = rtt(getResult());
  if (failed(expectDim(*this, "input K", x.getDimSize(1), w.getDimSize(1),
                       "weight K")) ||
      failed(expectDim(*this, "result rows", r.getDimSize(0), x.getDimSize(0),
                       "input rows")))
    return failure();
  if (failed(verifyWeightElementType(*this, getQuant(), w.getElementType())) ||
      failed(verifyWeightScale(*this, getQuant(), w.getDimSize(0), w.getDimSize(1),
                               getScale(), getEpilogue() == Epilogue::silu_mul ? 2 : 1)) ||
      failed(verifyEpilogueWidth(*this, getEpilogue(), w.getDimSize(0),
                                 r.getDimSize(1))))
    return failure();
  if (getBias()) {
    auto b = rtt(getBias());
    if (b.getRank() != 1 || !compatible(b.getDimSize(0), w.getDimSize(0)))
      return emitOpError() << "bias must be [" << dimStr(w.getDimSize(0))
                           << "], got " << b;
  }
  bool wantsResidual = getEpilogue() == Epilogue::residual_add;
  if (wantsResidual != static_cast<bool>(getResidual()))
    return emitOpError() << "a residual operand is given exactly with the "
                            "residual_add epilogue (epilogue is "
                         << stringifyEpilogue(getEpilogue()) << ")";
  if (getResidual() && getResidual().getType() != r)
    return emitOpError() << "residual type " << getResidual().getType()
                         << " must equal result type " << r;
  bool quantizedInput = x.getElementType().isInteger(8);
  if (!quantizedInput && !isa<FloatType>(x.getElementType()))
    return emitOpError() << "input must be float or i8, got " << x;
  if (quantizedInput != static_cast<bool>(getInputScale()))
    return emitOpError() << "an input_scale is given exactly with an i8 input "
                            "(input is "
                         << x << ")";
  if (quantizedInput) {
    if (getQuant().getScheme() != QuantScheme::w8a8 || getQuant().getGroup() != 0)
      return emitOpError() << "an i8 input needs per-channel w8a8, got "
                           << getQuant();
    auto s = rtt(getInputScale());
    if (s.getRank() != 2 || !compatible(s.getDimSize(0), x.getDimSize(0)) ||
        s.getDimSize(1) != 1)
      return emitOpError() << "input_scale must be [" << dimStr(x.getDimSize(0))
                           << ", 1], got " << s;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Attention and KV cache
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyLayer(Operation *op, int64_t layer, KVCacheType cache) {
  if (layer < 0 || layer >= cache.getNumLayers())
    return op->emitOpError() << "layer " << layer << " is outside the cache's "
                             << cache.getNumLayers() << " layers";
  return success();
}

LogicalResult verifyHeads(Operation *op, int64_t heads, int64_t kvHeads) {
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(kvHeads))
    return op->emitOpError() << "head counts must be static";
  if (kvHeads <= 0 || heads % kvHeads != 0)
    return op->emitOpError() << "query heads " << heads
                             << " are not a multiple of KV heads " << kvHeads;
  return success();
}
} // namespace

LogicalResult KVCacheAppendOp::verify() {
  auto cache = cast<KVCacheType>(getCache().getType());
  if (failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(expectRank(*this, getKey(), 3, "key [tokens, kv_heads, dim]")))
    return failure();
  auto k = rtt(getKey());
  if (failed(expectDim(*this, "key heads", k.getDimSize(1),
                       cache.getNumKvHeads(), "cache num_kv_heads")) ||
      failed(expectDim(*this, "key dim", k.getDimSize(2), cache.getKHeadDim(),
                       "cache k_head_dim")))
    return failure();
  if (cache.getVHeadDim() == 0) {
    if (getValue())
      return emitOpError() << "the cache has v_head_dim = 0 (latent cache) but "
                              "a value operand was given";
  } else {
    if (!getValue())
      return emitOpError() << "the cache has v_head_dim = "
                           << cache.getVHeadDim() << " but no value was given";
    if (failed(expectRank(*this, getValue(), 3, "value")))
      return failure();
    auto v = rtt(getValue());
    if (failed(expectDim(*this, "value tokens", v.getDimSize(0),
                         k.getDimSize(0), "key tokens")) ||
        failed(expectDim(*this, "value heads", v.getDimSize(1),
                         cache.getNumKvHeads(), "cache num_kv_heads")) ||
        failed(expectDim(*this, "value dim", v.getDimSize(2),
                         cache.getVHeadDim(), "cache v_head_dim")))
      return failure();
  }
  if (getResult().getType() != cache)
    return emitOpError() << "result must have the cache type " << cache;
  return success();
}

LogicalResult AttentionOp::verify() {
  auto cache = cast<KVCacheType>(getCache().getType());
  if (failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(expectRank(*this, getQuery(), 3, "query")) ||
      failed(expectRank(*this, getKey(), 3, "key")) ||
      failed(expectRank(*this, getValue(), 3, "value")) ||
      failed(expectRank(*this, getResult(), 3, "result")))
    return failure();
  auto q = rtt(getQuery()), k = rtt(getKey()), v = rtt(getValue()),
       r = rtt(getResult());
  if (failed(verifyHeads(*this, q.getDimSize(1), k.getDimSize(1))) ||
      failed(expectDim(*this, "key heads", k.getDimSize(1),
                       cache.getNumKvHeads(), "cache num_kv_heads")) ||
      failed(expectDim(*this, "value heads", v.getDimSize(1), k.getDimSize(1),
                       "key heads")) ||
      failed(expectDim(*this, "query dim", q.getDimSize(2), k.getDimSize(2),
                       "key dim")) ||
      failed(expectDim(*this, "key dim", k.getDimSize(2), cache.getKHeadDim(),
                       "cache k_head_dim")) ||
      failed(expectDim(*this, "value dim", v.getDimSize(2),
                       cache.getVHeadDim(), "cache v_head_dim")) ||
      failed(expectDim(*this, "key tokens", k.getDimSize(0), q.getDimSize(0),
                       "query tokens")) ||
      failed(expectDim(*this, "value tokens", v.getDimSize(0), q.getDimSize(0),
                       "query tokens")) ||
      failed(expectDim(*this, "result tokens", r.getDimSize(0),
                       q.getDimSize(0), "query tokens")) ||
      failed(expectDim(*this, "result heads", r.getDimSize(1), q.getDimSize(1),
                       "query heads")) ||
      failed(expectDim(*this, "result dim", r.getDimSize(2), v.getDimSize(2),
                       "value dim")))
    return failure();
  if (getScale().convertToFloat() <= 0.0f)
    return emitOpError() << "scale must be positive, got "
                         << getScale().convertToFloat();
  return success();
}

namespace {
/// The checks decode attention over a paged cache shares, with or without
/// the fused append: layer, query/result shapes against the cache, split
/// count and scale.
LogicalResult verifyPagedDecode(Operation *op, Value query, Value result,
                                KVCacheType cache, int64_t layer,
                                int64_t kvSplits, float scale) {
  if (failed(verifyLayer(op, layer, cache)) ||
      failed(expectRank(op, query, 3, "query")) ||
      failed(expectRank(op, result, 3, "result")))
    return failure();
  auto q = rtt(query), r = rtt(result);
  if (cache.getVHeadDim() == 0)
    return op->emitOpError() << "needs a cache with values (v_head_dim > 0); use "
                                "hyc.mla.attention for latent caches";
  if (failed(verifyHeads(op, q.getDimSize(1), cache.getNumKvHeads())) ||
      failed(expectDim(op, "query dim", q.getDimSize(2), cache.getKHeadDim(),
                       "cache k_head_dim")) ||
      failed(expectDim(op, "result tokens", r.getDimSize(0), q.getDimSize(0),
                       "query tokens")) ||
      failed(expectDim(op, "result heads", r.getDimSize(1), q.getDimSize(1),
                       "query heads")) ||
      failed(expectDim(op, "result dim", r.getDimSize(2), cache.getVHeadDim(),
                       "cache v_head_dim")))
    return failure();
  if (kvSplits < 1)
    return op->emitOpError() << "kv_splits must be >= 1, got " << kvSplits;
  if (scale <= 0.0f)
    return op->emitOpError() << "scale must be positive, got " << scale;
  return success();
}
} // namespace

LogicalResult PagedAttentionOp::verify() {
  return verifyPagedDecode(*this, getQuery(), getResult(),
                           cast<KVCacheType>(getCache().getType()), getLayer(),
                           getKvSplits(), getScale().convertToFloat());
}

LogicalResult LogitRowsOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input [tokens, dim]")))
    return failure();
  if (!rtt(getInput()).isDynamicDim(0))
    return emitOpError() << "the token dim must be dynamic (the step decides "
                            "how many rows), got "
                         << getInput().getType();
  return success();
}

LogicalResult PagedAttentionAppendOp::verify() {
  auto cache = cast<KVCacheType>(getCache().getType());
  if (failed(verifyPagedDecode(*this, getQuery(), getResult(), cache, getLayer(),
                               getKvSplits(), getScale().convertToFloat())) ||
      failed(expectRank(*this, getKey(), 3, "key")) ||
      failed(expectRank(*this, getValue(), 3, "value")))
    return failure();
  auto q = rtt(getQuery()), k = rtt(getKey()), v = rtt(getValue());
  if (failed(expectDim(*this, "key tokens", k.getDimSize(0), q.getDimSize(0),
                       "query tokens")) ||
      failed(expectDim(*this, "key heads", k.getDimSize(1),
                       cache.getNumKvHeads(), "cache num_kv_heads")) ||
      failed(expectDim(*this, "key dim", k.getDimSize(2), cache.getKHeadDim(),
                       "cache k_head_dim")) ||
      failed(expectDim(*this, "value tokens", v.getDimSize(0), q.getDimSize(0),
                       "query tokens")) ||
      failed(expectDim(*this, "value heads", v.getDimSize(1),
                       cache.getNumKvHeads(), "cache num_kv_heads")) ||
      failed(expectDim(*this, "value dim", v.getDimSize(2), cache.getVHeadDim(),
                       "cache v_head_dim")))
    return failure();
  return success();
}

LogicalResult MLAAttentionOp::verify() {
  auto cache = cast<KVCacheType>(getCache().getType());
  if (failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(expectRank(*this, getQNope(), 3, "q_nope")) ||
      failed(expectRank(*this, getQPe(), 3, "q_pe")) ||
      failed(expectRank(*this, getKvB(), 2, "kv_b")) ||
      failed(expectRank(*this, getResult(), 3, "result")))
    return failure();
  auto qn = rtt(getQNope()), qp = rtt(getQPe()), kvb = rtt(getKvB()),
       r = rtt(getResult());
  if (cache.getNumKvHeads() != 1 || cache.getVHeadDim() != 0)
    return emitOpError() << "needs a latent cache (num_kv_heads = 1, "
                            "v_head_dim = 0), got "
                         << cache;
  int64_t heads = qn.getDimSize(1), nope = qn.getDimSize(2),
          rope = qp.getDimSize(2), vDim = getVHeadDim();
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(nope) ||
      ShapedType::isDynamic(rope))
    return emitOpError() << "head counts and head dims must be static";
  if (failed(expectDim(*this, "q_pe heads", qp.getDimSize(1), heads,
                       "q_nope heads")) ||
      failed(expectDim(*this, "q_pe tokens", qp.getDimSize(0), qn.getDimSize(0),
                       "q_nope tokens")))
    return failure();
  int64_t rank = kvb.getDimSize(1);
  if (ShapedType::isDynamic(rank) ||
      cache.getKHeadDim() != rank + rope)
    return emitOpError() << "MLA ranks inconsistent: cache k_head_dim "
                         << cache.getKHeadDim() << " must equal kv_lora_rank "
                         << dimStr(rank) << " + rope dim " << rope;
  if (vDim <= 0)
    return emitOpError() << "v_head_dim must be positive, got " << vDim;
  if (failed(expectDim(*this, "kv_b rows", kvb.getDimSize(0),
                       heads * (nope + vDim), "heads * (nope + v_head_dim)")) ||
      failed(expectDim(*this, "result tokens", r.getDimSize(0),
                       qn.getDimSize(0), "query tokens")) ||
      failed(expectDim(*this, "result heads", r.getDimSize(1), heads,
                       "query heads")) ||
      failed(expectDim(*this, "result dim", r.getDimSize(2), vDim,
                       "v_head_dim")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MoeRouteOp::verify() {
  if (failed(expectRank(*this, getLogits(), 2, "logits [tokens, experts]")) ||
      failed(expectRank(*this, getWeights(), 2, "weights")) ||
      failed(expectRank(*this, getIds(), 2, "ids")))
    return failure();
  auto logits = rtt(getLogits());
  int64_t experts = logits.getDimSize(1);
  if (ShapedType::isDynamic(experts))
    return emitOpError() << "number of experts must be static";
  MoeGatingAttr g = getGating();
  if (g.getTopK() > experts)
    return emitOpError() << "top_k " << g.getTopK()
                         << " exceeds num_experts " << experts;
  if (experts % g.getNGroup() != 0)
    return emitOpError() << "n_group " << g.getNGroup()
                         << " does not divide num_experts " << experts;
  int64_t perGroup = experts / g.getNGroup();
  if (g.getTopK() > g.getTopkGroup() * perGroup)
    return emitOpError() << "top_k " << g.getTopK() << " exceeds the "
                         << g.getTopkGroup() * perGroup
                         << " experts in the kept topk_group "
                         << g.getTopkGroup() << " groups";
  if (g.getGroupScore() == MoeGroupScore::top2_sum && g.getNGroup() > 1 &&
      perGroup < 2)
    return emitOpError() << "top2_sum group score needs >= 2 experts per "
                            "group, got "
                         << perGroup;
  if (getCorrectionBias()) {
    auto b = rtt(getCorrectionBias());
    if (b.getRank() != 1 || b.getDimSize(0) != experts)
      return emitOpError() << "correction bias must be [" << experts
                           << "], got " << b;
  }
  for (Value v : {getWeights(), getIds()}) {
    auto t = rtt(v);
    if (failed(expectDim(*this, "output rows", t.getDimSize(0),
                         logits.getDimSize(0), "logits rows")) ||
        failed(expectDim(*this, "output width", t.getDimSize(1), g.getTopK(),
                         "top_k")))
      return failure();
  }
  return success();
}

LogicalResult MoePermuteOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getIds(), 2, "ids [tokens, top_k]")) ||
      failed(expectRank(*this, getResult(), 2, "result")) ||
      failed(expectRank(*this, getOffsets(), 1, "offsets")) ||
      failed(expectRank(*this, getRows(), 1, "rows")))
    return failure();
  int64_t e = getNumExperts();
  if (e <= 0)
    return emitOpError() << "num_experts must be positive, got " << e;
  auto x = rtt(getInput()), ids = rtt(getIds()), r = rtt(getResult());
  if (failed(expectDim(*this, "ids rows", ids.getDimSize(0), x.getDimSize(0),
                       "input rows")) ||
      failed(expectDim(*this, "offsets size", rtt(getOffsets()).getDimSize(0),
                       e + 1, "num_experts + 1")) ||
      failed(expectDim(*this, "result width", r.getDimSize(1), x.getDimSize(1),
                       "input width")))
    return failure();
  int64_t expectedRows =
      ShapedType::isDynamic(x.getDimSize(0)) || ShapedType::isDynamic(ids.getDimSize(1))
          ? ShapedType::kDynamic
          : x.getDimSize(0) * ids.getDimSize(1);
  if (failed(expectDim(*this, "result rows", r.getDimSize(0), expectedRows,
                       "tokens * top_k")) ||
      failed(expectDim(*this, "rows size", rtt(getRows()).getDimSize(0),
                       r.getDimSize(0), "result rows")))
    return failure();
  return success();
}

/// What the expert-parallel exchange moves: fp32 `what` rows, and the
/// counts per rank [2 * group_size] (static: the kernel writes them all).
static LogicalResult verifyExchange(Operation *op, RankedTensorType rows, StringRef what,
                                    Value counts, int64_t groupSize) {
  if (!rows.getElementType().isF32())
    return op->emitOpError() << "expects f32 " << what << " (the exchange moves fp32), got "
                             << rows;
  if (rtt(counts).getDimSize(0) != 2 * groupSize)
    return op->emitOpError() << "expects counts of static size 2 * group_size = "
                             << 2 * groupSize << ", got " << rtt(counts);
  return success();
}

LogicalResult MoeDispatchOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getIds(), 2, "ids [tokens, top_k]")) ||
      failed(expectRank(*this, getCounts(), 1, "counts")))
    return failure();
  if (getGroupSize() < 1 || getExpertsPerRank() < 1)
    return emitOpError() << "group_size and experts_per_rank must be positive, got "
                         << getGroupSize() << " and " << getExpertsPerRank();
  auto x = rtt(getInput()), ids = rtt(getIds());
  if (failed(verifyExchange(*this, x, "rows", getCounts(), getGroupSize())) ||
      failed(expectDim(*this, "ids rows", ids.getDimSize(0), x.getDimSize(0), "input rows")))
    return failure();
  // Received tokens are shaped like the own ones: rows like input, their
  // slots like ids / weights, and `sent` like ids.
  if (getRows().getType() != getInput().getType() || getRowIds().getType() != ids ||
      getSent().getType() != ids || getRowWeights().getType() != getWeights().getType() ||
      rtt(getWeights()).getShape() != ids.getShape())
    return emitOpError() << "expected rows shaped like input, row_ids and sent like ids, and "
                            "weights and row_weights like ids (f32)";
  return success();
}

LogicalResult MoeUndispatchOp::verify() {
  if (failed(expectRank(*this, getIds(), 2, "ids [tokens, top_k]")) ||
      failed(expectRank(*this, getResults(), 2, "results")) ||
      failed(expectRank(*this, getCounts(), 1, "counts")))
    return failure();
  if (getGroupSize() < 1)
    return emitOpError() << "group_size must be positive, got " << getGroupSize();
  auto ids = rtt(getIds()), res = rtt(getResults());
  if (getSent().getType() != ids)
    return emitOpError() << "expected sent shaped like ids";
  if (failed(verifyExchange(*this, res, "results", getCounts(), getGroupSize())) ||
      failed(expectDim(*this, "results rows", res.getDimSize(0), ids.getDimSize(0), "tokens")))
    return failure();
  if (getResult().getType() != getResults().getType())
    return emitOpError() << "expected the result shaped like results";
  return success();
}

LogicalResult MoeGroupedMatmulOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getWeight(), 3, "weight [E, N, K]")) ||
      failed(expectRank(*this, getOffsets(), 1, "offsets")) ||
      failed(expectRank(*this, getResult(), 2, "result")))
    return failure();
  auto x = rtt(getInput()), w = rtt(getWeight()), r = rtt(getResult());
  if (failed(expectDim(*this, "offsets size", rtt(getOffsets()).getDimSize(0),
                       w.getDimSize(0) + 1, "experts + 1")) ||
      failed(expectDim(*this, "input K", x.getDimSize(1), w.getDimSize(2),
                       "weight K")) ||
      failed(expectDim(*this, "result rows", r.getDimSize(0), x.getDimSize(0),
                       "input rows")))
    return failure();
  if (failed(verifyWeightElementType(*this, getQuant(), w.getElementType())) ||
      failed(verifyEpilogueWidth(*this, getEpilogue(), w.getDimSize(1),
                                 r.getDimSize(1))))
    return failure();
  if (getEpilogue() == Epilogue::residual_add)
    return emitOpError() << "residual_add is not supported on expert GEMMs";
  if (getQuant().isQuantized() && !getScale())
    return emitOpError() << "scheme " << stringifyQuantScheme(getQuant().getScheme())
                         << " needs a scale operand";
  if (!getQuant().isQuantized() && getScale())
    return emitOpError() << "scheme " << stringifyQuantScheme(getQuant().getScheme())
                         << " takes no scale operand";
  return success();
}

LogicalResult MoeUnpermuteOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getRows(), 1, "rows")) ||
      failed(expectRank(*this, getWeights(), 2, "weights [tokens, top_k]")) ||
      failed(expectRank(*this, getResult(), 2, "result")))
    return failure();
  auto x = rtt(getInput()), w = rtt(getWeights()), r = rtt(getResult());
  if (failed(expectDim(*this, "rows size", rtt(getRows()).getDimSize(0),
                       x.getDimSize(0), "input rows")) ||
      failed(expectDim(*this, "result rows", r.getDimSize(0), w.getDimSize(0),
                       "weights rows")) ||
      failed(expectDim(*this, "result width", r.getDimSize(1), x.getDimSize(1),
                       "input width")))
    return failure();
  if (getAddends().size() > 2)
    return emitOpError() << "takes at most 2 addends, got " << getAddends().size();
  for (Value a : getAddends())
    if (a.getType() != getResult().getType())
      return emitOpError() << "addend type " << a.getType()
                           << " does not match the result type "
                           << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (getGroupSize() < 1)
    return emitOpError() << "group_size must be >= 1, got " << getGroupSize();
  return success();
}

LogicalResult AllGatherOp::verify() {
  auto x = rtt(getInput()), r = rtt(getResult());
  int64_t n = getGroupSize(), dim = getDim();
  if (n < 1)
    return emitOpError() << "group_size must be >= 1, got " << n;
  if (dim < 0 || dim >= x.getRank())
    return emitOpError() << "dim " << dim << " is outside rank " << x.getRank();
  if (r.getRank() != x.getRank())
    return emitOpError() << "result rank " << r.getRank()
                         << " must equal input rank " << x.getRank();
  for (int64_t i = 0; i < x.getRank(); ++i) {
    int64_t in = x.getDimSize(i);
    int64_t want = (i == dim && !ShapedType::isDynamic(in)) ? in * n : in;
    if (failed(expectDim(*this, "result dim " + std::to_string(i),
                         r.getDimSize(i), want,
                         i == dim ? "input dim * group_size" : "input dim")))
      return failure();
  }
  return success();
}

LogicalResult AllToAllOp::verify() {
  auto x = rtt(getInput()), r = rtt(getResult());
  int64_t n = getGroupSize(), sd = getSplitDim(), cd = getConcatDim();
  if (n < 1)
    return emitOpError() << "group_size must be >= 1, got " << n;
  if (sd < 0 || sd >= x.getRank() || cd < 0 || cd >= x.getRank())
    return emitOpError() << "split_dim " << sd << " / concat_dim " << cd
                         << " outside rank " << x.getRank();
  if (r.getRank() != x.getRank())
    return emitOpError() << "result rank " << r.getRank()
                         << " must equal input rank " << x.getRank();
  int64_t s = x.getDimSize(sd);
  if (!ShapedType::isDynamic(s) && s % n != 0)
    return emitOpError() << "group_size " << n << " does not divide split dim "
                         << sd << " of size " << s;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    int64_t in = x.getDimSize(i), want = in;
    if (!ShapedType::isDynamic(in)) {
      if (i == sd && i != cd)
        want = in / n;
      else if (i == cd && i != sd)
        want = in * n;
    }
    if (failed(expectDim(*this, "result dim " + std::to_string(i),
                         r.getDimSize(i), want, "exchanged input dim")))
      return failure();
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/hyc/HycOps.cpp.inc"
