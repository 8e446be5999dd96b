// GGUF files hyc did not write compile to the published logits: each golden
// Hugging Face case is converted by test/common/llama_cpp_gguf.cpp (a writer
// made from the GGUF specification and llama.cpp's converter conventions,
// independent of hyc's convert-gguf), compiled, and its whole-sequence and
// incremental logits compared with ../shared/golden's (llama.cpp F32),
// for llama, llama3 (rope_freqs), qwen3moe and deepseek2 (MLA, split kv_b).
#include "test/common/llama_cpp_gguf.h"
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/cli/npy.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace hyc::e2e {
namespace {

// As in golden_test.cpp: fp32 results differ from llama.cpp's only in the
// order of additions (measured <= 6e-6); 1e-4 catches semantic slips.
constexpr float kTolerance = 1e-4f;

class IndependentGguf : public ::testing::TestWithParam<std::string> {};

TEST_P(IndependentGguf, MatchesGoldenLogits) {
  const std::string dir = sharedDir() + "/golden/" + GetParam();
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent: independent GGUF test skipped";
  const std::string gguf = tempDir() + "/independent-" + GetParam() + ".gguf";
  ASSERT_EQ(::hyc::test::write_llama_cpp_gguf(dir, gguf), "");
  LoadedModel model = loadModel(
      compileOnce(gguf, {"--max-seq-len", "64", "--max-batch-tokens", "40"}));
  ASSERT_TRUE(model.engine);

  const nlohmann::json inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
  auto check = [&](const std::vector<float> &got, const std::string &npy) {
    hyrt::NpyArray want;
    hyrt::Status s = hyrt::read_npy_f32(dir + "/" + npy, &want);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(got.size(), want.data.size()) << npy;
    const float d = maxAbsDiff(got, want.data);
    std::printf("%s independent GGUF vs %s: max abs diff %.3g\n",
                GetParam().c_str(), npy.c_str(), d);
    EXPECT_LE(d, kTolerance) << npy;
    const int64_t vocab = want.shape.back();
    for (size_t r = 0; r < got.size() / size_t(vocab); ++r)
      EXPECT_EQ(argmaxRow(&got[r * vocab], vocab), argmaxRow(&want.data[r * vocab], vocab))
          << npy << ", row " << r;
  };
  check(wholeSequenceLogits(*model.engine,
                            inputs["sequences"]["33"].get<std::vector<int32_t>>()),
        "logits_33.npy");
  const nlohmann::json &inc = inputs["incremental"];
  check(incrementalLogits(
            *model.engine,
            inputs["sequences"][inc["sequence"].get<std::string>()].get<std::vector<int32_t>>(),
            inc["prefill_tokens"].get<size_t>()),
        "incremental_logits.npy");
}

INSTANTIATE_TEST_SUITE_P(Golden, IndependentGguf,
                         ::testing::Values("llama-tiny", "llama3-tiny", "qwen3moe-tiny",
                                           "deepseekv3-tiny", "deepseekv3-grouped-tiny"),
                         caseName);

} // namespace
} // namespace hyc::e2e
