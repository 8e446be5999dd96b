// The loaders trust nothing a file says: counts are checked against the
// tensors present before anything is allocated, values against their
// ranges (the field and file in the message), extra layers are errors,
// unused tensors warnings, integer storage is no weight, and special files
// are refused instead of waited on.
#include "checkpoint_test_util.h"
#include "tiny_llama.h"

#include <chrono>
#include <fcntl.h>
#include <future>
#include <sys/stat.h>
#include <unistd.h>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

/// Loads `path` (expected to fail) within a few seconds: a config that
/// claims 2^31 layers used to allocate for 20 s before std::bad_alloc.
std::string quickError(const std::string &path) {
  const auto start = Clock::now();
  Expected<Checkpoint> r = load_checkpoint(path);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error();
}

std::string hfError(const TempDir &dir, const Json &config,
                    const std::vector<io::SafetensorsEntry> &entries) {
  writeText(dir.file("config.json"), config.dump());
  EXPECT_TRUE(io::write_safetensors(dir.file("model.safetensors"), entries).ok());
  return quickError(dir.str());
}

std::string hfError(const TempDir &dir, const Json &config) {
  return hfError(dir, config, entriesFor(tinyLlamaSpec()));
}

std::string ggufError(const TempDir &dir, const GgufBuilder &g) {
  g.write(dir.file("m.gguf"));
  return quickError(dir.file("m.gguf"));
}

//===----------------------------------------------------------------------===//
// Counts: layers and experts must exist as tensors.
//===----------------------------------------------------------------------===//

TEST(CheckpointCounts, GgufBlockCountOf2To31IsRefusedAtOnce) {
  TempDir dir;
  GgufBuilder g = tinyLlamaGguf();
  g.u32("llama.block_count", 0x80000000u);
  expectContains(ggufError(dir, g),
                 {"m.gguf", "llama.block_count = 2147483648",
                  "tensors for 1 (layers 0..0) layers"});
}

TEST(CheckpointCounts, GgufBlockCountPastTheTensors) {
  TempDir dir;
  GgufBuilder g = tinyLlamaGguf();
  g.u32("llama.block_count", 2);
  expectContains(ggufError(dir, g), {"llama.block_count = 2", "tensors for 1"});
}

TEST(CheckpointCounts, GgufLayerPastBlockCountIsAnError) {
  TempDir dir;
  GgufBuilder g = tinyLlamaGguf();
  g.tensor("blk.1.attn_norm.weight", {8});
  expectContains(ggufError(dir, g),
                 {"m.gguf", "'model.layers.1.input_layernorm.weight'",
                  "past llama.block_count = 1"});
}

TEST(CheckpointCounts, HfNumHiddenLayersOf2To31IsRefusedAtOnce) {
  TempDir dir;
  Json c = tinyLlamaConfig();
  c["num_hidden_layers"] = 2147483648ll;
  expectContains(hfError(dir, c), {dir.str(), "num_hidden_layers = 2147483648",
                                   "tensors for 1 (layers 0..0) layers"});
}

TEST(CheckpointCounts, HfLayerPastNumHiddenLayersIsAnError) {
  TempDir dir;
  std::vector<io::SafetensorsEntry> entries = entriesFor(tinyLlamaSpec());
  entries.push_back(f32Entry("model.layers.1.input_layernorm.weight", {8}));
  expectContains(hfError(dir, tinyLlamaConfig(), entries),
                 {"'model.layers.1.input_layernorm.weight'",
                  "past num_hidden_layers = 1"});
}

TEST(CheckpointCounts, DeepseekNextnLayersAreIgnoredWithAWarning) {
  // DeepSeek-V3 keeps its multi-token-prediction layer after the decoder's;
  // the Llama config here only borrows the field.
  TempDir dir;
  Json c = tinyLlamaConfig();
  c["num_nextn_predict_layers"] = 1;
  std::vector<io::SafetensorsEntry> entries = entriesFor(tinyLlamaSpec());
  entries.push_back(f32Entry("model.layers.1.input_layernorm.weight", {8}));
  writeText(dir.file("config.json"), c.dump());
  ASSERT_TRUE(io::write_safetensors(dir.file("model.safetensors"), entries).ok());
  HYC_CKPT_LOAD(ckpt, dir.str());
  ASSERT_EQ(ckpt.warnings.size(), 1u);
  expectContains(ckpt.warnings[0],
                 {"ignored 1 tensors", "num_nextn_predict_layers",
                  "model.layers.1.input_layernorm.weight"});
}

