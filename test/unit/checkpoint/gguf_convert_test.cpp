// convert_hf_to_gguf + the GGUF loader for llama, qwen2, qwen3, qwen3moe and
// deepseek2: every golden Hugging Face case (and every synth arch) converted
// to GGUF loads with the same spec and bit-identical weights once the format
// transforms are undone, and the GGUF holds llama.cpp's layout (checked on
// the raw file, independently of the loader). Also malformed GGUFs.
//
// Expected spec differences: a llama GGUF stores q/k rows permuted for
// adjacent-pair rope, so its spec has rope.neox = false where the HF spec has
// true; a hunyuan-moe GGUF holds the alpha-scaled rope base (float32) with no
// scaling where the HF spec has theta + ntk_alpha. Both describe the same
// model (the compiled logits agree).
#include "checkpoint_test_util.h"

#include "models/checkpoint/convert_gguf.h"
#include "models/checkpoint/family.h"
#include "models/checkpoint/synth.h"
#include "models/io/gguf.h"
#include "models/io/gguf_writer.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <fstream>
#include <functional>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

void expectContains(const std::string &text,
                    std::initializer_list<const char *> parts) {
  for (const char *p : parts)
    EXPECT_NE(text.find(p), std::string::npos)
        << "'" << p << "' not in: " << text;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Inverse of llama.cpp's LlamaModel.permute on a [heads * d, cols] matrix.
std::vector<float> unpermute(const std::vector<float> &w, int64_t heads,
                             int64_t cols) {
  const int64_t rows = static_cast<int64_t>(w.size()) / cols;
  const int64_t d = rows / heads, half = d / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::memcpy(&out[(h * d + j * half + i) * cols],
                    &w[(h * d + 2 * i + j) * cols], cols * sizeof(float));
  return out;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Converts `hf_dir`, loads both, and checks spec and weights.
void expectRoundTrip(const std::string &hf_dir, const std::string &gguf,
                     const GgufConvertOptions &options = {}) {
  Status s = convert_hf_to_gguf(hf_dir, gguf, options);
  ASSERT_TRUE(s.ok()) << s.error();
  HYC_CKPT_LOAD(hf, hf_dir);
  HYC_CKPT_LOAD(g, gguf);
  EXPECT_EQ(g.format, "gguf");
  for (const std::string &w : g.warnings)
    expectContains(w, {"no embedded tokenizer"});

  ModelSpec want = hf.spec;
  const bool llama = want.arch == "llama";
  if (llama) {
    // The one field GGUF changes: permuted q/k rows, adjacent-pair rope.
    EXPECT_TRUE(want.rope.neox);
    EXPECT_FALSE(g.spec.rope.neox);
    want.rope.neox = false;
  }
  if (want.arch == "hunyuan_moe") {
    EXPECT_EQ(want.rope.scaling, "ntk_alpha");
    want.rope.theta =
        detail::f32_decimal(static_cast<float>(rope_base(want.rope)));
    want.rope.scaling = "none";
    want.rope.alpha = 1.0;
  }
  if (want.arch == "deepseek_v2") {
    // llama.cpp has one deepseek2 arch: hyc reads it with the V3 family,
    // the gating function (softmax) telling V2's routing apart.
    EXPECT_EQ(g.spec.arch, "deepseek_v3");
    want.arch = "deepseek_v3";
  }
  EXPECT_EQ(to_string(g.spec), to_string(want));

  const bool f16 = options.outtype == "f16";
  for (const WeightInfo &w : required_weights(hf.spec)) {
    std::vector<float> a = readWeight(hf, w.name);
    std::vector<float> b = readWeight(g, w.name);
    ASSERT_EQ(a.size(), b.size()) << w.name;
    if (llama && (endsWith(w.name, "q_proj.weight") ||
                  endsWith(w.name, "k_proj.weight")))
      b = unpermute(b,
                    endsWith(w.name, "q_proj.weight") ? hf.spec.num_heads
                                                      : hf.spec.num_kv_heads,
                    w.shape[1]);
    if (f16 && g.weights->find(w.name)->source_dtype == "F16")
      for (float &x : a)
        x = io::f16_to_f32(io::f32_to_f16(x));
    EXPECT_TRUE(sameBits(a, b)) << w.name << " differs after conversion";
  }
}

struct Case {
  const char *name;
  const char *golden; ///< shared/golden/<golden>, or nullptr
  const char *synth;  ///< synth arch when golden is nullptr
  bool split_kv_b = true;
  const char *outtype = "f32";
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class CheckpointGgufConvert : public ::testing::TestWithParam<Case> {};

TEST_P(CheckpointGgufConvert, SameSpecAndWeights) {
  const Case &c = GetParam();
  TempDir dir;
  std::string hf_dir;
  if (c.golden) {
    HYC_CKPT_REQUIRE_SHARED(path, std::string("golden/") + c.golden);
    hf_dir = path;
  } else {
    SynthOptions o;
    o.arch = c.synth;
    o.seed = 5;
    o.output_dir = hf_dir = dir.file("hf");
    Status s = synthesize(o);
    ASSERT_TRUE(s.ok()) << s.error();
  }
  GgufConvertOptions options;
  options.deepseek2_split_kv_b = c.split_kv_b;
  options.outtype = c.outtype;
  expectRoundTrip(hf_dir, dir.file("m.gguf"), options);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckpointGgufConvert,
    ::testing::Values(
        Case{"golden_llama", "llama-tiny", nullptr},
        Case{"golden_llama3", "llama3-tiny", nullptr},
        Case{"golden_qwen3moe", "qwen3moe-tiny", nullptr},
        Case{"golden_deepseekv3", "deepseekv3-tiny", nullptr},
        Case{"golden_deepseekv3_grouped", "deepseekv3-grouped-tiny", nullptr},
        Case{"golden_deepseekv3_kv_b", "deepseekv3-tiny", nullptr, false},
        Case{"synth_llama", nullptr, "llama"},
        Case{"synth_qwen2", nullptr, "qwen2"},
        Case{"synth_qwen3", nullptr, "qwen3"},
        Case{"synth_qwen3_moe", nullptr, "qwen3-moe"},
        Case{"synth_deepseek_v3", nullptr, "deepseek-v3"},
        Case{"synth_deepseek_v2", nullptr, "deepseek-v2"},
        Case{"synth_deepseek_v2_lite", nullptr, "deepseek-v2-lite"},
        Case{"synth_deepseek_v3_f16", nullptr, "deepseek-v3", true, "f16"},
        Case{"synth_hunyuan_moe", nullptr, "hunyuan-moe"},
        Case{"synth_hunyuan_moe_f16", nullptr, "hunyuan-moe", true, "f16"},
        Case{"synth_llama_f16", nullptr, "llama", true, "f16"}),
    [](const auto &info) { return std::string(info.param.name); });

//===----------------------------------------------------------------------===//
// The raw GGUF layout (what llama.cpp reads), checked without the loader.
//===----------------------------------------------------------------------===//

/// HF tensors straight from model.safetensors.
std::vector<float> hfTensor(const io::SafetensorsModel &m,
                            const std::string &name) {
  Expected<std::vector<float>> v = m.read_f32(name);
  EXPECT_TRUE(v.ok()) << v.error();
  return v ? *v : std::vector<float>();
}

std::vector<float> ggufTensor(const io::GgufFile &f, const std::string &name) {
  Expected<std::vector<float>> v = f.read_f32(name);
  EXPECT_TRUE(v.ok()) << v.error();
  return v ? *v : std::vector<float>();
}

/// A synthetic checkpoint of `arch` (its tiny preset, seed 0) in dir/hf.
void synthHf(TempDir &dir, const char *arch) {
  SynthOptions o;
  o.arch = arch;
  o.output_dir = dir.file("hf");
  Status s = synthesize(o);
  ASSERT_TRUE(s.ok()) << s.error();
}

#define HYC_OPEN_GGUF(var, path)                                               \
  Expected<io::GgufFile> var##_r = io::GgufFile::open(path);                   \
  ASSERT_TRUE(var##_r.ok()) << var##_r.error();                                \
  io::GgufFile &var = *var##_r;

#define HYC_OPEN_ST(var, path)                                                 \
  Expected<io::SafetensorsModel> var##_r = io::SafetensorsModel::open(path);   \
  ASSERT_TRUE(var##_r.ok()) << var##_r.error();                                \
  io::SafetensorsModel &var = *var##_r;

int64_t u(const io::GgufFile &f, const std::string &key) {
  Expected<int64_t> v = f.get_i64(key);
  EXPECT_TRUE(v.ok()) << v.error();
  return v ? *v : -1;
}

TEST(CheckpointGgufLayout, DeepseekV3AbsorbedMla) {
  HYC_CKPT_REQUIRE_SHARED(hf_dir, "golden/deepseekv3-tiny");
  TempDir dir;
  ASSERT_TRUE(convert_hf_to_gguf(hf_dir, dir.file("d.gguf")).ok());
  HYC_OPEN_GGUF(f, dir.file("d.gguf"));
  HYC_OPEN_ST(hf, hf_dir);
  EXPECT_EQ(*f.get_string("general.architecture"), "deepseek2");
  const std::string p = "deepseek2.";
  EXPECT_EQ(u(f, p + "block_count"), 3);
  EXPECT_EQ(u(f, p + "context_length"), 512);
  EXPECT_EQ(u(f, p + "embedding_length"), 128);
  EXPECT_EQ(u(f, p + "feed_forward_length"), 256);
  EXPECT_EQ(u(f, p + "attention.head_count"), 4);
  EXPECT_EQ(u(f, p + "attention.head_count_kv"), 1);
  EXPECT_EQ(u(f, p + "attention.key_length"), 32 + 16);     // kv_lora + rope
  EXPECT_EQ(u(f, p + "attention.value_length"), 32);        // kv_lora
  EXPECT_EQ(u(f, p + "attention.key_length_mla"), 32 + 16); // nope + rope
  EXPECT_EQ(u(f, p + "attention.value_length_mla"), 32);    // v
  EXPECT_EQ(u(f, p + "attention.q_lora_rank"), 64);
  EXPECT_EQ(u(f, p + "attention.kv_lora_rank"), 32);
  EXPECT_EQ(u(f, p + "rope.dimension_count"), 16);
  EXPECT_EQ(*f.get_f32(p + "rope.freq_base"), 10000.0f);
  EXPECT_EQ(*f.get_f32(p + "attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_EQ(u(f, p + "leading_dense_block_count"), 1);
  EXPECT_EQ(u(f, p + "expert_count"), 8);
  EXPECT_EQ(u(f, p + "expert_used_count"), 2);
  EXPECT_EQ(u(f, p + "expert_shared_count"), 1);
  EXPECT_EQ(u(f, p + "expert_feed_forward_length"), 64);
  EXPECT_EQ(u(f, p + "expert_gating_func"), 2) << "sigmoid";
  EXPECT_EQ(*f.get_f32(p + "expert_weights_scale"), 2.5f);
  EXPECT_TRUE(*f.get_bool(p + "expert_weights_norm"));
  EXPECT_EQ(u(f, p + "expert_group_count"), 1);
  EXPECT_EQ(u(f, p + "expert_group_used_count"), 1);
  EXPECT_EQ(u(f, "tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(u(f, "tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(f.find("general.file_type")->u, 0u);

  // Layer 0 is dense, layers 1-2 MoE.
  EXPECT_NE(f.find_tensor("blk.0.ffn_gate.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("blk.1.attn_kv_b.weight"), nullptr);
  for (const char *t :
       {"blk.1.attn_q_a.weight", "blk.1.attn_q_a_norm.weight",
        "blk.1.attn_q_b.weight", "blk.1.attn_kv_a_mqa.weight",
        "blk.1.attn_kv_a_norm.weight", "blk.1.attn_output.weight",
        "blk.1.ffn_gate_shexp.weight", "blk.1.ffn_up_shexp.weight",
        "blk.1.ffn_down_shexp.weight", "output.weight", "output_norm.weight"})
    EXPECT_NE(f.find_tensor(t), nullptr) << t;
  EXPECT_EQ(f.find_tensor("blk.1.ffn_gate_inp.weight")->shape,
            (std::vector<int64_t>{8, 128}));
  EXPECT_EQ(f.find_tensor("blk.1.exp_probs_b.bias")->shape,
            (std::vector<int64_t>{8}));
  EXPECT_EQ(ggufTensor(f, "blk.1.exp_probs_b.bias"),
            hfTensor(hf, "model.layers.1.mlp.gate.e_score_correction_bias"));
  EXPECT_EQ(f.find_tensor("blk.1.ffn_gate_exps.weight")->shape,
            (std::vector<int64_t>{8, 64, 128}));
  EXPECT_EQ(f.find_tensor("blk.1.ffn_down_exps.weight")->shape,
            (std::vector<int64_t>{8, 128, 64}));
  // Stacked experts: expert e is slice e.
  for (const char *proj : {"gate", "up", "down"}) {
    std::vector<float> stacked =
        ggufTensor(f, std::string("blk.2.ffn_") + proj + "_exps.weight");
    for (int e = 0; e < 8; ++e) {
      std::vector<float> one =
          hfTensor(hf, "model.layers.2.mlp.experts." + std::to_string(e) + "." +
                           proj + "_proj.weight");
      ASSERT_EQ(stacked.size(), one.size() * 8);
      EXPECT_TRUE(
          std::equal(one.begin(), one.end(), stacked.begin() + e * one.size()))
          << proj << " expert " << e;
    }
  }
  // kv_b_proj [H * (nope + v), kv_lora] split into attn_k_b [H, kv_lora,
  // nope] (transposed k rows) and attn_v_b [H, v, kv_lora].
  const int64_t H = 4, R = 32, nope = 32, vd = 32;
  EXPECT_EQ(f.find_tensor("blk.1.attn_k_b.weight")->shape,
            (std::vector<int64_t>{H, R, nope}));
  EXPECT_EQ(f.find_tensor("blk.1.attn_v_b.weight")->shape,
            (std::vector<int64_t>{H, vd, R}));
  std::vector<float> kv =
      hfTensor(hf, "model.layers.1.self_attn.kv_b_proj.weight");
  std::vector<float> kb = ggufTensor(f, "blk.1.attn_k_b.weight");
  std::vector<float> vb = ggufTensor(f, "blk.1.attn_v_b.weight");
  for (int64_t h = 0; h < H; ++h)
    for (int64_t j = 0; j < R; ++j) {
      for (int64_t i = 0; i < nope; ++i)
        ASSERT_EQ(kb[(h * R + j) * nope + i],
                  kv[(h * (nope + vd) + i) * R + j]);
      for (int64_t i = 0; i < vd; ++i)
        ASSERT_EQ(vb[(h * vd + i) * R + j],
                  kv[(h * (nope + vd) + nope + i) * R + j]);
    }
  // The rope rows are not permuted (llama.cpp's NORM rope on unpermuted
  // weights = HF rope_interleave).
  EXPECT_EQ(ggufTensor(f, "blk.1.attn_kv_a_mqa.weight"),
            hfTensor(hf, "model.layers.1.self_attn.kv_a_proj_with_mqa.weight"));
  EXPECT_EQ(ggufTensor(f, "blk.1.attn_q_b.weight"),
            hfTensor(hf, "model.layers.1.self_attn.q_b_proj.weight"));
}

TEST(CheckpointGgufLayout, DeepseekV3GroupedAndLegacyKvB) {
  HYC_CKPT_REQUIRE_SHARED(hf_dir, "golden/deepseekv3-grouped-tiny");
  TempDir dir;
  GgufConvertOptions legacy;
  legacy.deepseek2_split_kv_b = false;
  ASSERT_TRUE(convert_hf_to_gguf(hf_dir, dir.file("g.gguf"), legacy).ok());
  HYC_OPEN_GGUF(f, dir.file("g.gguf"));
  HYC_OPEN_ST(hf, hf_dir);
  const std::string p = "deepseek2.";
  EXPECT_EQ(u(f, p + "expert_group_count"), 4);
  EXPECT_EQ(u(f, p + "expert_group_used_count"), 2);
  EXPECT_EQ(u(f, p + "expert_shared_count"), 2);
  EXPECT_EQ(u(f, p + "attention.head_count_kv"), 4);
  EXPECT_EQ(u(f, p + "attention.key_length"), 48);
  EXPECT_EQ(u(f, p + "attention.value_length"), 32);
  EXPECT_FALSE(f.has(p + "attention.key_length_mla"));
  EXPECT_EQ(f.find_tensor("blk.1.attn_k_b.weight"), nullptr);
  EXPECT_EQ(ggufTensor(f, "blk.1.attn_kv_b.weight"),
            hfTensor(hf, "model.layers.1.self_attn.kv_b_proj.weight"));
  // Two shared experts form one block of 2 x 16 rows.
  EXPECT_EQ(f.find_tensor("blk.1.ffn_gate_shexp.weight")->shape,
            (std::vector<int64_t>{32, 128}));
}

TEST(CheckpointGgufLayout, LlamaQkPermutedLikeLlamaCpp) {
  HYC_CKPT_REQUIRE_SHARED(hf_dir, "golden/llama-tiny");
  TempDir dir;
  ASSERT_TRUE(convert_hf_to_gguf(hf_dir, dir.file("l.gguf")).ok());
  HYC_OPEN_GGUF(f, dir.file("l.gguf"));
  HYC_OPEN_ST(hf, hf_dir);
  EXPECT_EQ(*f.get_string("general.architecture"), "llama");
  EXPECT_EQ(u(f, "llama.vocab_size"), 512);
  EXPECT_EQ(u(f, "llama.rope.dimension_count"), 32);
  EXPECT_EQ(u(f, "llama.attention.head_count_kv"), 2);
  EXPECT_EQ(*f.get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(f.find_tensor("rope_freqs.weight"), nullptr);
  // 4 heads (q) / 2 kv heads (k) of 32 rows: GGUF row h*32 + 2i + j is HF
  // row h*32 + j*16 + i.
  for (const auto &[stem, heads] :
       {std::pair<std::string, int64_t>{"q", 4}, {"k", 2}}) {
    std::vector<float> g = ggufTensor(f, "blk.1.attn_" + stem + ".weight");
    std::vector<float> h =
        hfTensor(hf, "model.layers.1.self_attn." + stem + "_proj.weight");
    const int64_t cols = 128;
    for (int64_t head = 0; head < heads; ++head)
      for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 2; ++j)
          for (int64_t c = 0; c < cols; c += 17)
            ASSERT_EQ(g[(head * 32 + 2 * i + j) * cols + c],
                      h[(head * 32 + j * 16 + i) * cols + c])
                << stem << " head " << head << " i " << i << " j " << j;
  }
  EXPECT_EQ(ggufTensor(f, "blk.1.attn_v.weight"),
            hfTensor(hf, "model.layers.1.self_attn.v_proj.weight"));
}

TEST(CheckpointGgufLayout, Llama3RopeFreqs) {
  HYC_CKPT_REQUIRE_SHARED(hf_dir, "golden/llama3-tiny");
  TempDir dir;
  ASSERT_TRUE(convert_hf_to_gguf(hf_dir, dir.file("l3.gguf")).ok());
  HYC_OPEN_GGUF(f, dir.file("l3.gguf"));
  // shared/golden/README.md: with rope_scaling's original 64 the divisors are
  // [1, 1, 2.44, 8 x 13]; tied embeddings mean no output.weight.
  std::vector<float> freqs = ggufTensor(f, "rope_freqs.weight");
  ASSERT_EQ(freqs.size(), 16u);
  EXPECT_EQ(freqs[0], 1.0f);
  EXPECT_EQ(freqs[1], 1.0f);
  EXPECT_NEAR(freqs[2], 2.44f, 0.01f);
  for (size_t i = 3; i < 16; ++i)
    EXPECT_EQ(freqs[i], 8.0f) << i;
  EXPECT_EQ(u(f, "llama.rope.scaling.original_context_length"), 64);
  EXPECT_FALSE(f.has("llama.rope.scaling.type"));
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  HYC_CKPT_LOAD(g, dir.file("l3.gguf"));
  EXPECT_EQ(g.spec.rope.scaling, "llama3");
  EXPECT_EQ(g.spec.rope.factor, 8.0);
  EXPECT_EQ(g.spec.rope.original_max_position, 64);
  EXPECT_TRUE(g.spec.tie_word_embeddings);
}

TEST(CheckpointGgufLayout, Qwen3MoeStackedExpertsNoPermutation) {
  HYC_CKPT_REQUIRE_SHARED(hf_dir, "golden/qwen3moe-tiny");
  TempDir dir;
  ASSERT_TRUE(convert_hf_to_gguf(hf_dir, dir.file("q.gguf")).ok());
  HYC_OPEN_GGUF(f, dir.file("q.gguf"));
  HYC_OPEN_ST(hf, hf_dir);
  const std::string p = "qwen3moe.";
  EXPECT_EQ(*f.get_string("general.architecture"), "qwen3moe");
  EXPECT_EQ(u(f, p + "expert_count"), 8);
  EXPECT_EQ(u(f, p + "expert_used_count"), 2);
  EXPECT_EQ(u(f, p + "expert_feed_forward_length"), 64);
  EXPECT_EQ(u(f, p + "attention.key_length"), 32);
  EXPECT_EQ(*f.get_f32(p + "rope.freq_base"), 1e6f);
  EXPECT_FALSE(f.has(p + "expert_weights_norm")) << "true is llama.cpp's fixed "
                                                    "behaviour, not written";
  EXPECT_EQ(f.find_tensor("blk.0.attn_q_norm.weight")->shape,
            (std::vector<int64_t>{32}));
  EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_inp.weight")->shape,
            (std::vector<int64_t>{8, 128}));
  EXPECT_EQ(f.find_tensor("blk.0.ffn_up_exps.weight")->shape,
            (std::vector<int64_t>{8, 64, 128}));
  EXPECT_EQ(ggufTensor(f, "blk.0.attn_q.weight"),
            hfTensor(hf, "model.layers.0.self_attn.q_proj.weight"))
      << "NeoX rope: no permutation";
}

TEST(CheckpointGgufLayout, F16FollowsTheConverterRule) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "qwen3-moe"));
  GgufConvertOptions f16;
  f16.outtype = "f16";
  ASSERT_TRUE(convert_hf_to_gguf(dir.file("hf"), dir.file("h.gguf"), f16).ok());
  HYC_OPEN_GGUF(f, dir.file("h.gguf"));
  EXPECT_EQ(f.find("general.file_type")->u, 1u);
  for (const io::GgufTensorInfo &t : f.tensor_infos()) {
    const bool f32 = t.shape.size() < 2 ||
                     t.name.find("_norm.weight") != std::string::npos ||
                     t.name.find("ffn_gate_inp") != std::string::npos;
    EXPECT_EQ(t.ggml_type, f32 ? io::GGML_F32 : io::GGML_F16) << t.name;
  }
}

TEST(CheckpointGgufLayout, Bf16Q8_0AndQ4_0FollowTheConverterRule) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "llama"));
  HYC_OPEN_ST(hf, dir.file("hf/model.safetensors"));
  struct Out {
    const char *outtype;
    uint32_t type, file_type; // llama.cpp's ggml type and ftype ids
  };
  for (const Out o : {Out{"bf16", io::GGML_BF16, 32}, Out{"q8_0", io::GGML_Q8_0, 7},
                      Out{"q4_0", io::GGML_Q4_0, 2}}) {
    SCOPED_TRACE(o.outtype);
    const bool blocks = o.type != io::GGML_BF16;
    GgufConvertOptions opt;
    opt.outtype = o.outtype;
    const std::string path = dir.file(std::string(o.outtype) + ".gguf");
    ASSERT_TRUE(convert_hf_to_gguf(dir.file("hf"), path, opt).ok());
    HYC_OPEN_GGUF(f, path);
    EXPECT_EQ(f.find("general.file_type")->u, o.file_type);
    int typed = 0;
    for (const io::GgufTensorInfo &t : f.tensor_infos()) {
      const bool f32 = t.shape.size() < 2 || t.name.find("_norm.weight") != std::string::npos;
      const uint32_t want = f32 ? io::GGML_F32
                            : blocks && t.shape.back() % 32 != 0 ? io::GGML_F16
                                                                 : o.type;
      EXPECT_EQ(t.ggml_type, want) << t.name;
      typed += t.ggml_type == o.type;
    }
    EXPECT_GT(typed, 0);
    // Values of ffn_up (rows of hidden_size 64: whole blocks; ffn_down's
    // rows of 172 are the F16 fallback above). bf16: the round-to-nearest
    // bf16 of the weight. Q8_0: step d = max|x| / 127, stored in fp16 (within
    // 2^-11 of d): |x - q * d16| <= d / 2 + 127 * 2^-11 d. Q4_0: step d =
    // max|x| / 8, codes 0..15 for -8..7 steps, so the value of largest
    // magnitude lands exactly on an end and every other within d / 2, but a
    // value near +8 d (the opposite sign) clamps to 7 d: within d, plus 8 *
    // 2^-11 d from the fp16 step.
    EXPECT_EQ(f.find_tensor("blk.0.ffn_up.weight")->ggml_type, o.type);
    const std::vector<float> a = hfTensor(hf, "model.layers.0.mlp.up_proj.weight");
    const std::vector<float> b = ggufTensor(f, "blk.0.ffn_up.weight");
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size() % 32, 0u);
    for (size_t blk = 0; blk < a.size(); blk += 32) {
      float amax = 0.f;
      for (size_t i = blk; i < blk + 32; ++i)
        amax = std::max(amax, std::fabs(a[i]));
      for (size_t i = blk; i < blk + 32; ++i) {
        if (!blocks) {
          ASSERT_EQ(b[i], io::bf16_to_f32(io::f32_to_bf16(a[i]))) << i;
          continue;
        }
        const bool q4 = o.type == io::GGML_Q4_0;
        const float d = amax / (q4 ? 8.f : 127.f);
        const bool near_end = q4 && std::fabs(a[i]) > 7.5f * d && std::fabs(a[i]) < amax;
        const float bound = d * ((near_end ? 1.f : 0.5f) + (q4 ? 8.f : 127.f) / 2048.f) + 1e-7f;
        ASSERT_LE(std::fabs(a[i] - b[i]), bound) << "element " << i << " of block at " << blk;
        if (std::fabs(a[i]) == amax) // the block's end value: the step is built on it
          ASSERT_NEAR(b[i], a[i], amax / 1024.f) << "element " << i;
      }
    }
  }
}

TEST(CheckpointGgufLayout, Q8_0RefusesAValueItCannotHoldNamingTheTensor) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "llama"));
  // The first element of one weight set to NaN, in place in the
  // safetensors data (header: 8-byte length, then JSON with offsets).
  const std::string st = dir.file("hf/model.safetensors");
  std::fstream f(st, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t header = 0;
  f.read(reinterpret_cast<char *>(&header), 8);
  std::string text(header, '\0');
  f.read(text.data(), static_cast<std::streamsize>(header));
  const Json j = Json::parse(text);
  const Json &t = j.at("model.layers.0.mlp.up_proj.weight"); // rows of whole blocks
  const int64_t at = 8 + int64_t(header) + t.at("data_offsets")[0].get<int64_t>();
  f.seekp(at);
  if (t.at("dtype") == "F32") {
    const float nan = std::nanf("");
    f.write(reinterpret_cast<const char *>(&nan), 4);
  } else {
    ASSERT_TRUE(t.at("dtype") == "BF16" || t.at("dtype") == "F16") << t.at("dtype");
    const uint16_t nan = 0x7FFF; // a NaN in bf16 and in f16
    f.write(reinterpret_cast<const char *>(&nan), 2);
  }
  f.close();
  GgufConvertOptions q8;
  q8.outtype = "q8_0";
  Status s = convert_hf_to_gguf(dir.file("hf"), dir.file("q.gguf"), q8);
  ASSERT_FALSE(s.ok());
  expectContains(s.error(), {"blk.0.ffn_up.weight", "element 0", "nan", "Q8_0 holds finite"});
  // f16 carries the NaN as it is (the format holds it).
  GgufConvertOptions f16;
  f16.outtype = "f16";
  EXPECT_TRUE(convert_hf_to_gguf(dir.file("hf"), dir.file("h.gguf"), f16).ok());
}

TEST(CheckpointGgufLayout, TheLlama2cTokenizerBecomesASentencePieceVocabulary) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "llama"));
  std::vector<std::string> warnings;
  ASSERT_TRUE(convert_hf_to_gguf(dir.file("hf"), dir.file("t.gguf"), {}, &warnings).ok());
  Expected<Checkpoint> hf = load_checkpoint(dir.file("hf"));
  ASSERT_TRUE(hf.ok()) << hf.error();
  ASSERT_TRUE(hf->tokenizer && hf->tokenizer->kind == "llama2c");
  const TokenizerSpec &want = *hf->tokenizer;
  HYC_OPEN_GGUF(f, dir.file("t.gguf"));
  EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "llama");
  const std::vector<std::string> tokens = *f.get_string_array("tokenizer.ggml.tokens");
  const std::vector<int32_t> types = *f.get_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), want.tokens.size());
  ASSERT_EQ(types.size(), want.tokens.size());
  EXPECT_EQ(*f.get_f32_array("tokenizer.ggml.scores"), want.scores);
  // llama.cpp's types: unknown 2, control 3, byte 6, normal 1.
  EXPECT_EQ(types[0], 2);
  EXPECT_EQ(types[1], 3);
  EXPECT_EQ(types[2], 3);
  EXPECT_EQ(tokens[3 + 0x0A], "<0x0A>");
  EXPECT_EQ(types[3 + 0x0A], 6);
  int spaced = 0;
  for (size_t i = 259; i < tokens.size(); ++i) {
    std::string expect;
    for (char c : want.tokens[i])
      expect += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c); // U+2581
    ASSERT_EQ(tokens[i], expect) << i;
    spaced += want.tokens[i].find(' ') != std::string::npos;
    if (want.tokens[i].rfind("<extra_", 0) != 0)
      EXPECT_EQ(types[i], 1) << i;
  }
  EXPECT_GT(spaced, 0);
  EXPECT_EQ(u(f, "tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_EQ(u(f, "tokenizer.ggml.bos_token_id"), 1);
  // hyc reads the file's vocabulary back as the same pieces.
  Expected<Checkpoint> g = load_checkpoint(dir.file("t.gguf"));
  ASSERT_TRUE(g.ok()) << g.error();
  ASSERT_TRUE(g->tokenizer.has_value());
  EXPECT_EQ(g->tokenizer->tokens, tokens);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

TEST(CheckpointGgufLayout, ATokenizerJsonIsNotWrittenAndTheWarningSaysSo) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "llama"));
  std::filesystem::remove(dir.file("hf/tokenizer.bin"));
  std::vector<std::string> warnings;
  ASSERT_TRUE(convert_hf_to_gguf(dir.file("hf"), dir.file("t.gguf"), {}, &warnings).ok());
  HYC_OPEN_GGUF(f, dir.file("t.gguf"));
  EXPECT_FALSE(f.has("tokenizer.ggml.model"));
  ASSERT_FALSE(warnings.empty());
  expectContains(warnings.back(), {"no tokenizer", "llama.cpp will not load"});
}

