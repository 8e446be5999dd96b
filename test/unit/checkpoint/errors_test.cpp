// load_checkpoint failures and GGUF edge cases on hand-built files: unknown
// architectures, missing and misshapen weights, bad paths, tied GGUF
// without output.weight, gpt2 tokenizers, Llama-3 rope_freqs.
#include "checkpoint_test_util.h"
#include "tiny_llama.h"

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

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
    // The same through a type hyc does not read (IQ2_XXS: size unknown).
    unsupported.untyped("blk.0.ffn_gate_exps.weight", {int64_t(1) << 40, 1, 1}, 16);
    unsupported.write(dir.file("iq2.gguf"));
    r = load_checkpoint(dir.file("iq2.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"iq2.gguf", "'blk.0.ffn_gate_exps.weight'",
                               "has ggml type 16 (IQ2_XXS), which hyc does not read"});
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
