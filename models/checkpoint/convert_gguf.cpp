// convert_hf_to_gguf: spec -> llama.cpp metadata, weights -> llama.cpp
// tensors (renamed, llama q/k permuted, experts stacked, deepseek2 kv_b
// split), written with io::GgufWriter one tensor at a time.
#include "models/checkpoint/convert_gguf.h"

#include "models/checkpoint/family.h"
#include "models/checkpoint/gguf_names.h"
#include "models/io/gguf_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

namespace hyc::models {

namespace {

namespace fs = std::filesystem;
using io::GgufWriteValue;

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Produces a tensor's values (fp32, row-major) at write time.
using Produce = std::function<Status(std::vector<float> &)>;

class Converter {
public:
  Converter(const Checkpoint &ckpt, const GgufConvertOptions &options,
            std::string where)
      : spec_(ckpt.spec), weights_(*ckpt.weights), tokenizer_(ckpt.tokenizer),
        options_(options), where_(std::move(where)) {}

  /// What the file leaves out that a reader may miss.
  const std::vector<std::string> &warnings() const { return warnings_; }

  Status run(const std::string &name, const std::string &path) {
    HYC_CKPT_TRY(setArch());
    HYC_CKPT_TRY(checkRepresentable());
    HYC_CKPT_TRY(metadata(name));
    HYC_CKPT_TRY(tokenizer());
    HYC_CKPT_TRY(tensors());
    return out_.write(path);
  }

private:
  bool isLlama() const { return arch_ == "llama"; }
  bool isDeepseek() const { return arch_ == "deepseek2"; }
  bool isHunyuan() const { return arch_ == "hunyuan-moe"; }
  bool isQwen() const {
    return arch_ == "qwen2" || arch_ == "qwen3" || arch_ == "qwen3moe";
  }
  bool splitKvB() const {
    return isDeepseek() && options_.deepseek2_split_kv_b;
  }

  Error unsupported(const std::string &what) const {
    return Error(where_ + ": " + what + " cannot be written as GGUF '" + arch_ +
                 "'");
  }

  Status setArch() {
    if (spec_.arch == "llama")
      arch_ = "llama";
    else if (spec_.arch == "qwen2" || spec_.arch == "qwen3")
      arch_ = spec_.arch;
    else if (spec_.arch == "qwen3_moe")
      arch_ = "qwen3moe";
    else if (spec_.arch == "deepseek_v3" || spec_.arch == "deepseek_v2")
      arch_ = "deepseek2"; // llama.cpp's one arch for V2, V2-Lite, V3, R1
    else if (spec_.arch == "hunyuan_moe")
      arch_ = "hunyuan-moe";
    else
      return Error(where_ + ": arch '" + spec_.arch +
                   "' has no GGUF conversion (supported: llama, qwen2, "
                   "qwen3, qwen3_moe, deepseek_v2, deepseek_v3, hunyuan_moe)");
    // llama.cpp's type ids and general.file_type for each outtype.
    if (options_.outtype == "f32")
      weightType_ = io::GGML_F32, fileType_ = 0;
    else if (options_.outtype == "f16")
      weightType_ = io::GGML_F16, fileType_ = 1;
    else if (options_.outtype == "bf16")
      weightType_ = io::GGML_BF16, fileType_ = 32;
    else if (options_.outtype == "q8_0")
      weightType_ = io::GGML_Q8_0, fileType_ = 7;
    else if (options_.outtype == "q4_0") // llama-quantize --pure Q4_0
      weightType_ = io::GGML_Q4_0, fileType_ = 2;
    else
      return Error(where_ + ": outtype '" + options_.outtype +
                   "' is not supported (supported: f32, f16, bf16, q8_0, q4_0)");
    return Status();
  }

