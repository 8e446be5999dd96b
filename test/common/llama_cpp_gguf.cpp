// write_llama_cpp_gguf: see llama_cpp_gguf.h. The conventions, as
// convert_hf_to_gguf.py applies them:
//  * keys `<arch>.block_count`, `context_length`, `embedding_length`,
//    `feed_forward_length`, `attention.head_count[_kv]`, `rope.freq_base`,
//    `attention.layer_norm_rms_epsilon`, `attention.key_length` /
//    `value_length` when the config names a head_dim;
//  * every 2-D weight keeps its torch shape [out, in] (ne = [in, out]);
//  * llama: q/k rows permuted from HF's rotate-half order to adjacent pairs
//    per head; llama3 rope scaling as a `rope_freqs.weight` of divisors;
//  * MoE: experts stacked as `ffn_{gate,up,down}_exps` [experts, out, in];
//  * deepseek2: kv_b_proj split per head into `attn_k_b` [heads, kv_lora,
//    nope] (transposed) and `attn_v_b` [heads, v, kv_lora]; head_count_kv 1.
#include "test/common/llama_cpp_gguf.h"

#include "models/io/safetensors.h"
#include "test/common/gguf_spec_writer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

namespace hyc::test {

namespace {

using json = nlohmann::json;

class Converter {
public:
  Converter(const json &config, const io::SafetensorsModel &model)
      : c_(config), m_(model) {}

  std::string run(const std::string &path, uint32_t alignment) {
    const std::string type = c_.at("model_type").get<std::string>();
    if (type == "llama")
      arch_ = "llama";
    else if (type == "qwen2" || type == "qwen3")
      arch_ = type;
    else if (type == "qwen3_moe")
      arch_ = "qwen3moe";
    else if (type == "deepseek_v3")
      arch_ = "deepseek2";
    else
      return "model_type '" + type + "' has no conversion here";
    common();
    const int64_t layers = c_.at("num_hidden_layers").get<int64_t>();
    tensor("token_embd.weight", "model.embed_tokens.weight");
    tensor("output_norm.weight", "model.norm.weight");
    if (m_.has("lm_head.weight") && !c_.value("tie_word_embeddings", false))
      tensor("output.weight", "lm_head.weight");
    for (int64_t i = 0; i < layers; ++i)
      block(i);
    if (!error_.empty())
      return error_;
    return w_.write(path, alignment) ? "" : "cannot write " + path;
  }

private:
  int64_t i64(const char *key) const { return c_.at(key).get<int64_t>(); }
  bool has(const char *key) const {
    return c_.contains(key) && !c_.at(key).is_null();
  }
  std::string key(const std::string &k) const { return arch_ + "." + k; }

  void common() {
    w_.str("general.architecture", arch_);
    w_.str("general.name", "independent-" + arch_);
    w_.u32("general.file_type", 0); // ALL_F32
    w_.u32(key("vocab_size"), uint32_t(i64("vocab_size")));
    w_.u32(key("context_length"), uint32_t(i64("max_position_embeddings")));
    w_.u32(key("embedding_length"), uint32_t(i64("hidden_size")));
    w_.u32(key("block_count"), uint32_t(i64("num_hidden_layers")));
    w_.u32(key("feed_forward_length"), uint32_t(i64("intermediate_size")));
    w_.u32(key("attention.head_count"), uint32_t(i64("num_attention_heads")));
    w_.f32(key("rope.freq_base"), c_.at("rope_theta").get<float>());
    w_.f32(key("attention.layer_norm_rms_epsilon"),
           c_.at("rms_norm_eps").get<float>());
    w_.u32("tokenizer.ggml.bos_token_id", uint32_t(i64("bos_token_id")));
    w_.u32("tokenizer.ggml.eos_token_id", uint32_t(i64("eos_token_id")));
    if (arch_ == "deepseek2")
      return deepseek();
    w_.u32(key("attention.head_count_kv"), uint32_t(i64("num_key_value_heads")));
    const int64_t head_dim =
        has("head_dim") ? i64("head_dim")
                        : i64("hidden_size") / i64("num_attention_heads");
    if (has("head_dim")) {
      w_.u32(key("attention.key_length"), uint32_t(head_dim));
      w_.u32(key("attention.value_length"), uint32_t(head_dim));
    }
    if (arch_ == "llama") {
      w_.u32(key("rope.dimension_count"), uint32_t(head_dim));
      llama3Rope(head_dim);
    }
    if (arch_ == "qwen3moe") {
      w_.u32(key("expert_count"), uint32_t(i64("num_experts")));
      w_.u32(key("expert_used_count"), uint32_t(i64("num_experts_per_tok")));
      w_.u32(key("expert_feed_forward_length"),
             uint32_t(i64("moe_intermediate_size")));
    }
  }

