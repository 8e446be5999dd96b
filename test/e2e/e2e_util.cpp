// Helpers for end-to-end tests (see e2e_util.h).
#include "test/e2e/e2e_util.h"

#include "hyrt/artifact/cpu_features.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hyc::e2e {

namespace {
std::string quote(const std::string &s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string &tempRoot() {
  static std::string root;
  return root;
}

void removeTempRoot() {
  if (!tempRoot().empty()) {
    std::string cmd = "rm -rf " + quote(tempRoot());
    if (std::system(cmd.c_str()) != 0)
      std::fprintf(stderr, "could not remove %s\n", tempRoot().c_str());
  }
}
} // namespace

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tempDir() {
  if (tempRoot().empty()) {
    char tmpl[] = "/tmp/hyc-e2e-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    tempRoot() = dir ? dir : "/tmp";
    std::atexit(removeTempRoot);
  }
  return tempRoot();
}

CommandResult runHyc(const std::vector<std::string> &args) {
  return runHyc(args, "");
}

CommandResult runHyc(const std::vector<std::string> &args,
                     const std::string &input) {
  const std::string inPath = tempDir() + "/cmd.in";
  std::ofstream(inPath, std::ios::binary) << input;
  std::string outPath = tempDir() + "/cmd.out", errPath = tempDir() + "/cmd.err";
  std::string cmd = quote(HYC_BIN);
  for (const auto &a : args)
    cmd += " " + quote(a);
  cmd += " >" + quote(outPath) + " 2>" + quote(errPath) + " <" + quote(inPath);
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = readFile(outPath);
  r.err = readFile(errPath);
  return r;
}

CommandResult runHycWithin(int seconds, const std::vector<std::string> &args) {
  std::string outPath = tempDir() + "/cmd.out", errPath = tempDir() + "/cmd.err";
  std::string cmd = "timeout -k 2 " + std::to_string(seconds) + " " + quote(HYC_BIN);
  for (const auto &a : args)
    cmd += " " + quote(a);
  cmd += " >" + quote(outPath) + " 2>" + quote(errPath) + " </dev/null";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = readFile(outPath);
  r.err = readFile(errPath);
  return r;
}

std::string sharedDir() { return HYC_SHARED_DIR; }

bool haveShared() {
  struct stat st;
  return stat((sharedDir() + "/models").c_str(), &st) == 0;
}

std::string compileOnce(const std::string &input,
                        const std::vector<std::string> &flags) {
  static std::map<std::string, std::string> cache;
  std::string key = input;
  for (const auto &f : flags)
    key += "|" + f;
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  std::string out = tempDir() + "/artifact" + std::to_string(cache.size()) + ".hyc";
  std::vector<std::string> args = {"compile", input, "-o", out};
  if (std::find(flags.begin(), flags.end(), "--target") == flags.end())
    args.insert(args.end(), {"--target", "reference"});
  args.insert(args.end(), flags.begin(), flags.end());
  CommandResult r = runHyc(args);
  EXPECT_EQ(r.exit_code, 0) << "hyc compile " << input << " failed:\n" << r.err;
  cache[key] = out;
  return out;
}

VariantSplit variantsOf(const std::string &artifact) {
  VariantSplit s;
  auto manifest = nlohmann::json::parse(readFile(artifact + "/manifest.json"));
  for (const auto &v : manifest["variants"]) {
    std::string missing;
    for (const auto &f : v["cpu_features"])
      if (!hyrt::host_has_cpu_feature(f.get<std::string>()))
        missing += (missing.empty() ? "" : ", ") + f.get<std::string>();
    const std::string name = v["name"];
    if (missing.empty())
      s.run.push_back(name);
    else
      s.skipped.push_back(name + " (this CPU lacks " + missing + ")");
  }
  return s;
}

std::vector<RealModel> realModels() {
  std::vector<RealModel> out;
  for (const char *m : {"stories260K/stories260K.bin", "llama2xs-tinystories/model.bin",
                        "babyllama-tok105/model5000.bin", "aidreams260K/aidreams260K.bin"}) {
    const std::string len = std::string(m).rfind("aidreams", 0) == 0 ? "128" : "256";
    out.push_back({m, {"--max-seq-len", len, "--max-batch-tokens", "64"}});
  }
  return out;
}

double meanNll(const std::string &artifact) {
  CommandResult r = runHyc({"perplexity", artifact, "--text",
                            sharedDir() + "/models/tinystories-valid-text/tinystories_val.txt",
                            "--max-paragraphs", "200"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.out, m, std::regex("mean NLL: ([0-9.]+)"))) << r.out;
  return m.size() > 1 ? std::atof(m[1].str().c_str()) : 1e9;
}

std::vector<int32_t> goldenTokens(const std::string &dir, const std::string &length) {
  return nlohmann::json::parse(readFile(dir + "/inputs.json"))["sequences"][length]
      .get<std::vector<int32_t>>();
}

} // namespace hyc::e2e
