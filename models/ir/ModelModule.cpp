//===- ModelModule.cpp - the module with @extend and @decode --------------===//

#include "models/ir/Families.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace hyc::models {

namespace {
const char *kSupported[] = {"llama",       "qwen2",       "qwen3",      "qwen3_moe",
                            "deepseek_v2", "deepseek_v3", "hunyuan_moe"};

bool isSupported(const std::string &arch) {
  for (const char *a : kSupported)
    if (arch == a)
      return true;
  return false;
}

/// Checks the spec fields every family relies on.
bool validateSpec(const ModelSpec &s, std::string &error) {
  auto positive = [&](int64_t v, const char *name) {
    if (v > 0)
      return true;
    error = std::string("model spec: ") + name + " must be positive, got " +
            std::to_string(v);
    return false;
  };
  if (!positive(s.vocab_size, "vocab_size") ||
      !positive(s.hidden_size, "hidden_size") ||
      !positive(s.num_layers, "num_layers") ||
      !positive(s.num_heads, "num_heads") ||
      !positive(s.num_kv_heads, "num_kv_heads") ||
      !positive(s.head_dim, "head_dim"))
    return false;
  if (s.num_heads % s.num_kv_heads != 0) {
    error = "model spec: num_heads " + std::to_string(s.num_heads) +
            " is not a multiple of num_kv_heads " +
            std::to_string(s.num_kv_heads);
    return false;
  }
  if (s.rope.rotary_dim <= 0 || s.rope.rotary_dim % 2 != 0) {
    error = "model spec: rotary dim must be positive and even, got " +
            std::to_string(s.rope.rotary_dim);
    return false;
  }
  return true;
}
} // namespace

FailureOr<OwningOpRef<ModuleOp>>
buildModelModule(MLIRContext &ctx, const ModelSpec &spec,
                 const ShapeBounds &bounds, const std::string &weightFile,
                 std::string &error) {
  ctx.loadDialect<HycDialect, func::FuncDialect, tensor::TensorDialect>();
  if (!isSupported(spec.arch)) {
    error = "architecture '" + spec.arch + "' has no model definition (supported:";
    for (const char *a : kSupported)
      error += std::string(" ") + a;
    error += ")";
    return failure();
  }
  if (!validateSpec(spec, error))
    return failure();

  OpBuilder b(&ctx);
  Location loc = NameLoc::get(b.getStringAttr(spec.arch));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  module->getOperation()->setAttr("hyc.arch", b.getStringAttr(spec.arch));
  module->getOperation()->setAttr("hyc.max_seq_len",
                                  b.getI64IntegerAttr(bounds.maxSeqLen));
  // What the entry points check every step against before touching the
  // arena (convert-hyc-kernel-to-llvm, hyrt_check_step_v0 in abi.h).
  const int64_t kvHeads = spec.mla ? 1 : spec.num_kv_heads;
  const int64_t kDim = spec.mla ? spec.mla->kv_lora_rank + spec.mla->qk_rope_head_dim
                                : spec.head_dim;
  const int64_t vDim = spec.mla ? 0 : spec.head_dim;
  module->getOperation()->setAttr(
      "hyc.step_bounds",
      b.getDictionaryAttr({
          b.getNamedAttr("max_batch_tokens", b.getI64IntegerAttr(bounds.maxBatchTokens)),
          b.getNamedAttr("max_seqs", b.getI64IntegerAttr(bounds.maxSeqs)),
          b.getNamedAttr("max_seq_len", b.getI64IntegerAttr(bounds.maxSeqLen)),
          b.getNamedAttr("vocab_size", b.getI64IntegerAttr(spec.vocab_size)),
          b.getNamedAttr("kv_num_layers", b.getI64IntegerAttr(spec.num_layers)),
          b.getNamedAttr("kv_num_kv_heads", b.getI64IntegerAttr(kvHeads)),
          b.getNamedAttr("k_head_dim", b.getI64IntegerAttr(kDim)),
          b.getNamedAttr("v_head_dim", b.getI64IntegerAttr(vDim)),
      }));
  b.setInsertionPointToEnd(module->getBody());

  // MLA caches the latent: one "head" of kv_lora_rank + rope dims, no values.
  auto cacheType =
      spec.mla ? KVCacheType::get(&ctx, spec.num_layers, 1,
                                  spec.mla->kv_lora_rank + spec.mla->qk_rope_head_dim, 0)
               : KVCacheType::get(&ctx, spec.num_layers, spec.num_kv_heads,
                                  spec.head_dim, spec.head_dim);
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  auto logits = RankedTensorType::get({ShapedType::kDynamic, spec.vocab_size},
                                      b.getF32Type());
  auto fnType = b.getFunctionType({ids, ids, cacheType}, {logits, cacheType});

  for (EntryKind entry : {EntryKind::Extend, EntryKind::Decode}) {
    bool extend = entry == EntryKind::Extend;
    auto fn = func::FuncOp::create(b, loc, extend ? "extend" : "decode", fnType);
    int64_t maxTokens = extend ? bounds.maxBatchTokens : bounds.maxSeqs;
    fn->setAttr("hyc.entry", b.getStringAttr(extend ? "extend" : "decode"));
    Block *body = fn.addEntryBlock();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(body);
    Value tokens = AssumeBoundsOp::create(
        b, loc, body->getArgument(0), b.getDenseI64ArrayAttr({maxTokens}));
    Value positions = AssumeBoundsOp::create(
        b, loc, body->getArgument(1), b.getDenseI64ArrayAttr({maxTokens}));
    Value cache = body->getArgument(2);
    GraphBuilder g(b, loc, spec, weightFile);
    Value out = emitDecoderForward(g, spec, tokens, positions, cache, entry);
    func::ReturnOp::create(b, loc, ValueRange{out, cache});
  }
  if (failed(mlir::verify(*module))) {
    error = "internal error: the generated hyc IR does not verify";
    return failure();
  }
  return module;
}

} // namespace hyc::models
