// The hyc commands at their boundaries: compile bounds past any host are
// refused by name, special files are refused instead of waited on or read
// forever, a long paragraph is tokenized only as far as it is used,
// requests past the compiled bound fail, the loaders' warnings are printed,
// and convert-gguf never writes over its own input.
#include "test/e2e/e2e_util.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_SHARED()                                                       \
  if (!haveShared())                                                           \
  GTEST_SKIP() << "../shared/models is absent: real-model e2e test skipped"

std::string stories(const std::string &file) {
  return sharedDir() + "/models/stories260K/" + file;
}

std::string storiesArtifact() {
  return compileOnce(stories("stories260K.bin"),
                     {"--max-seq-len", "256", "--max-batch-tokens", "64"});
}

void expectError(const CommandResult &r, const std::string &part) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}

/// A fresh directory under tempDir().
std::string freshDir(const std::string &name) {
  const std::string d = tempDir() + "/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(CompileBounds, FlagsPastAnyHostAreRefused) {
  REQUIRE_SHARED();
  const std::string out = tempDir() + "/bounds.hyc";
  // 2^62 tokens per step used to wrap the arena size and let the artifact
  // corrupt the heap on a 60-token prompt.
  expectError(runHyc({"compile", stories("stories260K.bin"), "-o", out,
                      "--max-batch-tokens", "4611686018427387904"}),
              "--max-batch-tokens expects 1..1048576, got 4611686018427387904");
  expectError(runHyc({"compile", stories("stories260K.bin"), "-o", out,
                      "--max-seqs", "1099511627776"}),
              "--max-seqs expects 1..65536, got 1099511627776");
  expectError(runHyc({"compile", stories("stories260K.bin"), "-o", out,
                      "--max-seq-len", "1099511627776"}),
              "--max-seq-len expects 1..16777216, got 1099511627776");
  EXPECT_FALSE(fs::exists(out));
}