//===----------------------------------------------------------------------===//
// Variants and errors.
//===----------------------------------------------------------------------===//

TEST(CheckpointGgufConvertVariants, Qwen3MoeWithoutRenormalization) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "qwen3-moe"));
  Json c = Json::parse(std::ifstream(dir.file("hf/config.json")));
  c["norm_topk_prob"] = false;
  writeText(dir.file("hf/config.json"), c.dump());
  ASSERT_TRUE(convert_hf_to_gguf(dir.file("hf"), dir.file("q.gguf")).ok());
  HYC_CKPT_LOAD(g, dir.file("q.gguf"));
  ASSERT_TRUE(g.spec.moe.has_value());
  EXPECT_FALSE(g.spec.moe->renormalize);
  bool warned = false;
  for (const std::string &w : g.warnings)
    warned |= w.find("expert_weights_norm = false") != std::string::npos;
  EXPECT_TRUE(warned);
}

/// Synthesizes `arch`, applies `patch` to its config.json and checks the
/// GGUF round trip.
void expectPatchedRoundTrip(const std::string &arch,
                            const std::function<void(Json &)> &patch) {
  TempDir dir;
  SynthOptions o;
  o.arch = arch;
  o.seed = 3;
  o.output_dir = dir.file("hf");
  ASSERT_TRUE(synthesize(o).ok());
  Json c = Json::parse(std::ifstream(dir.file("hf/config.json")));
  patch(c);
  writeText(dir.file("hf/config.json"), c.dump());
  expectRoundTrip(dir.file("hf"), dir.file("m.gguf"));
}