  /// llama.cpp's generate_extra_tensors for rope_type llama3, in float32 as
  /// torch computes it. The original context is taken from rope_scaling (the
  /// transformers semantics the golden logits follow) and written as
  /// rope.scaling.original_context_length, which llama.cpp's converter leaves
  /// out (it then means 8192).
  void llama3Rope(int64_t dim) {
    if (!has("rope_scaling"))
      return;
    const json &rs = c_.at("rope_scaling");
    if (rs.value("rope_type", rs.value("type", "")) != "llama3")
      return;
    const float base = c_.at("rope_theta").get<float>();
    const float factor = rs.at("factor").get<float>();
    const float low = rs.value("low_freq_factor", 1.0f);
    const float high = rs.value("high_freq_factor", 4.0f);
    const int64_t old_ctx = rs.value("original_max_position_embeddings", 8192);
    const float low_wavelen = float(old_ctx) / low;
    const float high_wavelen = float(old_ctx) / high;
    std::vector<float> divisors;
    for (int64_t i = 0; i < dim; i += 2) {
      const float freq = 1.0f / std::pow(base, float(i) / float(dim));
      const float wavelen = 2.0f * float(M_PI) / freq;
      if (wavelen < high_wavelen) {
        divisors.push_back(1.0f);
      } else if (wavelen > low_wavelen) {
        divisors.push_back(factor);
      } else {
        const float smooth = (float(old_ctx) / wavelen - low) / (high - low);
        divisors.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
      }
    }
    w_.tensor("rope_freqs.weight", {int64_t(divisors.size())}, divisors);
    w_.u32(key("rope.scaling.original_context_length"), uint32_t(old_ctx));
  }

  void deepseek() {
    const int64_t rope = i64("qk_rope_head_dim"), nope = i64("qk_nope_head_dim");
    const int64_t kv_lora = i64("kv_lora_rank");
    w_.u32(key("attention.head_count_kv"), 1); // MLA: one latent "head"
    if (has("q_lora_rank"))
      w_.u32(key("attention.q_lora_rank"), uint32_t(i64("q_lora_rank")));
    w_.u32(key("attention.kv_lora_rank"), uint32_t(kv_lora));
    w_.u32(key("attention.key_length"), uint32_t(kv_lora + rope));
    w_.u32(key("attention.value_length"), uint32_t(kv_lora));
    w_.u32(key("attention.key_length_mla"), uint32_t(nope + rope));
    w_.u32(key("attention.value_length_mla"), uint32_t(i64("v_head_dim")));
    w_.u32(key("rope.dimension_count"), uint32_t(rope));
    w_.u32(key("leading_dense_block_count"), uint32_t(i64("first_k_dense_replace")));
    w_.u32(key("expert_feed_forward_length"), uint32_t(i64("moe_intermediate_size")));
    w_.u32(key("expert_count"), uint32_t(i64("n_routed_experts")));
    w_.u32(key("expert_used_count"), uint32_t(i64("num_experts_per_tok")));
    w_.u32(key("expert_shared_count"), uint32_t(i64("n_shared_experts")));
    w_.f32(key("expert_weights_scale"), c_.at("routed_scaling_factor").get<float>());
    w_.boolean(key("expert_weights_norm"), c_.value("norm_topk_prob", false));
    const std::string scoring = c_.value("scoring_func", "softmax");
    w_.u32(key("expert_gating_func"), scoring == "sigmoid" ? 2 : 1);
    w_.u32(key("expert_group_count"), uint32_t(c_.value("n_group", 1)));
    w_.u32(key("expert_group_used_count"), uint32_t(c_.value("topk_group", 1)));
  }

