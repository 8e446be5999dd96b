//===- Attention.cpp - GQA and MLA attention blocks in hyc IR -------------===//

#include "models/ir/Families.h"

#include "passes/RopeFrequencies.h"

#include <cmath>

using namespace mlir;

namespace hyc::models {

float attentionScale(const ModelSpec &s, int64_t qkHeadDim) {
  double scale = 1.0 / std::sqrt(static_cast<double>(qkHeadDim));
  // DeepSeek folds YaRN's magnitude correction into the softmax scale.
  if (s.mla && s.rope.scaling == "yarn" && s.rope.mscale_all_dim != 0.0) {
    double m = yarnGetMscale(s.rope.factor, s.rope.mscale_all_dim);
    scale *= m * m;
  }
  return static_cast<float>(scale);
}

Value emitGqaAttention(GraphBuilder &g, const ModelSpec &s, int64_t layer,
                       Value h, Value positions, Value &cache,
                       EntryKind entry) {
  OpBuilder &b = g.builder();
  Location loc = g.location();
  std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
  int64_t hd = s.head_dim, nh = s.num_heads, kvh = s.num_kv_heads;
  auto bias = [&](const char *n) {
    return s.attention_bias ? p + n + ".bias" : std::string();
  };
  Value q = g.linear(h, p + "q_proj.weight", nh * hd, s.hidden_size, bias("q_proj"));
  Value k = g.linear(h, p + "k_proj.weight", kvh * hd, s.hidden_size, bias("k_proj"));
  Value v = g.linear(h, p + "v_proj.weight", kvh * hd, s.hidden_size, bias("v_proj"));
  q = g.splitHeads(q, nh, hd);
  k = g.splitHeads(k, kvh, hd);
  v = g.splitHeads(v, kvh, hd);
  // Qwen3 normalizes q/k before RoPE; Hunyuan normalizes the rotated q/k.
  auto qkNorm = [&] {
    q = g.rmsNorm(q, p + "q_norm.weight", s.rms_norm_eps);
    k = g.rmsNorm(k, p + "k_norm.weight", s.rms_norm_eps);
  };
  if (s.qk_norm && !s.qk_norm_after_rope)
    qkNorm();
  q = g.rope(q, positions, s.rope);
  k = g.rope(k, positions, s.rope);
  if (s.qk_norm && s.qk_norm_after_rope)
    qkNorm();
  cache = KVCacheAppendOp::create(b, loc, cache, k, v, b.getI64IntegerAttr(layer));
  FloatAttr scale = b.getF32FloatAttr(attentionScale(s, hd));
  Value o;
  if (entry == EntryKind::Extend)
    o = AttentionOp::create(b, loc, q.getType(), q, k, v, cache,
                            b.getI64IntegerAttr(layer), scale);
  else
    o = PagedAttentionOp::create(b, loc, q.getType(), q, cache,
                                 b.getI64IntegerAttr(layer), scale,
                                 b.getI64IntegerAttr(1));
  o = g.mergeHeads(o);
  return g.linear(o, p + "o_proj.weight", s.hidden_size, nh * hd);
}

Value emitMlaAttention(GraphBuilder &g, const ModelSpec &s, int64_t layer,
                       Value h, Value positions, Value &cache) {
  OpBuilder &b = g.builder();
  Location loc = g.location();
  const MlaSpec &m = *s.mla;
  std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
  int64_t nh = s.num_heads, nope = m.qk_nope_head_dim, rope = m.qk_rope_head_dim;
  int64_t qkDim = nope + rope, rank = m.kv_lora_rank;
  // DeepSeek's q_a_layernorm / kv_a_layernorm use the model's rms_norm_eps
  // (llama.cpp; transformers hard-codes 1e-6, equal for the checkpoints we
  // know).
  double eps = s.rms_norm_eps;

  Value q;
  if (m.q_lora_rank > 0) {
    Value qa = g.linear(h, p + "q_a_proj.weight", m.q_lora_rank, s.hidden_size);
    qa = g.rmsNorm(qa, p + "q_a_layernorm.weight", eps);
    q = g.linear(qa, p + "q_b_proj.weight", nh * qkDim, m.q_lora_rank);
  } else {
    q = g.linear(h, p + "q_proj.weight", nh * qkDim, s.hidden_size);
  }
  q = g.splitHeads(q, nh, qkDim);
  Value qNope = g.sliceLastDim(q, 0, nope);
  Value qPe = g.rope(g.sliceLastDim(q, nope, rope), positions, s.rope);

  Value ckv = g.linear(h, p + "kv_a_proj_with_mqa.weight", rank + rope, s.hidden_size);
  Value latent = g.rmsNorm(g.sliceLastDim(ckv, 0, rank),
                           p + "kv_a_layernorm.weight", eps);
  Value kPe = g.rope(g.unitHeads(g.sliceLastDim(ckv, rank, rope)), positions, s.rope);
  Value entry = g.concatLastDim(g.unitHeads(latent), kPe); // [T, 1, rank + rope]
  cache = KVCacheAppendOp::create(b, loc, cache, entry, Value(),
                                  b.getI64IntegerAttr(layer));

  Value kvB = g.weight(p + "kv_b_proj.weight", {nh * (nope + m.v_head_dim), rank});
  auto outType = RankedTensorType::get({ShapedType::kDynamic, nh, m.v_head_dim},
                                       b.getF32Type());
  Value o = MLAAttentionOp::create(b, loc, outType, qNope, qPe, kvB, cache,
                                   b.getI64IntegerAttr(layer),
                                   b.getF32FloatAttr(attentionScale(s, qkDim)),
                                   b.getI64IntegerAttr(m.v_head_dim));
  o = g.mergeHeads(o);
  return g.linear(o, p + "o_proj.weight", s.hidden_size, nh * m.v_head_dim);
}

} // namespace hyc::models