TEST(CheckpointGgufConvertVariants, RopeScaling) {
  // DeepSeek yarn: mscale_all_dim travels as yarn_log_multiplier.
  expectPatchedRoundTrip("deepseek-v3", [](Json &c) {
    c["rope_scaling"] = {{"type", "yarn"},
                         {"factor", 4.0},
                         {"original_max_position_embeddings", 64},
                         {"beta_fast", 32.0},
                         {"beta_slow", 1.0},
                         {"mscale", 0.707},
                         {"mscale_all_dim", 0.707}};
  });
  expectPatchedRoundTrip("qwen3", [](Json &c) {
    c["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", 4.0},
                         {"original_max_position_embeddings", 128},
                         {"beta_fast", 16.0}};
  });
  expectPatchedRoundTrip("llama", [](Json &c) {
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  });
  expectPatchedRoundTrip("qwen2", [](Json &c) {
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 0.5}};
  });
}

TEST(CheckpointGgufConvertVariants, DeepseekWithoutQLoraAndTied) {
  // q_lora_rank null: attn_q instead of attn_q_a / attn_q_a_norm / attn_q_b.
  TempDir dir;
  Expected<ModelSpec> spec = synth_spec("deepseek-v3", "tiny");
  ASSERT_TRUE(spec.ok());
  spec->mla->q_lora_rank = 0;
  spec->tie_word_embeddings = true;
  std::vector<io::SafetensorsEntry> entries = entriesFor(*spec);
  for (io::SafetensorsEntry &e : entries)
    for (size_t i = 0; i < e.bytes.size() / 4; ++i) {
      const float v = 0.001f * static_cast<float>((i * 7919) % 1000) - 0.5f;
      std::memcpy(&e.bytes[4 * i], &v, 4);
    }
  fs::create_directories(dir.file("hf"));
  ASSERT_TRUE(
      io::write_safetensors(dir.file("hf/model.safetensors"), entries).ok());
  SynthOptions o; // its config.json, edited
  o.arch = "deepseek-v3";
  o.output_dir = dir.file("ref");
  ASSERT_TRUE(synthesize(o).ok());
  Json c = Json::parse(std::ifstream(dir.file("ref/config.json")));
  c["q_lora_rank"] = nullptr;
  c["tie_word_embeddings"] = true;
  writeText(dir.file("hf/config.json"), c.dump());
  expectRoundTrip(dir.file("hf"), dir.file("m.gguf"));
  Expected<io::GgufFile> f = io::GgufFile::open(dir.file("m.gguf"));
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_NE(f->find_tensor("blk.0.attn_q.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q_a.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
  EXPECT_FALSE(f->has("deepseek2.attention.q_lora_rank"));
}

TEST(CheckpointGgufConvertVariants, FromFp8Checkpoint) {
  TempDir dir;
  SynthOptions o;
  o.arch = "deepseek-v3";
  o.fp8 = true;
  o.output_dir = dir.file("fp8");
  ASSERT_TRUE(synthesize(o).ok());
  expectRoundTrip(dir.file("fp8"), dir.file("d.gguf"));
}

TEST(CheckpointGgufConvertVariants, Errors) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "deepseek-v3"));
  GgufConvertOptions bad;
  bad.outtype = "q4";
  Status s = convert_hf_to_gguf(dir.file("hf"), dir.file("x.gguf"), bad);
  ASSERT_FALSE(s.ok());
  expectContains(s.error(), {"outtype 'q4'", "f32, f16, bf16, q8_0, q4_0"});

  Json c = Json::parse(std::ifstream(dir.file("hf/config.json")));
  c["rope_interleave"] = false;
  writeText(dir.file("hf/config.json"), c.dump());
  s = convert_hf_to_gguf(dir.file("hf"), dir.file("x.gguf"));
  ASSERT_FALSE(s.ok());
  expectContains(s.error(), {"rope_interleave = false", "'deepseek2'"});
  EXPECT_FALSE(fs::exists(dir.file("x.gguf")));

  s = convert_hf_to_gguf(dir.file("nowhere"), dir.file("x.gguf"));
  ASSERT_FALSE(s.ok());
  expectContains(s.error(), {"nowhere"});
}

