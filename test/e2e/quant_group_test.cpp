// --quant w8a8-g128: int8 weights with one scale per 128 K-elements and
// output channel, per-token int8 activations. The kernel targets (every
// variant the host runs) against the reference target of the same scheme
// on synthetic models whose K spans several groups, and the perplexity of
// every real model in ../shared/models against fp32.
#include "test/e2e/e2e_util.h"
#include "test/e2e/artifact_bytes.h"
#include "test/e2e/engine_util.h"

#include "hyrt/artifact/cpu_features.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hyc::e2e {
namespace {

const std::vector<std::string> kBounds = {"--max-seq-len", "96", "--max-batch-tokens", "48",
                                          "--kv-cache", "f32"};

class GroupedW8a8 : public ::testing::TestWithParam<std::string> {};

// A dense Llama (hidden 256, ffn 688: K of 2 and 6 groups, the last one
// short) and a Qwen3-MoE (expert GEMMs through the grouped and
// token-gathering drivers): every variant this host runs against the
// reference of the same per-group quantization, teacher-forced 48 tokens,
// fp32 cache. Int8 activations make routing and rounding discontinuous, so
// the bar is the W8A8 one (per-position cosine >= 0.99).
TEST_P(GroupedW8a8, EveryVariantMatchesTheGroupedReference) {
  const std::string dir = tempDir() + "/g128-" + GetParam();
  CommandResult s = runHyc({"synth", "--arch", GetParam(), "--preset", "small", "--seed", "5",
                            "-o", dir});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::vector<int32_t> t = {1};
  for (int i = 1; i < 48; ++i)
    t.push_back(int32_t(3 + (i * 97) % 1000));
  std::vector<std::string> ref = kBounds, refChannel = kBounds, fast = kBounds;
  ref.insert(ref.end(), {"--target", "reference", "--quant", "w8a8-g128"});
  refChannel.insert(refChannel.end(), {"--target", "reference", "--quant", "w8a8"});
  fast.insert(fast.end(), {"--target", "portable", "--quant", "w8a8-g128"});
  const std::vector<float> want = teacherForced(compileOnce(dir, ref), "reference", t);
  ASSERT_FALSE(want.empty());
  // The scheme is not per-channel W8A8 under another name.
  const std::vector<float> channel =
      teacherForced(compileOnce(dir, refChannel), "reference", t);
  EXPECT_GT(maxAbsDiff(want, channel), 1e-4);
  const std::string art = compileOnce(dir, fast);
  auto manifest = nlohmann::json::parse(readFile(art + "/manifest.json"));
  bool grouped = false;
  for (const auto &tensor : manifest["weights"]["tensors"])
    grouped = grouped || tensor["dtype"] == "s8_vnni4_g128";
  EXPECT_TRUE(grouped) << "no weight packed in K = 128 groups";
  const size_t vocab = want.size() / (2 * t.size());
  const VariantSplit split = variantsOf(art);
  for (const std::string &skipped : split.skipped)
    std::printf("%s: variant %s skipped\n", GetParam().c_str(), skipped.c_str());
  for (const std::string &isa : split.run) {
    const std::vector<float> got = teacherForced(art, isa, t);
    ASSERT_EQ(got.size(), want.size());
    double worst = 1;
    for (size_t p = 0; p < 2 * t.size(); ++p)
      worst = std::min(worst, hyc::test::cosine(got.data() + p * vocab,
                                                want.data() + p * vocab, vocab));
    std::printf("%s w8a8-g128 %s vs reference: worst per-position cosine %.6f\n",
                GetParam().c_str(), isa.c_str(), worst);
    EXPECT_GE(worst, 0.99) << isa;
  }
  EXPECT_FALSE(split.run.empty());
}

INSTANTIATE_TEST_SUITE_P(Synth, GroupedW8a8, ::testing::Values("llama", "qwen3-moe"),
                         caseName);

// The first 200 TinyStories paragraphs on every real model: W8A8 and
// W8A8-g128 (default target: this host's best variant) within 0.05 of the
// fp32 reference perplexity. aidreams260K was trained on other text with
// another tokenizer: its perplexity on these paragraphs is ~230, where an
// absolute 0.05 would demand 50x the precision asked of the TinyStories
// models (0.05 of ~4.2, i.e. 1.2%); it is held to that same relative bar.
TEST(GroupedW8a8Perplexity, EveryRealModelWithinPointZeroFiveOfFp32) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models absent";
  const std::string models = sharedDir() + "/models/";
  for (const RealModel &real : realModels()) {
    const char *m = real.path;
    const std::vector<std::string> &bounds = real.bounds;
    std::vector<std::string> w8 = bounds, g128 = bounds;
    w8.insert(w8.end(), {"--target", "portable", "--quant", "w8a8"});
    g128.insert(g128.end(), {"--target", "portable", "--quant", "w8a8-g128"});
    const double f32 = std::exp(meanNll(compileOnce(models + m, bounds)));
    const double pw8 = std::exp(meanNll(compileOnce(models + m, w8)));
    const double pg = std::exp(meanNll(compileOnce(models + m, g128)));
    std::printf("| %s | %.4f | %.4f (%+.4f) | %.4f (%+.4f) |\n", m, f32, pw8, pw8 - f32, pg,
                pg - f32);
    const double bar = f32 < 10 ? 0.05 : f32 * 0.05 / 4.219;
    EXPECT_LT(std::fabs(pw8 - f32), bar) << m;
    EXPECT_LT(std::fabs(pg - f32), bar) << m;
  }
}

} // namespace
} // namespace hyc::e2e

