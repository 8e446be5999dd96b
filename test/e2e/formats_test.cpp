// The same model from different checkpoint formats compiles to the same
// function: GGUF (as llama.cpp's converter writes it) vs Hugging Face for
// every golden family, DeepSeek FP8 (e4m3 + 128x128 weight_scale_inv) and
// AutoAWQ int4 (qweight / qzeros / scales) vs their exact fp32
// dequantizations.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace hyc::e2e {
namespace {

const std::vector<std::string> kFlags = {"--max-seq-len", "96", "--max-batch-tokens", "48"};

std::vector<int32_t> probeTokens() {
  std::vector<int32_t> t = {1};
  for (int i = 1; i < 40; ++i)
    t.push_back(3 + (i * 53) % 500);
  return t;
}

/// Whole-sequence and incremental logits of the probe sequence.
std::pair<std::vector<float>, std::vector<float>> logitsOf(const std::string &art) {
  LoadedModel m = loadModel(art, 8);
  if (!m.engine)
    return {};
  std::vector<int32_t> t = probeTokens();
  return {wholeSequenceLogits(*m.engine, t), incrementalLogits(*m.engine, t, 17)};
}

class GgufVsHf : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufVsHf, SameLogits) {
  std::string hf = sharedDir() + "/golden/" + GetParam();
  struct stat st;
  if (stat(hf.c_str(), &st) != 0)
    GTEST_SKIP() << hf << " is absent: GGUF vs HF test skipped";
  std::string gguf = tempDir() + "/" + GetParam() + ".gguf";
  CommandResult c = runHyc({"convert-gguf", hf, gguf});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto [hfWhole, hfInc] = logitsOf(compileOnce(hf, kFlags));
  auto [ggWhole, ggInc] = logitsOf(compileOnce(gguf, kFlags));
  ASSERT_FALSE(hfWhole.empty());
  float d = maxAbsDiff(hfWhole, ggWhole);
  std::printf("%s: GGUF vs HF max abs diff %.3g (whole), %.3g (incremental)\n",
              GetParam().c_str(), d, maxAbsDiff(hfInc, ggInc));
  EXPECT_LT(d, 1e-4);
  EXPECT_LT(maxAbsDiff(hfInc, ggInc), 1e-4);
  for (size_t r = 0; r < hfWhole.size() / 512; ++r)
    EXPECT_EQ(argmaxRow(&hfWhole[r * 512], 512), argmaxRow(&ggWhole[r * 512], 512))
        << "row " << r;
}

INSTANTIATE_TEST_SUITE_P(Golden, GgufVsHf,
                         ::testing::Values("llama-tiny", "llama3-tiny", "qwen3moe-tiny",
                                           "deepseekv3-tiny", "deepseekv3-grouped-tiny"),
                         [](const auto &info) {
                           std::string n = info.param;
                           for (char &ch : n)
                             if (ch == '-')
                               ch = '_';
                           return n;
                         });

TEST(DeepseekFp8, CompilesAndMatchesItsFp32Dequantization) {
  std::string fp8 = tempDir() + "/dsv3-fp8", f32 = tempDir() + "/dsv3-fp8-as-f32";
  CommandResult s = runHyc({"synth", "--arch", "deepseek-v3", "--fp8", "--seed", "5",
                            "-o", fp8, "--dequantized-copy", f32});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  // The checkpoint really is FP8: e4m3 weights with block scales.
  std::string header = readFile(fp8 + "/model.safetensors").substr(0, 200000);
  EXPECT_NE(header.find("F8_E4M3"), std::string::npos);
  EXPECT_NE(header.find("weight_scale_inv"), std::string::npos);
  // --quant f32: the default (auto) would keep the FP8 codes; this checks
  // that the loader dequantizes them exactly.
  std::vector<std::string> flags = kFlags;
  flags.insert(flags.end(), {"--quant", "f32"});
  auto [aWhole, aInc] = logitsOf(compileOnce(fp8, flags));
  auto [bWhole, bInc] = logitsOf(compileOnce(f32, flags));
  ASSERT_FALSE(aWhole.empty());
  // Both artifacts hold the same fp32 weights: identical results.
  EXPECT_EQ(maxAbsDiff(aWhole, bWhole), 0.0f);
  EXPECT_EQ(maxAbsDiff(aInc, bInc), 0.0f);
  // And a different seed is a different model (the comparison has teeth).
  std::string other = tempDir() + "/dsv3-fp8-seed6";
  ASSERT_EQ(runHyc({"synth", "--arch", "deepseek-v3", "--fp8", "--seed", "6", "-o", other})
                .exit_code,
            0);
  auto [cWhole, cInc] = logitsOf(compileOnce(other, flags));
  EXPECT_GT(maxAbsDiff(aWhole, cWhole), 1e-3);
}

TEST(AwqInt4, CompilesAndMatchesItsFp32Dequantization) {
  std::string awq = tempDir() + "/llama-awq", f32 = tempDir() + "/llama-awq-as-f32";
  CommandResult s = runHyc({"synth", "--arch", "llama", "--preset", "small", "--ffn", "512",
                            "--awq", "--seed", "5", "-o", awq, "--dequantized-copy", f32});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::string header = readFile(awq + "/model.safetensors").substr(0, 200000);
  EXPECT_NE(header.find(".qweight"), std::string::npos);
  EXPECT_EQ(header.find("_proj.weight"), std::string::npos) << "a projection left unpacked";
  // --quant auto names the stored format.
  std::vector<std::string> compile = {"compile", awq, "-o", tempDir() + "/llama-awq-auto.art"};
  compile.insert(compile.end(), kFlags.begin(), kFlags.end());
  CommandResult c = runHyc(compile);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("precision: w4a8 (--quant auto: the checkpoint stores its matrices as "
                       "AWQ_INT4: AWQ int4, group 128 with zero points, kept as stored"),
            std::string::npos)
      << c.err;
  // --quant f32: the loader's s * (q - z) through the whole compiler equals
  // the fp32 twin's weights.
  std::vector<std::string> flags = kFlags;
  flags.insert(flags.end(), {"--quant", "f32"});
  auto [aWhole, aInc] = logitsOf(compileOnce(awq, flags));
  auto [bWhole, bInc] = logitsOf(compileOnce(f32, flags));
  ASSERT_FALSE(aWhole.empty());
  EXPECT_EQ(maxAbsDiff(aWhole, bWhole), 0.0f);
  EXPECT_EQ(maxAbsDiff(aInc, bInc), 0.0f);
  std::string other = tempDir() + "/llama-awq-seed6";
  ASSERT_EQ(runHyc({"synth", "--arch", "llama", "--preset", "small", "--ffn", "512", "--awq",
                    "--seed", "6", "-o", other})
                .exit_code,
            0);
  auto [cWhole, cInc] = logitsOf(compileOnce(other, flags));
  EXPECT_GT(maxAbsDiff(aWhole, cWhole), 1e-3);
}

} // namespace
} // namespace hyc::e2e