/// A copy of `src` without the tensors in `drop`, with `set_arch` as
/// general.architecture when non-empty and the uint32 keys of `set_u32`
/// replaced (metadata copied value by value; the tokenizer's vocabulary is
/// left out, these copies test the model's structure).
void rewriteGguf(const std::string &src, const std::string &dst,
                 const std::vector<std::string> &drop,
                 const std::string &set_arch = "",
                 const std::map<std::string, uint32_t> &set_u32 = {}) {
  Expected<io::GgufFile> f = io::GgufFile::open(src);
  ASSERT_TRUE(f.ok()) << f.error();
  io::GgufWriter w;
  for (const auto &[key, v] : f->metadata()) {
    if (key.rfind("tokenizer.ggml.", 0) == 0 && v.type != io::GgufType::UINT32)
      continue;
    io::GgufWriteValue out = io::GgufWriteValue::u8(0);
    switch (v.type) {
    case io::GgufType::STRING:
      out = io::GgufWriteValue::string(v.str);
      break;
    case io::GgufType::UINT32:
      out = io::GgufWriteValue::u32(static_cast<uint32_t>(v.u));
      break;
    case io::GgufType::FLOAT32:
      out = io::GgufWriteValue::f32(static_cast<float>(v.f));
      break;
    case io::GgufType::BOOL:
      out = io::GgufWriteValue::boolean(v.u != 0);
      break;
    default:
      FAIL() << key << ": type " << v.type_string() << " not copied here";
    }
    if (key == "general.architecture" && !set_arch.empty())
      out = io::GgufWriteValue::string(set_arch);
    if (auto it = set_u32.find(key); it != set_u32.end())
      out = io::GgufWriteValue::u32(it->second);
    ASSERT_TRUE(w.set(key, out).ok());
  }
  for (const io::GgufTensorInfo &t : f->tensor_infos()) {
    if (std::find(drop.begin(), drop.end(), t.name) != drop.end())
      continue;
    Expected<io::TensorView> v = f->tensor(t.name);
    ASSERT_TRUE(v.ok()) << v.error();
    ASSERT_TRUE(
        w.add_tensor_bytes(t.name, t.ggml_type, t.shape,
                           std::vector<uint8_t>(v->data, v->data + v->nbytes))
            .ok());
  }
  Status s = w.write(dst);
  ASSERT_TRUE(s.ok()) << s.error();
}

