// load_checkpoint failures and GGUF edge cases on hand-built files: unknown
// architectures, missing and misshapen weights, bad paths, tied GGUF
// without output.weight, gpt2 tokenizers, Llama-3 rope_freqs.
#include "checkpoint_test_util.h"

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

/// Builds a GGUF v3 file in memory: metadata first, then tensors (F32).
class GgufBuilder {
public:
  void u32(const std::string &key, uint32_t v) {
    kv(key, 4);
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
  /// Tensor with row-major `shape`, every element `value`.
  void tensor(const std::string &name, std::vector<int64_t> shape,
              float value = 0.25f) {
    tensors_.push_back({name, std::move(shape), value, 0});
  }
  /// Tensor info of ggml type `ggml_type` with no data (for types hyc does
  /// not read, whose size the reader cannot check).
  void untyped(const std::string &name, std::vector<int64_t> shape,
               uint32_t ggml_type) {
    tensors_.push_back({name, std::move(shape), 0.0f, ggml_type});
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
    append(&kv_count_, 8);
    append(kv_.data(), kv_.size());
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
      append(&t.ggml_type, 4);
      append(&offset, 8);
      offsets.push_back(offset);
      if (t.ggml_type == 0) // F32
        offset += (numel(t) * 4 + 31) / 32 * 32;
    }
    out.resize((out.size() + 31) / 32 * 32, 0);
    const size_t data = out.size();
    out.resize(data + offset, 0);
    for (size_t i = 0; i < tensors_.size(); ++i)
      for (uint64_t j = 0; tensors_[i].ggml_type == 0 && j < numel(tensors_[i]); ++j)
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
    uint32_t ggml_type; ///< 0: F32, with data
  };
  static uint64_t numel(const Tensor &t) {
    uint64_t n = 1;
    for (int64_t d : t.shape)
      n *= static_cast<uint64_t>(d);
    return n;
  }
  template <typename T> void put(T v) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(&v);
    kv_.insert(kv_.end(), b, b + sizeof(T));
  }
  void putString(const std::string &s) {
    put<uint64_t>(s.size());
    kv_.insert(kv_.end(), s.begin(), s.end());
  }
  void kv(const std::string &key, uint32_t type) {
    ++kv_count_;
    putString(key);
    put(type);
  }

  std::vector<uint8_t> kv_;
  uint64_t kv_count_ = 0;
  std::vector<Tensor> tensors_;
};

/// llama metadata + every tensor of a 1-layer model with hidden 8, 2 heads,
/// 1 kv head, ffn 12, vocab 16; no output.weight (tied).
GgufBuilder tinyLlamaGguf(uint32_t block_count = 1) {
  GgufBuilder g;
  g.str("general.architecture", "llama");
  g.u32("llama.context_length", 64);
  g.u32("llama.embedding_length", 8);
  g.u32("llama.feed_forward_length", 12);
  g.u32("llama.block_count", block_count);
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

Json tinyLlamaConfig() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", 16},
          {"hidden_size", 8},
          {"intermediate_size", 12},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1}};
}

ModelSpec tinyLlamaSpec() {
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

void expectContains(const std::string &message,
                    const std::vector<std::string> &parts) {
  for (const std::string &p : parts)
    EXPECT_NE(message.find(p), std::string::npos)
        << "expected '" << p << "' in: " << message;
}

TEST(CheckpointLoadErrors, UnknownHfArchitecture) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  c["architectures"] = {"FooForCausalLM"};
  c["model_type"] = "foo";
  writeText(dir.file("config.json"), c.dump());
  Expected<Checkpoint> r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {dir.file("config.json"), "FooForCausalLM", "'foo'",
                             "LlamaForCausalLM", "Qwen3MoeForCausalLM",
                             "DeepseekV3ForCausalLM"});
}

TEST(CheckpointLoadErrors, MissingWeight) {
  TempDir dir;
  writeText(dir.file("config.json"), tinyLlamaConfig().dump());
  std::vector<io::SafetensorsEntry> entries = entriesFor(tinyLlamaSpec());
  entries.erase(entries.begin() + 8); // model.layers.0.mlp.up_proj.weight
  ASSERT_TRUE(
      io::write_safetensors(dir.file("model.safetensors"), entries).ok());
  Expected<Checkpoint> r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {dir.str(), "missing weight",
                             "'model.layers.0.mlp.up_proj.weight'", "[12, 8]"});
}