  Status checkRepresentable() const {
    const RopeSpec &r = spec_.rope;
    if (spec_.attention_bias && arch_ != "qwen2")
      return unsupported("attention_bias");
    if (spec_.qk_norm && arch_ != "qwen3" && arch_ != "qwen3moe" &&
        !isHunyuan())
      return unsupported("qk_norm");
    // llama.cpp normalizes q/k before RoPE for qwen3/qwen3moe and after it
    // for hunyuan-moe.
    if (spec_.qk_norm && spec_.qk_norm_after_rope != isHunyuan())
      return unsupported(spec_.qk_norm_after_rope ? "q/k norm after RoPE"
                                                  : "q/k norm before RoPE");
    if (isHunyuan()) {
      // Hunyuan's NTK-alpha scaling is folded into rope.freq_base.
      if (!spec_.qk_norm)
        return unsupported("attention without q/k norm");
      if (!r.neox)
        return unsupported("adjacent-pair rope");
      if (r.scaling != "none" && r.scaling != "ntk_alpha")
        return unsupported("rope scaling '" + r.scaling + "'");
    } else if (r.scaling != "none" && r.scaling != "linear" &&
               r.scaling != "yarn" && !(r.scaling == "llama3" && isLlama())) {
      return unsupported("rope scaling '" + r.scaling + "'");
    }
    if (isLlama() && !r.neox)
      return unsupported("adjacent-pair rope on unpermuted weights");
    if (isLlama() && r.rotary_dim != spec_.head_dim)
      return unsupported("partial rotary (rotary_dim " +
                         std::to_string(r.rotary_dim) + " of head_dim " +
                         std::to_string(spec_.head_dim) + ")");
    if (isQwen() && !r.neox)
      return unsupported("adjacent-pair rope");
    if (isQwen() && r.scaling == "yarn" &&
        (r.mscale != 1.0 || r.mscale_all_dim != 0.0))
      return unsupported("yarn mscale / mscale_all_dim");
    if (isDeepseek()) {
      if (!spec_.mla)
        return unsupported("attention without MLA");
      if (r.neox)
        return unsupported("rope_interleave = false (rotate-half on the "
                           "rope dims)");
      if (r.scaling == "yarn" && r.mscale != r.mscale_all_dim)
        return unsupported("yarn mscale != mscale_all_dim");
    } else if (spec_.mla) {
      return unsupported("MLA");
    }
    if (spec_.moe) {
      const MoeSpec &m = *spec_.moe;
      if (isLlama() || arch_ == "qwen2" || arch_ == "qwen3")
        return unsupported("mixture of experts");
      if (m.moe_layer_freq != 1)
        return unsupported("moe_layer_freq " +
                           std::to_string(m.moe_layer_freq));
      if (arch_ == "qwen3moe" &&
          (m.num_shared_experts != 0 || m.has_correction_bias ||
           m.scoring != "softmax" || m.n_group != 1 || m.topk_group != 1 ||
           m.routed_scaling_factor != 1.0 || m.first_k_dense != 0))
        return unsupported("this MoE routing (shared experts, correction "
                           "bias, sigmoid, groups, scaling or dense layers)");
      if (isHunyuan() &&
          (m.num_shared_experts != 1 || m.has_correction_bias ||
           m.scoring != "softmax" || m.n_group != 1 || !m.renormalize ||
           m.routed_scaling_factor != 1.0 || m.first_k_dense != 0))
        return unsupported("this MoE routing (hunyuan-moe has one shared "
                           "MLP and softmax top-k with renormalized weights "
                           "on every layer)");
      // deepseek2 GGUFs have no key for the group score: readers take it
      // from the gating (softmax: V2's group_limited_greedy, a group's best
      // expert; sigmoid: V3's noaux_tc, the sum of its best two).
      if (isDeepseek() && m.n_group > 1 &&
          m.group_score != (m.scoring == "softmax" ? "max" : "top2_sum"))
        return unsupported("group score '" + m.group_score + "' with " + m.scoring +
                           " gating");
      if (m.scoring != "softmax" && m.scoring != "sigmoid")
        return unsupported("scoring '" + m.scoring + "'");
      if (!isHunyuan() && m.num_shared_experts > 0 &&
          m.shared_intermediate_size != m.expert_intermediate_size)
        return unsupported("shared_intermediate_size != "
                           "expert_intermediate_size");
    } else if (arch_ == "qwen3moe" || isHunyuan()) {
      return unsupported("a dense model");
    }
    return Status();
  }

