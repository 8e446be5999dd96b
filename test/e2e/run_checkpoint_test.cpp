// `hyc run|serve|bench MODEL` with a checkpoint in place of an artifact:
// the first call compiles it into the cache and generates what `hyc compile`
// + `hyc run` generate; the next call reuses the cached artifact without
// compiling; a changed checkpoint or option compiles a new one; a damaged
// entry is compiled again; bad MODEL arguments are refused naming what was
// expected.
#include "test/e2e/e2e_util.h"

#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

namespace hyc::e2e {
namespace {

const std::vector<std::string> kPrompt = {"--prompt-ids", "1,417,93",  "-n", "8",
                                          "--print-ids",  "--no-stats"};

std::string storiesGguf() { return sharedDir() + "/models/stories260K/stories260K-f32.gguf"; }

/// `hyc run MODEL` with kPrompt and `extra` (driver flags among them).
CommandResult runModel(const std::string &model, const std::vector<std::string> &extra) {
  std::vector<std::string> args = {"run", model};
  args.insert(args.end(), kPrompt.begin(), kPrompt.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return runHyc(args);
}

/// The entries (artifact directories) of a cache, by name.
std::vector<std::string> cacheEntries(const std::string &cache) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(cache.c_str())) {
    while (const dirent *e = ::readdir(d))
      if (e->d_name[0] != '.')
        names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

/// The cached artifact's path from "hyc: using cached artifact PATH (...)"
/// or "cached at PATH)".
std::string entryOf(const std::string &err) {
  for (const std::string marker : {"using cached artifact ", "cached at "}) {
    const size_t at = err.find(marker);
    if (at != std::string::npos) {
      const size_t begin = at + marker.size();
      return err.substr(begin, err.find_first_of(" )", begin) - begin);
    }
  }
  return "";
}

struct timespec manifestTime(const std::string &artifact) {
  struct stat st {};
  ::stat((artifact + "/manifest.json").c_str(), &st);
  return st.st_mtim;
}

bool sameTime(const struct timespec &a, const struct timespec &b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

TEST(RunCheckpoint, GgufCompilesOnceThenReusesTheCachedArtifact) {
  if (!haveShared())
    GTEST_SKIP() << "../shared/models is absent";
  const std::string cache = tempDir() + "/cache-gguf";
  const std::string art = tempDir() + "/stories-explicit.hyc";
  ASSERT_EQ(runHyc({"compile", storiesGguf(), "-o", art}).exit_code, 0);
  const CommandResult explicitRun = runModel(art, {});
  ASSERT_EQ(explicitRun.exit_code, 0) << explicitRun.err;

  const CommandResult first = runModel(storiesGguf(), {"--cache-dir", cache});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(
      first.err.find("hyc: compiling " + storiesGguf() + " (first run; cached at " + cache + "/"),
      std::string::npos)
      << first.err;
  EXPECT_NE(first.err.find("] variant avx2"), std::string::npos) << first.err;
  EXPECT_EQ(first.out, explicitRun.out);
  const std::string entry = entryOf(first.err);
  ASSERT_FALSE(entry.empty()) << first.err;
  const struct timespec compiled = manifestTime(entry);

  const CommandResult second = runModel(storiesGguf(), {"--cache-dir", cache});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("hyc: using cached artifact " + entry + " (compiled "),
            std::string::npos)
      << second.err;
  EXPECT_EQ(second.err.find("compiling"), std::string::npos) << second.err;
  EXPECT_EQ(second.out, explicitRun.out);
  EXPECT_TRUE(sameTime(manifestTime(entry), compiled)) << "the cached artifact was rewritten";
  EXPECT_EQ(cacheEntries(cache).size(), 1u);

  // `hyc bench` takes the checkpoint too, from the same entry.
  const CommandResult bench = runHyc({"bench", storiesGguf(), "--cache-dir", cache, "--input", "8",
                                      "--output", "4", "--rounds", "1", "--json"});
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.err.find("hyc: using cached artifact " + entry), std::string::npos) << bench.err;
}

TEST(RunCheckpoint, QuantizedGgufRunsWithoutAPriorCompile) {
  const std::string gguf = sharedDir() + "/golden-gguf/stories260K/Q8_0.gguf";
  if (::access(gguf.c_str(), R_OK) != 0)
    GTEST_SKIP() << gguf << " is absent";
  const std::string cache = tempDir() + "/cache-q8";
  const CommandResult first = runModel(gguf, {"--cache-dir", cache});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string art = tempDir() + "/stories-q8.hyc";
  ASSERT_EQ(runHyc({"compile", gguf, "-o", art}).exit_code, 0);
  EXPECT_EQ(first.out, runModel(art, {}).out);
  const CommandResult second = runModel(gguf, {"--cache-dir", cache});
  EXPECT_NE(second.err.find("using cached artifact"), std::string::npos) << second.err;
}

TEST(RunCheckpoint, ChangedCheckpointOrOptionsCompileANewEntry) {
  const std::string ckpt = tempDir() + "/run-ckpt-tiny";
  ASSERT_EQ(runHyc({"synth", "--arch", "llama", "--preset", "tiny", "-o", ckpt}).exit_code, 0);
  const std::string cache = tempDir() + "/cache-hf";
  const std::vector<std::string> inCache = {"--cache-dir", cache};
  const CommandResult first = runModel(ckpt, inCache);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("(first run; cached at"), std::string::npos) << first.err;
  const std::string art = tempDir() + "/run-ckpt-tiny.hyc";
  ASSERT_EQ(runHyc({"compile", ckpt, "-o", art}).exit_code, 0);
  EXPECT_EQ(first.out, runModel(art, {}).out);

