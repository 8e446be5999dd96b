// GGUFs quantized by llama.cpp's llama-quantize (../shared/golden-gguf:
// every common ggml block type, the mixed-type Q*_K_M files, a dense llama
// and a qwen3moe with stacked experts) compiled with `--quant f32
// --kv-cache f32` match the numpy reference over the exactly dequantized
// weights: all three sequences whole, the 33-token one as 20 prefill + 13
// decodes, every logit within 1e-4 and the same argmax at every position,
// and the 16 greedy tokens. Each file compiles once for the reference
// target and once for the fast kernels of the default target. The
// quantized stories260K files match their numpy perplexities.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/cli/npy.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <map>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

// The weights are exact, so only the order of fp32 additions separates the
// artifact from the float64 reference (the golden README: a few 1e-6 for
// llama.cpp on the same dequantized weights). A misread block field (nibble
// order, an offset, a min's sign, a scale's byte) moves logits by ~1 (the
// quantization effect of even Q8_0 vs F32 is 0.1).
constexpr float kTolerance = 1e-4f;

struct QuantFile {
  std::string model; ///< golden-gguf folder
  std::string type;  ///< llama-quantize type name: <type>.gguf
  std::string target;
};

std::string fileName(const ::testing::TestParamInfo<QuantFile> &info) {
  std::string n = info.param.model + "_" + info.param.type + "_" + info.param.target;
  for (char &c : n)
    if (c == '-')
      c = '_';
  return n;
}

void PrintTo(const QuantFile &f, std::ostream *os) {
  *os << f.model << "/" << f.type << ".gguf (" << f.target << ")";
}

std::vector<QuantFile> quantFiles() {
  const std::vector<std::string> llama = {"Q8_0", "Q4_0",   "Q4_1",   "Q5_0",   "Q5_1",
                                          "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K",
                                          "IQ4_NL", "IQ4_XS"};
  const std::vector<std::string> moe = {"Q8_0", "Q4_0", "Q2_K", "Q4_K_M", "Q6_K", "IQ4_NL",
                                        "IQ4_XS"};
  std::vector<QuantFile> out;
  for (const char *target : {"reference", "portable"}) {
    for (const std::string &t : llama)
      out.push_back({"llama-quant-tiny", t, target});
    for (const std::string &t : moe)
      out.push_back({"qwen3moe-quant-tiny", t, target});
  }
  return out;
}

class QuantGguf : public ::testing::TestWithParam<QuantFile> {
protected:
  void SetUp() override {
    const QuantFile &f = GetParam();
    dir = sharedDir() + "/golden-gguf/" + f.model;
    struct stat st;
    if (stat(dir.c_str(), &st) != 0)
      GTEST_SKIP() << dir << " is absent: quantized GGUF test skipped";
    inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
    model = loadModel(compileOnce(dir + "/" + f.type + ".gguf",
                                  {"--target", f.target, "--quant", "f32", "--kv-cache", "f32",
                                   "--max-seq-len", "96", "--max-batch-tokens", "64"}));
    ASSERT_TRUE(model.engine);
  }

  std::vector<int32_t> sequence(const std::string &key) {
    return inputs["sequences"][key].get<std::vector<int32_t>>();
  }

  void expectMatches(const std::vector<float> &got, const std::string &length,
                     const std::string &what) {
    const QuantFile &f = GetParam();
    hyrt::NpyArray want;
    hyrt::Status st = hyrt::read_npy_f32(dir + "/" + f.type + ".logits_" + length + ".npy", &want);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(got.size(), want.data.size()) << what;
    const float diff = maxAbsDiff(got, want.data);
    std::printf("%s %s (%s) %s: max abs diff %.3g\n", f.model.c_str(), f.type.c_str(),
                f.target.c_str(), what.c_str(), diff);
    EXPECT_LE(diff, kTolerance) << what;
    const int64_t vocab = want.shape.back();
    for (size_t r = 0; r < got.size() / size_t(vocab); ++r)
      EXPECT_EQ(argmaxRow(&got[r * vocab], vocab), argmaxRow(&want.data[r * vocab], vocab))
          << what << ", row " << r;
  }

  std::string dir;
  nlohmann::json inputs;
  LoadedModel model;
};

// One test per file, so that a CTest run (one process per test) compiles
// each file once.
TEST_P(QuantGguf, MatchesTheNumpyReference) {
  for (const char *n : {"7", "33", "64"})
    expectMatches(wholeSequenceLogits(*model.engine, sequence(n)), n,
                  std::string("logits_") + n);

  const nlohmann::json &inc = inputs["incremental"];
  const std::string seq = inc["sequence"].get<std::string>();
  const size_t prefill = inc["prefill_tokens"].get<size_t>();
  expectMatches(incrementalLogits(*model.engine, sequence(seq), prefill), seq,
                "incremental " + seq + " (" + std::to_string(prefill) + " + decodes)");

  const nlohmann::json greedy = nlohmann::json::parse(readFile(dir + "/greedy16.json"));
  hyrt::GenerateOptions opts;
  opts.max_new_tokens = greedy["n_new"].get<int64_t>();
  opts.sampler.temperature = 0;
  hyrt::GenerateResult result;
  hyrt::Status st = model.engine->generate(greedy["prompt"].get<std::vector<int32_t>>(), opts,
                                           nullptr, &result);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(result.tokens,
            greedy["files"][GetParam().type]["tokens"].get<std::vector<int32_t>>())
      << "greedy16";
}

INSTANTIATE_TEST_SUITE_P(GoldenGguf, QuantGguf, ::testing::ValuesIn(quantFiles()), fileName);

// The trained stories260K quantized by llama-quantize (block-32 types;
// ffn_down stays F32, output is Q8_0): `hyc perplexity` over 200
// TinyStories paragraphs equals the numpy perplexity over the exactly
// dequantized weights (ppl.json). Both means are printed to 6 decimals
// (1e-6 apart from rounding alone) and fp32 vs float64 arithmetic moves a
// token's NLL by ~1e-6, averaging out over 19,395 tokens: 5e-6 leaves that
// margin and is 400x below the closest two types (Q4_0 vs IQ4_NL, 0.002), so
// a file read as another type, or a misread field, fails.
class StoriesQuantPerplexity : public ::testing::TestWithParam<std::string> {};

TEST_P(StoriesQuantPerplexity, MatchesTheExactDequantization) {
  const std::string dir = sharedDir() + "/golden-gguf/stories260K";
  const std::string text = sharedDir() + "/models/tinystories-valid-text/tinystories_val.txt";
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || stat(text.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " or " << text << " is absent";
  const nlohmann::json ppl = nlohmann::json::parse(readFile(dir + "/ppl.json"));
  const double want = ppl["files"][GetParam()]["mean_nll"].get<double>();
  const double got = meanNll(compileOnce(dir + "/" + GetParam() + ".gguf",
                                         {"--target", "portable", "--quant", "f32", "--kv-cache",
                                          "f32", "--max-seq-len", "512", "--max-batch-tokens",
                                          "64"}));
  std::printf("stories260K %s: mean NLL %.6f, numpy %.6f\n", GetParam().c_str(), got, want);
  EXPECT_NEAR(got, want, 5e-6);
}

INSTANTIATE_TEST_SUITE_P(GoldenGguf, StoriesQuantPerplexity,
                         ::testing::Values("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL"),
                         caseName);

} // namespace
} // namespace hyc::e2e
