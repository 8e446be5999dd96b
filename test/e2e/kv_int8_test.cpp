// --kv-cache int8: symmetric int8 keys and values with one fp32 scale per
// token and KV head (MLA: per latent row), written by the (fused) append and
// dequantized inside every attention kernel. The kernel targets against the
// reference target reading the same int8 cache (dense, MoE and MLA golden
// families), the perplexity of every real model in ../shared/models against
// the bf16 cache (and with W8A8 against fp32), and the refusal of a dtype
// the compiler does not know.
#include "test/common/compare.h"
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

bool haveDir(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

/// Worst per-position cosine of two [positions][vocab] logit sets.
double worstCosine(const std::vector<float> &a, const std::vector<float> &b, int64_t vocab) {
  double worst = 1.0;
  for (size_t p = 0; p * size_t(vocab) < a.size(); ++p)
    worst = std::min(worst, hyc::test::cosine(a.data() + p * vocab, b.data() + p * vocab,
                                              size_t(vocab)));
  return worst;
}

class KvInt8Golden : public ::testing::TestWithParam<std::string> {};

// 64 golden tokens fed 8 at a time (an extend step, then decode-sized
// ones reading the cached prefix): the optimized artifact (this host's best
// variant: fused append, the AVX-512 or portable kernels, absorbed MLA)
// against the reference target on an int8 cache of its own. Both read the
// same codes and scales, so they agree to kernel accuracy (cosine >= 0.999,
// the bf16-cache bar). Against the fp32 cache the int8 one must stay at the
// attention bar of DESIGN.md (cosine >= 0.99) and differ (it is quantized).
TEST_P(KvInt8Golden, KernelsMatchTheReferenceOnTheSameCache) {
  const std::string dir = sharedDir() + "/golden/" + GetParam();
  if (!haveDir(dir))
    GTEST_SKIP() << "golden data absent";
  const std::vector<std::string> bounds = {"--max-seq-len", "128", "--max-batch-tokens", "64"};
  std::vector<std::string> refInt8 = bounds, fastInt8 = bounds;
  refInt8.insert(refInt8.end(), {"--kv-cache", "int8"});
  fastInt8.insert(fastInt8.end(), {"--target", "portable", "--kv-cache", "int8"});
  LoadedModel f32 = loadModel(compileOnce(dir, bounds));
  LoadedModel ref = loadModel(compileOnce(dir, refInt8));
  LoadedModel fast = loadModel(compileOnce(dir, fastInt8));
  ASSERT_TRUE(f32.engine && ref.engine && fast.engine);
  EXPECT_EQ(ref.artifact->manifest().kv_cache.dtype, "int8");
  EXPECT_EQ(fast.artifact->manifest().kv_cache.dtype, "int8");
  const int64_t vocab = f32.artifact->manifest().model.vocab_size;
  const std::vector<int32_t> tokens = goldenTokens(dir, "64");
  const auto exact = incrementalLogits(*f32.engine, tokens, 8),
             r = incrementalLogits(*ref.engine, tokens, 8),
             k = incrementalLogits(*fast.engine, tokens, 8);
  ASSERT_EQ(exact.size(), r.size());
  ASSERT_EQ(exact.size(), k.size());
  const double kernels = worstCosine(k, r, vocab), quantized = worstCosine(r, exact, vocab);
  std::printf("%s: worst cosine kernels/reference %.6f, int8/fp32 cache %.6f\n",
              GetParam().c_str(), kernels, quantized);
  EXPECT_GE(kernels, 0.999) << "kernels vs reference, int8 cache";
  EXPECT_GE(quantized, 0.99) << "int8 cache vs fp32 cache";
  EXPECT_GT(hyc::test::maxAbsDiff(r, exact), 0.0f) << "the cache really is quantized";
}

INSTANTIATE_TEST_SUITE_P(Golden, KvInt8Golden,
                         ::testing::Values("llama-tiny", "qwen3moe-tiny",
                                           "deepseekv3-grouped-tiny"),
                         caseName);

// The first 200 TinyStories paragraphs on every real model (this host's
// best variant): the int8 cache within 0.05 of the bf16 cache (absolute,
// aidreams260K included: the cache's rounding barely moves even its ~230),
// and W8A8 weights with the int8 cache within 0.1 of fp32 weights with an
// fp32 cache. aidreams260K (another tokenizer and corpus) is held to
// quant_group_test.cpp's relative bar there: W8A8's own error scales with
// its perplexity.
TEST(KvInt8Perplexity, EveryRealModelWithinPointZeroFiveOfTheBf16Cache) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models absent";
  const std::string models = sharedDir() + "/models/";
  for (const RealModel &real : realModels()) {
    const char *m = real.path;
    std::vector<std::string> bounds = real.bounds;
    bounds.insert(bounds.end(), {"--target", "portable"});
    std::vector<std::string> f32 = bounds, bf16 = bounds, int8 = bounds, w8Int8 = bounds;
    f32.insert(f32.end(), {"--kv-cache", "f32"});
    bf16.insert(bf16.end(), {"--kv-cache", "bf16"});
    int8.insert(int8.end(), {"--kv-cache", "int8"});
    w8Int8.insert(w8Int8.end(), {"--kv-cache", "int8", "--quant", "w8a8"});
    const double pf = std::exp(meanNll(compileOnce(models + m, f32)));
    const double pb = std::exp(meanNll(compileOnce(models + m, bf16)));
    const double pi = std::exp(meanNll(compileOnce(models + m, int8)));
    const double pw = std::exp(meanNll(compileOnce(models + m, w8Int8)));
    std::printf("| %s | %.4f | %.4f | %.4f (%+.4f) | %.4f (%+.4f) |\n", m, pf, pb, pi, pi - pb,
                pw, pw - pf);
    const double relative = pf < 10 ? 1.0 : pf / 4.219;
    EXPECT_LT(std::fabs(pi - pb), 0.05) << m << ": int8 vs bf16 cache";
    EXPECT_LT(std::fabs(pw - pf), 0.1 * relative) << m << ": w8a8 + int8 cache vs fp32";
  }
}

TEST(KvInt8, UnknownCacheTypeIsRefusedNamingTheChoices) {
  const std::string out = tempDir() + "/int4.hyc";
  CommandResult r = runHyc({"compile", sharedDir() + "/golden/llama-tiny", "-o", out,
                            "--kv-cache", "int4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--kv-cache expects auto|f32|bf16|int8, got 'int4'"), std::string::npos)
      << r.err;
}

} // namespace
} // namespace hyc::e2e
