// Golden logits: tiny Hugging Face checkpoints of each target family with
// logits from an independent implementation (../shared/golden, llama.cpp F32).
// Each case compiles from its HF directory; whole-sequence logits, the
// 20 + 13 incremental run and the greedy continuation must match.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/cli/npy.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

// fp32 paths differ from the independent F32 implementation only in the
// order of fp32 additions. Each logit is a chain of dot products over at most
// a few hundred terms; with unit-scale activations the rounding error of a
// reordered sum grows like sqrt(K) * 2^-24 * sum|terms| ~ 1e-6 per dot product
// and stays below 1e-5 through two layers (measured: <= 6e-6 for every case).
// 1e-4 keeps a 10x margin over that and is small enough to catch semantic
// slips: a 1e-4 relative change of rope_theta moves the logits by more
// (RopeThetaSlipIsCaught below).
constexpr float kTolerance = 1e-4f;

class GoldenCase : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    dir = sharedDir() + "/golden/" + GetParam();
    struct stat st;
    if (stat(dir.c_str(), &st) != 0)
      GTEST_SKIP() << dir << " is absent: golden test skipped";
    inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
    model = loadModel(compileOnce(dir, {"--max-seq-len", "128",
                                        "--max-batch-tokens", "64"}));
    ASSERT_TRUE(model.engine);
  }

  std::vector<int32_t> sequence(const std::string &key) {
    return inputs["sequences"][key].get<std::vector<int32_t>>();
  }

  hyrt::NpyArray npy(const std::string &name) {
    hyrt::NpyArray a;
    hyrt::Status st = hyrt::read_npy_f32(dir + "/" + name, &a);
    EXPECT_TRUE(st.ok()) << st.message();
    return a;
  }

  void expectMatches(const std::vector<float> &got, const hyrt::NpyArray &want,
                     const std::string &what) {
    ASSERT_EQ(got.size(), want.data.size()) << what;
    float diff = maxAbsDiff(got, want.data);
    std::printf("%s %s: max abs diff %.3g\n", GetParam().c_str(), what.c_str(), diff);
    EXPECT_LE(diff, kTolerance) << what;
    int64_t vocab = want.shape.back();
    for (size_t r = 0; r < got.size() / vocab; ++r)
      EXPECT_EQ(argmaxRow(got.data() + r * vocab, vocab),
                argmaxRow(want.data.data() + r * vocab, vocab))
          << what << ", row " << r;
  }

  std::string dir;
  nlohmann::json inputs;
  LoadedModel model;
};

TEST_P(GoldenCase, WholeSequenceLogits) {
  for (const char *n : {"7", "33", "64"})
    expectMatches(wholeSequenceLogits(*model.engine, sequence(n)),
                  npy(std::string("logits_") + n + ".npy"),
                  std::string("logits_") + n);
}

TEST_P(GoldenCase, IncrementalLogits) {
  auto inc = inputs["incremental"];
  std::vector<int32_t> tokens = sequence(inc["sequence"].get<std::string>());
  size_t prefill = inc["prefill_tokens"].get<size_t>();
  expectMatches(incrementalLogits(*model.engine, tokens, prefill),
                npy("incremental_logits.npy"), "incremental_logits");
}

TEST_P(GoldenCase, GreedyContinuation) {
  auto greedy = nlohmann::json::parse(readFile(dir + "/greedy16.json"));
  hyrt::GenerateOptions opts;
  opts.max_new_tokens = greedy["n_new"].get<int64_t>();
  opts.sampler.temperature = 0;
  hyrt::GenerateResult result;
  hyrt::Status st = model.engine->generate(
      greedy["prompt"].get<std::vector<int32_t>>(), opts, nullptr, &result);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(result.tokens, greedy["tokens"].get<std::vector<int32_t>>());
}

/// A copy of a golden checkpoint whose config sets rope_theta to
/// `theta` (weights linked, not copied).
std::string withRopeTheta(const std::string &dir, double theta) {
  namespace fs = std::filesystem;
  fs::path out = fs::path(tempDir()) / ("theta-" + std::to_string(theta));
  fs::create_directories(out);
  auto config = nlohmann::json::parse(readFile(dir + "/config.json"));
  config["rope_theta"] = theta;
  std::ofstream(out / "config.json") << config.dump(2);
  std::error_code ec;
  fs::create_symlink(fs::absolute(dir) / "model.safetensors",
                     out / "model.safetensors", ec);
  return out.string();
}

TEST(GoldenTolerance, RopeThetaSlipIsCaught) {
  std::string dir = sharedDir() + "/golden/llama-tiny";
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  auto config = nlohmann::json::parse(readFile(dir + "/config.json"));
  double theta = config["rope_theta"].get<double>();
  LoadedModel slipped = loadModel(compileOnce(
      withRopeTheta(dir, theta * (1 + 1e-4)),
      {"--max-seq-len", "128", "--max-batch-tokens", "64"}));
  ASSERT_TRUE(slipped.engine);
  auto tokens = nlohmann::json::parse(readFile(dir + "/inputs.json"))["sequences"]["64"]
                    .get<std::vector<int32_t>>();
  hyrt::NpyArray want;
  ASSERT_TRUE(hyrt::read_npy_f32(dir + "/logits_64.npy", &want).ok());
  float d = maxAbsDiff(wholeSequenceLogits(*slipped.engine, tokens), want.data);
  std::printf("llama-tiny with rope_theta x (1 + 1e-4): max abs diff %.3g\n", d);
  EXPECT_GT(d, kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Llama, GoldenCase,
                         ::testing::Values("llama-tiny", "llama3-tiny"), caseName);
INSTANTIATE_TEST_SUITE_P(Qwen3Moe, GoldenCase,
                         ::testing::Values("qwen3moe-tiny"), caseName);
INSTANTIATE_TEST_SUITE_P(DeepseekV3, GoldenCase,
                         ::testing::Values("deepseekv3-tiny",
                                           "deepseekv3-grouped-tiny"),
                         caseName);

} // namespace
} // namespace hyc::e2e
