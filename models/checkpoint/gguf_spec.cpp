// The GGUF metadata every decoder architecture shares (llama.cpp's
// `<arch>.*` keys), read into a ModelSpec.
#include "models/checkpoint/family.h"

namespace hyc::models::detail {

Expected<int64_t> gguf_required_int(const io::GgufFile &file,
                                    const std::string &key) {
  if (!file.has(key))
    return Error(file.path() + ": missing GGUF key '" + key + "'");
  return file.get_i64(key);
}

Status parse_gguf_decoder(const io::GgufFile &file, ModelSpec &spec) {
  std::string arch;
  HYC_CKPT_ASSIGN(arch, file.get_string("general.architecture"));
  const std::string p = arch + ".";
  HYC_CKPT_ASSIGN(spec.hidden_size,
                  gguf_required_int(file, p + "embedding_length"));
  HYC_CKPT_ASSIGN(spec.intermediate_size,
                  gguf_required_int(file, p + "feed_forward_length"));
  HYC_CKPT_ASSIGN(spec.num_layers, gguf_required_int(file, p + "block_count"));
  HYC_CKPT_ASSIGN(spec.num_heads,
                  gguf_required_int(file, p + "attention.head_count"));
  HYC_CKPT_ASSIGN(
      spec.num_kv_heads,
      gguf_int_or(file, p + "attention.head_count_kv", spec.num_heads));
  HYC_CKPT_ASSIGN(spec.max_position_embeddings,
                  gguf_required_int(file, p + "context_length"));
  if (!file.has(p + "attention.layer_norm_rms_epsilon"))
    return Error(file.path() + ": missing GGUF key '" + p +
                 "attention.layer_norm_rms_epsilon'");
  HYC_CKPT_ASSIGN(
      spec.rms_norm_eps,
      gguf_float_or(file, p + "attention.layer_norm_rms_epsilon", 1e-5));
  for (const char *key :
       {"embedding_length", "feed_forward_length", "block_count",
        "attention.head_count", "attention.head_count_kv", "context_length"}) {
    int64_t v = 0;
    HYC_CKPT_ASSIGN(v, gguf_int_or(file, p + key, 1));
    if (v <= 0)
      return Error(file.path() + ": " + p + key + " = " + std::to_string(v) +
                   ", expected > 0");
  }
  // The block count is checked against the tensors present (which bound
  // it); widths multiply together in int64, positions are int32.
  HYC_CKPT_TRY(check_int(file.path(), p + "embedding_length", spec.hidden_size,
                         1, kMaxModelDim));
  HYC_CKPT_TRY(check_int(file.path(), p + "feed_forward_length",
                         spec.intermediate_size, 1, kMaxModelDim));
  HYC_CKPT_TRY(check_int(file.path(), p + "attention.head_count",
                         spec.num_heads, 1, kMaxModelDim));
  HYC_CKPT_TRY(check_int(file.path(), p + "attention.head_count_kv",
                         spec.num_kv_heads, 1, kMaxModelDim));
  HYC_CKPT_TRY(check_int(file.path(), p + "context_length",
                         spec.max_position_embeddings, 1, INT32_MAX));
  HYC_CKPT_TRY(check_real(file.path(), p + "attention.layer_norm_rms_epsilon",
                          spec.rms_norm_eps, 0.0, 1.0, true));
  if (spec.num_heads % spec.num_kv_heads != 0)
    return Error(file.path() + ": " + p +
                 "attention.head_count = " + std::to_string(spec.num_heads) +
                 " is not a multiple of head_count_kv = " +
                 std::to_string(spec.num_kv_heads));
  HYC_CKPT_ASSIGN(spec.head_dim,
                  gguf_int_or(file, p + "attention.key_length",
                              spec.hidden_size / spec.num_heads));
  HYC_CKPT_TRY(check_int(file.path(), p + "attention.key_length",
                         spec.head_dim, 1, kMaxModelDim));

  const io::GgufTensorInfo *embed = file.find_tensor("token_embd.weight");
  int64_t embed_rows = embed && embed->shape.size() == 2 ? embed->shape[0] : 0;
  HYC_CKPT_ASSIGN(spec.vocab_size,
                  gguf_int_or(file, p + "vocab_size", embed_rows));
  if (spec.vocab_size <= 0)
    return Error(file.path() + ": cannot tell the vocabulary size (no " + p +
                 "vocab_size and no 2-D token_embd.weight)");
  HYC_CKPT_TRY(check_int(file.path(), p + "vocab_size", spec.vocab_size, 1,
                         INT32_MAX));
  spec.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;

  RopeSpec &rope = spec.rope;
  rope = RopeSpec();
  rope.neox = true;
  HYC_CKPT_ASSIGN(rope.theta,
                  gguf_float_or(file, p + "rope.freq_base", 10000.0));
  HYC_CKPT_ASSIGN(rope.rotary_dim,
                  gguf_int_or(file, p + "rope.dimension_count", spec.head_dim));
  if (rope.rotary_dim <= 0 || rope.rotary_dim > spec.head_dim ||
      rope.rotary_dim % 2 != 0)
    return Error(file.path() + ": " + p +
                 "rope.dimension_count = " + std::to_string(rope.rotary_dim) +
                 ", expected an even number in 2.." +
                 std::to_string(spec.head_dim));
  std::string scaling = "none";
  if (file.has(p + "rope.scaling.type"))
    HYC_CKPT_ASSIGN(scaling, file.get_string(p + "rope.scaling.type"));
  double linear_scale = 0.0; // legacy key
  HYC_CKPT_ASSIGN(linear_scale,
                  gguf_float_or(file, p + "rope.scale_linear", 0.0));
  if (scaling == "none" && linear_scale > 0.0 && linear_scale != 1.0) {
    rope.scaling = "linear";
    rope.factor = linear_scale;
  } else if (scaling == "linear") {
    rope.scaling = "linear";
    HYC_CKPT_ASSIGN(rope.factor,
                    gguf_float_or(file, p + "rope.scaling.factor", 1.0));
  } else if (scaling == "yarn") {
    rope.scaling = "yarn";
    HYC_CKPT_ASSIGN(rope.factor,
                    gguf_float_or(file, p + "rope.scaling.factor", 1.0));
    HYC_CKPT_ASSIGN(rope.original_max_position,
                    gguf_int_or(file,
                                p + "rope.scaling.original_context_length",
                                spec.max_position_embeddings));
    HYC_CKPT_ASSIGN(
        rope.beta_fast,
        gguf_float_or(file, p + "rope.scaling.yarn_beta_fast", 32.0));
    HYC_CKPT_ASSIGN(
        rope.beta_slow,
        gguf_float_or(file, p + "rope.scaling.yarn_beta_slow", 1.0));
    // DeepSeek: llama.cpp's yarn_log_multiplier is 0.1 * mscale_all_dim and
    // assumes mscale == mscale_all_dim.
    if (file.has(p + "rope.scaling.yarn_log_multiplier")) {
      double log_mul = 0.0;
      HYC_CKPT_ASSIGN(
          log_mul,
          gguf_float_or(file, p + "rope.scaling.yarn_log_multiplier", 0.0));
      rope.mscale_all_dim = f32_decimal(static_cast<float>(log_mul / 0.1));
      rope.mscale = rope.mscale_all_dim;
    }
  } else if (scaling != "none") {
    return Error(file.path() + ": " + p + "rope.scaling.type '" + scaling +
                 "' is not supported (supported: none, linear, yarn)");
  }
  HYC_CKPT_TRY(check_rope_values(
      file.path(), rope, [&](const std::string &field) {
        if (field == "theta")
          return p + "rope.freq_base";
        if (field == "factor")
          return p + (file.has(p + "rope.scaling.factor")
                          ? "rope.scaling.factor"
                          : "rope.scale_linear");
        if (field == "original_max_position")
          return p + "rope.scaling.original_context_length";
        if (field == "mscale" || field == "mscale_all_dim")
          return p + "rope.scaling.yarn_log_multiplier";
        return p + "rope.scaling.yarn_" + field;
      }));

  // llama.cpp writes 0xFFFFFFFF (uint32 -1) for "no such token".
  for (auto [key, id] :
       {std::pair<const char *, int32_t *>{"tokenizer.ggml.bos_token_id",
                                           &spec.bos_token_id},
        std::pair<const char *, int32_t *>{"tokenizer.ggml.eos_token_id",
                                           &spec.eos_token_id}}) {
    int64_t v = -1;
    HYC_CKPT_ASSIGN(v, gguf_int_or(file, key, -1));
    if (v == 0xFFFFFFFFll)
      v = -1;
    HYC_CKPT_ASSIGN(*id, check_token_id(file.path(), key, v, spec.vocab_size));
  }
  return Status();
}

} // namespace hyc::models::detail
