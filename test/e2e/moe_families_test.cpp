// DeepSeek-V2 and Hunyuan-MoE through the whole chain on seeded synthetic
// checkpoints (`hyc synth`): the fast artifacts against the reference
// artifact of the same model (teacher-forced, the bars of
// Avx512Golden.FastArtifactsMatchTheReferenceTeacherForced), V2's routing
// method changing the model, and a Hunyuan GGUF (as llama.cpp's converter
// lays it out) computing the same logits as its Hugging Face checkpoint.
// KV-cache self-consistency of both families runs in families_test.cpp.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/artifact/cpu_features.h"

#include <algorithm>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

namespace hyc::e2e {
namespace {

const std::vector<std::string> kBounds = {"--max-seq-len", "128", "--max-batch-tokens",
                                          "64"};

std::string synth(const std::string &arch, uint64_t seed) {
  std::string dir = tempDir() + "/moe-" + arch + "-" + std::to_string(seed);
  CommandResult r = runHyc(
      {"synth", "--arch", arch, "--seed", std::to_string(seed), "-o", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir;
}

std::vector<int32_t> tokens(size_t n) {
  std::vector<int32_t> t = {1};
  for (size_t i = 1; i < n; ++i)
    t.push_back(int32_t(3 + (i * 97) % 500));
  return t;
}

struct Logits {
  std::vector<float> all, inc;
};

Logits logitsOf(const std::string &artifact, const std::vector<int32_t> &t,
                size_t prefix = 8) {
  LoadedModel m = loadModel(artifact);
  if (!m.engine)
    return {};
  return {wholeSequenceLogits(*m.engine, t), incrementalLogits(*m.engine, t, prefix)};
}

/// Copies a checkpoint directory with config.json edited by `edit`.
std::string withConfig(const std::string &dir, const std::string &name,
                       const std::function<void(nlohmann::json &)> &edit) {
  std::string out = tempDir() + "/" + name;
  std::filesystem::create_directories(out);
  for (const char *f : {"model.safetensors", "tokenizer.bin"})
    std::filesystem::copy_file(dir + "/" + f, out + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  nlohmann::json config = nlohmann::json::parse(readFile(dir + "/config.json"));
  edit(config);
  std::ofstream(out + "/config.json") << config.dump(2);
  return out;
}

class FastVsReference : public ::testing::TestWithParam<std::string> {};

TEST_P(FastVsReference, TeacherForced) {
  if (!hyrt::host_has_cpu_feature("avx512f") || !hyrt::host_has_cpu_feature("avx512_vnni"))
    GTEST_SKIP() << "host lacks avx512f/avx512_vnni: the fast target is not run";
  const std::string dir = synth(GetParam(), 21);
  const std::vector<int32_t> t = tokens(64);
  std::vector<std::string> w8 = kBounds;
  w8.insert(w8.end(), {"--quant", "w8a8"});
  const Logits f32 = logitsOf(compileOnce(dir, kBounds), t);
  const Logits w8ref = logitsOf(compileOnce(dir, w8), t);
  ASSERT_FALSE(f32.all.empty());
  ASSERT_FALSE(w8ref.all.empty());
  const size_t vocab = f32.all.size() / t.size();
  auto check = [&](const Logits &got, const Logits &want, double bar, const char *what) {
    double worst = 1.0;
    for (auto [g, w] : {std::pair{&got.all, &want.all}, std::pair{&got.inc, &want.inc}}) {
      ASSERT_EQ(g->size(), w->size()) << what;
      for (size_t p = 0; p < t.size(); ++p)
        worst = std::min(worst, hyc::test::cosine(g->data() + p * vocab,
                                                  w->data() + p * vocab, vocab));
    }
    std::printf("%s %s: worst per-position cosine %.6f (bar %.3f)\n", GetParam().c_str(),
                what, worst, bar);
    EXPECT_GE(worst, bar) << what;
  };
  // bf16: against the reference of the same bf16 weights (--quant bf16:
  // fp32 GEMMs on the rounded weights), both with an fp32 cache, so what
  // differs is the kernels' summation order (cosine 1.000000 on all three).
  // A bf16 cache rounds that order noise to whole bf16 ulps, and seed 21's
  // hunyuan-moe has a near-tie expert choice at position 30 that flips
  // (cosine 0.99917 there, >= 0.99999 elsewhere; the same against the fp32
  // reference): a different function, not an error. The bf16 cache itself
  // is held to the reference by Avx512Golden.KvCacheBf16OnTheReferenceTarget.
  std::vector<std::string> bf16Ref = kBounds;
  bf16Ref.insert(bf16Ref.end(), {"--quant", "bf16"});
  std::vector<std::string> bf16 = kBounds;
  bf16.insert(bf16.end(), {"--target", "avx512", "--quant", "bf16", "--kv-cache", "f32"});
  check(logitsOf(compileOnce(dir, bf16), t), logitsOf(compileOnce(dir, bf16Ref), t), 0.999,
        "avx512 bf16 vs bf16 reference");
  // MoE routers are discontinuous under int8 activations (see avx512_test):
  // W8A8 is held to the W8A8 reference with the same fp32 cache.
  std::vector<std::string> q = kBounds;
  q.insert(q.end(), {"--target", "avx512", "--quant", "w8a8", "--kv-cache", "f32"});
  check(logitsOf(compileOnce(dir, q), t), w8ref, 0.99,
        "avx512 w8a8 (fp32 cache) vs w8a8 reference");
}

INSTANTIATE_TEST_SUITE_P(Synth, FastVsReference,
                         ::testing::Values("deepseek-v2", "deepseek-v2-lite", "hunyuan-moe"),
                         caseName);

// The same weights under topk_method greedy and group_limited_greedy are
// different models (the grouping is applied: the synthetic V2 keeps 1 of 4
// groups for top-2), and the group fields of a greedy config change nothing
// (it is not applied there).
// MLA's plain form in an artifact: synthetic DeepSeek-V3 "small" (rank 64,
// nope 32, v 32) gets the plain-form weight 3 from the strategy; a prompt
// from position 0 in one chunk has nothing cached to expand, so it takes
// the plain form, and the decode steps after a 170-token prefix the
// absorbed one.
// Against the reference of the same bf16 weights with fp32 caches on both
// sides (kernel order only): cosine >= 0.999 on every row, both paths.
TEST(MlaForms, PlainExtendAndAbsorbedDecodeMatchTheReference) {
  if (!hyrt::host_has_cpu_feature("avx512f") || !hyrt::host_has_cpu_feature("avx512bw") ||
      !hyrt::host_has_cpu_feature("avx512vl"))
    GTEST_SKIP() << "host lacks AVX-512F/BW/VL: the plain-form kernel is not run";
  std::string dir = tempDir() + "/mla-forms";
  CommandResult r = runHyc({"synth", "--arch", "deepseek-v3", "--preset", "small", "--seed",
                            "5", "-o", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> bounds = {"--max-seq-len", "256", "--max-batch-tokens", "256",
                                           "--kv-cache", "f32", "--quant", "bf16"};
  std::vector<std::string> fast = bounds;
  fast.insert(fast.end(), {"--target", "avx512"});
  const std::string fastArt = compileOnce(dir, fast);
  r = runHyc({"compile", dir, "-o", fastArt + ".mlir", "--emit=mlir", "--compile-to=strategy",
              "--target", "avx512", "--quant", "bf16", "--max-seq-len", "256",
              "--max-batch-tokens", "256"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(readFile(fastArt + ".mlir").find("kernel = \"mla_absorbed\", tile = [70, 300]"),
            std::string::npos);
  const std::vector<int32_t> t = tokens(200);
  const Logits got = logitsOf(fastArt, t, 170), want = logitsOf(compileOnce(dir, bounds), t, 170);
  ASSERT_FALSE(got.all.empty());
  ASSERT_EQ(got.all.size(), want.all.size());
  const size_t vocab = want.all.size() / t.size();
  for (auto [g, w] : {std::pair{&got.all, &want.all}, std::pair{&got.inc, &want.inc}})
    for (size_t p = 0; p < t.size(); ++p)
      ASSERT_GE(hyc::test::cosine(g->data() + p * vocab, w->data() + p * vocab, vocab), 0.999)
          << (g == &got.all ? "extend" : "decode") << " row " << p;
}

TEST(DeepseekV2Routing, TopkMethodDecidesTheExperts) {
  const std::string grouped = synth("deepseek-v2", 23);
  const std::string greedy = withConfig(grouped, "v2-greedy", [](nlohmann::json &c) {
    c["topk_method"] = "greedy";
  });
  const std::string greedyNoGroups =
      withConfig(grouped, "v2-greedy-1", [](nlohmann::json &c) {
        c["topk_method"] = "greedy";
        c["n_group"] = 1;
        c["topk_group"] = 1;
      });
  const std::vector<std::string> flags = {"--max-seq-len", "64", "--max-batch-tokens", "32"};
  const std::vector<int32_t> t = tokens(24);
  const Logits a = logitsOf(compileOnce(grouped, flags), t);
  const Logits b = logitsOf(compileOnce(greedy, flags), t);
  const Logits c = logitsOf(compileOnce(greedyNoGroups, flags), t);
  ASSERT_FALSE(a.all.empty());
  ASSERT_FALSE(b.all.empty());
  EXPECT_GT(maxAbsDiff(a.all, b.all), 1e-3);
  EXPECT_EQ(maxAbsDiff(b.all, c.all), 0.0f);
}

// hyc convert-gguf writes llama.cpp's layout (hunyuan-moe; deepseek2 for
// DeepSeek-V2 and V2-Lite, read back with the V3 family and softmax
// routing); the GGUF must compile to the same logits as the HF checkpoint.
class FamilyGguf : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyGguf, SameLogitsAsHuggingFace) {
  const std::string arch = GetParam();
  const std::string hf = synth(arch, 25);
  const std::string gguf = tempDir() + "/" + arch + ".gguf";
  CommandResult c = runHyc({"convert-gguf", hf, gguf});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::vector<int32_t> t = tokens(40);
  const Logits a = logitsOf(compileOnce(hf, kBounds), t, 17);
  const Logits b = logitsOf(compileOnce(gguf, kBounds), t, 17);
  ASSERT_FALSE(a.all.empty());
  ASSERT_EQ(a.all.size(), b.all.size());
  // The GGUF holds float32 metadata (Hunyuan's alpha-scaled base, YaRN's
  // factors: relative 1e-8 from the double): far below the tolerance.
  EXPECT_LT(maxAbsDiff(a.all, b.all), 1e-4);
  EXPECT_LT(maxAbsDiff(a.inc, b.inc), 1e-4);
  const size_t vocab = a.all.size() / t.size();
  for (size_t r = 0; r < t.size(); ++r)
    EXPECT_EQ(argmaxRow(&a.all[r * vocab], vocab), argmaxRow(&b.all[r * vocab], vocab))
        << "row " << r;
  // A different seed is a different model (the comparison has teeth).
  const Logits other = logitsOf(compileOnce(synth(arch, 26), kBounds), t, 17);
  EXPECT_GT(maxAbsDiff(a.all, other.all), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Synth, FamilyGguf,
                         ::testing::Values(std::string("hunyuan-moe"), std::string("deepseek-v2"),
                                           std::string("deepseek-v2-lite")),
                         caseName);

} // namespace
} // namespace hyc::e2e