Json tinyQwen3MoeConfig(int64_t experts) {
  Json c = tinyLlamaConfig();
  c["architectures"] = {"Qwen3MoeForCausalLM"};
  c["model_type"] = "qwen3_moe";
  c["head_dim"] = 4;
  c["num_experts"] = experts;
  c["num_experts_per_tok"] = 1;
  c["moe_intermediate_size"] = 6;
  return c;
}

/// Tensors of the tiny Qwen3-MoE with `experts` routed experts.
std::vector<io::SafetensorsEntry> tinyQwen3MoeEntries(int64_t experts) {
  ModelSpec s = tinyLlamaSpec();
  s.arch = "qwen3_moe";
  s.qk_norm = true;
  MoeSpec m;
  m.num_experts = experts;
  m.top_k = 1;
  m.expert_intermediate_size = 6;
  s.moe = m;
  return entriesFor(s);
}

TEST(CheckpointCounts, HfExpertsMustExist) {
  TempDir dir;
  // The tensors load as they are (the fixture itself is valid).
  writeText(dir.file("config.json"), tinyQwen3MoeConfig(2).dump());
  ASSERT_TRUE(io::write_safetensors(dir.file("model.safetensors"),
                                    tinyQwen3MoeEntries(2))
                  .ok());
  HYC_CKPT_LOAD(ok, dir.str());
  EXPECT_TRUE(ok.warnings.empty());

  expectContains(hfError(dir, tinyQwen3MoeConfig(65536), tinyQwen3MoeEntries(2)),
                 {"num_experts = 65536", "tensors for 2 routed experts"});
  expectContains(
      hfError(dir, tinyQwen3MoeConfig(2147483648ll), tinyQwen3MoeEntries(2)),
      {"num_experts = 2147483648"});
  expectContains(hfError(dir, tinyQwen3MoeConfig(1), tinyQwen3MoeEntries(2)),
                 {"'model.layers.0.mlp.experts.1.", "past num_experts = 1"});
}

TEST(CheckpointCounts, HfSizesBeyondTheirRangeNameTheField) {
  struct Case {
    const char *field;
    int64_t value;
    std::string expected;
  };
  const Case cases[] = {
      {"vocab_size", 4294967312ll, "vocab_size = 4294967312, expected 1..2147483647"},
      {"hidden_size", int64_t(1) << 40, "hidden_size = 1099511627776, expected 1..16777216"},
      {"intermediate_size", int64_t(1) << 31, "intermediate_size = 2147483648"},
      {"num_attention_heads", int64_t(1) << 31, "num_attention_heads = 2147483648"},
      {"num_key_value_heads", int64_t(1) << 40, "num_key_value_heads"},
      {"head_dim", int64_t(1) << 31, "head_dim = 2147483648"},
      {"max_position_embeddings", int64_t(1) << 40,
       "max_position_embeddings = 1099511627776, expected 1..2147483647"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    Json config = tinyLlamaConfig();
    config[c.field] = c.value;
    expectContains(hfError(dir, config), {dir.file("config.json"), c.expected});
  }
}

TEST(CheckpointCounts, GgufSizesBeyondTheirRangeNameTheKey) {
  struct Case {
    const char *key;
    uint64_t value;
    std::string expected;
  };
  const Case cases[] = {
      {"llama.embedding_length", uint64_t(1) << 40, "llama.embedding_length = 1099511627776"},
      {"llama.feed_forward_length", uint64_t(1) << 31, "llama.feed_forward_length = 2147483648"},
      {"llama.attention.head_count", uint64_t(1) << 31, "llama.attention.head_count = 2147483648"},
      {"llama.attention.head_count_kv", uint64_t(1) << 40, "llama.attention.head_count_kv"},
      {"llama.attention.key_length", uint64_t(1) << 31, "llama.attention.key_length = 2147483648"},
      {"llama.context_length", uint64_t(1) << 40, "llama.context_length = 1099511627776"},
      {"llama.vocab_size", uint64_t(1) << 32, "llama.vocab_size = 4294967296"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    GgufBuilder g = tinyLlamaGguf();
    g.u64(c.key, c.value);
    expectContains(ggufError(dir, g), {"m.gguf", c.expected});
  }
}

//===----------------------------------------------------------------------===//
// Values: finite and in range, named by their field.
//===----------------------------------------------------------------------===//

TEST(CheckpointValues, HfNormEpsAndRopeMustBeFiniteAndInRange) {
  struct Case {
    Json patch;
    std::string expected;
  };
  const Case cases[] = {
      {{{"rms_norm_eps", 1e300}}, "rms_norm_eps = 1e+300, expected a finite number in (0, 1]"},
      {{{"rms_norm_eps", 0.0}}, "rms_norm_eps = 0,"},
      {{{"rms_norm_eps", -1e-5}}, "rms_norm_eps = -1e-05"},
      {{{"rope_theta", 1e300}}, "rope_theta = 1e+300, expected a finite number in (0, 1e+12]"},
      {{{"rope_theta", 0}}, "rope_theta = 0,"},
      {{{"rope_theta", -10000}}, "rope_theta = -10000"},
      {{{"partial_rotary_factor", 1e300}}, "partial_rotary_factor = 1e+300"},
      {{{"rope_scaling", {{"rope_type", "linear"}, {"factor", 1e300}}}},
       "rope_scaling.factor = 1e+300"},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 0}}}},
       "rope_scaling.beta_fast = 0,"},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"mscale", 1e300}}}},
       "rope_scaling.mscale = 1e+300"},
      {{{"rope_scaling",
         {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1e300},
          {"high_freq_factor", 1e301}, {"original_max_position_embeddings", 64}}}},
       "rope_scaling.low_freq_factor = 1e+300"},
      {{{"rope_scaling",
         {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 0}}}},
       "rope_scaling.original_max_position_embeddings = 0"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    Json config = tinyLlamaConfig();
    config.update(c.patch);
    expectContains(hfError(dir, config), {dir.file("config.json"), c.expected});
  }
}