  Status set(const std::string &key, GgufWriteValue v) {
    return out_.set(key, std::move(v));
  }
  Status u32(const std::string &key, int64_t v) {
    if (v < 0 || v > 0xFFFFFFFFll)
      return Error(where_ + ": " + key + " = " + std::to_string(v) +
                   " does not fit uint32");
    return set(arch_ + "." + key,
               GgufWriteValue::u32(static_cast<uint32_t>(v)));
  }
  Status f32(const std::string &key, double v) {
    return set(arch_ + "." + key, GgufWriteValue::f32(static_cast<float>(v)));
  }

  Status metadata(const std::string &name) {
    const ModelSpec &s = spec_;
    HYC_CKPT_TRY(set("general.architecture", GgufWriteValue::string(arch_)));
    HYC_CKPT_TRY(set("general.name", GgufWriteValue::string(name)));
    HYC_CKPT_TRY(set("general.file_type", GgufWriteValue::u32(fileType_)));
    if (isLlama() || isDeepseek())
      HYC_CKPT_TRY(u32("vocab_size", s.vocab_size));
    HYC_CKPT_TRY(u32("context_length", s.max_position_embeddings));
    HYC_CKPT_TRY(u32("embedding_length", s.hidden_size));
    HYC_CKPT_TRY(u32("block_count", s.num_layers));
    HYC_CKPT_TRY(u32("feed_forward_length", s.intermediate_size));
    HYC_CKPT_TRY(u32("attention.head_count", s.num_heads));
    HYC_CKPT_TRY(u32("attention.head_count_kv", splitKvB() ? 1
                                                : isDeepseek()
                                                    ? s.num_heads
                                                    : s.num_kv_heads));
    // rope_base: Hunyuan's alpha-scaled base, as llama.cpp's converter
    // writes it.
    HYC_CKPT_TRY(f32("rope.freq_base", rope_base(s.rope)));
    HYC_CKPT_TRY(f32("attention.layer_norm_rms_epsilon", s.rms_norm_eps));
    if (isDeepseek()) {
      const MlaSpec &m = *s.mla;
      if (m.q_lora_rank > 0)
        HYC_CKPT_TRY(u32("attention.q_lora_rank", m.q_lora_rank));
      HYC_CKPT_TRY(u32("attention.kv_lora_rank", m.kv_lora_rank));
      if (splitKvB()) {
        HYC_CKPT_TRY(
            u32("attention.key_length", m.kv_lora_rank + m.qk_rope_head_dim));
        HYC_CKPT_TRY(u32("attention.value_length", m.kv_lora_rank));
        HYC_CKPT_TRY(u32("attention.key_length_mla",
                         m.qk_nope_head_dim + m.qk_rope_head_dim));
        HYC_CKPT_TRY(u32("attention.value_length_mla", m.v_head_dim));
      } else {
        HYC_CKPT_TRY(u32("attention.key_length",
                         m.qk_nope_head_dim + m.qk_rope_head_dim));
        HYC_CKPT_TRY(u32("attention.value_length", m.v_head_dim));
      }
      HYC_CKPT_TRY(u32("rope.dimension_count", m.qk_rope_head_dim));
    } else {
      HYC_CKPT_TRY(u32("attention.key_length", s.head_dim));
      HYC_CKPT_TRY(u32("attention.value_length", s.head_dim));
      if (isLlama() || s.rope.rotary_dim != s.head_dim)
        HYC_CKPT_TRY(u32("rope.dimension_count", s.rope.rotary_dim));
    }
    HYC_CKPT_TRY(ropeScaling());
    if (s.moe) {
      const MoeSpec &m = *s.moe;
      HYC_CKPT_TRY(u32("expert_count", m.num_experts));
      HYC_CKPT_TRY(u32("expert_used_count", m.top_k));
      HYC_CKPT_TRY(
          u32("expert_feed_forward_length", m.expert_intermediate_size));
      if (isHunyuan()) {
        HYC_CKPT_TRY(u32("expert_shared_count", m.num_shared_experts));
        HYC_CKPT_TRY(u32("expert_shared_feed_forward_length",
                         m.shared_intermediate_size));
      }
      if (arch_ == "qwen3moe" && !m.renormalize)
        HYC_CKPT_TRY(set("qwen3moe.expert_weights_norm",
                         GgufWriteValue::boolean(false)));
      if (isDeepseek()) {
        HYC_CKPT_TRY(u32("leading_dense_block_count", m.first_k_dense));
        HYC_CKPT_TRY(u32("expert_shared_count", m.num_shared_experts));
        HYC_CKPT_TRY(f32("expert_weights_scale", m.routed_scaling_factor));
        HYC_CKPT_TRY(set("deepseek2.expert_weights_norm",
                         GgufWriteValue::boolean(m.renormalize)));
        HYC_CKPT_TRY(u32("expert_gating_func", m.scoring == "sigmoid" ? 2 : 1));
        HYC_CKPT_TRY(u32("expert_group_count", m.n_group));
        HYC_CKPT_TRY(u32("expert_group_used_count", m.topk_group));
      }
    }
    if (s.bos_token_id >= 0)
      HYC_CKPT_TRY(
          set("tokenizer.ggml.bos_token_id",
              GgufWriteValue::u32(static_cast<uint32_t>(s.bos_token_id))));
    if (s.eos_token_id >= 0)
      HYC_CKPT_TRY(
          set("tokenizer.ggml.eos_token_id",
              GgufWriteValue::u32(static_cast<uint32_t>(s.eos_token_id))));
    return Status();
  }

