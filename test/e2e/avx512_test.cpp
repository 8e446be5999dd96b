// --target=avx512: linear layers on the generated brgemm kernels embedded in
// the artifact. fp32 kernels must still match the golden logits (only the
// summation order differs); W8A8 must stay within 0.1 perplexity of fp32 on
// the real model (DESIGN.md) and close to the fp32 reference logits; bf16
// weights stay within the bf16 tolerance (FMA on any AVX-512 host; the
// native vdpbf16ps target is refused clearly on hosts without avx512_bf16).
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/artifact/cpu_features.h"
#include "hyrt/cli/npy.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <regex>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

#define REQUIRE_FEATURE(f)                                                     \
  if (!hyrt::host_has_cpu_feature(f))                                          \
  GTEST_SKIP() << "host lacks " << f << ": running these kernels is skipped"

bool haveGolden(const std::string &name) {
  struct stat st;
  return stat((sharedDir() + "/golden/" + name).c_str(), &st) == 0;
}

class Avx512Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Avx512Golden, F32KernelsMatchGoldenLogits) {
  REQUIRE_FEATURE("avx512f");
  if (!haveGolden(GetParam()))
    GTEST_SKIP() << "golden data absent";
  std::string dir = sharedDir() + "/golden/" + GetParam();
  LoadedModel m = loadModel(compileOnce(dir, {"--target", "avx512", "--max-seq-len", "128",
                                              "--max-batch-tokens", "64", "--kv-cache", "f32"}));
  ASSERT_TRUE(m.engine);
  auto inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
  for (const char *n : {"7", "64"}) {
    auto tokens = inputs["sequences"][n].get<std::vector<int32_t>>();
    hyrt::NpyArray want;
    ASSERT_TRUE(hyrt::read_npy_f32(dir + "/logits_" + std::string(n) + ".npy", &want).ok());
    std::vector<float> got = wholeSequenceLogits(*m.engine, tokens);
    float d = maxAbsDiff(got, want.data);
    std::printf("%s avx512/f32 logits_%s: max abs diff %.3g\n", GetParam().c_str(), n, d);
    // Only the summation order differs from the F32 golden logits: the
    // error model of golden_test.cpp (kTolerance) applies.
    EXPECT_LE(d, 1e-4f);
  }
  auto greedy = nlohmann::json::parse(readFile(dir + "/greedy16.json"));
  hyrt::GenerateOptions opts;
  opts.max_new_tokens = 16;
  opts.sampler.temperature = 0;
  hyrt::GenerateResult r;
  ASSERT_TRUE(m.engine->generate(greedy["prompt"].get<std::vector<int32_t>>(), opts,
                                 nullptr, &r).ok());
  EXPECT_EQ(r.tokens, greedy["tokens"].get<std::vector<int32_t>>());
}

TEST_P(Avx512Golden, Avx2F32KernelsMatchGoldenLogits) {
  REQUIRE_FEATURE("avx2");
  if (!haveGolden(GetParam()))
    GTEST_SKIP() << "golden data absent";
  std::string dir = sharedDir() + "/golden/" + GetParam();
  LoadedModel m = loadModel(compileOnce(dir, {"--target", "avx2", "--max-seq-len", "128",
                                              "--max-batch-tokens", "64", "--kv-cache", "f32"}));
  ASSERT_TRUE(m.engine);
  auto inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
  auto tokens = inputs["sequences"]["64"].get<std::vector<int32_t>>();
  hyrt::NpyArray want;
  ASSERT_TRUE(hyrt::read_npy_f32(dir + "/logits_64.npy", &want).ok());
  float d = maxAbsDiff(wholeSequenceLogits(*m.engine, tokens), want.data);
  std::printf("%s avx2/f32 logits_64: max abs diff %.3g\n", GetParam().c_str(), d);
  EXPECT_LE(d, 1e-4f);
  EXPECT_LT(maxAbsDiff(wholeSequenceLogits(*m.engine, tokens),
                       incrementalLogits(*m.engine, tokens, 20)),
            1e-4);
}

