// The run and perplexity commands on the stories260K fixture artifact:
// greedy output reproduces llama2.c's published sample, flags are checked,
// --logits-out has one row per fed position, perplexity is far below
// uniform, and a standalone executable runs with its directory implied.
#include "artifact_open.h"

#include "hyrt/artifact/artifact.h"
#include "hyrt/cli/cli.h"
#include "hyrt/cli/npy.h"
#include "hyrt/engine/sampler.h"
#include "hyrt/text/tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

using hyrt_test::TempDir;

struct Output {
  int code = -1;
  std::string out, err;
};

Output run(const std::vector<std::string> &args) {
  std::ostringstream out, err;
  Output o;
  o.code = hyrt::cli_run(args, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

Output perplexity(const std::vector<std::string> &args) {
  std::ostringstream out, err;
  Output o;
  o.code = hyrt::cli_perplexity(args, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

/// A stories260K artifact directory shared by the tests of this file.
class CliTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!hyrt_test::have_stories())
      return;
    dir_ = new TempDir();
    std::string error;
    ASSERT_TRUE(hyrt_test::write_stories_artifact(dir_->path(), {}, &error))
        << error;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { REQUIRE_STORIES(); }
  static std::string art() { return dir_->path(); }
  static TempDir *dir_;
};
TempDir *CliTest::dir_ = nullptr;

std::string expected_sample() {
  return hyrt_test::read_file(hyrt_test::stories_dir() +
                              "/expected-greedy-256.txt");
}

TEST_F(CliTest, GreedyFromBosReproducesPublishedSample) {
  const Output o = run({art(), "--prompt", "", "-n", "256", "--temperature",
                        "0"});
  ASSERT_EQ(o.code, 0) << o.err;
  // The file holds llama2.c's output: the 256 pieces, then its final "\n".
  EXPECT_EQ(o.out, expected_sample());
  EXPECT_TRUE(std::regex_match(
      o.err, std::regex("256 tokens, [0-9.]+ tok/s prefill, [0-9.]+ tok/s "
                        "decode\n")))
      << o.err;
  // The same through mmap'd weights, without stats.
  const Output m = run({art(), "-n", "256", "--mmap", "--no-stats"});
  EXPECT_EQ(m.code, 0);
  EXPECT_EQ(m.out, o.out);
  EXPECT_EQ(m.err, "");
}

TEST_F(CliTest, PromptIsPrintedThenContinued) {
  const std::string sample = expected_sample();
  const Output o = run({art(), "--prompt", "Once upon a time", "-n", "20",
                        "--no-stats"});
  ASSERT_EQ(o.code, 0) << o.err;
  // Greedy from the start of the sample continues the sample.
  ASSERT_GT(o.out.size(), 30u);
  EXPECT_EQ(o.out.substr(0, o.out.size() - 1),
            sample.substr(0, o.out.size() - 1));
  // Token ids 1 (BOS), 403 (" Once"): same text.
  const Output ids = run({art(), "--prompt-ids", "1,403", "-n", "3",
                          "--no-stats"});
  ASSERT_EQ(ids.code, 0) << ids.err;
  EXPECT_EQ(ids.out.rfind("Once upon a", 0), 0u) << ids.out;
  // --max-tokens (the serving API's name) is -n: the same three tokens.
  const Output named = run({art(), "--prompt-ids", "1,403", "--max-tokens", "3",
                            "--no-stats"});
  ASSERT_EQ(named.code, 0) << named.err;
  EXPECT_EQ(named.out, ids.out);
}

TEST_F(CliTest, SamplingIsSeeded) {
  auto sample = [](const std::string &seed) {
    return run({art(), "-n", "40", "--temperature", "0.9", "--top-p", "0.95",
                "--top-k", "40", "--seed", seed, "--no-stats"});
  };
  const Output a = sample("7"), b = sample("7"), c = sample("8");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST_F(CliTest, LogitsOutHasOneRowPerFedPosition) {
  TempDir tmp;
  const std::string path = tmp.file("logits.npy");
  const Output o =
      run({art(), "-n", "16", "--logits-out", path, "--no-stats",
           "--prompt", "Once upon"});
  ASSERT_EQ(o.code, 0) << o.err;
  hyrt::NpyArray a;
  ASSERT_TRUE(hyrt::read_npy_f32(path, &a).ok());
  // Prompt [BOS, " Once", " upon"] and 15 of the 16 generated tokens.
  ASSERT_EQ(a.shape, (std::vector<int64_t>{3 + 15, 512}));
  // Row 2 predicts the first generated token, " a"; row 3 " time".
  hyrt::Tokenizer tok;
  ASSERT_TRUE(hyrt::Tokenizer::load(art() + "/tokenizer.hytk", &tok).ok());
  EXPECT_EQ(tok.decode(hyrt::argmax(a.data.data() + 2 * 512, 512)),
            " a");
  EXPECT_EQ(tok.decode(hyrt::argmax(a.data.data() + 3 * 512, 512)),
            " time");
  EXPECT_EQ(o.out.rfind("Once upon a time", 0), 0u) << o.out;
}

TEST_F(CliTest, UsageErrorsExitWithTwo) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{art(), "--temperature", "hot"},
       "hyc run: --temperature expects a number >= 0, found 'hot'"},
      {{art(), "--frobnicate"}, "hyc run: unknown flag --frobnicate"},
      {{art(), "-n", "-5"}, "hyc run: -n expects an integer >= 0, found '-5'"},
      {{art(), "--top-p", "1.5"},
       "hyc run: --top-p expects a number in [0, 1], found '1.5'"},
      {{art(), "--top-p", "0"},
       "hyc run: --top-p expects a number in (0, 1], found 0"},
      {{art(), "--page-size", "0"},
       "hyc run: --page-size expects an integer in [1, 1048576], found '0'"},
      {{art(), "--seed"}, "hyc run: --seed needs a value"},
      {{art(), "--prompt-ids", "1,x"}, "hyc run: --prompt-ids expects"},
      {{art(), "--prompt", "a", "--prompt-ids", "1"},
       "hyc run: --prompt and --prompt-ids are exclusive"},
      {{"--prompt", "a"}, "hyc run: missing the artifact directory ART"},
      {{art(), "extra"}, "hyc run: unexpected argument 'extra'"},
  };
  for (const Case &c : cases) {
    const Output o = run(c.args);
    EXPECT_EQ(o.code, 2) << c.message;
    EXPECT_EQ(o.err.rfind(c.message, 0), 0u) << o.err;
    EXPECT_NE(o.err.find("usage: hyc run ART"), std::string::npos);
    EXPECT_EQ(o.out, "");
  }
  const Output p = perplexity({art()});
  EXPECT_EQ(p.code, 2);
  EXPECT_EQ(p.err.rfind("hyc perplexity: missing --text FILE", 0), 0u)
      << p.err;
}

