// End to end on the real stories260K model: published greedy sample, the
// three checkpoint formats, perplexity, KV-cache consistency, shape bounds,
// and clear errors for malformed inputs.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/artifact/cpu_features.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

#define REQUIRE_SHARED()                                                       \
  if (!haveShared())                                                           \
  GTEST_SKIP() << "../shared/models is absent: real-model e2e test skipped"

std::string stories(const std::string &file) {
  return sharedDir() + "/models/stories260K/" + file;
}

const std::vector<std::string> kBounds = {"--max-seq-len", "256",
                                          "--max-batch-tokens", "64"};

std::string greedy256(const std::string &artifact) {
  CommandResult r = runHyc({"run", artifact, "--prompt", "", "-n", "256",
                            "--temperature", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(Stories260K, LlamaCBinReproducesPublishedGreedySample) {
  REQUIRE_SHARED();
  std::string expected = readFile(stories("expected-greedy-256.txt"));
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(greedy256(compileOnce(stories("stories260K.bin"), kBounds)), expected);
}

TEST(Stories260K, GgufReproducesPublishedGreedySample) {
  REQUIRE_SHARED();
  std::string expected = readFile(stories("expected-greedy-256.txt"));
  EXPECT_EQ(greedy256(compileOnce(stories("stories260K-f32.gguf"), kBounds)),
            expected);
}

double perplexityOf(const std::string &artifact) {
  static std::map<std::string, double> memo;
  if (memo.count(artifact))
    return memo[artifact];
  CommandResult r = runHyc({"perplexity", artifact, "--text",
                            sharedDir() + "/models/tinystories-valid-text/tinystories_val.txt",
                            "--max-paragraphs", "200"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  std::regex re("mean NLL: ([0-9.]+)");
  EXPECT_TRUE(std::regex_search(r.out, m, re)) << r.out;
  std::printf("%s", r.out.c_str());
  double nll = m.size() > 1 ? std::atof(m[1].str().c_str()) : 1e9;
  memo[artifact] = nll;
  return nll;
}

/// Paragraphs of the TinyStories excerpt as `hyc perplexity` splits them
/// (runs of non-blank lines joined by '\n').
std::vector<std::string> paragraphs(size_t limit) {
  std::istringstream in(
      readFile(sharedDir() + "/models/tinystories-valid-text/tinystories_val.txt"));
  std::vector<std::string> out;
  std::string line, current;
  auto blank = [](const std::string &l) {
    return l.find_first_not_of(" \t\r\n\f\v") == std::string::npos;
  };
  while (out.size() < limit && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (blank(line)) {
      if (!current.empty())
        out.push_back(current);
      current.clear();
    } else {
      current += (current.empty() ? "" : "\n") + line;
    }
  }
  if (!current.empty() && out.size() < limit)
    out.push_back(current);
  return out;
}

TEST(Stories260K, PerplexityEqualsTheNllOfTheFp32Logits) {
  REQUIRE_SHARED();
  // `hyc perplexity` packs several paragraphs into each extend step; here
  // each paragraph runs alone and its NLL is computed from the fp32 logits
  // in double. Rows are computed independently, so the two differ only in
  // the order of the double-precision sums and in the printed digits
  // (%.6f): the stated margin is 2e-6 nats.
  constexpr size_t kParagraphs = 20;
  std::string art = compileOnce(stories("stories260K.bin"), kBounds);
  CommandResult r = runHyc({"perplexity", art, "--text",
                            sharedDir() + "/models/tinystories-valid-text/tinystories_val.txt",
                            "--max-paragraphs", std::to_string(kParagraphs)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("mean NLL: ([0-9.]+)"))) << r.out;
  double scored = std::atof(m[1].str().c_str());

  LoadedModel model = loadModel(art);
  ASSERT_TRUE(model.engine);
  const hyrt::Tokenizer *tok = model.artifact->tokenizer();
  ASSERT_NE(tok, nullptr);
  int64_t vocab = model.engine->vocab_size();
  double total = 0;
  int64_t count = 0;
  for (const std::string &p : paragraphs(kParagraphs)) {
    std::vector<int32_t> ids = tok->encode(p, true);
    if (ids.size() > 256)
      ids.resize(256);
    std::vector<float> logits = wholeSequenceLogits(*model.engine, ids);
    for (size_t t = 0; t + 1 < ids.size(); ++t) {
      const float *row = logits.data() + t * vocab;
      double mx = *std::max_element(row, row + vocab), sum = 0;
      for (int64_t i = 0; i < vocab; ++i)
        sum += std::exp(double(row[i]) - mx);
      total += mx + std::log(sum) - row[ids[t + 1]];
      ++count;
    }
  }
  ASSERT_GT(count, 0);
  std::printf("stories260K mean NLL over %zu paragraphs: hyc perplexity %.6f, "
              "from fp32 logits %.6f\n", kParagraphs, scored, total / count);
  EXPECT_NEAR(scored, total / count, 2e-6);
}

TEST(Stories260K, Q80IsFluentAndWithinPointOnePerplexityOfF32) {
  REQUIRE_SHARED();
  std::string q80 = compileOnce(stories("stories260K_q80.bin"), kBounds);
  std::string text = greedy256(q80);
  EXPECT_EQ(text.rfind("Once upon a time", 0), 0u) << text;
  double nllF32 = perplexityOf(compileOnce(stories("stories260K.bin"), kBounds));
  double nllQ80 = perplexityOf(q80);
  EXPECT_LT(std::fabs(std::exp(nllQ80) - std::exp(nllF32)), 0.1);
}

/// Tokens of a real sentence, BOS first.
std::vector<int32_t> sampleTokens(hyrt::Engine &engine, size_t n) {
  const hyrt::Tokenizer *tok = engine.artifact().tokenizer();
  EXPECT_NE(tok, nullptr);
  std::vector<int32_t> ids = tok->encode(
      "Once upon a time, there was a little dog named Max. Max liked to run "
      "in the park with his friend Tom. One day they found a big red ball.",
      /*add_bos=*/true);
  EXPECT_GE(ids.size(), n);
  ids.resize(n);
  return ids;
}

TEST(Stories260K, ExtendThenDecodeEqualsWholeSequence) {
  REQUIRE_SHARED();
  std::string art = compileOnce(stories("stories260K.bin"), kBounds);
  for (int64_t pageSize : {1, 4, 16}) {
    LoadedModel m = loadModel(art, pageSize);
    ASSERT_TRUE(m.engine);
    std::vector<int32_t> tokens = sampleTokens(*m.engine, 40);
    std::vector<float> whole = wholeSequenceLogits(*m.engine, tokens);
    for (size_t split : {1, 5, 17, 39}) {
      std::vector<float> inc = incrementalLogits(*m.engine, tokens, split);
      EXPECT_LT(maxAbsDiff(whole, inc), 1e-4)
          << "page size " << pageSize << ", split " << split;
    }
    // Chunked extend: prefix in one extend, the rest in a second one.
    int64_t seq = m.engine->add_sequence();
    std::vector<float> a, b;
    std::vector<int32_t> head(tokens.begin(), tokens.begin() + 23),
        tail(tokens.begin() + 23, tokens.end());
    ASSERT_TRUE(m.engine->extend(seq, head, &a).ok());
    ASSERT_TRUE(m.engine->extend(seq, tail, &b).ok());
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_LT(maxAbsDiff(whole, a), 1e-4) << "page size " << pageSize;
    ASSERT_TRUE(m.engine->release(seq).ok());
  }
}

TEST(Stories260K, PositionsMatter) {
  // Guards the test above: shifting the tokens by one position changes the
  // logits, so equal logits there really mean equal positions.
  REQUIRE_SHARED();
  LoadedModel m = loadModel(compileOnce(stories("stories260K.bin"), kBounds));
  ASSERT_TRUE(m.engine);
  std::vector<int32_t> tokens = sampleTokens(*m.engine, 12);
  std::vector<float> whole = wholeSequenceLogits(*m.engine, tokens);
  std::vector<int32_t> shifted = {1};
  shifted.insert(shifted.end(), tokens.begin(), tokens.end());
  std::vector<float> longer = wholeSequenceLogits(*m.engine, shifted);
  std::vector<float> tailRows(longer.begin() + 512, longer.end());
  EXPECT_GT(maxAbsDiff(whole, tailRows), 1e-2);
}

TEST(Stories260K, OneArtifactServesEveryShapeUpToItsBounds) {
  REQUIRE_SHARED();
  std::vector<std::string> bounds = kBounds;
  bounds.insert(bounds.end(), {"--max-seqs", "8"}); // the 9th sequence is refused below
  std::string art = compileOnce(stories("stories260K.bin"), bounds);
  LoadedModel m = loadModel(art);
  ASSERT_TRUE(m.engine);
  std::vector<int32_t> base = sampleTokens(*m.engine, 40);
  for (size_t len : {1, 2, 17, 63, 64}) {
    std::vector<int32_t> prompt;
    for (size_t i = 0; i < len; ++i)
      prompt.push_back(i == 0 ? 1 : base[1 + (i % 39)]);
    hyrt::GenerateOptions opts;
    opts.max_new_tokens = int64_t(256 - len);
    opts.sampler.temperature = 0;
    hyrt::GenerateResult result;
    hyrt::Status st = m.engine->generate(prompt, opts, nullptr, &result);
    ASSERT_TRUE(st.ok()) << "prompt " << len << ": " << st.message();
    EXPECT_EQ(int64_t(result.tokens.size()) + int64_t(len), 256)
        << "prompt " << len << " stopped: " << result.stop_reason;
  }
  // Past the bounds: a clear error, not a crash or silent truncation.
  std::vector<int32_t> tooLong(257, 5);
  tooLong[0] = 1;
  std::string ids;
  for (size_t i = 0; i < tooLong.size(); ++i)
    ids += (i ? "," : "") + std::to_string(tooLong[i]);
  CommandResult r2 = runHyc({"run", art, "--prompt-ids", ids, "-n", "1"});
  EXPECT_NE(r2.exit_code, 0);
  EXPECT_NE(r2.err.find("256"), std::string::npos) << r2.err;
  std::vector<int64_t> seqs;
  std::vector<int32_t> toks;
  for (int i = 0; i < 9; ++i) {
    int64_t s = m.engine->add_sequence();
    std::vector<float> l;
    ASSERT_TRUE(m.engine->extend(s, {1}, &l).ok());
    seqs.push_back(s);
    toks.push_back(5);
  }
  std::vector<float> l;
  hyrt::Status st = m.engine->decode(seqs, toks, &l);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("8"), std::string::npos) << st.message();
}

TEST(LargeBounds, ArenaPast256MiBRunsCorrectly) {
  // --max-batch-tokens 100000 plans a 576 MB arena: buffer offsets pass the
  // 29-bit limit of GEP's embedded constants. Logits must equal those of an
  // artifact with small bounds.
  std::string dir = sharedDir() + "/golden/llama-tiny";
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  LoadedModel big = loadModel(compileOnce(dir, {"--max-batch-tokens", "100000",
                                                "--max-seq-len", "128"}));
  LoadedModel small = loadModel(compileOnce(dir, {"--max-batch-tokens", "16",
                                                  "--max-seq-len", "128"}));
  ASSERT_TRUE(big.engine && small.engine);
  std::vector<int32_t> tokens = {1, 417, 93, 50, 60, 70, 80, 90, 100};
  EXPECT_LT(maxAbsDiff(wholeSequenceLogits(*big.engine, tokens),
                       wholeSequenceLogits(*small.engine, tokens)),
            1e-5);
}

TEST(Stories260K, StandaloneExecutableRunsWithoutHyc) {
  REQUIRE_SHARED();
  std::string out = tempDir() + "/exe.hyc";
  CommandResult c = runHyc({"compile", stories("stories260K.bin"), "-o", out,
                            "--emit", "exe", "--max-seq-len", "128"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::string cmd = out + "/model --prompt '' -n 24 --temperature 0 > " + out +
                    "/exe.out 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string expected = readFile(stories("expected-greedy-256.txt"));
  std::string got = readFile(out + "/exe.out");
  ASSERT_GT(got.size(), 20u);
  EXPECT_EQ(expected.compare(0, 20, got, 0, 20), 0) << got;
}

//===----------------------------------------------------------------------===//
// Malformed inputs through the whole driver: clear message, exit 1, no crash.
//===----------------------------------------------------------------------===//

void expectCompileError(const std::string &input, const std::string &needle) {
  CommandResult r = runHyc({"compile", input, "-o", tempDir() + "/bad.hyc"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos)
      << "expected '" << needle << "' in:\n" << r.err;
}

TEST(CompileErrors, MissingFileIsNamed) {
  expectCompileError(tempDir() + "/no-such-model.gguf", "no-such-model.gguf");
}

TEST(CompileErrors, TruncatedCheckpointsAreNamedWithSizes) {
  REQUIRE_SHARED();
  for (const char *name : {"stories260K.bin", "stories260K-f32.gguf"}) {
    std::string data = readFile(stories(name));
    for (size_t cut : {size_t(3), size_t(40), data.size() / 2, data.size() - 1}) {
      std::string path = tempDir() + "/trunc-" + std::to_string(cut) + "-" + name;
      std::ofstream(path, std::ios::binary).write(data.data(), cut);
      CommandResult r = runHyc({"compile", path, "-o", tempDir() + "/t.hyc"});
      EXPECT_EQ(r.exit_code, 1) << name << " cut at " << cut << ": " << r.err;
      EXPECT_NE(r.err.find("trunc-"), std::string::npos) << r.err;
    }
  }
}

TEST(CompileErrors, UnknownArchitectureIsNamed) {
  std::string dir = tempDir() + "/foo-model";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/config.json")
      << R"({"architectures": ["FooForCausalLM"], "model_type": "foo",
             "hidden_size": 8, "num_hidden_layers": 1, "vocab_size": 4})";
  expectCompileError(dir, "FooForCausalLM");
}

TEST(CompileErrors, MaxSeqLenBeyondModelContext) {
  REQUIRE_SHARED();
  CommandResult r = runHyc({"compile", stories("stories260K.bin"), "-o",
                            tempDir() + "/x.hyc", "--max-seq-len", "100000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("100000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("512"), std::string::npos) << r.err;
}

} // namespace
} // namespace hyc::e2e

namespace hyc::e2e {
namespace {

// --short-context N decodes a second, short sequence interleaved with the
// main one and reports the TPOT ratio; on stories260K attention is most of
// a step, so 200 cached positions must cost more than 10; a short context
// that is not shorter is refused.
TEST(Bench, ShortContextRatioFromTheSameRun) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  std::string art = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                                {"--max-seq-len", "256", "--max-batch-tokens", "64"});
  CommandResult r = runHyc({"bench", art, "--input", "200", "--output", "16", "--rounds", "1",
                            "--short-context", "10", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("long_short_tpot_ratio")) << r.out;
  EXPECT_EQ(j["short_context"], 10);
  EXPECT_GT(j["tpot_short_p50_ms"].get<double>(), 0);
  EXPECT_GT(j["long_short_tpot_ratio"].get<double>(), 1.0) << r.out;
  r = runHyc({"bench", art, "--input", "20", "--short-context", "20"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--short-context must be in [1, --input) = [1, 20), got 20"),
            std::string::npos)
      << r.err;
}

// The artifact's thread pool reads HYRT_NUM_THREADS: a malformed value is
// named in a warning (and the run goes on with the default), a valid one is
// taken silently.
TEST(Bench, MalformedThreadCountIsNamed) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  if (!hyrt::host_has_cpu_feature("avx512f"))
    GTEST_SKIP() << "host lacks avx512f: no kernel target (and no thread pool) runs here";
  std::string art = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                                {"--max-seq-len", "256", "--target", "avx512"});
  setenv("HYRT_NUM_THREADS", "two", 1);
  CommandResult r = runHyc({"run", art, "--prompt-ids", "1", "-n", "4", "--temperature", "0"});
  setenv("HYRT_NUM_THREADS", "1", 1);
  CommandResult ok = runHyc({"run", art, "--prompt-ids", "1", "-n", "4", "--temperature", "0"});
  unsetenv("HYRT_NUM_THREADS");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("HYRT_NUM_THREADS='two' is not a non-negative integer"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("HYRT_NUM_THREADS"), std::string::npos) << ok.err;
  EXPECT_EQ(r.out, ok.out) << "greedy tokens do not depend on the thread count";
}

// --no-huge-pages runs the same benchmark on 4 KiB pages and says so.
TEST(Bench, NoHugePagesIsReported) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  std::string art = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                                {"--max-seq-len", "256", "--max-batch-tokens", "64"});
  CommandResult r = runHyc({"bench", art, "--input", "8", "--output", "4", "--rounds", "1",
                            "--json", "--no-huge-pages"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["huge_pages"], false);
  EXPECT_GT(j["decode_tok_s"].get<double>(), 0);
}

// `hyc bench --json`: every field scripts read, rates consistent with the
// step times, and the bytes per decoded token following the documented rule
// recomputed here from the manifest (every weight read once per step; the
// embedding table only for the step's rows).
TEST(Bench, JsonReportOnStories260K) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  std::string art = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                                {"--max-seq-len", "256", "--max-batch-tokens", "64"});
  CommandResult r = runHyc({"bench", art, "--input", "32", "--output", "16", "--batch",
                            "2", "--rounds", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  for (const char *key :
       {"decode_tok_s", "prefill_tok_s", "ttft_ms", "tpot_ms", "tpot_p50_ms", "tpot_p99_ms",
        "decode_bytes_per_token", "stream_read_gbs", "decode_bw_efficiency",
        "prefill_flops_per_token", "peak_gflops", "prefill_compute_efficiency"}) {
    ASSERT_TRUE(j.contains(key) && j[key].is_number()) << key << " in " << r.out;
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  EXPECT_EQ(j["isa"], "reference");
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["kv_cache_dtype"], "f32"); // the reference target keeps fp32
  EXPECT_EQ(j["huge_pages"], true);
  // 2 sequences per step: tokens/s = 2 / mean step time (one round).
  EXPECT_NEAR(j["decode_tok_s"].get<double>(), 2000.0 / j["tpot_ms"].get<double>(),
              1e-3 * j["decode_tok_s"].get<double>());
  auto manifest = nlohmann::json::parse(readFile(art + "/manifest.json"));
  double bytes = 0;
  for (const auto &t : manifest["weights"]["tensors"]) {
    const std::string name = t["name"];
    const double nbytes = t["nbytes"].get<double>();
    // The table itself (no derivation suffix): only the 2 rows gathered.
    bytes += name.find("embed_tokens.weight") != std::string::npos &&
                     name.find('#') == std::string::npos
                 ? nbytes / t["shape"][0].get<double>() * 2
                 : nbytes;
  }
  EXPECT_NEAR(j["decode_bytes_per_token"].get<double>(), bytes / 2, 1.0);
  EXPECT_LT(j["decode_bw_efficiency"].get<double>(), 1.5);
  EXPECT_LT(j["prefill_compute_efficiency"].get<double>(), 1.5);
}

// An int8 tied head (`#w8a8` and its scales, derived from the table) is
// read whole every decode step; only the table itself is read by rows.
TEST(Bench, Int8TiedHeadCountsAsTheHead) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  if (!hyrt::host_has_cpu_feature("avx512_vnni"))
    GTEST_SKIP() << "host lacks avx512_vnni: a W8A8 artifact cannot run here";
  std::string q8 = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                               {"--max-seq-len", "256", "--max-batch-tokens", "64", "--target",
                                "avx512", "--quant", "w8a8", "--quant-lm-head", "int8"});
  CommandResult r8 =
      runHyc({"bench", q8, "--input", "8", "--output", "4", "--rounds", "1", "--json"});
  ASSERT_EQ(r8.exit_code, 0) << r8.err;
  auto j8 = nlohmann::json::parse(r8.out, nullptr, false);
  ASSERT_TRUE(j8.is_object()) << r8.out;
  auto m8 = nlohmann::json::parse(readFile(q8 + "/manifest.json"));
  double head = 0, all = 0;
  for (const auto &t : m8["weights"]["tensors"]) {
    const std::string name = t["name"];
    if (name.find("embed_tokens.weight#w8a8") != std::string::npos)
      head += t["nbytes"].get<double>();
    all += name == "model.embed_tokens.weight"
               ? t["nbytes"].get<double>() / t["shape"][0].get<double>()
               : t["nbytes"].get<double>();
  }
  ASSERT_GT(head, 0) << m8["weights"].dump();
  EXPECT_NEAR(j8["decode_bytes_per_token"].get<double>(), all, 1.0);
}

// --profile: the artifact's own marks. Calls per step follow from the model
// (stories260K: 5 layers; a reference artifact runs q and k through RoPE
// separately, so 2 rope calls per layer; one embedding per step), and the
// time the marks attribute lies inside the decode steps the bench times.
TEST(Bench, ProfileCountsEveryKernelCallOfAStep) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  std::string art = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                                {"--max-seq-len", "256", "--max-batch-tokens", "64"});
  CommandResult r = runHyc({"bench", art, "--input", "32", "--output", "16", "--rounds",
                            "2", "--profile", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("profile")) << r.out;
  const auto &decode = j["profile"]["decode"];
  const auto &prefill = j["profile"]["prefill"];
  const int64_t layers = nlohmann::json::parse(
      readFile(art + "/manifest.json"))["model"]["num_layers"].get<int64_t>();
  ASSERT_EQ(layers, 5);
  for (const auto *phase : {&decode, &prefill}) {
    ASSERT_TRUE(phase->contains("ref_rope") && phase->contains("ref_embedding")) << r.out;
    EXPECT_DOUBLE_EQ((*phase)["ref_rope"]["calls_per_step"].get<double>(), 2.0 * layers);
    EXPECT_DOUBLE_EQ((*phase)["ref_embedding"]["calls_per_step"].get<double>(), 1.0);
  }
  double marked = 0;
  for (const auto &[kind, v] : decode.items()) {
    EXPECT_GE(v["ms_per_step"].get<double>(), 0) << kind;
    marked += v["ms_per_step"].get<double>();
  }
  // The marks sit inside each timed decode step: their sum per step cannot
  // exceed the mean step time (a double-counted or never-closed interval
  // would); 1 us of slack for the clocks' rounding.
  EXPECT_GT(marked, 0);
  EXPECT_LE(marked, j["tpot_ms"].get<double>() + 1e-3) << r.out;

  CommandResult table = runHyc({"bench", art, "--input", "8", "--output", "4", "--rounds",
                                "1", "--profile"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("op kind"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("ref_paged_attention"), std::string::npos) << table.out;
  // Not a terminal: progress comes as plain lines on stderr, no bar.
  EXPECT_NE(table.err.find("\nround 1/1: decode 0/4\n"), std::string::npos) << table.err;
  EXPECT_EQ(table.err.find('\r'), std::string::npos) << table.err;
}

TEST(Bench, RefusesShapesBeyondTheArtifact) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  std::string art = compileOnce(sharedDir() + "/models/stories260K/stories260K.bin",
                                {"--max-seq-len", "256", "--max-batch-tokens", "64"});
  CommandResult r = runHyc({"bench", art, "--input", "250", "--output", "16"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("exceed the artifact's max_seq_len 256"), std::string::npos) << r.err;
}

} // namespace
} // namespace hyc::e2e