TEST_P(Avx512Golden, W8A8KernelsMatchTheW8A8ReferenceAndKvConsistent) {
  REQUIRE_FEATURE("avx512_vnni");
  if (!haveGolden(GetParam()))
    GTEST_SKIP() << "golden data absent";
  std::string dir = sharedDir() + "/golden/" + GetParam();
  std::vector<std::string> bounds = {"--max-seq-len", "128", "--max-batch-tokens", "64"};
  std::vector<std::string> refW8 = bounds, w8 = bounds;
  refW8.insert(refW8.end(), {"--quant", "w8a8"});
  w8.insert(w8.end(), {"--target", "avx512", "--quant", "w8a8", "--kv-cache", "f32"});
  LoadedModel f32 = loadModel(compileOnce(dir, bounds));
  LoadedModel ref = loadModel(compileOnce(dir, refW8));
  LoadedModel q = loadModel(compileOnce(dir, w8));
  ASSERT_TRUE(f32.engine && ref.engine && q.engine);
  auto tokens = goldenTokens(dir, "33");
  std::vector<float> a = wholeSequenceLogits(*f32.engine, tokens);
  std::vector<float> r = wholeSequenceLogits(*ref.engine, tokens);
  std::vector<float> b = wholeSequenceLogits(*q.engine, tokens);
  const size_t vocab = f32.engine->vocab_size(), rows = a.size() / vocab;
  double worstCos = 1;
  size_t top1 = 0;
  for (size_t i = 0; i < rows; ++i) {
    worstCos = std::min(worstCos, hyc::test::cosine(&a[i * vocab], &b[i * vocab], vocab));
    top1 += argmaxRow(&a[i * vocab], vocab) == argmaxRow(&b[i * vocab], vocab);
  }
  std::printf("%s w8a8 kernels vs w8a8 reference: max abs %.3g; vs fp32: max abs "
              "%.3g, min cosine %.6f, top-1 agreement %zu/%zu\n",
              GetParam().c_str(), maxAbsDiff(r, b), maxAbsDiff(a, b), worstCos, top1,
              rows);
  // Same quantization (per-channel int8 weights, per-token int8 activations
  // rounded alike): the kernels' int32 sums are exact, so only the fp32
  // rescale and the other ops' summation order differ, as for f32 kernels
  // (1e-4). Rounding to int8 or bf16 (router, lm_head) and top-k routing are
  // discontinuous: an ulp-level difference can flip a rounding or an
  // expert choice for a token, which then reaches later positions through
  // attention. Such flips are rare (measured: 1 of 33 rows on qwen3moe-tiny
  // here, none on the dense model), so most rows must match to 1e-4.
  const size_t matching = hyc::test::rowsWithin(r, b, vocab, 1e-4f);
  std::printf("%s rows of w8a8 kernels within 1e-4 of the w8a8 reference: %zu/%zu\n",
              GetParam().c_str(), matching, rows);
  EXPECT_GT(4 * matching, 3 * rows);
  EXPECT_GT(maxAbsDiff(a, b), 1e-5) << "w8a8 logits identical to fp32: not quantized?";
  // Distance to fp32 (the quantization error itself): symmetric int8 with a
  // max-abs scale has a rounding error of std step/sqrt(12), step = max/127.
  // Taking the row max as c = 6 standard deviations (Gaussian rows of a few
  // hundred elements reach ~3; 6 leaves room for heavier tails), that is a
  // relative error of 6 / (127 sqrt(12)) = 0.0137 per operand and 0.019 per
  // GEMM output (weight and activation errors independent). The logits of
  // the 2-layer llama-tiny sum the errors of its 14 quantized GEMMs (q, k, v,
  // o, gate, up, down per layer; lm_head stays fp32): relative error
  // eps <= sqrt(14) * 0.019 = 0.072, so cosine >= 1 - eps^2 / 2 = 0.997, and
  // each logit moves by at most ~4 eps rms(row): rows whose fp32 top-2 margin
  // exceeds twice that keep their argmax.
  // MoE routers stay fp32, but their inputs carry the upstream error, so a
  // token whose router margin is smaller than it picks another expert: a
  // different function, not a rounding error. MoE models are held to the
  // reference comparison above (and to perplexity on a trained model).
  if (GetParam().find("moe") == std::string::npos &&
      GetParam().find("deepseek") == std::string::npos) {
    EXPECT_GT(worstCos, 0.997);
    constexpr double kEps = 0.072;
    size_t checked = 0;
    for (size_t i = 0; i < rows; ++i) {
      std::vector<float> row(a.begin() + i * vocab, a.begin() + (i + 1) * vocab);
      double rms = std::sqrt(std::inner_product(row.begin(), row.end(), row.begin(), 0.0) /
                             double(vocab));
      std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
      if (row[0] - row[1] <= 8 * kEps * rms)
        continue;
      ++checked;
      EXPECT_EQ(argmaxRow(&a[i * vocab], vocab), argmaxRow(&b[i * vocab], vocab))
          << "row " << i << " (fp32 margin " << row[0] - row[1] << ")";
    }
    std::printf("top-1 checked on %zu rows with a margin above 8 eps rms\n", checked);
    EXPECT_GT(checked, 0u);
  }
  // Per-token activation scales make rows independent of the batch: the KV
  // cache path must agree with the whole sequence.
  EXPECT_LT(maxAbsDiff(b, incrementalLogits(*q.engine, tokens, 20)), 1e-4);
}