  Status ropeScaling() {
    const RopeSpec &r = spec_.rope;
    if (isHunyuan()) {
      HYC_CKPT_TRY(
          set(arch_ + ".rope.scaling.type", GgufWriteValue::string("none")));
    } else if (r.scaling == "linear") {
      HYC_CKPT_TRY(
          set(arch_ + ".rope.scaling.type", GgufWriteValue::string("linear")));
      HYC_CKPT_TRY(f32("rope.scaling.factor", r.factor));
    } else if (r.scaling == "yarn") {
      HYC_CKPT_TRY(
          set(arch_ + ".rope.scaling.type", GgufWriteValue::string("yarn")));
      HYC_CKPT_TRY(f32("rope.scaling.factor", r.factor));
      HYC_CKPT_TRY(
          u32("rope.scaling.original_context_length", r.original_max_position));
      if (r.beta_fast != 32.0)
        HYC_CKPT_TRY(f32("rope.scaling.yarn_beta_fast", r.beta_fast));
      if (r.beta_slow != 1.0)
        HYC_CKPT_TRY(f32("rope.scaling.yarn_beta_slow", r.beta_slow));
      if (isDeepseek())
        HYC_CKPT_TRY(
            f32("rope.scaling.yarn_log_multiplier", 0.1 * r.mscale_all_dim));
    } else if (r.scaling == "llama3" && r.original_max_position != 8192) {
      HYC_CKPT_TRY(
          u32("rope.scaling.original_context_length", r.original_max_position));
    }
    return Status();
  }

  /// convert_hf_to_gguf.py's rule for --outtype f16 / bf16 / q8_0 (q4_0 as
  /// llama-quantize --pure): weights of 2+ dims take the type, norms, the
  /// router, biases and 1-D tensors stay F32; a Q8_0 / Q4_0 tensor whose
  /// rows are not whole 32-blocks is F16.
  uint32_t typeFor(const std::string &gguf, const std::vector<int64_t> &shape) const {
    if (weightType_ == io::GGML_F32 || shape.size() < 2 || endsWith(gguf, "_norm.weight") ||
        gguf.find(".ffn_gate_inp.") != std::string::npos || !endsWith(gguf, ".weight"))
      return io::GGML_F32;
    if ((weightType_ == io::GGML_Q8_0 || weightType_ == io::GGML_Q4_0) && shape.back() % 32 != 0)
      return io::GGML_F16;
    return weightType_;
  }

