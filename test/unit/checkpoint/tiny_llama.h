// A GGUF v3 writer for hand-built test files (metadata, then F32 tensors
// or 4-byte tensors of another ggml type) and the tiny Llama every
// checkpoint error test starts from: one layer, hidden 8, 2 heads, 1 kv
// head, ffn 12, vocab 16.
#ifndef HYC_TEST_UNIT_CHECKPOINT_TINY_LLAMA_H
#define HYC_TEST_UNIT_CHECKPOINT_TINY_LLAMA_H

#include "checkpoint_test_util.h"

namespace hyc::models::test {

/// Builds a GGUF v3 file in memory: metadata first, then tensors (F32).
class GgufBuilder {
public:
  void u32(const std::string &key, uint32_t v) {
    kv(key, 4);
    put(v);
  }
  void u64(const std::string &key, uint64_t v) {
    kv(key, 10);
    put(v);
  }
  void f32(const std::string &key, float v) {
    kv(key, 6);
    put(v);
  }
  void str(const std::string &key, const std::string &v) {
    kv(key, 8);
    putString(v);
  }
  void strArray(const std::string &key, const std::vector<std::string> &v) {
    kv(key, 9);
    put<uint32_t>(8);
    put<uint64_t>(v.size());
    for (const std::string &s : v)
      putString(s);
  }
  /// Tensor with row-major `shape`, every element `value` (F32).
  void tensor(const std::string &name, std::vector<int64_t> shape,
              float value = 0.25f) {
    tensors_.push_back({name, std::move(shape), value, 0, true});
  }
  /// Replaces the ggml type of tensor `name` by `ggml_type` (a 4-byte type
  /// such as I32 = 26: the bytes stay those of the floats).
  void retype(const std::string &name, uint32_t ggml_type) {
    for (Tensor &t : tensors_)
      if (t.name == name)
        t.type = ggml_type;
  }
  /// Tensor info of ggml type `ggml_type` with no data (a type hyc does not
  /// read, whose size the reader cannot check).
  void untyped(const std::string &name, std::vector<int64_t> shape,
               uint32_t ggml_type) {
    tensors_.push_back({name, std::move(shape), 0.0f, ggml_type, false});
  }
  /// Drops every tensor whose name starts with `prefix`.
  void drop(const std::string &prefix) {
    std::vector<Tensor> kept;
    for (Tensor &t : tensors_)
      if (t.name.compare(0, prefix.size(), prefix) != 0)
        kept.push_back(std::move(t));
    tensors_ = std::move(kept);
  }

  void write(const std::string &path) const {
    std::vector<uint8_t> out;
    auto append = [&out](const void *p, size_t n) {
      const uint8_t *b = static_cast<const uint8_t *>(p);
      out.insert(out.end(), b, b + n);
    };
    uint32_t version = 3;
    uint64_t ntensors = tensors_.size();
    append("GGUF", 4);
    append(&version, 4);
    append(&ntensors, 8);
    const uint64_t kv_count = entries_.size();
    append(&kv_count, 8);
    const std::vector<uint8_t> kv = metadata();
    append(kv.data(), kv.size());
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const Tensor &t : tensors_) {
      uint64_t len = t.name.size();
      append(&len, 8);
      append(t.name.data(), len);
      uint32_t dims = static_cast<uint32_t>(t.shape.size());
      append(&dims, 4);
      for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) {
        uint64_t ne = static_cast<uint64_t>(*it);
        append(&ne, 8);
      }
      append(&t.type, 4);
      append(&offset, 8);
      offsets.push_back(offset);
      if (t.has_data)
        offset += (numel(t) * 4 + 31) / 32 * 32;
    }
    out.resize((out.size() + 31) / 32 * 32, 0);
    const size_t data = out.size();
    out.resize(data + offset, 0);
    for (size_t i = 0; i < tensors_.size(); ++i)
      for (uint64_t j = 0; tensors_[i].has_data && j < numel(tensors_[i]); ++j)
        std::memcpy(&out[data + offsets[i] + 4 * j], &tensors_[i].value, 4);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(out.data()),
               static_cast<std::streamsize>(out.size()));
  }