namespace hyc::e2e {
namespace {

// A channel-INT8 checkpoint (hyc synth --int8: odd rows have max |q| = 100,
// which re-quantizing their fp32 product would stretch to 127) keeps its
// int8 weights and scales bit for bit under --quant w8a8, dense and expert
// stacks alike; the kernel artifact built from them follows the reference.
TEST(ChannelInt8, CheckpointNumbersKeptBitForBit) {
  const std::string dir = tempDir() + "/int8-ckpt";
  CommandResult s = runHyc({"synth", "--arch", "qwen3-moe", "--preset", "tiny", "--seed", "3",
                            "--int8", "-o", dir});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string ref = compileOnce(dir, {"--target", "reference", "--quant", "w8a8",
                                            "--max-seq-len", "64"});
  const std::string file = dir + "/model.safetensors";
  for (const char *w : {"model.layers.0.self_attn.q_proj.weight",
                        "model.layers.1.mlp.down_proj.weight"}) {
    const StoredTensor q = storedTensor(file, w);
    if (q.dtype.empty() && std::string(w).find("mlp") != std::string::npos)
      continue; // a dense MLP name the MoE layers do not have
    ASSERT_EQ(q.dtype, "I8") << w;
    const StoredTensor scale = storedTensor(file, std::string(w) + "_scale");
    ASSERT_EQ(scale.dtype, "F32") << w;
    // Odd rows stop at 100: re-quantization would not keep them.
    int maxOdd = 0;
    for (int64_t c = 0; c < q.shape[1]; ++c)
      maxOdd = std::max(maxOdd, std::abs(int(int8_t(q.bytes[size_t(q.shape[1] + c)]))));
    EXPECT_EQ(maxOdd, 100) << w;
    EXPECT_EQ(artifactTensor(ref, std::string(w) + "#w8a8"), q.bytes) << w;
    EXPECT_EQ(artifactTensor(ref, std::string(w) + "#w8a8.scale"), scale.bytes) << w;
  }
  // An expert stack: expert 2's slice of the stacked int8 weights.
  auto manifest = nlohmann::json::parse(readFile(ref + "/manifest.json"));
  std::string stacked;
  for (const auto &t : manifest["weights"]["tensors"]) {
    const std::string n = t["name"];
    if (n.find("experts.*.down_proj.weight#w8a8") != std::string::npos &&
        n.find(".scale") == std::string::npos) {
      stacked = n;
      break;
    }
  }
  ASSERT_FALSE(stacked.empty());
  const std::string expert2 =
      stacked.substr(0, stacked.find("*")) + "2" +
      stacked.substr(stacked.find("*") + 1, stacked.find("#") - stacked.find("*") - 1);
  const StoredTensor e2 = storedTensor(file, expert2);
  ASSERT_EQ(e2.dtype, "I8") << expert2;
  const std::string all = artifactTensor(ref, stacked);
  EXPECT_EQ(all.substr(2 * e2.bytes.size(), e2.bytes.size()), e2.bytes) << expert2;

  // The VNNI kernels on the same numbers follow the reference.
  if (!hyrt::host_has_cpu_feature("avx512_vnni"))
    GTEST_SKIP() << "host lacks avx512_vnni: the kernel artifact is not run";
  const std::string fast = compileOnce(dir, {"--target", "avx512", "--quant", "w8a8",
                                             "--max-seq-len", "64", "--kv-cache", "f32"});
  std::vector<int32_t> t = {1, 5, 6, 7, 9, 11, 13, 17, 19, 23, 29, 31};
  const std::vector<float> a = teacherForced(ref, "reference", t),
                           b = teacherForced(fast, "avx512", t);
  ASSERT_EQ(a.size(), b.size());
  const size_t vocab = a.size() / (2 * t.size());
  for (size_t p = 0; p < 2 * t.size(); ++p)
    EXPECT_GE(hyc::test::cosine(a.data() + p * vocab, b.data() + p * vocab, vocab), 0.99)
        << "position " << p;
}

} // namespace
} // namespace hyc::e2e