  /// The value of largest magnitude among a block's 32 values (its sign
  /// kept), or an error naming the first value `format` cannot hold: not
  /// finite, or past its fp16 scale's largest value times `codes` (the
  /// largest code magnitude).
  static Status blockExtreme(const float *v, size_t block, int codes, const char *format,
                             float *extreme) {
    const float limit = 65504.f * static_cast<float>(codes);
    *extreme = 0.f;
    for (int i = 0; i < 32; ++i) {
      if (!std::isfinite(v[i]) || std::fabs(v[i]) > limit)
        return Error("element " + std::to_string(32 * block + i) + " is " +
                     std::to_string(v[i]) + ": " + format +
                     " holds finite values of magnitude up to 65504 x " + std::to_string(codes) +
                     " (its fp16 scale times " + std::to_string(codes) + ")");
      if (std::fabs(v[i]) > std::fabs(*extreme))
        *extreme = v[i];
    }
    return Status();
  }

  /// Q4_0 blocks of 32 values: fp16 d = m / -8 where m is the value of
  /// largest magnitude (so m itself lands on code 0), codes min(15,
  /// trunc(x / d + 8.5)), element j in the low nibble of byte j and element
  /// j + 16 in its high nibble, as llama.cpp's reference quantizer.
  static Status quantizeQ4_0(const float *v, size_t n, uint8_t *dst) {
    for (size_t b = 0; b < n / 32; ++b, v += 32, dst += 18) {
      float m = 0.f;
      HYC_CKPT_TRY(blockExtreme(v, b, 8, "Q4_0", &m));
      const float d = m / -8.f, id = d != 0.f ? 1.f / d : 0.f;
      const uint16_t h = io::f32_to_f16(d);
      std::memcpy(dst, &h, 2);
      for (int j = 0; j < 16; ++j) {
        const int lo = std::min(15, static_cast<int>(v[j] * id + 8.5f));
        const int hi = std::min(15, static_cast<int>(v[j + 16] * id + 8.5f));
        dst[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
    return Status();
  }

  /// Q8_0 blocks of 32 values: fp16 d = max|x| / 127, then round(x / d)
  /// as int8 (d = 0: all zero), as llama.cpp's reference quantizer.
  static Status quantizeQ8_0(const float *v, size_t n, uint8_t *dst) {
    for (size_t b = 0; b < n / 32; ++b, v += 32, dst += 34) {
      float m = 0.f;
      HYC_CKPT_TRY(blockExtreme(v, b, 127, "Q8_0", &m));
      const float d = std::fabs(m) / 127.f, id = d != 0.f ? 1.f / d : 0.f;
      const uint16_t h = io::f32_to_f16(d);
      std::memcpy(dst, &h, 2);
      for (int i = 0; i < 32; ++i)
        dst[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(v[i] * id)));
    }
    return Status();
  }

  Status add(const std::string &gguf, std::vector<int64_t> shape,
             Produce produce) {
    const uint32_t type = typeFor(gguf, shape);
    Expected<int64_t> numel = io::shape_numel(shape);
    if (!numel)
      return Error(where_ + ": " + gguf + ": " + numel.error());
    const size_t n = static_cast<size_t>(*numel);
    return out_.add_tensor(
        gguf, type, std::move(shape),
        [produce = std::move(produce), type, n](uint8_t *dst) -> Status {
          std::vector<float> v;
          HYC_CKPT_TRY(produce(v));
          if (v.size() != n)
            return Error("produced " + std::to_string(v.size()) +
                         " values, expected " + std::to_string(n));
          if (type == io::GGML_F32) {
            std::memcpy(dst, v.data(), n * 4);
          } else if (type == io::GGML_Q8_0) {
            HYC_CKPT_TRY(quantizeQ8_0(v.data(), n, dst));
          } else if (type == io::GGML_Q4_0) {
            HYC_CKPT_TRY(quantizeQ4_0(v.data(), n, dst));
          } else {
            for (size_t i = 0; i < n; ++i) {
              const uint16_t h =
                  type == io::GGML_BF16 ? io::f32_to_bf16(v[i]) : io::f32_to_f16(v[i]);
              std::memcpy(dst + 2 * i, &h, 2);
            }
          }
          return Status();
        });
  }

  /// Reads a weight (fp32) into `v`.
  Produce reader(const std::string &name) const {
    const WeightSource *w = &weights_;
    return [w, name](std::vector<float> &v) -> Status {
      const WeightInfo *info = w->find(name);
      if (!info)
        return Error("no weight '" + name + "'");
      Expected<int64_t> n = io::shape_numel(info->shape);
      if (!n)
        return n.take_error();
      v.resize(static_cast<size_t>(*n));
      return w->read_f32(name, v.data());
    };
  }

  /// LlamaModel.permute: per head of d rows, row 2i+j <- row j*d/2 + i.
  Status addPermuted(const std::string &gguf, const WeightInfo &w,
                     int64_t heads) {
    Produce read = reader(w.name);
    const int64_t rows = w.shape[0], cols = w.shape[1];
    return add(gguf, w.shape,
               [read, rows, cols, heads](std::vector<float> &v) -> Status {
                 std::vector<float> src;
                 HYC_CKPT_TRY(read(src));
                 v.resize(src.size());
                 const int64_t d = rows / heads, half = d / 2;
                 for (int64_t h = 0; h < heads; ++h)
                   for (int64_t i = 0; i < half; ++i)
                     for (int64_t j = 0; j < 2; ++j)
                       std::memcpy(&v[((h * d) + 2 * i + j) * cols],
                                   &src[((h * d) + j * half + i) * cols],
                                   cols * sizeof(float));
                 return Status();
               });
  }

  Status addStackedExperts(const std::string &layer, const std::string &proj,
                           const std::vector<int64_t> &shape) {
    const MoeSpec &m = *spec_.moe;
    std::vector<Produce> readers;
    for (int64_t e = 0; e < m.num_experts; ++e)
      readers.push_back(reader("model.layers." + layer + ".mlp.experts." +
                               std::to_string(e) + "." + proj + ".weight"));
    const char *stem = proj == "gate_proj" ? "ffn_gate_exps"
                       : proj == "up_proj" ? "ffn_up_exps"
                                           : "ffn_down_exps";
    const size_t per = static_cast<size_t>(shape[0] * shape[1]);
    return add("blk." + layer + "." + stem + ".weight",
               {m.num_experts, shape[0], shape[1]},
               [readers, per](std::vector<float> &v) -> Status {
                 v.resize(readers.size() * per);
                 std::vector<float> one;
                 for (size_t e = 0; e < readers.size(); ++e) {
                   HYC_CKPT_TRY(readers[e](one));
                   if (one.size() != per)
                     return Error("expert " + std::to_string(e) +
                                  " has the wrong size");
                   std::copy(one.begin(), one.end(), v.begin() + e * per);
                 }
                 return Status();
               });
  }

  Status addSplitKvB(const std::string &layer, const WeightInfo &w) {
    const MlaSpec &m = *spec_.mla;
    const int64_t heads = spec_.num_heads, rank = m.kv_lora_rank,
                  nope = m.qk_nope_head_dim, vdim = m.v_head_dim;
    Produce read = reader(w.name);
    HYC_CKPT_TRY(add("blk." + layer + ".attn_k_b.weight", {heads, rank, nope},
                     [=](std::vector<float> &v) -> Status {
                       std::vector<float> kv;
                       HYC_CKPT_TRY(read(kv));
                       v.resize(static_cast<size_t>(heads * rank * nope));
                       for (int64_t h = 0; h < heads; ++h)
                         for (int64_t j = 0; j < rank; ++j)
                           for (int64_t i = 0; i < nope; ++i)
                             v[(h * rank + j) * nope + i] =
                                 kv[(h * (nope + vdim) + i) * rank + j];
                       return Status();
                     }));
    return add("blk." + layer + ".attn_v_b.weight", {heads, vdim, rank},
               [=](std::vector<float> &v) -> Status {
                 std::vector<float> kv;
                 HYC_CKPT_TRY(read(kv));
                 v.resize(static_cast<size_t>(heads * vdim * rank));
                 for (int64_t h = 0; h < heads; ++h)
                   std::copy(kv.begin() + (h * (nope + vdim) + nope) * rank,
                             kv.begin() + (h + 1) * (nope + vdim) * rank,
                             v.begin() + h * vdim * rank);
                 return Status();
               });
  }

  Status tensors() {
    if (spec_.rope.scaling == "llama3") {
      std::vector<float> freqs = detail::llama3_rope_divisors(spec_.rope);
      const int64_t n = static_cast<int64_t>(freqs.size());
      HYC_CKPT_TRY(add("rope_freqs.weight", {n},
                       [freqs](std::vector<float> &v) -> Status {
                         v = freqs;
                         return Status();
                       }));
    }
    const std::string layers = "model.layers.";
    for (const WeightInfo &w : required_weights(spec_)) {
      const std::string &name = w.name;
      std::string layer;
      if (name.compare(0, layers.size(), layers) == 0)
        layer = name.substr(layers.size(),
                            name.find('.', layers.size()) - layers.size());
      const std::string experts = ".mlp.experts.";
      if (size_t at = name.find(experts); at != std::string::npos) {
        const size_t e_end = name.find('.', at + experts.size());
        const std::string e =
            name.substr(at + experts.size(), e_end - at - experts.size());
        const std::string proj =
            name.substr(e_end + 1, name.rfind('.') - e_end - 1);
        if (e == "0")
          HYC_CKPT_TRY(addStackedExperts(layer, proj, w.shape));
        continue;
      }
      if (endsWith(name, ".self_attn.kv_b_proj.weight") && splitKvB()) {
        HYC_CKPT_TRY(addSplitKvB(layer, w));
        continue;
      }
      if (endsWith(name, ".mlp.gate.e_score_correction_bias")) {
        HYC_CKPT_TRY(
            add("blk." + layer + ".exp_probs_b.bias", w.shape, reader(name)));
        continue;
      }
      const std::string gguf = detail::hf_to_gguf_name(name);
      if (gguf.empty())
        return Error(where_ + ": weight '" + name + "' has no GGUF name for '" +
                     arch_ + "'");
      if (isLlama() && endsWith(name, ".self_attn.q_proj.weight"))
        HYC_CKPT_TRY(addPermuted(gguf, w, spec_.num_heads));
      else if (isLlama() && endsWith(name, ".self_attn.k_proj.weight"))
        HYC_CKPT_TRY(addPermuted(gguf, w, spec_.num_kv_heads));
      else
        HYC_CKPT_TRY(add(gguf, w.shape, reader(name)));
    }
    return Status();
  }

  /// The llama2.c tokenizer.bin beside the checkpoint as llama.cpp's
  /// SentencePiece vocabulary (tokenizer.ggml.model "llama"): its pieces
  /// with spaces as U+2581, scores, and types (unknown, control for <s> and
  /// </s>, byte for <0xXX>, unused for the padding pieces, else normal). A
  /// tokenizer.json is not converted: llama.cpp then refuses the file.
  Status tokenizer() {
    if (!tokenizer_ || tokenizer_->kind != "llama2c") {
      warnings_.push_back(
          tokenizer_ ? "the " + tokenizer_->kind +
                           " tokenizer is not written to the GGUF file (only a llama2.c "
                           "tokenizer.bin is); llama.cpp will not load it"
                     : "the checkpoint has no tokenizer; llama.cpp will not load the file");
      return Status();
    }
    const TokenizerSpec &t = *tokenizer_;
    // llama.cpp's token types.
    constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUnused = 5, kByte = 6;
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    tokens.reserve(t.tokens.size());
    types.reserve(t.tokens.size());
    for (size_t i = 0; i < t.tokens.size(); ++i) {
      const std::string &piece = t.tokens[i];
      const int32_t id = static_cast<int32_t>(i);
      int32_t type = kNormal;
      if (id == t.unk_id)
        type = kUnknown;
      else if (id == t.bos_id || id == t.eos_id)
        type = kControl;
      else if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece.back() == '>')
        type = kByte;
      else if (piece.compare(0, 7, "<extra_") == 0)
        type = kUnused;
      std::string out;
      for (char c : piece)
        out += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      tokens.push_back(std::move(out));
      types.push_back(type);
    }
    HYC_CKPT_TRY(set("tokenizer.ggml.model", GgufWriteValue::string("llama")));
    HYC_CKPT_TRY(set("tokenizer.ggml.tokens", GgufWriteValue::string_array(tokens)));
    if (t.scores.size() == t.tokens.size())
      HYC_CKPT_TRY(set("tokenizer.ggml.scores", GgufWriteValue::f32_array(t.scores)));
    HYC_CKPT_TRY(set("tokenizer.ggml.token_type", GgufWriteValue::i32_array(types)));
    if (t.unk_id >= 0)
      HYC_CKPT_TRY(set("tokenizer.ggml.unknown_token_id",
                       GgufWriteValue::u32(static_cast<uint32_t>(t.unk_id))));
    return Status();
  }

  const ModelSpec &spec_;
  const WeightSource &weights_;
  const std::optional<TokenizerSpec> &tokenizer_;
  std::vector<std::string> warnings_;
  const GgufConvertOptions &options_;
  std::string where_;
  std::string arch_;
  uint32_t weightType_ = io::GGML_F32, fileType_ = 0;
  io::GgufWriter out_;
};

} // namespace

namespace {

/// The output must not replace a file the checkpoint is read from (its
/// config, shards, index or tokenizer): the writer renames the finished
/// GGUF over the output path, and the input would be gone.
Status refuseOverwritingInput(const std::string &hf_dir,
                              const std::string &gguf_path) {
  std::error_code ec;
  if (!fs::exists(gguf_path, ec))
    return Status();
  const std::string what = "convert_hf_to_gguf: output " + gguf_path;
  if (fs::equivalent(hf_dir, gguf_path, ec))
    return Error(what + " is the input checkpoint directory itself");
  for (const fs::directory_entry &entry : fs::directory_iterator(hf_dir, ec))
    if (fs::equivalent(entry.path(), gguf_path, ec))
      return Error(what + " is " + entry.path().string() +
                   ", a file of the input checkpoint " + hf_dir +
                   ", which writing would destroy; choose another output path");
  return Status();
}

} // namespace

Status convert_hf_to_gguf(const std::string &hf_dir,
                          const std::string &gguf_path,
                          const GgufConvertOptions &options,
                          std::vector<std::string> *warnings) {
  Expected<Checkpoint> ckpt = load_checkpoint(hf_dir);
  if (!ckpt)
    return ckpt.take_error();
  if (ckpt->format != "hf")
    return Error("convert_hf_to_gguf: " + hf_dir + " is a " + ckpt->format +
                 " checkpoint, expected a Hugging Face directory");
  HYC_CKPT_TRY(refuseOverwritingInput(hf_dir, gguf_path));
  if (warnings)
    warnings->insert(warnings->end(), ckpt->warnings.begin(),
                     ckpt->warnings.end());
  std::string name = fs::path(hf_dir).lexically_normal().filename().string();
  if (name.empty() || name == ".")
    name =
        fs::path(hf_dir).lexically_normal().parent_path().filename().string();
  Converter c(*ckpt, options, "convert_hf_to_gguf " + hf_dir);
  Status status = c.run(name.empty() ? "hyc" : name, gguf_path);
  if (status.ok() && warnings)
    warnings->insert(warnings->end(), c.warnings().begin(), c.warnings().end());
  return status;
}

} // namespace hyc::models