private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    float value;
    uint32_t type; ///< ggml type id; F32 = 0
    bool has_data; ///< false: only the tensor info is written
  };
  static uint64_t numel(const Tensor &t) {
    uint64_t n = 1;
    for (int64_t d : t.shape)
      n *= static_cast<uint64_t>(d);
    return n;
  }
  template <typename T> void put(T v) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(&v);
    entries_.back().second.insert(entries_.back().second.end(), b,
                                  b + sizeof(T));
  }
  void putString(const std::string &s) {
    put<uint64_t>(s.size());
    entries_.back().second.insert(entries_.back().second.end(), s.begin(),
                                  s.end());
  }
  /// Starts the value of `key` (type id, then the value's bytes); a key set
  /// again replaces its earlier value.
  void kv(const std::string &key, uint32_t type) {
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].first == key) {
        entries_.erase(entries_.begin() + long(i));
        break;
      }
    entries_.push_back({key, {}});
    put(type);
  }
  /// The metadata section: every key and its typed value.
  std::vector<uint8_t> metadata() const {
    std::vector<uint8_t> out;
    for (const auto &[key, value] : entries_) {
      uint64_t len = key.size();
      const uint8_t *b = reinterpret_cast<const uint8_t *>(&len);
      out.insert(out.end(), b, b + 8);
      out.insert(out.end(), key.begin(), key.end());
      out.insert(out.end(), value.begin(), value.end());
    }
    return out;
  }

  std::vector<std::pair<std::string, std::vector<uint8_t>>> entries_;
  std::vector<Tensor> tensors_;
};

/// llama metadata + every tensor of a 1-layer model with hidden 8, 2 heads,
/// 1 kv head, ffn 12, vocab 16; no output.weight (tied).
inline GgufBuilder tinyLlamaGguf() {
  GgufBuilder g;
  g.str("general.architecture", "llama");
  g.u32("llama.context_length", 64);
  g.u32("llama.embedding_length", 8);
  g.u32("llama.feed_forward_length", 12);
  g.u32("llama.block_count", 1);
  g.u32("llama.attention.head_count", 2);
  g.u32("llama.attention.head_count_kv", 1);
  g.f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  g.f32("llama.rope.freq_base", 500000.0f);
  g.tensor("token_embd.weight", {16, 8}, 0.5f);
  g.tensor("output_norm.weight", {8});
  g.tensor("blk.0.attn_norm.weight", {8});
  g.tensor("blk.0.attn_q.weight", {8, 8});
  g.tensor("blk.0.attn_k.weight", {4, 8}, -0.75f);
  g.tensor("blk.0.attn_v.weight", {4, 8});
  g.tensor("blk.0.attn_output.weight", {8, 8});
  g.tensor("blk.0.ffn_norm.weight", {8});
  g.tensor("blk.0.ffn_gate.weight", {12, 8});
  g.tensor("blk.0.ffn_up.weight", {12, 8});
  g.tensor("blk.0.ffn_down.weight", {8, 12});
  return g;
}

inline nlohmann::json tinyLlamaConfig() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", 16},
          {"hidden_size", 8},
          {"intermediate_size", 12},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1}};
}

inline ModelSpec tinyLlamaSpec() {
  ModelSpec s;
  s.arch = "llama";
  s.vocab_size = 16;
  s.hidden_size = 8;
  s.intermediate_size = 12;
  s.num_layers = 1;
  s.num_heads = 2;
  s.num_kv_heads = 1;
  s.head_dim = 4;
  return s;
}

inline void expectContains(const std::string &message,
                    const std::vector<std::string> &parts) {
  for (const std::string &p : parts)
    EXPECT_NE(message.find(p), std::string::npos)
        << "expected '" << p << "' in: " << message;
}

} // namespace hyc::models::test

#endif // HYC_TEST_UNIT_CHECKPOINT_TINY_LLAMA_H
