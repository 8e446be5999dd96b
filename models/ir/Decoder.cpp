//===- Decoder.cpp - the pre-norm decoder forward pass --------------------===//
//
// embed -> per layer: x += attn(rmsnorm(x)); x += mlp(rmsnorm(x)) -> norm ->
// lm_head. `extend` attends over the cached prefix plus in-step tokens and
// computes logits for the rows the step asks for; `decode` appends and
// attends over the paged cache.
//
//===----------------------------------------------------------------------===//

#include "models/ir/Families.h"

using namespace mlir;

namespace hyc::models {

Value emitDecoderForward(GraphBuilder &g, const ModelSpec &s, Value tokens,
                         Value positions, Value &cache, EntryKind entry) {
  OpBuilder &b = g.builder();
  Location loc = g.location();
  Value table = g.weight("model.embed_tokens.weight", {s.vocab_size, s.hidden_size});
  Value x = EmbeddingOp::create(b, loc, g.activation({s.hidden_size}), table, tokens);
  for (int64_t l = 0; l < s.num_layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    Value h = g.rmsNorm(x, p + "input_layernorm.weight", s.rms_norm_eps);
    Value attn = s.mla ? emitMlaAttention(g, s, l, h, positions, cache)
                       : emitGqaAttention(g, s, l, h, positions, cache, entry);
    x = g.add(x, attn);
    h = g.rmsNorm(x, p + "post_attention_layernorm.weight", s.rms_norm_eps);
    Value mlp = is_moe_layer(s, l)
                    ? emitMoe(g, s, l, h)
                    : emitSwiGLU(g, p + "mlp.", h, s.hidden_size, s.intermediate_size);
    x = g.add(x, mlp);
  }
  x = g.rmsNorm(x, "model.norm.weight", s.rms_norm_eps);
  // Extend needs logits only where the caller samples (the last token of
  // each sequence) unless it asks for every position; decode always needs
  // all of them.
  if (entry == EntryKind::Extend)
    x = LogitRowsOp::create(b, loc, x.getType(), x);
  std::string head = s.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  return g.linear(x, head, s.vocab_size, s.hidden_size);
}

} // namespace hyc::models