// The fast artifacts (MLA on the absorbed kernel) against the reference
// artifacts of the same model, teacher-forced over 64 tokens, through
// extend (every row) and through 56 decode steps after an 8-token prefix:
// per-position logit cosine >= 0.999 for bf16 weights (as users get them:
// bf16 KV cache) against the fp32 reference, and >= 0.99 for W8A8 (issue
// 8's bar). W8A8 is held to that against the W8A8 reference with the same
// fp32 cache (same quantization and cache: what differs is the kernels)
// and, for dense models, as users get it (bf16 cache) against fp32 too.
// An MoE router is discontinuous: with int8 activations, a bf16 rounding
// of a cached key that lands one ulp apart (kernel sum order) moves the
// next quantized activation and may switch a token's experts, which no
// cosine bound on the logits can absorb (measured on the tiny MoE models,
// bf16 cache on both sides: 0.978 for qwen3moe-tiny; against an fp32-cache
// reference, 0.96 for deepseekv3-grouped-tiny). The bf16 cache itself is
// held to the reference by the bf16 rows and KvCacheBf16OnTheReferenceTarget.
TEST_P(Avx512Golden, FastArtifactsMatchTheReferenceTeacherForced) {
  REQUIRE_FEATURE("avx512f");
  REQUIRE_FEATURE("avx512_vnni");
  if (!haveGolden(GetParam()))
    GTEST_SKIP() << "golden data absent";
  const std::string dir = sharedDir() + "/golden/" + GetParam();
  const std::vector<std::string> bounds = {"--max-seq-len", "128", "--max-batch-tokens", "64"};
  auto tokens = goldenTokens(dir, "64");
  ASSERT_EQ(tokens.size(), 64u);
  struct Logits {
    std::vector<float> all, inc;
  };
  auto logitsOf = [&](LoadedModel &m) {
    return Logits{wholeSequenceLogits(*m.engine, tokens), incrementalLogits(*m.engine, tokens, 8)};
  };
  std::vector<std::string> refW8 = bounds;
  refW8.insert(refW8.end(), {"--quant", "w8a8"});
  LoadedModel ref = loadModel(compileOnce(dir, bounds)), refQ = loadModel(compileOnce(dir, refW8));
  ASSERT_TRUE(ref.engine && refQ.engine);
  const hyrt::Manifest &rm = ref.artifact->manifest();
  const int64_t vocab = rm.model.vocab_size;
  const bool moe = rm.model.num_experts > 0;
  const Logits f32 = logitsOf(ref), w8 = logitsOf(refQ);

  auto check = [&](const Logits &got, const Logits &want, double minCosine, const char *what) {
    double worst = 1.0;
    for (auto [g, w] : {std::pair{&got.all, &want.all}, std::pair{&got.inc, &want.inc}}) {
      ASSERT_EQ(g->size(), w->size());
      for (size_t p = 0; p < tokens.size(); ++p) {
        const double c =
            hyc::test::cosine(g->data() + p * vocab, w->data() + p * vocab, size_t(vocab));
        worst = std::min(worst, c);
        EXPECT_GE(c, minCosine) << what << " position " << p;
      }
    }
    std::printf("%s %s: worst per-position cosine %.6f (bar %.3f)\n", GetParam().c_str(), what,
                worst, minCosine);
  };
  for (const char *quant : {"bf16", "w8a8"}) {
    std::vector<std::string> flags = bounds;
    flags.insert(flags.end(), {"--target", "avx512", "--quant", quant});
    LoadedModel fast = loadModel(compileOnce(dir, flags));
    ASSERT_TRUE(fast.engine);
    EXPECT_EQ(fast.artifact->manifest().kv_cache.dtype, "bf16") << quant;
    const Logits got = logitsOf(fast);
    if (std::string(quant) == "bf16") {
      check(got, f32, 0.999, "avx512 bf16 vs fp32 reference");
      continue;
    }
    if (!moe)
      check(got, f32, 0.99, "avx512 w8a8 vs fp32 reference");
    flags.insert(flags.end(), {"--kv-cache", "f32"});
    LoadedModel fastF32 = loadModel(compileOnce(dir, flags));
    ASSERT_TRUE(fastF32.engine);
    check(logitsOf(fastF32), w8, 0.99, "avx512 w8a8 (fp32 cache) vs w8a8 reference");
  }
}

