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

INSTANTIATE_TEST_SUITE_P(
    ResidualNorm, Fusion,
    ::testing::Values(FusionCase{"llama-tiny", "hyc-global-fuse-residual-norm", "reference"},
                      FusionCase{"llama-tiny", "hyc-global-fuse-residual-norm", "avx512"},
                      FusionCase{"qwen3moe-tiny", "hyc-global-fuse-residual-norm", "avx512"},
                      FusionCase{"deepseekv3-tiny", "hyc-global-fuse-residual-norm",
                                 "reference"}),
    [](const auto &info) {
      std::string n = info.param.model + "_" + info.param.target;
      for (char &ch : n)
        if (ch == '-')
          ch = '_';
      return n;
    });

} // namespace
} // namespace hyc::e2e
