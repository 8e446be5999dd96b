//===- LlamaFamily.cpp - Llama / Qwen2 / Qwen3 dense decoder in hyc IR ----===//
//
// Pre-norm decoder: RMSNorm -> GQA attention with RoPE (optional q/k/v bias,
// optional per-head q/k RMSNorm) -> residual -> RMSNorm -> SwiGLU MLP ->
// residual. `extend` attends over the cached prefix plus in-step tokens;
// `decode` appends then attends over the paged cache.
//
//===----------------------------------------------------------------------===//

#include "models/ir/Families.h"

#include <cmath>

using namespace mlir;

namespace hyc::models {

Value emitLlamaAttention(GraphBuilder &g, const ModelSpec &s, int64_t layer,
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
  if (s.qk_norm) {
    q = g.rmsNorm(q, p + "q_norm.weight", s.rms_norm_eps);
    k = g.rmsNorm(k, p + "k_norm.weight", s.rms_norm_eps);
  }
  q = g.rope(q, positions, s.rope);
  k = g.rope(k, positions, s.rope);
  cache = KVCacheAppendOp::create(b, loc, cache, k, v, b.getI64IntegerAttr(layer));
  float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  Value o;
  if (entry == EntryKind::Extend)
    o = AttentionOp::create(b, loc, q.getType(), q, k, v, cache,
                            b.getI64IntegerAttr(layer), b.getF32FloatAttr(scale));
  else
    o = PagedAttentionOp::create(b, loc, q.getType(), q, cache,
                                 b.getI64IntegerAttr(layer),
                                 b.getF32FloatAttr(scale),
                                 b.getI64IntegerAttr(1));
  o = g.mergeHeads(o);
  return g.linear(o, p + "o_proj.weight", s.hidden_size, nh * hd);
}

Value emitSwiGLU(GraphBuilder &g, const std::string &prefix, Value h,
                 int64_t hidden, int64_t intermediate) {
  Value gate = g.linear(h, prefix + "gate_proj.weight", intermediate, hidden);
  Value up = g.linear(h, prefix + "up_proj.weight", intermediate, hidden);
  Value act = g.siluMul(gate, up);
  return g.linear(act, prefix + "down_proj.weight", hidden, intermediate);
}

Value emitLlamaForward(GraphBuilder &g, const ModelSpec &s, Value tokens,
                       Value positions, Value &cache, EntryKind entry) {
  OpBuilder &b = g.builder();
  Location loc = g.location();
  Value table = g.weight("model.embed_tokens.weight", {s.vocab_size, s.hidden_size});
  Value x = EmbeddingOp::create(b, loc, g.activation({s.hidden_size}), table, tokens);
  for (int64_t l = 0; l < s.num_layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Value h = g.rmsNorm(x, p + "input_layernorm.weight", s.rms_norm_eps);
    x = g.add(x, emitLlamaAttention(g, s, l, h, positions, cache, entry));
    h = g.rmsNorm(x, p + "post_attention_layernorm.weight", s.rms_norm_eps);
    x = g.add(x, emitSwiGLU(g, p + "mlp.", h, s.hidden_size, s.intermediate_size));
  }
  x = g.rmsNorm(x, "model.norm.weight", s.rms_norm_eps);
  std::string head = s.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  return g.linear(x, head, s.vocab_size, s.hidden_size);
}

} // namespace hyc::models
