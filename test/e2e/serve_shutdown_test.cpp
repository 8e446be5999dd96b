// SIGTERM stops `hyc serve` within a second whatever a request is doing.
// The hardest case: a request whose text makes the artifact's pre-tokenizer
// regex backtrack for its whole budget (0.5 s + 1 s per MiB: seconds for a
// large prompt). A tokenizer.json comes from a downloaded checkpoint, so its
// pattern is untrusted; before abandon_text_work() the server's exit waited
// for that handler to run out its budget.
#include "test/e2e/e2e_util.h"
#include "runtime/text/tokenizer/util.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sys/wait.h>
#include <thread>

namespace hyc::e2e {
namespace {

/// Byte-level BPE over the 256 byte symbols without merges, pre-tokenized
/// by `pattern` (a Split, as Llama 3 does) and then ByteLevel.
void writeTokenizerWithPattern(const std::string &dir, const std::string &pattern) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[hyrt::detail::utf8_encode(
        hyrt::detail::gpt2_byte_to_codepoint(static_cast<unsigned char>(b)))] = b;
  const nlohmann::json tok = {
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::ofstream(dir + "/tokenizer.json") << tok.dump();
}

TEST(ServeShutdown, SigtermDuringAHostileRegexExitsWithinASecond) {
  const std::string dir = tempDir() + "/hostile-regex-ckpt";
  ASSERT_EQ(runHyc({"synth", "--arch", "qwen3", "--seed", "2", "-o", dir}).exit_code, 0);
  std::remove((dir + "/tokenizer.bin").c_str());
  // At each 'a' of a run of 20, (a+)+b tries ~2^20 ways to split the run
  // before `a` matches one byte (each match stays far below ICU's per-match
  // limit): 3 MiB of such runs would take hours, so the wall-clock budget
  // (3.5 s for this text) is what ends the work.
  writeTokenizerWithPattern(dir, "(a+)+b|a|[^a]+");
  const std::string art = tempDir() + "/hostile-regex.hyc";
  const CommandResult c = runHyc(
      {"compile", dir, "-o", art, "--target", "reference", "--max-seq-len", "64"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::string text;
  while (text.size() < (3u << 20))
    text += std::string(20, 'a') + " ";

  // The premise: alone, this text holds the tokenizer for seconds and is
  // then refused naming the budget.
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult alone = runHyc({"tokenize", art}, text);
  const double aloneSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("ran past its budget of 3.5"), std::string::npos) << alone.err;
  EXPECT_GT(aloneSeconds, 3.0);

  const std::string errPath = tempDir() + "/regex-sigterm.err";
  const auto [pid, port] = startServe(art, "regex-sigterm", {}, {"--max-body-bytes", "8388608"});
  ASSERT_FALSE(port.empty()) << readFile(errPath);
  const std::string body =
      nlohmann::json{{"model", "m"}, {"prompt", text}, {"max_tokens", 1}}.dump();
  const std::string request = tempDir() + "/regex-sigterm.request";
  {
    std::ofstream req(request, std::ios::binary);
    req << "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        << "Content-Length: " << body.size() << "\r\nConnection: close\r\n\r\n"
        << body;
  }
  std::thread client([&] {
    std::system(("timeout 30 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port +
                 " && cat \"$0\" >&3 && cat <&3' '" + request + "' >/dev/null 2>&1")
                    .c_str());
  });
  // The body is on the socket in milliseconds; after 0.5 s its handler is
  // in the regex with about 3 s of budget left.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - sent < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  client.join();
  std::printf("SIGTERM during a backtracking regex: exit %.3f s later (the text alone "
              "holds the tokenizer %.2f s)\n",
              seconds, aloneSeconds);
  EXPECT_LT(seconds, 1.0) << readFile(errPath);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << readFile(errPath);
}

} // namespace
} // namespace hyc::e2e