TEST(CheckpointValues, GgufNormEpsAndRopeMustBeFiniteAndInRange) {
  struct Case {
    const char *key;
    float value;
    std::string expected;
  };
  const float nan = std::nanf(""), inf = INFINITY;
  const Case cases[] = {
      {"llama.attention.layer_norm_rms_epsilon", nan, "llama.attention.layer_norm_rms_epsilon = nan"},
      {"llama.attention.layer_norm_rms_epsilon", inf, "llama.attention.layer_norm_rms_epsilon = inf"},
      {"llama.attention.layer_norm_rms_epsilon", 1e30f, "layer_norm_rms_epsilon = 1e+30"},
      {"llama.rope.freq_base", nan, "llama.rope.freq_base = nan"},
      {"llama.rope.freq_base", inf, "llama.rope.freq_base = inf"},
      {"llama.rope.freq_base", 0.0f, "llama.rope.freq_base = 0,"},
      {"llama.rope.scaling.factor", nan, "llama.rope.scaling.factor = nan"},
  };
  for (const Case &c : cases) {
    TempDir dir;
    GgufBuilder g = tinyLlamaGguf();
    g.str("llama.rope.scaling.type", "linear");
    g.f32("llama.rope.scaling.factor", 2.0f);
    g.f32(c.key, c.value);
    expectContains(ggufError(dir, g), {"m.gguf", c.expected});
  }
}

TEST(CheckpointValues, TokenIdsMustBeInTheVocabulary) {
  {
    TempDir dir;
    Json c = tinyLlamaConfig();
    c["bos_token_id"] = 4294967297ll; // 2^32 + 1 used to become 1
    expectContains(hfError(dir, c),
                   {"config.json", "bos_token_id = 4294967297",
                    "expected a token id in 0..15"});
  }
  {
    TempDir dir;
    Json c = tinyLlamaConfig();
    c["eos_token_id"] = {16, 2};
    expectContains(hfError(dir, c), {"eos_token_id = 16"});
  }
  {
    TempDir dir;
    GgufBuilder g = tinyLlamaGguf();
    g.u64("tokenizer.ggml.bos_token_id", (uint64_t(1) << 32) + 1);
    expectContains(ggufError(dir, g),
                   {"tokenizer.ggml.bos_token_id = 4294967297"});
  }
  {
    TempDir dir;
    GgufBuilder g = tinyLlamaGguf();
    g.u32("tokenizer.ggml.eos_token_id", 16);
    expectContains(ggufError(dir, g), {"tokenizer.ggml.eos_token_id = 16"});
  }
  {
    // llama.cpp's "none" stays none.
    TempDir dir;
    GgufBuilder g = tinyLlamaGguf();
    g.u32("tokenizer.ggml.bos_token_id", 0xFFFFFFFFu);
    g.write(dir.file("m.gguf"));
    HYC_CKPT_LOAD(ckpt, dir.file("m.gguf"));
    EXPECT_EQ(ckpt.spec.bos_token_id, -1);
  }
}

