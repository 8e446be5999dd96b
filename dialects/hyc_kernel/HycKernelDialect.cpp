//===- HycKernelDialect.cpp - hyc_kernel registration and verifiers -------===//

#include "dialects/hyc_kernel/HycKernelDialect.h"
#include "dialects/hyc/HycOps.h"

#include "hyrt/gemm_layout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace hyc::kernel;

#include "dialects/hyc_kernel/HycKernelDialect.cpp.inc"

void HycKernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/hyc_kernel/HycKernelOps.cpp.inc"
      >();
}

namespace {
/// The (A, B, C) element types a brgemm kernel exists for.
bool supportedBrgemmTypes(Type a, Type b, Type c) {
  if (a.isF32() && b.isF32() && c.isF32())
    return true;
  if (a.isBF16() && b.isBF16() && c.isF32())
    return true;
  if (a.isInteger(8) && b.isInteger(8) && (c.isInteger(32) || c.isF32()))
    return true; // f32: u8 x s8 with the per-token x per-channel rescale
  if (a.isF32() && b.isBF16() && c.isF32())
    return true; // bf16 weights widened to fp32 FMA
  if (a.isBF16() && isa<Float8E4M3FNType>(b) && c.isF32())
    return true;
  return false;
}
} // namespace

LogicalResult BrgemmDispatchOp::verify() {
  ArrayRef<int64_t> shape = getShape(), ld = getLeadingDims();
  if (shape.size() != 3)
    return emitOpError() << "shape must be [m, n, k], got " << shape.size()
                         << " values";
  if (ld.size() != 3)
    return emitOpError() << "leading dims must be [lda, ldb, ldc], got "
                         << ld.size() << " values";
  for (int64_t s : shape)
    if (s <= 0)
      return emitOpError() << "shape values must be positive, got " << s;
  int64_t m = shape[0], n = shape[1], k = shape[2];
  (void)m;
  if (ld[0] < k)
    return emitOpError() << "lda " << ld[0] << " is smaller than k " << k;
  if (ld[2] < n)
    return emitOpError() << "ldc " << ld[2] << " is smaller than n " << n;
  if (!supportedBrgemmTypes(getAType(), getBType(), getCType()))
    return emitOpError() << "no kernel for (" << getAType() << ", "
                         << getBType() << " -> " << getCType() << ")";
  if (getStreamC()) {
    StringRef isaName = getIsa() ? *getIsa() : "";
    if (!getCType().isF32() || !getZeroInit() ||
        getEpilogue() != hyc::Epilogue::none ||
        !isaName.starts_with("avx512") || isa<Float8E4M3FNType>(getBType()))
      return emitOpError() << "stream_c (non-temporal C stores) needs f32 C with "
                              "zero_init, no epilogue and an avx512 isa other than "
                              "for f8 B, got C "
                           << getCType() << (getZeroInit() ? "" : " accumulating")
                           << ", isa \"" << isaName << "\"";
  }
  StringRef layout = getBLayout();
  if (int32_t codes = hyrt_gemm_code_scheme_of_layout(layout.data(), layout.size());
      codes >= 0) {
    if (!getAType().isInteger(8) || !getBType().isInteger(8))
      return emitOpError() << layout << " codes need i8 A and B, got (" << getAType()
                           << ", " << getBType() << ")";
    const int64_t unit = hyrt_gemm_code_unit(codes);
    if (k % unit != 0)
      return emitOpError() << layout << " codes come in whole blocks of " << unit
                           << " along k, got " << k;
    return success();
  }
  if (layout != "row" && layout != "vnni2" && layout != "vnni4") {
    std::string codeLayouts; // hyrt/gemm_layout.h's names, in scheme order
    for (int32_t s = HYRT_GEMM_W4A8; s <= HYRT_GEMM_CODES_LAST; ++s)
      codeLayouts += std::string(codeLayouts.empty() ? "" : ", ") + hyrt_gemm_code_layout_name(s);
    return emitOpError() << "b_layout must be row, vnni2, vnni4 or an integer-code layout ("
                         << codeLayouts << "), got \"" << layout << "\"";
  }
  if (layout == "vnni2" && !getBType().isBF16() && !isa<Float8E4M3FNType>(getBType()))
    return emitOpError() << "vnni2 layout needs bf16 or f8E4M3FN B, got " << getBType();
  if (isa<Float8E4M3FNType>(getBType()) && k % 128 != 0)
    return emitOpError() << "f8E4M3FN B comes in whole blocks of 128 along k, got " << k;
  if (layout == "vnni4" && !getBType().isInteger(8))
    return emitOpError() << "vnni4 layout needs i8 B, got " << getBType();
  if (layout == "vnni2" && k % 2 != 0)
    return emitOpError() << "vnni2 layout needs even k, got " << k;
  if (layout == "vnni4" && k % 4 != 0)
    return emitOpError() << "vnni4 layout needs k divisible by 4, got " << k;
  return success();
}

LogicalResult BrgemmOp::verify() {
  auto a = cast<MemRefType>(getA().getType());
  auto b = cast<MemRefType>(getB().getType());
  auto c = cast<MemRefType>(getC().getType());
  if (auto dispatch = getHandle().getDefiningOp<BrgemmDispatchOp>()) {
    if (a.getElementType() != dispatch.getAType() ||
        b.getElementType() != dispatch.getBType() ||
        c.getElementType() != dispatch.getCType())
      return emitOpError() << "operand element types (" << a.getElementType()
                           << ", " << b.getElementType() << ", "
                           << c.getElementType()
                           << ") do not match the dispatched kernel ("
                           << dispatch.getAType() << ", " << dispatch.getBType()
                           << ", " << dispatch.getCType() << ")";
    int64_t n = dispatch.getShape()[1];
    if (c.getRank() == 2 && !ShapedType::isDynamic(c.getDimSize(1)) &&
        c.getDimSize(1) < n)
      return emitOpError() << "C has " << c.getDimSize(1)
                           << " columns, the kernel writes n = " << n;
    int64_t mMax = dispatch.getShape()[0];
    if (c.getRank() == 2 && !ShapedType::isDynamic(c.getDimSize(0)) &&
        c.getDimSize(0) > mMax)
      return emitOpError() << "C has " << c.getDimSize(0)
                           << " rows, more than the dispatched m = " << mMax;
  }
  return success();
}