// The reference target reads a bf16 cache too (it widens the rows): values
// are rounded once, on append, so the logits stay within bf16's relative
// half-ulp (2^-9) of each cached element: cosine >= 0.999 against the fp32
// cache. `auto` keeps fp32 there; an unknown dtype is refused.
TEST_P(Avx512Golden, KvCacheBf16OnTheReferenceTarget) {
  if (!haveGolden(GetParam()))
    GTEST_SKIP() << "golden data absent";
  const std::string dir = sharedDir() + "/golden/" + GetParam();
  const std::vector<std::string> bounds = {"--max-seq-len", "128", "--max-batch-tokens", "64"};
  auto tokens = goldenTokens(dir, "64");
  std::vector<std::string> bf16 = bounds;
  bf16.insert(bf16.end(), {"--kv-cache", "bf16"});
  LoadedModel f32 = loadModel(compileOnce(dir, bounds)), b16 = loadModel(compileOnce(dir, bf16));
  ASSERT_TRUE(f32.engine && b16.engine);
  EXPECT_EQ(f32.artifact->manifest().kv_cache.dtype, "f32");
  EXPECT_EQ(b16.artifact->manifest().kv_cache.dtype, "bf16");
  const int64_t vocab = f32.artifact->manifest().model.vocab_size;
  const auto a = incrementalLogits(*f32.engine, tokens, 8),
             b = incrementalLogits(*b16.engine, tokens, 8);
  ASSERT_EQ(a.size(), b.size());
  double worst = 1.0;
  for (size_t p = 0; p < tokens.size(); ++p)
    worst = std::min(worst, hyc::test::cosine(a.data() + p * vocab, b.data() + p * vocab,
                                              size_t(vocab)));
  EXPECT_GE(worst, 0.999);
  // Not equal: the cache really is rounded.
  EXPECT_GT(maxAbsDiff(a, b), 0.0);
  const std::string out = ::testing::TempDir() + "/kvref-" + GetParam();
  CommandResult r = runHyc({"compile", dir, "-o", out, "--kv-cache", "f16"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--kv-cache expects auto|f32|bf16|int8, got 'f16'"), std::string::npos)
      << r.err;
}

INSTANTIATE_TEST_SUITE_P(Golden, Avx512Golden,
                         ::testing::Values("llama-tiny", "qwen3moe-tiny",
                                           "deepseekv3-grouped-tiny"),
                         caseName);


TEST(Avx512Stories, W8A8WithinPointOnePerplexityOfFp32) {
  REQUIRE_FEATURE("avx512_vnni");
  if (!haveShared())
    GTEST_SKIP() << "../shared/models absent";
  std::string model = sharedDir() + "/models/stories260K/stories260K.bin";
  std::vector<std::string> bounds = {"--max-seq-len", "256", "--max-batch-tokens", "64"};
  std::vector<std::string> w8 = bounds;
  w8.insert(w8.end(), {"--target", "avx512", "--quant", "w8a8"});
  std::string q = compileOnce(model, w8);
  double pF32 = std::exp(meanNll(compileOnce(model, bounds)));
  double pW8 = std::exp(meanNll(q));
  std::printf("stories260K perplexity: fp32 %.4f, w8a8 %.4f\n", pF32, pW8);
  EXPECT_LT(std::fabs(pW8 - pF32), 0.1);
  CommandResult r = runHyc({"run", q, "--prompt", "", "-n", "40", "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u)
      << r.out;
}

// --quant-lm-head int8: the (tied) head GEMM reads its own per-channel int8
// copy of the table, the embedding keeps fp32 rows; its perplexity cost on
// the trained model is printed and held to the W8A8 bar (0.1 of fp32).
TEST(Avx512Stories, Int8LmHeadWithinPointOnePerplexityOfFp32) {
  REQUIRE_FEATURE("avx512_vnni");
  if (!haveShared())
    GTEST_SKIP() << "../shared/models absent";
  std::string model = sharedDir() + "/models/stories260K/stories260K.bin";
  std::vector<std::string> bounds = {"--max-seq-len", "256", "--max-batch-tokens", "64"};
  std::vector<std::string> head8 = bounds;
  head8.insert(head8.end(), {"--target", "avx512", "--quant", "w8a8", "--quant-lm-head", "int8"});
  std::string q = compileOnce(model, head8);
  auto manifest = nlohmann::json::parse(readFile(q + "/manifest.json"));
  bool int8Head = false, fp32Table = false;
  for (const auto &t : manifest["weights"]["tensors"]) {
    const std::string name = t["name"];
    int8Head |= name == "model.embed_tokens.weight#w8a8" && t["dtype"] == "s8_vnni4";
    fp32Table |= name == "model.embed_tokens.weight" && t["dtype"] == "f32";
  }
  EXPECT_TRUE(int8Head && fp32Table) << manifest["weights"].dump();
  double pF32 = std::exp(meanNll(compileOnce(model, bounds)));
  double pHead8 = std::exp(meanNll(q));
  std::printf("stories260K perplexity: fp32 %.4f, w8a8 + int8 head %.4f\n", pF32, pHead8);
  EXPECT_LT(std::fabs(pHead8 - pF32), 0.1);
  CommandResult r = runHyc({"compile", model, "-o", ::testing::TempDir() + "/head8-bad",
                            "--quant", "bf16", "--quant-lm-head", "int8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--quant-lm-head int8 needs an integer --quant"), std::string::npos) << r.err;
}

TEST(Avx512Stories, F32KernelsReproducePublishedSample) {
  REQUIRE_FEATURE("avx512f");
  if (!haveShared())
    GTEST_SKIP() << "../shared/models absent";
  std::string art = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                                {"--max-seq-len", "256", "--target", "avx512"});
  CommandResult r = runHyc({"run", art, "--prompt", "", "-n", "256", "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, readFile(sharedDir() + "/models/stories260K/expected-greedy-256.txt"));
}

/// bf16 weights, fp32 logits compared with the fp32 reference at the
/// DESIGN.md bf16 tolerance (atol = rtol = 1e-2).
void expectBf16Close(const std::vector<float> &ref, const std::vector<float> &got) {
  ASSERT_EQ(ref.size(), got.size());
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_LE(std::fabs(ref[i] - got[i]), 1e-2 + 1e-2 * std::fabs(ref[i])) << i;
}

TEST(Avx512Bf16, FmaKernelsReproduceTheBf16WeightReference) {
  REQUIRE_FEATURE("avx512f");
  if (!haveGolden("llama-tiny"))
    GTEST_SKIP() << "golden data absent";
  std::string dir = sharedDir() + "/golden/llama-tiny";
  std::vector<std::string> bounds = {"--max-seq-len", "128", "--max-batch-tokens", "64"};
  std::vector<std::string> refBf = bounds, bf = bounds;
  refBf.insert(refBf.end(), {"--quant", "bf16"});
  bf.insert(bf.end(), {"--target", "avx512", "--quant", "bf16", "--kv-cache", "f32"});
  LoadedModel f32 = loadModel(compileOnce(dir, bounds));
  LoadedModel ref = loadModel(compileOnce(dir, refBf)); // f32 GEMMs, bf16-rounded weights
  LoadedModel b = loadModel(compileOnce(dir, bf));
  ASSERT_TRUE(f32.engine && ref.engine && b.engine);
  auto tokens = goldenTokens(dir, "64");
  std::vector<float> w = wholeSequenceLogits(*f32.engine, tokens);
  std::vector<float> x = wholeSequenceLogits(*ref.engine, tokens);
  std::vector<float> y = wholeSequenceLogits(*b.engine, tokens);
  std::printf("llama-tiny: bf16 weights vs fp32 max abs %.3g; FMA kernels vs their "
              "fp32 reference %.3g\n", maxAbsDiff(w, x), maxAbsDiff(x, y));
  // Rounding the weights to bf16 is a different model (the golden README
  // measures up to 0.0432 on logits_64) ...
  EXPECT_GT(maxAbsDiff(w, x), 1e-3);
  EXPECT_LT(maxAbsDiff(w, x), 0.06);
  // ... which the kernels (fp32 activations and accumulation) reproduce.
  EXPECT_LT(maxAbsDiff(x, y), 1e-4);
  EXPECT_LT(maxAbsDiff(y, incrementalLogits(*b.engine, tokens, 20)), 1e-4);
}

TEST(Avx512Bf16, MoeBf16KernelsReproduceTheBf16WeightReference) {
  REQUIRE_FEATURE("avx512f");
  if (!haveGolden("qwen3moe-tiny"))
    GTEST_SKIP() << "golden data absent";
  std::string dir = sharedDir() + "/golden/qwen3moe-tiny";
  std::vector<std::string> refBf = {"--max-seq-len", "128", "--max-batch-tokens", "64",
                                    "--quant", "bf16"};
  std::vector<std::string> bf = refBf;
  bf.insert(bf.end(), {"--target", "avx512", "--kv-cache", "f32"});
  LoadedModel ref = loadModel(compileOnce(dir, refBf));
  LoadedModel b = loadModel(compileOnce(dir, bf));
  ASSERT_TRUE(ref.engine && b.engine);
  auto tokens = goldenTokens(dir, "33");
  EXPECT_LT(maxAbsDiff(wholeSequenceLogits(*ref.engine, tokens),
                       wholeSequenceLogits(*b.engine, tokens)),
            1e-4);
}

TEST(Avx512Bf16, NativeRunsWhereSupportedAndIsRefusedClearlyElsewhere) {
  if (!haveGolden("llama-tiny"))
    GTEST_SKIP() << "golden data absent";
  std::string dir = sharedDir() + "/golden/llama-tiny";
  std::vector<std::string> bounds = {"--max-seq-len", "128", "--max-batch-tokens", "64"};
  std::vector<std::string> native = bounds, weightsOnly = bounds, sameRounding = bounds;
  native.insert(native.end(), {"--target", "avx512-bf16", "--quant", "bf16", "--kv-cache", "f32"});
  weightsOnly.insert(weightsOnly.end(), {"--quant", "bf16"});
  sameRounding.insert(sameRounding.end(), {"--quant", "bf16", "--bf16-activations"});
  std::string art = compileOnce(dir, native);
  if (!hyrt::host_has_cpu_feature("avx512_bf16")) {
    CommandResult r = runHyc({"run", art, "--prompt-ids", "1,5", "-n", "2"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("avx512_bf16"), std::string::npos) << r.err;
    GTEST_SKIP() << "host lacks avx512_bf16: checked the clear refusal only";
  }
  LoadedModel w = loadModel(compileOnce(dir, weightsOnly));
  LoadedModel x = loadModel(compileOnce(dir, sameRounding));
  LoadedModel b = loadModel(art);
  ASSERT_TRUE(w.engine && x.engine && b.engine);
  auto tokens = goldenTokens(dir, "33");
  std::vector<float> ws = wholeSequenceLogits(*w.engine, tokens);
  std::vector<float> xs = wholeSequenceLogits(*x.engine, tokens);
  std::vector<float> bs = wholeSequenceLogits(*b.engine, tokens);
  std::printf("llama-tiny native bf16: vs bf16-weight reference %.3g, vs the "
              "reference that also rounds activations %.3g\n",
              maxAbsDiff(ws, bs), maxAbsDiff(xs, bs));
  // vdpbf16ps reads bf16 activations: rounding them is part of the kernel's
  // semantics, a change of the model of the same order as rounding the
  // weights (see FmaKernelsReproduceTheBf16WeightReference). The fp32-
  // activation reference is therefore the wrong yardstick (that comparison
  // failed on Zen 4 with 0.0163 > 0.0118: expected error, not a bug); the
  // reference that rounds the same activations (nearest even) and
  // accumulates in higher precision is the right one.
  EXPECT_GT(maxAbsDiff(ws, xs), 1e-3) << "activation rounding had no effect";
  // Rounding is discontinuous: an activation within a few fp32 ulps of a
  // bf16 rounding boundary goes to the other neighbour when the summation
  // order upstream differs (kernel vs reference, or another row block), a
  // change of one bf16 ulp that then propagates to later positions through
  // attention. The chance per element is ~ fp32 spread / bf16 spacing
  // ~ 2^-22 / 2^-8, i.e. 1e-4, over ~2e3 rounded activations per row: most
  // rows see no such flip and then agree to fp32 accumulation error (1e-4,
  // as for the FMA kernels). Measured here: rows before the first flip are
  // bit-identical to the reference.
  const size_t vocab = bs.size() / tokens.size();
  size_t exact = hyc::test::rowsWithin(xs, bs, vocab, 1e-4f);
  std::vector<float> inc = incrementalLogits(*b.engine, tokens, 20);
  size_t incExact = hyc::test::rowsWithin(inc, bs, vocab, 1e-4f);
  std::printf("rows within fp32 accumulation error: vs reference %zu/%zu, "
              "incremental vs whole %zu/%zu\n", exact, tokens.size(), incExact,
              tokens.size());
  // A flip moves one activation by one bf16 step, 2^-8 of its value; it
  // reaches later positions through attention and, in the lm_head's input,
  // every logit of its row, so flipped rows are held to the size of the
  // whole activation-rounding effect (ws vs xs), not to a fixed atol.
  EXPECT_GT(2 * exact, tokens.size());
  EXPECT_GT(2 * incExact, tokens.size());
  EXPECT_LT(maxAbsDiff(xs, bs), maxAbsDiff(ws, xs));
  EXPECT_LT(maxAbsDiff(inc, bs), maxAbsDiff(ws, xs));
}

} // namespace
} // namespace hyc::e2e

namespace hyc::e2e {
namespace {
TEST(Avx512Stories, StandaloneExecutableWithKernels) {
  REQUIRE_FEATURE("avx512_vnni");
  if (!haveShared())
    GTEST_SKIP() << "../shared/models absent";
  std::string out = tempDir() + "/exe-w8a8.hyc";
  CommandResult c = runHyc({"compile", sharedDir() + "/models/stories260K/stories260K.bin",
                            "-o", out, "--emit", "exe", "--target", "avx512", "--quant",
                            "w8a8", "--max-seq-len", "128"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::string cmd = out + "/model --prompt '' -n 30 --temperature 0 > " + out +
                    "/exe.out 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(readFile(out + "/exe.out")
                .rfind("Once upon a time, there was a little girl named Lily.", 0),
            0u)
      << readFile(out + "/exe.out");
}
} // namespace
} // namespace hyc::e2e