//===----------------------------------------------------------------------===//
// Tensors: storage and unused tensors.
//===----------------------------------------------------------------------===//

TEST(CheckpointTensors, I32WeightIsAnError) {
  {
    TempDir dir;
    std::vector<io::SafetensorsEntry> entries = entriesFor(tinyLlamaSpec());
    for (io::SafetensorsEntry &e : entries)
      if (e.name == "model.norm.weight")
        e.dtype = io::DType::I32; // same 4-byte elements
    expectContains(hfError(dir, tinyLlamaConfig(), entries),
                   {"'model.norm.weight'", "has dtype I32",
                    "expected a floating-point type (F32, F16, BF16"});
  }
  {
    TempDir dir;
    GgufBuilder g = tinyLlamaGguf();
    g.retype("blk.0.attn_q.weight", 26); // GGML I32
    expectContains(ggufError(dir, g),
                   {"m.gguf", "'model.layers.0.self_attn.q_proj.weight'",
                    "(stored as 'blk.0.attn_q.weight')", "has dtype I32"});
  }
}

TEST(CheckpointTensors, UnusedTensorsAreReported) {
  TempDir dir;
  std::vector<io::SafetensorsEntry> entries = entriesFor(tinyLlamaSpec());
  entries.push_back(f32Entry("model.layers.0.self_attn.o_proj.bias", {8}));
  entries.push_back(f32Entry("model.layers.0.self_attn.rotary_emb.inv_freq", {2}));
  writeText(dir.file("config.json"), tinyLlamaConfig().dump());
  ASSERT_TRUE(io::write_safetensors(dir.file("model.safetensors"), entries).ok());
  HYC_CKPT_LOAD(ckpt, dir.str());
  ASSERT_EQ(ckpt.warnings.size(), 1u);
  expectContains(ckpt.warnings[0],
                 {dir.str(), "ignored 1 tensors the llama spec does not use",
                  "'model.layers.0.self_attn.o_proj.bias'"});
}

//===----------------------------------------------------------------------===//
// Special files: refused at once, never waited on.
//===----------------------------------------------------------------------===//

/// load_checkpoint(path) on a path that involves the FIFO `fifo`; fails the
/// test instead of hanging when the loader waits for a writer (then writers
/// are opened and closed until the loader, seeing EOF each time, returns).
std::string fifoError(const std::string &path, const std::string &fifo,
                      const LoadOptions &options = {}) {
  auto result = std::async(std::launch::async,
                           [&] { return load_checkpoint(path, options); });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "load_checkpoint(" << path << ") waits on the FIFO "
                  << fifo;
    do {
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0)
        ::close(fd);
    } while (result.wait_for(std::chrono::milliseconds(100)) !=
             std::future_status::ready);
  }
  Expected<Checkpoint> r = result.get();
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error();
}

TEST(CheckpointSpecialFiles, FifoInputsAreRefused) {
  TempDir dir;
  const std::string fifo = dir.file("model.gguf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expectContains(fifoError(fifo, fifo),
                 {"model.gguf: is a FIFO, expected a regular file"});

  // A FIFO as config.json or as the weights of a directory.
  TempDir hf;
  ASSERT_EQ(::mkfifo(hf.file("config.json").c_str(), 0600), 0);
  expectContains(fifoError(hf.str(), hf.file("config.json")),
                 {"config.json: is a FIFO"});
  TempDir hf2;
  writeText(hf2.file("config.json"), tinyLlamaConfig().dump());
  ASSERT_EQ(::mkfifo(hf2.file("model.safetensors").c_str(), 0600), 0);
  expectContains(fifoError(hf2.str(), hf2.file("model.safetensors")),
                 {"model.safetensors: is a FIFO"});

  // An explicit tokenizer.bin.
  TempDir t;
  tinyLlamaGguf().write(t.file("m.gguf"));
  ASSERT_EQ(::mkfifo(t.file("tokenizer.bin").c_str(), 0600), 0);
  LoadOptions options;
  options.tokenizer_path = t.file("tokenizer.bin");
  expectContains(fifoError(t.file("m.gguf"), t.file("tokenizer.bin"), options),
                 {"tokenizer.bin: is a FIFO"});
}

TEST(CheckpointSpecialFiles, CharacterDeviceIsRefused) {
  expectContains(quickError("/dev/zero"),
                 {"/dev/zero: is a character device, expected a regular file"});
}

} // namespace
} // namespace hyc::models::test