LogicalResult PackOp::verify() {
  auto src = cast<MemRefType>(getSource().getType());
  auto dst = cast<MemRefType>(getDest().getType());
  ArrayRef<int64_t> tiles = getInnerTiles();
  if (src.getRank() != 2)
    return emitOpError() << "source must be [N, K], got " << src;
  if (tiles.size() != 2 || tiles[0] <= 0 || tiles[1] <= 0)
    return emitOpError() << "inner_tiles must be two positive values [bn, v]";
  if (src.getElementType() != dst.getElementType())
    return emitOpError() << "element types differ: " << src.getElementType()
                         << " vs " << dst.getElementType();
  if (dst.getRank() != 4)
    return emitOpError() << "dest must be [N/bn, K/v, bn, v], got " << dst;
  int64_t n = src.getDimSize(0), k = src.getDimSize(1);
  if (ShapedType::isDynamic(n) || ShapedType::isDynamic(k))
    return success();
  SmallVector<int64_t> want = {(n + tiles[0] - 1) / tiles[0],
                               (k + tiles[1] - 1) / tiles[1], tiles[0],
                               tiles[1]};
  for (int i = 0; i < 4; ++i)
    if (!ShapedType::isDynamic(dst.getDimSize(i)) &&
        dst.getDimSize(i) != want[i])
      return emitOpError() << "dest dim " << i << " is " << dst.getDimSize(i)
                           << ", expected " << want[i] << " for a [" << n
                           << ", " << k << "] source with tiles [" << tiles[0]
                           << ", " << tiles[1] << "]";
  return success();
}

LogicalResult PagedAttentionDispatchOp::verify() {
  int64_t h = getNumHeads(), kvh = getNumKvHeads();
  if (h <= 0 || kvh <= 0 || h % kvh != 0)
    return emitOpError() << "num_heads " << h
                         << " is not a positive multiple of num_kv_heads "
                         << kvh;
  if (getHeadDim() <= 0 || getVHeadDim() <= 0)
    return emitOpError() << "head dims must be positive, got " << getHeadDim()
                         << " and " << getVHeadDim();
  if (getPageSize() <= 0)
    return emitOpError() << "page_size must be positive, got " << getPageSize();
  if (getKvSplits() < 1)
    return emitOpError() << "kv_splits must be >= 1, got " << getKvSplits();
  Type kv = getKvType();
  if (!kv.isF32() && !kv.isBF16() && !kv.isInteger(8))
    return emitOpError() << "kv_type must be f32, bf16 or i8, got " << kv;
  return success();
}

LogicalResult PagedAttentionOp::verify() {
  auto cache = cast<hyc::KVCacheType>(getCache().getType());
  if (getLayer() < 0 || getLayer() >= cache.getNumLayers())
    return emitOpError() << "layer " << getLayer() << " is outside the cache's "
                         << cache.getNumLayers() << " layers";
  if (auto d = getHandle().getDefiningOp<PagedAttentionDispatchOp>()) {
    if (d.getNumKvHeads() != cache.getNumKvHeads() ||
        d.getHeadDim() != cache.getKHeadDim())
      return emitOpError() << "dispatched kernel (kv_heads "
                           << d.getNumKvHeads() << ", head_dim "
                           << d.getHeadDim() << ") does not match the cache "
                           << cache;
  }
  return success();
}

LogicalResult BufferOp::verify() {
  StringRef space = getSpace();
  static const char *const kSpaces[] = {
      "arena",          "scratch",     "weight",          "step_tokens",
      "step_positions", "step_logits", "step_logit_rows", "null"};
  if (llvm::find(kSpaces, space) == std::end(kSpaces))
    return emitOpError() << "space must be arena, scratch, weight, step_tokens, "
                            "step_positions, step_logits, step_logit_rows or "
                            "null, got '"
                         << space << "'";
  if (getOffset() < 0)
    return emitOpError() << "offset must be non-negative, got " << getOffset();
  auto type = cast<MemRefType>(getResult().getType());
  if (int64_t(getSizes().size()) != type.getNumDynamicDims())
    return emitOpError() << type << " has " << type.getNumDynamicDims()
                         << " dynamic dims but " << getSizes().size()
                         << " sizes were given";
  return success();
}

LogicalResult StepSizeOp::verify() {
  if (getField() != "num_tokens" && getField() != "num_logit_rows")
    return emitOpError() << "field must be num_tokens or num_logit_rows, got \""
                         << getField() << "\"";
  return success();
}

LogicalResult UkernelOp::verify() {
  if (!getName().starts_with("hyrt_"))
    return emitOpError() << "names a runtime kernel (hyrt_*), got \"" << getName()
                         << "\"";
  for (Type t : getArgs().getTypes())
    if (!isa<MemRefType, IndexType, IntegerType, FloatType>(t))
      return emitOpError() << "operands must be memrefs, indices, integers or "
                              "floats, got "
                           << t;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/hyc_kernel/HycKernelOps.cpp.inc"