TEST(CheckpointGgufConvertVariants, MalformedGgufs) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(synthHf(dir, "deepseek-v3"));
  ASSERT_TRUE(convert_hf_to_gguf(dir.file("hf"), dir.file("d.gguf")).ok());
  {
    rewriteGguf(dir.file("d.gguf"), dir.file("copy.gguf"), {});
    HYC_CKPT_LOAD(ckpt, dir.file("copy.gguf")); // the copy itself is fine
  }
  {
    // Softmax gating (expert_gating_func 1) is DeepSeek-V2: its groups are
    // ranked by their best expert (group_limited_greedy), not by the sum of
    // their best two as V3's sigmoid routing does.
    HYC_CKPT_LOAD(v3, dir.file("d.gguf"));
    ASSERT_TRUE(v3.spec.moe.has_value());
    EXPECT_EQ(v3.spec.moe->scoring, "sigmoid");
    EXPECT_EQ(v3.spec.moe->group_score, "top2_sum");
    rewriteGguf(dir.file("d.gguf"), dir.file("v2.gguf"), {}, "",
                {{"deepseek2.expert_gating_func", 1}});
    HYC_CKPT_LOAD(v2, dir.file("v2.gguf"));
    ASSERT_TRUE(v2.spec.moe.has_value());
    EXPECT_EQ(v2.spec.moe->scoring, "softmax");
    EXPECT_EQ(v2.spec.moe->group_score, "max");
  }
  {
    rewriteGguf(dir.file("d.gguf"), dir.file("unknown.gguf"), {}, "gpt-j");
    Expected<Checkpoint> r = load_checkpoint(dir.file("unknown.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(),
                   {"unknown.gguf", "'gpt-j'", "general.architecture",
                    "qwen3moe", "deepseek2"});
  }
  {
    rewriteGguf(dir.file("d.gguf"), dir.file("no_vb.gguf"),
                {"blk.2.attn_v_b.weight"});
    Expected<Checkpoint> r = load_checkpoint(dir.file("no_vb.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(),
                   {"no_vb.gguf", "'blk.2.attn_v_b.weight'", "missing"});
  }
  {
    rewriteGguf(dir.file("d.gguf"), dir.file("no_kb.gguf"),
                {"blk.0.attn_k_b.weight"});
    Expected<Checkpoint> r = load_checkpoint(dir.file("no_kb.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"'blk.0.attn_k_b.weight'", "missing"});
  }
  {
    rewriteGguf(dir.file("d.gguf"), dir.file("no_exps.gguf"),
                {"blk.1.ffn_up_exps.weight"});
    Expected<Checkpoint> r = load_checkpoint(dir.file("no_exps.gguf"));
    ASSERT_FALSE(r.ok());
    expectContains(r.error(), {"model.layers.1.mlp.experts.0.up_proj.weight"});
  }
}

} // namespace
} // namespace hyc::models::test
