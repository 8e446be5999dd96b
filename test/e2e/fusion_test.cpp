// Every graph fusion against the same model compiled with that fusion left
// out (--disable-pass): where the fused kernel does the same arithmetic the
// logits must be bit-identical, on the reference and on the kernel targets,
// whole-sequence and incremental.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/cpu_features.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace hyc::e2e {
namespace {

struct FusionCase {
  std::string model, pass, target;
};

class Fusion : public ::testing::TestWithParam<FusionCase> {};

TEST_P(Fusion, FusedEqualsUnfusedBitForBit) {
  const FusionCase &c = GetParam();
  std::string dir = sharedDir() + "/golden/" + c.model;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  if (c.target != "reference" && !hyrt::host_has_cpu_feature("avx512f"))
    GTEST_SKIP() << "host lacks avx512f: the " << c.target << " kernels cannot run";
  std::vector<std::string> fused = {"--max-seq-len", "128", "--max-batch-tokens", "64",
                                    "--target", c.target};
  std::vector<std::string> unfused = fused;
  unfused.insert(unfused.end(), {"--disable-pass", c.pass});
  LoadedModel a = loadModel(compileOnce(dir, fused));
  LoadedModel b = loadModel(compileOnce(dir, unfused));
  ASSERT_TRUE(a.engine && b.engine);
  auto tokens = nlohmann::json::parse(readFile(dir + "/inputs.json"))["sequences"]["33"]
                    .get<std::vector<int32_t>>();
  EXPECT_EQ(maxAbsDiff(wholeSequenceLogits(*a.engine, tokens),
                       wholeSequenceLogits(*b.engine, tokens)),
            0.0f);
  EXPECT_EQ(maxAbsDiff(incrementalLogits(*a.engine, tokens, 20),
                       incrementalLogits(*b.engine, tokens, 20)),
            0.0f);
}

/// Three sequences of different lengths decoded together for a few steps:
/// every step's logits, concatenated.
std::vector<float> batchedDecode(hyrt::Engine &engine, const std::vector<int32_t> &tokens) {
  std::vector<int64_t> seqs;
  std::vector<float> all, step;
  for (size_t len : {5, 12, 20}) {
    seqs.push_back(engine.add_sequence());
    EXPECT_TRUE(engine
                    .extend(seqs.back(),
                            std::vector<int32_t>(tokens.begin(), tokens.begin() + len), &step)
                    .ok());
  }
  for (size_t i = 0; i < 6; ++i) {
    std::vector<int32_t> next = {tokens[20 + i], tokens[21 + i], tokens[22 + i]};
    hyrt::Status st = engine.decode(seqs, next, &step);
    EXPECT_TRUE(st.ok()) << st.message();
    all.insert(all.end(), step.begin(), step.end());
  }
  for (int64_t s : seqs)
    EXPECT_TRUE(engine.release(s).ok());
  return all;
}

TEST_P(Fusion, BatchedDecodeFusedEqualsUnfused) {
  const FusionCase &c = GetParam();
  std::string dir = sharedDir() + "/golden/" + c.model;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  if (c.target != "reference" && !hyrt::host_has_cpu_feature("avx512f"))
    GTEST_SKIP() << "host lacks avx512f: the " << c.target << " kernels cannot run";
  std::vector<std::string> fused = {"--max-seq-len", "128", "--max-batch-tokens", "64",
                                    "--target", c.target};
  std::vector<std::string> unfused = fused;
  unfused.insert(unfused.end(), {"--disable-pass", c.pass});
  LoadedModel a = loadModel(compileOnce(dir, fused));
  LoadedModel b = loadModel(compileOnce(dir, unfused));
  ASSERT_TRUE(a.engine && b.engine);
  auto tokens = nlohmann::json::parse(readFile(dir + "/inputs.json"))["sequences"]["33"]
                    .get<std::vector<int32_t>>();
  std::vector<float> x = batchedDecode(*a.engine, tokens), y = batchedDecode(*b.engine, tokens);
  ASSERT_FALSE(x.empty());
  EXPECT_EQ(maxAbsDiff(x, y), 0.0f);
}

/// Extend computes only the last token's logits unless every row is asked
/// for (hyc.logit_rows): that row must be the one the all-rows extend gives.
class LastTokenLogits : public ::testing::TestWithParam<FusionCase> {};

TEST_P(LastTokenLogits, EqualTheLastRowOfAllRows) {
  const FusionCase &c = GetParam();
  std::string dir = sharedDir() + "/golden/" + c.model;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  if (c.target != "reference" && !hyrt::host_has_cpu_feature("avx512f"))
    GTEST_SKIP() << "host lacks avx512f: the " << c.target << " kernels cannot run";
  LoadedModel m = loadModel(compileOnce(
      dir, {"--max-seq-len", "128", "--max-batch-tokens", "64", "--target", c.target}));
  ASSERT_TRUE(m.engine);
  auto tokens = nlohmann::json::parse(readFile(dir + "/inputs.json"))["sequences"]["33"]
                    .get<std::vector<int32_t>>();
  std::vector<float> all = wholeSequenceLogits(*m.engine, tokens), last;
  int64_t seq = m.engine->add_sequence();
  ASSERT_TRUE(m.engine->extend(seq, tokens, &last, /*all_rows=*/false).ok());
  ASSERT_TRUE(m.engine->release(seq).ok());
  const size_t vocab = m.engine->vocab_size();
  ASSERT_EQ(last.size(), vocab);
  // The reference's rows are independent of the batch: bit-identical. The
  // generated kernels give small M (here the one row) more accumulator sets
  // to hide FMA latency, so the lm_head's K-term sums are split differently
  // than in a full row block: fp32 reassociation error, at most
  // K * 2^-24 * sum|terms| ~ 128 * 6e-8 * 2 = 1.5e-5 for these logits.
  const float d = maxAbsDiff(last, std::vector<float>(all.end() - vocab, all.end()));
  if (c.target == "reference")
    EXPECT_EQ(d, 0.0f);
  else
    EXPECT_LT(d, 1.5e-5f);
}

INSTANTIATE_TEST_SUITE_P(
    Extend, LastTokenLogits,
    ::testing::Values(FusionCase{"llama-tiny", "", "reference"},
                      FusionCase{"llama-tiny", "", "avx512"},
                      FusionCase{"qwen3moe-tiny", "", "avx512"},
                      FusionCase{"deepseekv3-tiny", "", "reference"}),
    [](const ::testing::TestParamInfo<FusionCase> &info) {
      std::string n = info.param.model + "_" + info.param.target;
      for (char &ch : n)
        if (ch == '-')
          ch = '_';
      return n;
    });

std::string fusionCaseName(const ::testing::TestParamInfo<FusionCase> &info) {
  std::string n = info.param.model + "_" + info.param.target;
  for (char &ch : n)
    if (ch == '-')
      ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(
    ResidualNorm, Fusion,
    ::testing::Values(FusionCase{"llama-tiny", "hyc-global-fuse-residual-norm", "reference"},
                      FusionCase{"llama-tiny", "hyc-global-fuse-residual-norm", "avx512"},
                      FusionCase{"qwen3moe-tiny", "hyc-global-fuse-residual-norm", "avx512"},
                      FusionCase{"deepseekv3-tiny", "hyc-global-fuse-residual-norm",
                                 "reference"}),
    fusionCaseName);

INSTANTIATE_TEST_SUITE_P(
    KvAppendIntoAttention, Fusion,
    ::testing::Values(
        FusionCase{"llama-tiny", "hyc-global-fuse-kv-append-into-attention", "reference"},
        FusionCase{"llama-tiny", "hyc-global-fuse-kv-append-into-attention", "avx512"},
        FusionCase{"qwen3moe-tiny", "hyc-global-fuse-kv-append-into-attention", "avx512"}),
    fusionCaseName);

} // namespace
} // namespace hyc::e2e