  // A newer modification time: the checkpoint may have changed.
  const struct timespec later[2] = {{0, UTIME_OMIT}, {::time(nullptr) + 10, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (ckpt + "/config.json").c_str(), later, 0), 0);
  const CommandResult touched = runModel(ckpt, inCache);
  ASSERT_EQ(touched.exit_code, 0) << touched.err;
  EXPECT_NE(touched.err.find("(first run; cached at"), std::string::npos) << touched.err;
  EXPECT_NE(entryOf(touched.err), entryOf(first.err));
  EXPECT_EQ(touched.out, first.out);

  // Another compile option: another entry, then reused.
  const std::vector<std::string> shorter = {"--cache-dir", cache, "--compile-opt",
                                            "--max-seq-len 64 --target reference"};
  const CommandResult opt = runModel(ckpt, shorter);
  ASSERT_EQ(opt.exit_code, 0) << opt.err;
  EXPECT_NE(opt.err.find("(first run; cached at"), std::string::npos) << opt.err;
  const CommandResult optAgain = runModel(ckpt, shorter);
  EXPECT_NE(optAgain.err.find("using cached artifact " + entryOf(opt.err)), std::string::npos)
      << optAgain.err;
  EXPECT_EQ(cacheEntries(cache).size(), 3u);

  // Options `hyc compile` refuses are refused before anything is compiled.
  const CommandResult bad = runModel(ckpt, {"--cache-dir", cache, "--compile-opt", "--quant q3"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--compile-opt: --quant expects"), std::string::npos) << bad.err;
  EXPECT_EQ(cacheEntries(cache).size(), 3u);
}

TEST(RunCheckpoint, DamagedCachedArtifactIsCompiledAgain) {
  const std::string ckpt = tempDir() + "/run-ckpt-damaged";
  ASSERT_EQ(runHyc({"synth", "--arch", "llama", "--preset", "tiny", "-o", ckpt}).exit_code, 0);
  const std::vector<std::string> inCache = {"--cache-dir", tempDir() + "/cache-damaged",
                                            "--compile-opt", "--target reference"};
  const CommandResult first = runModel(ckpt, inCache);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string entry = entryOf(first.err);
  for (const char *file : {"manifest.json", "weights.bin", "model.so"}) {
    SCOPED_TRACE(file);
    // Cut short, as a compile killed while writing would have left it.
    ASSERT_EQ(::truncate((entry + "/" + file).c_str(), 7), 0);
    const CommandResult again = runModel(ckpt, inCache);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.err.find("hyc: cached artifact " + entry + " does not open ("),
              std::string::npos)
        << again.err;
    EXPECT_NE(again.err.find(file), std::string::npos) << again.err;
    EXPECT_EQ(again.out, first.out);
    EXPECT_NE(runModel(ckpt, inCache).err.find("using cached artifact"), std::string::npos);
  }
}

TEST(RunCheckpoint, ModelThatIsNeitherArtifactNorCheckpointIsRefused) {
  const std::string emptyDir = tempDir() + "/run-ckpt-empty-dir";
  ::mkdir(emptyDir.c_str(), 0755);
  const std::string text = tempDir() + "/run-ckpt-notes.txt";
  std::FILE *f = std::fopen(text.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("not a model\n", f);
  std::fclose(f);
  for (const std::string &model : {tempDir() + "/no-such-model.gguf", emptyDir, text}) {
    const CommandResult r = runModel(model, {"--cache-dir", tempDir() + "/cache-refused"});
    EXPECT_EQ(r.exit_code, 1) << model;
    EXPECT_NE(r.err.find("hyc run: " + model), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("expected an artifact directory (manifest.json), a Hugging Face "
                         "checkpoint directory (config.json), a .gguf file"),
              std::string::npos)
        << r.err;
  }
  // An artifact is compiled already: the compile flags do not apply.
  if (haveShared()) {
    const std::string art = compileOnce(storiesGguf());
    const CommandResult r = runModel(art, {"--recompile"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("is an artifact, compiled already"), std::string::npos) << r.err;
  }
}

TEST(RunCheckpoint, ServeStartsOnACheckpoint) {
  const std::string ckpt = tempDir() + "/run-ckpt-serve";
  ASSERT_EQ(runHyc({"synth", "--arch", "llama", "--preset", "tiny", "-o", ckpt}).exit_code, 0);
  const std::string cache = tempDir() + "/cache-serve";
  const auto [pid, port] = startServe(ckpt, "serve-ckpt", {"HYC_CACHE_DIR", cache.c_str()});
  const std::string err = readFile(tempDir() + "/serve-ckpt.err");
  ASSERT_FALSE(port.empty()) << err;
  std::string reply;
  if (std::FILE *p = ::popen(("timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port +
                              " && printf \"GET /health HTTP/1.1\\r\\nHost: x\\r\\n"
                              "Connection: close\\r\\n\\r\\n\" >&3 && cat <&3' 2>/dev/null")
                                 .c_str(),
                             "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;)
      reply.append(buf, n);
    ::pclose(p);
  }
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_NE(reply.find("HTTP/1.1 200"), std::string::npos) << reply;
  EXPECT_NE(err.find("(first run; cached at " + cache + "/run-ckpt-serve-"), std::string::npos)
      << err;
  EXPECT_EQ(cacheEntries(cache).size(), 1u);
}

} // namespace
} // namespace hyc::e2e
