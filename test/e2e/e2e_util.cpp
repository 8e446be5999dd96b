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
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
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


std::pair<pid_t, std::string> startServe(const std::string &art, const std::string &name,
                                         std::pair<const char *, const char *> env,
                                         const std::vector<std::string> &extra) {
  const std::string outPath = tempDir() + "/" + name + ".out",
                    errPath = tempDir() + "/" + name + ".err";
  std::vector<std::string> args = {HYC_BIN, "serve", art, "--port", "0", "--model-name", "m"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (env.first)
      ::setenv(env.first, env.second, 1);
    const int o = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(HYC_BIN, argv.data());
    ::_exit(127);
  }
  std::string port;
  for (int i = 0; pid > 0 && i < 600 && port.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string out = readFile(outPath);
    const size_t at = out.find("listening on http://127.0.0.1:");
    if (at != std::string::npos)
      port = out.substr(at + 30, out.find_first_not_of("0123456789", at + 30) - at - 30);
  }
  return {pid, port};
}

} // namespace hyc::e2e