TEST(CheckpointLoadErrors, WrongShape) {
  TempDir dir;
  writeText(dir.file("config.json"), tinyLlamaConfig().dump());
  std::vector<io::SafetensorsEntry> entries = entriesFor(tinyLlamaSpec());
  for (io::SafetensorsEntry &e : entries)
    if (e.name == "model.layers.0.self_attn.k_proj.weight")
      e = f32Entry(e.name, {8, 8}); // as if num_key_value_heads were 2
  ASSERT_TRUE(
      io::write_safetensors(dir.file("model.safetensors"), entries).ok());
  Expected<Checkpoint> r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {"'model.layers.0.self_attn.k_proj.weight'",
                             "has shape [8, 8]", "expected [4, 8]"});
}

TEST(CheckpointLoadErrors, UnsupportedDtype) {
  TempDir dir;
  writeText(dir.file("config.json"), tinyLlamaConfig().dump());
  // A hand-written safetensors file: every tensor F32 except model.norm
  // in F64, which hyc does not read.
  Json header = Json::object();
  uint64_t offset = 0;
  for (const WeightInfo &w : required_weights(tinyLlamaSpec())) {
    const bool f64 = w.name == "model.norm.weight";
    uint64_t n = 1;
    for (int64_t d : w.shape)
      n *= static_cast<uint64_t>(d);
    const uint64_t bytes = n * (f64 ? 8 : 4);
    header[w.name] = {{"dtype", f64 ? "F64" : "F32"},
                      {"shape", w.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t len = text.size();
  std::ofstream out(dir.file("model.safetensors"), std::ios::binary);
  out.write(reinterpret_cast<const char *>(&len), 8);
  out << text << std::string(offset, '\0');
  out.close();
  Expected<Checkpoint> r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {"'model.norm.weight'", "F64"});
}

TEST(CheckpointLoadErrors, BadPaths) {
  TempDir dir;
  Expected<Checkpoint> r = load_checkpoint(dir.file("nope"));
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {"nope", "no such file"});

  r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {"no config.json"});

  writeText(dir.file("garbage.bin"), "this is not a model at all");
  r = load_checkpoint(dir.file("garbage.bin"));
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {"garbage.bin", "neither GGUF"});

  writeText(dir.file("config.json"), tinyLlamaConfig().dump());
  r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok());
  expectContains(r.error(), {"model.safetensors"});
}

TEST(CheckpointGguf, TiedLlamaRenamedAndSpec) {
  TempDir dir;
  tinyLlamaGguf().write(dir.file("m.gguf"));
  HYC_CKPT_LOAD(ckpt, dir.file("m.gguf"));
  const ModelSpec &s = ckpt.spec;
  EXPECT_TRUE(s.tie_word_embeddings);
  EXPECT_EQ(s.vocab_size, 16) << "from token_embd rows";
  EXPECT_EQ(s.max_position_embeddings, 64);
  EXPECT_EQ(s.rms_norm_eps, 1e-6);
  EXPECT_EQ(s.rope.theta, 500000.0);
  EXPECT_EQ(s.rope.rotary_dim, 4);
  EXPECT_FALSE(s.rope.neox);
  EXPECT_EQ(s.bos_token_id, -1);
  EXPECT_FALSE(ckpt.tokenizer.has_value());
  ASSERT_EQ(ckpt.warnings.size(), 1u);
  expectContains(ckpt.warnings[0], {"no embedded tokenizer"});
  std::vector<float> k =
      readWeight(ckpt, "model.layers.0.self_attn.k_proj.weight");
  ASSERT_EQ(k.size(), 32u);
  EXPECT_EQ(k[31], -0.75f);
  EXPECT_EQ(readWeight(ckpt, "model.embed_tokens.weight")[0], 0.5f);
}