TEST_F(CliTest, RuntimeErrorsExitWithOne) {
  Output o = run({"/nonexistent/s.hyc"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "hyc run: artifact directory /nonexistent/s.hyc not found\n");
  o = run({art(), "--prompt-ids", "1,9999", "--no-stats"});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("token id 9999 outside [0, 512)"), std::string::npos)
      << o.err;
  o = perplexity({art(), "--text", "/nonexistent.txt"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "hyc perplexity: /nonexistent.txt: cannot read: No such "
                   "file or directory\n");
}

TEST_F(CliTest, CEntryPointsSkipTheCommandName) {
  char cmd[] = "run", flag[] = "--no-such-flag";
  char *argv[] = {cmd, flag, nullptr};
  testing::internal::CaptureStderr();
  EXPECT_EQ(hyrt_cli_run(2, argv), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("--no-such-flag"),
            std::string::npos);
  char pcmd[] = "perplexity";
  char *pargv[] = {pcmd, flag, nullptr};
  testing::internal::CaptureStderr();
  EXPECT_EQ(hyrt_cli_perplexity(2, pargv), 2);
  testing::internal::GetCapturedStderr();
}

TEST_F(CliTest, PerplexityOfTinyStoriesIsFarBelowUniform) {
  const std::string text = std::string(HYC_SHARED_DIR) +
                           "/models/tinystories-valid-text/tinystories_val.txt";
  if (!std::filesystem::exists(text))
    GTEST_SKIP() << text << " not found";
  const Output o =
      perplexity({art(), "--text", text, "--max-paragraphs", "200"});
  ASSERT_EQ(o.code, 0) << o.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      o.out, m,
      std::regex("paragraphs: 200, tokens scored: ([0-9]+)\nmean NLL: "
                 "([0-9.]+) nats/token\nperplexity: ([0-9.]+)\n")))
      << o.out;
  const double nll = std::stod(m[2]);
  std::printf("stories260K on 200 TinyStories paragraphs: %s tokens, mean "
              "NLL %.4f, perplexity %s (uniform: ln 512 = %.4f)\n",
              m[1].str().c_str(), nll, m[3].str().c_str(), std::log(512.0));
  EXPECT_GT(std::stol(m[1]), 5000);
  EXPECT_LT(nll, 0.5 * std::log(512.0));
  EXPECT_GT(nll, 0.3);
}

TEST_F(CliTest, PerplexityTruncatesLongParagraphs) {
  TempDir tmp;
  std::string error;
  hyrt_test::StoriesArtifactOptions o;
  o.max_seq_len = 24;
  o.max_batch_tokens = 8;
  o.max_seqs = 2;
  ASSERT_TRUE(hyrt_test::write_stories_artifact(tmp.path(), o, &error));
  const std::string text = tmp.file("t.txt");
  std::ofstream(text) << "Once upon a time, there was a little girl named "
                         "Lily. She loved to play outside in the park.\n\n"
                         "  \nLily was sad.\n\nShe said hi.\nHer mom said "
                         "no.\n";
  const Output p = perplexity({tmp.path(), "--text", text});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.err, "hyc perplexity: note: 1 paragraphs longer than "
                   "max_seq_len 24 tokens were truncated to it\n");
  EXPECT_EQ(p.out.rfind("paragraphs: 3, tokens scored: ", 0), 0u) << p.out;
}

TEST_F(CliTest, StandaloneExecutableRunsFromItsDirectory) {
  // Copy the artifact files next to a copy of the standalone binary.
  TempDir exe_dir;
  namespace fs = std::filesystem;
  for (const char *f : {"manifest.json", "weights.bin", "tokenizer.hytk"})
    fs::copy_file(art() + "/" + f, exe_dir.file(f));
  // Its description is the one the compiler would link in for this manifest.
  hyrt::Manifest m;
  ASSERT_TRUE(hyrt::parse_manifest(hyrt_test::read_file(art() + "/manifest.json"),
                                   "manifest.json", &m)
                  .ok());
  std::string error;
  ASSERT_TRUE(hyrt_test::install_fixture_library(
      hyrt_test::standalone_executable(), exe_dir.file("model"),
      hyrt::description_json(hyrt::describe_variant(m, 0)), &error))
      << error;
  const std::string cmd = exe_dir.file("model") +
                          " -n 256 --temperature 0 --no-stats 2>&1";
  FILE *pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0)
    out.append(buf, n);
  EXPECT_EQ(::pclose(pipe), 0) << out;
  EXPECT_EQ(out, expected_sample());
}

} // namespace