// -o creates missing parents as `mkdir -p` would (it used to fail on
// them); a parent that is a file is refused with the system's reason.
TEST(CompileOutput, MissingParentsAreCreatedAFileParentIsRefused) {
  REQUIRE_SHARED();
  const std::string dir = freshDir("compile-parents");
  const std::string nested = dir + "/a/b/model.hyc";
  CommandResult r = runHyc({"compile", stories("stories260K.bin"), "-o", nested,
                            "--max-seq-len", "64", "--max-batch-tokens", "16"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(nested + "/manifest.json"));
  std::ofstream(dir + "/file") << "x";
  expectError(runHyc({"compile", stories("stories260K.bin"), "-o", dir + "/file/model.hyc",
                      "--max-seq-len", "64", "--max-batch-tokens", "16"}),
              "cannot create artifact directory " + dir + "/file/model.hyc: Not a directory");
}

TEST(SpecialFiles, FifoCheckpointIsRefused) {
  const std::string dir = freshDir("fifo-ckpt");
  const std::string fifo = dir + "/model.gguf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CommandResult r = runHycWithin(20, {"compile", fifo, "-o", dir + "/out.hyc"});
  ASSERT_NE(r.exit_code, 124) << "hyc compile waits on a FIFO checkpoint";
  expectError(r, "model.gguf: is a FIFO, expected a regular file");
}

TEST(SpecialFiles, FifoAndDeviceTextAreRefused) {
  REQUIRE_SHARED();
  const std::string art = storiesArtifact();
  const std::string fifo = freshDir("fifo-text") + "/text.txt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CommandResult r = runHycWithin(20, {"perplexity", art, "--text", fifo});
  ASSERT_NE(r.exit_code, 124) << "hyc perplexity waits on a FIFO";
  expectError(r, "text.txt: is a FIFO, expected a regular file");
  r = runHycWithin(20, {"calibrate", art, "--text", fifo, "-o",
                        tempDir() + "/cal.json"});
  ASSERT_NE(r.exit_code, 124) << "hyc calibrate waits on a FIFO";
  expectError(r, "text.txt: is a FIFO, expected a regular file");
  // /dev/zero never ends: it used to be read until std::bad_alloc.
  r = runHycWithin(20, {"perplexity", art, "--text", "/dev/zero"});
  ASSERT_NE(r.exit_code, 124);
  expectError(r, "/dev/zero: is a character device, expected a regular file");
}

TEST(SpecialFiles, FifoChatFileIsRefused) {
  const std::string tok = sharedDir() + "/tokenizers/qwen3";
  if (!fs::exists(tok + "/tokenizer.json"))
    GTEST_SKIP() << tok << " absent";
  const std::string fifo = freshDir("fifo-chat") + "/chat.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CommandResult r = runHycWithin(20, {"tokenize", tok, "--chat", fifo});
  ASSERT_NE(r.exit_code, 124) << "hyc tokenize --chat waits on a FIFO";
  expectError(r, "chat.json: is a FIFO");
}

TEST(LongText, ParagraphIsTokenizedOnlyAsFarAsItIsUsed) {
  REQUIRE_SHARED();
  const std::string art = storiesArtifact();
  // One 200 KB paragraph: tokenized whole it took 40 s.
  std::string paragraph;
  while (paragraph.size() < 200 * 1024)
    paragraph += "Once upon a time, there was a little girl named Lily. She "
                 "loved to play outside in the sunshine with her dog. ";
  const std::string text = freshDir("long-text") + "/long.txt";
  std::ofstream(text) << paragraph << "\n\nLily was happy.\n";
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = runHycWithin(60, {"perplexity", art, "--text", text});
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(seconds, 10.0);
  EXPECT_NE(r.err.find("1 paragraphs longer than max_seq_len 256 tokens were "
                       "truncated"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.rfind("paragraphs: 2, tokens scored: ", 0), 0u) << r.out;
}

TEST(RunBounds, NewTokensPastMaxSeqLenFail) {
  REQUIRE_SHARED();
  const std::string art = storiesArtifact();
  // The last new token is never fed: 2 + 255 fit in 256 positions.
  CommandResult r = runHyc({"run", art, "--prompt-ids", "1,400", "-n", "256",
                            "--no-stats"});
  expectError(r, "prompt of 2 tokens + 256 new exceeds max_seq_len 256 of this "
                 "artifact (at most 255 new tokens fit after this prompt)");
  EXPECT_EQ(r.out, "");
  // Without -n the default shrinks to what fits.
  r = runHyc({"run", art, "--prompt-ids", "1,400", "--no-stats", "--ignore-eos"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = runHyc({"run", art, "--prompt-ids", "1,400", "-n", "255", "--no-stats"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(LoaderWarnings, CorruptTokenizerBesideBinIsReported) {
  REQUIRE_SHARED();
  const std::string dir = freshDir("bad-tokenizer");
  fs::create_symlink(stories("stories260K.bin"), dir + "/stories260K.bin");
  std::ofstream(dir + "/tokenizer.bin") << "not a tokenizer";
  CommandResult r = runHyc({"compile", dir + "/stories260K.bin", "-o",
                            dir + "/out.hyc", "--target", "reference",
                            "--max-seq-len", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("hyc compile: warning: skipped tokenizer candidate: " +
                       dir + "/tokenizer.bin"),
            std::string::npos)
      << r.err;
}

TEST(ConvertGguf, RefusesToOverwriteItsInput) {
  const std::string golden = sharedDir() + "/golden/llama-tiny";
  if (!fs::exists(golden + "/config.json"))
    GTEST_SKIP() << golden << " absent";
  const std::string dir = freshDir("convert-self");
  for (const fs::directory_entry &e : fs::directory_iterator(golden))
    if (e.path().filename() == "config.json" ||
        e.path().extension() == ".safetensors")
      fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
  const std::string weights = dir + "/model.safetensors";
  const std::string before = readFile(weights);
  ASSERT_FALSE(before.empty());
  for (const std::string &out : {weights, dir + "/config.json", dir + "/./model.safetensors"}) {
    CommandResult r = runHyc({"convert-gguf", dir, out});
    expectError(r, "a file of the input checkpoint " + dir);
  }
  EXPECT_EQ(readFile(weights), before) << "the input was overwritten";
  // A new file in the same directory is fine.
  CommandResult ok = runHyc({"convert-gguf", dir, dir + "/model.gguf"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

} // namespace
} // namespace hyc::e2e
