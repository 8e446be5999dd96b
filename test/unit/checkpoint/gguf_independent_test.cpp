// The GGUF loader on files it did not write: each Hugging Face case
// converted by test/common/llama_cpp_gguf.cpp (a GGUF writer made from the
// format specification and llama.cpp's converter conventions, sharing no
// code with models/io/gguf_writer.cpp or convert_gguf.cpp) loads with the
// HF spec and bit-identical weights, for every GGUF architecture the loader
// takes (llama, qwen2, qwen3, qwen3moe, deepseek2). The compiled logits are
// checked against the golden ones in test/e2e/gguf_independent_test.cpp.
#include "checkpoint_test_util.h"

#include "models/checkpoint/synth.h"
#include "test/common/gguf_spec_writer.h"
#include "test/common/llama_cpp_gguf.h"

namespace hyc::models::test {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// HF rotate-half rows [heads * d, cols] in llama.cpp's adjacent-pair order.
std::vector<float> permuteRows(const std::vector<float> &w, int64_t heads,
                               int64_t cols) {
  const int64_t d = int64_t(w.size()) / cols / heads, half = d / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::copy_n(&w[size_t((h * d + j * half + i) * cols)], cols,
                    &out[size_t((h * d + 2 * i + j) * cols)]);
  return out;
}

struct Case {
  const char *name;
  const char *golden; ///< shared/golden/<golden>, or nullptr
  const char *synth;  ///< synth arch when golden is nullptr
  const char *gguf_arch;
  uint32_t alignment = 32;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class CheckpointGgufIndependent : public ::testing::TestWithParam<Case> {};

TEST_P(CheckpointGgufIndependent, SameSpecAndWeightsAsHuggingFace) {
  const Case &c = GetParam();
  TempDir dir;
  std::string hf_dir;
  if (c.golden) {
    HYC_CKPT_REQUIRE_SHARED(path, std::string("golden/") + c.golden);
    hf_dir = path;
  } else {
    SynthOptions o;
    o.arch = c.synth;
    o.seed = 11;
    o.output_dir = hf_dir = dir.file("hf");
    Status s = synthesize(o);
    ASSERT_TRUE(s.ok()) << s.error();
  }
  const std::string gguf = dir.file("independent.gguf");
  const std::string written = ::hyc::test::write_llama_cpp_gguf(hf_dir, gguf, c.alignment);
  ASSERT_EQ(written, "");

  HYC_CKPT_LOAD(hf, hf_dir);
  HYC_CKPT_LOAD(g, gguf);
  EXPECT_EQ(g.format, "gguf");
  for (const std::string &w : g.warnings)
    EXPECT_NE(w.find("no embedded tokenizer"), std::string::npos) << w;

  // Config values, spelled out for the fields every family has.
  EXPECT_EQ(g.spec.arch, hf.spec.arch);
  EXPECT_EQ(g.spec.vocab_size, hf.spec.vocab_size);
  EXPECT_EQ(g.spec.hidden_size, hf.spec.hidden_size);
  EXPECT_EQ(g.spec.num_layers, hf.spec.num_layers);
  EXPECT_EQ(g.spec.num_heads, hf.spec.num_heads);
  EXPECT_EQ(g.spec.head_dim, hf.spec.head_dim);
  EXPECT_EQ(g.spec.tie_word_embeddings, hf.spec.tie_word_embeddings);
  EXPECT_EQ(g.spec.bos_token_id, 1);
  EXPECT_EQ(g.spec.eos_token_id, 2);
  // And the whole spec: the only field the GGUF form changes is llama's rope
  // pairing (q/k rows stored permuted for adjacent pairs).
  ModelSpec want = hf.spec;
  const bool llama = want.arch == "llama";
  if (llama) {
    EXPECT_TRUE(want.rope.neox);
    EXPECT_FALSE(g.spec.rope.neox);
    want.rope.neox = false;
  }
  EXPECT_EQ(to_string(g.spec), to_string(want));

  // Every weight, shape and bits.
  for (const WeightInfo &w : required_weights(hf.spec)) {
    const WeightInfo *gi = g.weights->find(w.name);
    ASSERT_NE(gi, nullptr) << w.name << " missing from the GGUF checkpoint";
    EXPECT_EQ(gi->shape, w.shape) << w.name;
    std::vector<float> a = readWeight(hf, w.name);
    std::vector<float> b = readWeight(g, w.name);
    ASSERT_EQ(a.size(), b.size()) << w.name;
    if (llama && endsWith(w.name, "q_proj.weight"))
      a = permuteRows(a, hf.spec.num_heads, w.shape[1]);
    if (llama && endsWith(w.name, "k_proj.weight"))
      a = permuteRows(a, hf.spec.num_kv_heads, w.shape[1]);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << w.name << " differs";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckpointGgufIndependent,
    ::testing::Values(
        Case{"golden_llama", "llama-tiny", nullptr, "llama"},
        Case{"golden_llama3", "llama3-tiny", nullptr, "llama"},
        Case{"golden_qwen3moe", "qwen3moe-tiny", nullptr, "qwen3moe"},
        Case{"golden_deepseekv3", "deepseekv3-tiny", nullptr, "deepseek2"},
        Case{"golden_deepseekv3_grouped", "deepseekv3-grouped-tiny", nullptr,
             "deepseek2"},
        Case{"synth_llama_align64", nullptr, "llama", "llama", 64},
        Case{"synth_qwen2", nullptr, "qwen2", "qwen2"},
        Case{"synth_qwen3", nullptr, "qwen3", "qwen3"},
        Case{"synth_qwen3_moe", nullptr, "qwen3-moe", "qwen3moe"},
        Case{"synth_deepseek_v3", nullptr, "deepseek-v3", "deepseek2"}),
    [](const auto &info) { return std::string(info.param.name); });

/// The writer itself, byte by byte against the specification, so that a
/// loader/writer agreement above cannot come from the writer copying the
/// loader's reading.
TEST(GgufSpecWriter, LayoutFollowsTheSpecification) {
  ::hyc::test::GgufSpecWriter w;
  w.u32("a", 7);
  w.tensor("t", {2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<uint8_t> b = w.bytes();
  auto u64at = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, &b[at], 8);
    return v;
  };
  ASSERT_EQ(std::string(b.begin(), b.begin() + 4), "GGUF");
  EXPECT_EQ(b[4], 3);          // version 3
  EXPECT_EQ(u64at(8), 1u);     // tensor count
  EXPECT_EQ(u64at(16), 1u);    // kv count
  EXPECT_EQ(u64at(24), 1u);    // key length
  EXPECT_EQ(b[32], 'a');
  EXPECT_EQ(b[33], 4);         // type uint32
  EXPECT_EQ(b[37], 7);         // value
  EXPECT_EQ(u64at(41), 1u);    // tensor name length
  EXPECT_EQ(b[49], 't');
  EXPECT_EQ(b[50], 2);         // n_dims
  EXPECT_EQ(u64at(54), 3u);    // ne[0]: the innermost (row-major last) dim
  EXPECT_EQ(u64at(62), 2u);    // ne[1]
  EXPECT_EQ(b[70], 0);         // GGML_TYPE_F32
  EXPECT_EQ(u64at(74), 0u);    // offset in the data section
  ASSERT_EQ(b.size(), 96u + 32u); // header padded to 96, data to 32
  float first;
  std::memcpy(&first, &b[96], 4);
  EXPECT_EQ(first, 1.0f);
}

} // namespace
} // namespace hyc::models::test