  void block(int64_t i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const std::string h = "model.layers." + std::to_string(i) + ".";
    tensor(b + "attn_norm.weight", h + "input_layernorm.weight");
    tensor(b + "ffn_norm.weight", h + "post_attention_layernorm.weight");
    if (arch_ == "deepseek2")
      mla(b, h + "self_attn.");
    else
      attention(b, h + "self_attn.");
    if (m_.has(h + "mlp.gate.weight"))
      moe(b, h + "mlp.");
    else
      for (const char *p : {"gate", "up", "down"})
        tensor(b + "ffn_" + p + ".weight", h + "mlp." + p + "_proj.weight");
  }

  void attention(const std::string &b, const std::string &h) {
    const int64_t heads = i64("num_attention_heads"),
                  kv_heads = i64("num_key_value_heads");
    const bool permute = arch_ == "llama";
    tensor(b + "attn_q.weight", h + "q_proj.weight", permute ? heads : 0);
    tensor(b + "attn_k.weight", h + "k_proj.weight", permute ? kv_heads : 0);
    tensor(b + "attn_v.weight", h + "v_proj.weight");
    tensor(b + "attn_output.weight", h + "o_proj.weight");
    for (const char *p : {"q", "k", "v"})
      if (m_.has(h + p + "_proj.bias"))
        tensor(b + "attn_" + p + ".bias", h + p + "_proj.bias");
    if (m_.has(h + "q_norm.weight")) {
      tensor(b + "attn_q_norm.weight", h + "q_norm.weight");
      tensor(b + "attn_k_norm.weight", h + "k_norm.weight");
    }
  }

  void mla(const std::string &b, const std::string &h) {
    if (m_.has(h + "q_a_proj.weight")) {
      tensor(b + "attn_q_a.weight", h + "q_a_proj.weight");
      tensor(b + "attn_q_a_norm.weight", h + "q_a_layernorm.weight");
      tensor(b + "attn_q_b.weight", h + "q_b_proj.weight");
    } else {
      tensor(b + "attn_q.weight", h + "q_proj.weight");
    }
    tensor(b + "attn_kv_a_mqa.weight", h + "kv_a_proj_with_mqa.weight");
    tensor(b + "attn_kv_a_norm.weight", h + "kv_a_layernorm.weight");
    tensor(b + "attn_output.weight", h + "o_proj.weight");
    // kv_b [heads * (nope + v), kv_lora] -> k_b[h] = rows[0, nope)^T,
    // v_b[h] = rows[nope, nope + v).
    const int64_t heads = i64("num_attention_heads"), nope = i64("qk_nope_head_dim"),
                  v = i64("v_head_dim"), rank = i64("kv_lora_rank");
    std::vector<float> kv_b = read(h + "kv_b_proj.weight");
    if (int64_t(kv_b.size()) != heads * (nope + v) * rank) {
      fail(h + "kv_b_proj.weight has an unexpected size");
      return;
    }
    std::vector<float> k_b(size_t(heads * rank * nope)), v_b(size_t(heads * v * rank));
    for (int64_t hd = 0; hd < heads; ++hd) {
      const float *rows = &kv_b[size_t(hd * (nope + v) * rank)];
      for (int64_t r = 0; r < nope; ++r)
        for (int64_t c = 0; c < rank; ++c)
          k_b[size_t((hd * rank + c) * nope + r)] = rows[r * rank + c];
      std::copy(rows + nope * rank, rows + (nope + v) * rank, &v_b[size_t(hd * v * rank)]);
    }
    w_.tensor(b + "attn_k_b.weight", {heads, rank, nope}, k_b);
    w_.tensor(b + "attn_v_b.weight", {heads, v, rank}, v_b);
  }