TEST(CheckpointGguf, Gpt2TokenizerWithMerges) {
  TempDir dir;
  GgufBuilder g = tinyLlamaGguf();
  std::vector<std::string> tokens;
  for (int i = 0; i < 16; ++i)
    tokens.push_back(std::string(1, char('a' + i)));
  g.str("tokenizer.ggml.model", "gpt2");
  g.strArray("tokenizer.ggml.tokens", tokens);
  g.strArray("tokenizer.ggml.merges", {"a b"});
  g.u32("tokenizer.ggml.bos_token_id", 0);
  g.u32("tokenizer.ggml.eos_token_id", 15);
  g.u32("tokenizer.ggml.unknown_token_id", 0xFFFFFFFFu);
  g.write(dir.file("m.gguf"));
  HYC_CKPT_LOAD(ckpt, dir.file("m.gguf"));
  ASSERT_TRUE(ckpt.tokenizer.has_value());
  EXPECT_EQ(ckpt.tokenizer->kind, "gpt2");
  EXPECT_EQ(ckpt.tokenizer->merges, std::vector<std::string>{"a b"});
  EXPECT_EQ(ckpt.tokenizer->tokens.size(), 16u);
  EXPECT_EQ(ckpt.tokenizer->bos_id, 0);
  EXPECT_EQ(ckpt.tokenizer->eos_id, 15);
  EXPECT_EQ(ckpt.tokenizer->unk_id, -1);
  EXPECT_EQ(ckpt.spec.bos_token_id, 0);
  EXPECT_EQ(ckpt.spec.eos_token_id, 15);
}

TEST(CheckpointGguf, Errors) {
  TempDir dir;
  {
    GgufBuilder g;
    g.str("general.architecture", "mamba");
    g.write(dir.file("mamba.gguf"));
    Expected<Checkpoint> r = load_checkpoint(dir.file("mamba.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"mamba.gguf", "'mamba'", "supported: llama"});
  }
  {
    GgufBuilder g = tinyLlamaGguf();
    g.tensor("rope_freqs.weight", {2});
    g.write(dir.file("llama3.gguf"));
    Expected<Checkpoint> r = load_checkpoint(dir.file("llama3.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"llama3.gguf", "rope_freqs.weight [2]",
                               "is not llama3 rope scaling"});
  }
  {
    // Found by fuzz_gguf: a layer count the file cannot back listed a
    // weight name per layer first (2^30 layers: out of memory).
    GgufBuilder g = tinyLlamaGguf(1u << 30);
    g.write(dir.file("layers.gguf"));
    Expected<Checkpoint> r = load_checkpoint(dir.file("layers.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"layers.gguf", "1073741824 layers",
                               "holds only 11 tensors"});
  }
  {
    // Found by fuzzing: an expert stack with a zero dimension holds no data,
    // so 2^40 experts passed the file-size check and the loader looped once
    // per expert (a hang, then out of memory).
    GgufBuilder g;
    g.str("general.architecture", "qwen3moe");
    for (const char *key : {"block_count", "attention.head_count",
                            "attention.head_count_kv", "expert_used_count"})
      g.u32(std::string("qwen3moe.") + key, 1);
    for (const char *key : {"embedding_length", "feed_forward_length",
                            "context_length", "expert_count",
                            "expert_feed_forward_length"})
      g.u32(std::string("qwen3moe.") + key, 2);
    g.f32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6f);
    g.tensor("token_embd.weight", {4, 2});
    GgufBuilder unsupported = g;
    g.tensor("blk.0.ffn_gate_exps.weight", {int64_t(1) << 40, 0, 1});
    g.write(dir.file("experts.gguf"));
    Expected<Checkpoint> r = load_checkpoint(dir.file("experts.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"experts.gguf", "'blk.0.ffn_gate_exps.weight'",
                               "[1099511627776, 0, 1]", "none of them 0"});
    // The same through a type hyc does not read (Q4_K: size unknown).
    unsupported.untyped("blk.0.ffn_gate_exps.weight", {int64_t(1) << 40, 1, 1}, 12);
    unsupported.write(dir.file("q4k.gguf"));
    r = load_checkpoint(dir.file("q4k.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"q4k.gguf", "'blk.0.ffn_gate_exps.weight'",
                               "has type Q4_K, which hyc does not read"});
  }
  {
    GgufBuilder g = tinyLlamaGguf();
    g.tensor("output.weight", {16, 4}); // wrong shape
    g.write(dir.file("bad.gguf"));
    Expected<Checkpoint> r = load_checkpoint(dir.file("bad.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"bad.gguf", "'lm_head.weight'", "[16, 4]",
                               "expected [16, 8]"});
  }
}

} // namespace
} // namespace hyc::models::test
