// Helpers for end-to-end tests: run the hyc binary, compile artifacts once
// per test process, read golden data.
#ifndef HYC_TEST_E2E_E2E_UTIL_H
#define HYC_TEST_E2E_E2E_UTIL_H

#include <gtest/gtest.h>

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace hyc::e2e {

struct CommandResult {
  int exit_code = -1;
  std::string out; ///< stdout
  std::string err; ///< stderr
};

/// Runs `hyc args...` and captures its output.
CommandResult runHyc(const std::vector<std::string> &args);
/// Runs `hyc args...` with `input` (bytes, NULs included) on stdin.
CommandResult runHyc(const std::vector<std::string> &args,
                     const std::string &input);

/// Runs `hyc args...` (stdin /dev/null) under coreutils `timeout`: a command
/// still running after `seconds` is killed and reported with exit code
/// 124, so that a regression that blocks (on a FIFO, say) fails the test
/// instead of hanging it.
CommandResult runHycWithin(int seconds, const std::vector<std::string> &args);

/// `../shared` of this checkout, and whether it exists.
std::string sharedDir();
bool haveShared();

/// A fresh temporary directory, removed at process exit.
std::string tempDir();

/// Compiles `input` into a directory under tempDir() (memoized on input and
/// flags): for `--target reference` unless the flags name a target (the
/// tests compare fast targets against that reference; the compiler's own
/// default, `portable`, is tested by name). Returns the artifact path;
/// fails the current test on error.
std::string compileOnce(const std::string &input,
                        const std::vector<std::string> &flags = {});

/// An artifact's ISA variants (manifest order), split by whether this host
/// has their CPU features.
struct VariantSplit {
  std::vector<std::string> run;     ///< variants this host executes
  std::vector<std::string> skipped; ///< "name (this CPU lacks ...)"
};
VariantSplit variantsOf(const std::string &artifact);

/// The real trained models in ../shared/models, as paths under it, and the
/// compile bounds the perplexity tests use for each (aidreams260K's context
/// is 128 positions).
struct RealModel {
  const char *path;
  std::vector<std::string> bounds; ///< --max-seq-len N --max-batch-tokens 64
};
std::vector<RealModel> realModels();

/// Mean next-token NLL of `hyc perplexity` on the first 200 TinyStories
/// validation paragraphs (../shared/models); exp() of it is the perplexity.
double meanNll(const std::string &artifact);

/// `hyc serve ART --port 0 --model-name m EXTRA...` in a child (stdout and
/// stderr in tempDir()/NAME.out and .err, `env` set in it): its pid and the
/// port it listens on, "" when it did not start within 30 s.
std::pair<pid_t, std::string> startServe(const std::string &art, const std::string &name,
                                         std::pair<const char *, const char *> env = {},
                                         const std::vector<std::string> &extra = {});

/// Reads a whole file.
std::string readFile(const std::string &path);

/// The token ids of golden case `dir`'s inputs.json sequence `length`
/// ("7", "33", "64").
std::vector<int32_t> goldenTokens(const std::string &dir, const std::string &length);

/// A gtest parameter name for a string parameter such as "llama-tiny"
/// (test names take no '-': "llama_tiny").
inline std::string caseName(const ::testing::TestParamInfo<std::string> &info) {
  std::string n = info.param;
  for (char &c : n)
    if (c == '-')
      c = '_';
  return n;
}

} // namespace hyc::e2e

#endif // HYC_TEST_E2E_E2E_UTIL_H