  void moe(const std::string &b, const std::string &h) {
    tensor(b + "ffn_gate_inp.weight", h + "gate.weight");
    if (m_.has(h + "gate.e_score_correction_bias"))
      tensor(b + "exp_probs_b.bias", h + "gate.e_score_correction_bias");
    const int64_t experts =
        has("n_routed_experts") ? i64("n_routed_experts") : i64("num_experts");
    for (const char *p : {"gate", "up", "down"}) {
      std::vector<float> stacked;
      std::vector<int64_t> shape;
      for (int64_t e = 0; e < experts; ++e) {
        const std::string name =
            h + "experts." + std::to_string(e) + "." + p + "_proj.weight";
        const io::SafetensorsTensorInfo *info = m_.find_tensor(name);
        if (!info) {
          fail(name + " is missing");
          return;
        }
        shape = {experts, info->shape[0], info->shape[1]};
        std::vector<float> one = read(name);
        stacked.insert(stacked.end(), one.begin(), one.end());
      }
      w_.tensor(b + "ffn_" + p + "_exps.weight", shape, stacked);
    }
    if (m_.has(h + "shared_experts.gate_proj.weight"))
      for (const char *p : {"gate", "up", "down"})
        tensor(b + "ffn_" + p + "_shexp.weight",
               h + "shared_experts." + p + "_proj.weight");
  }

  std::vector<float> read(const std::string &name) {
    io::Expected<std::vector<float>> v = m_.read_f32(name);
    if (!v) {
      fail(v.error());
      return {};
    }
    return std::move(*v);
  }

  /// Copies HF tensor `hf` as `gguf`; with `permute_heads` > 0, q/k rows
  /// are reordered per head from [first halves; second halves] to
  /// interleaved pairs (llama.cpp's LlamaModel.permute).
  void tensor(const std::string &gguf, const std::string &hf,
              int64_t permute_heads = 0) {
    const io::SafetensorsTensorInfo *info = m_.find_tensor(hf);
    if (!info) {
      fail(hf + " is missing");
      return;
    }
    std::vector<float> v = read(hf);
    if (permute_heads > 0) {
      const int64_t rows = info->shape[0], cols = int64_t(v.size()) / rows;
      const int64_t hd = rows / permute_heads, half = hd / 2;
      std::vector<float> p(v.size());
      for (int64_t h = 0; h < permute_heads; ++h)
        for (int64_t i = 0; i < half; ++i)
          for (int64_t j = 0; j < 2; ++j)
            std::copy_n(&v[size_t((h * hd + j * half + i) * cols)], cols,
                        &p[size_t((h * hd + 2 * i + j) * cols)]);
      v.swap(p);
    }
    w_.tensor(gguf, info->shape, v);
  }

  void fail(const std::string &what) {
    if (error_.empty())
      error_ = what;
  }

  const json &c_;
  const io::SafetensorsModel &m_;
  std::string arch_;
  GgufSpecWriter w_;
  std::string error_;
};

} // namespace

std::string write_llama_cpp_gguf(const std::string &hf_dir,
                                 const std::string &gguf_path,
                                 uint32_t alignment) {
  std::ifstream f(hf_dir + "/config.json");
  if (!f)
    return hf_dir + "/config.json: cannot open";
  json config;
  try {
    config = json::parse(f);
  } catch (const std::exception &e) {
    return hf_dir + "/config.json: " + e.what();
  }
  io::Expected<io::SafetensorsModel> model = io::SafetensorsModel::open(hf_dir);
  if (!model)
    return model.error();
  try {
    return Converter(config, *model).run(gguf_path, alignment);
  } catch (const std::exception &e) {
    return hf_dir + ": " + e.what();
  }
}

} // namespace hyc::test
