// Tensor parallel end to end (issue 14): `hyc compile --tp 2` splits the
// model over two ranks, `hyc run` starts two real processes that join a
// real shared-memory group, and the pair must generate what one rank does.
#include "test/e2e/tensor_parallel_util.h"

#include "hyrt/cli/npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace hyc::e2e {
namespace {

/// arch, target, expert parallel's exchange ("": tensor parallel experts).
using TpCase = std::tuple<std::string, std::string, std::string>;

class TwoRanks : public ::testing::TestWithParam<TpCase> {};

// Two ranks give the greedy tokens of one, and logits within fp32
// reduction order: the split o_proj / down sum each rank's half of K and
// then the halves (rank order), where one rank sums all K at once. A dot of
// K terms in another order moves by at most ~K u sum|a_i b_i| (u = 2^-24),
// below 1e-5 of the logits' scale for K <= 172 here; ten such GEMMs in
// series, amplified by the norms, stay under 1e-4 of the largest logit.
// MoE models keep every expert on every rank with its part of each
// expert's ffn columns, so both ranks route alike (the router reads the
// whole hidden state); a route can only flip at a near-tie, which these
// seeds do not have (a flip would show as an O(1) difference). DeepSeek's
// MLA splits heads; every rank keeps the whole latent cache. With --ep 2
// each rank holds half of the experts whole instead: with the all-to-all
// exchange each rank sends its own tokens' pairs to the experts' ranks and
// sums the rows that come back (fp32, pair order, where one rank sums the
// k slots in double: a few ulp); with all-reduce its combine is a partial
// sum over its experts' pairs.
// A rank that computed the wrong heads or columns, or an all-reduce that
// dropped a rank, moves the logits by O(1) of their scale.
// The KV cache is fp32 so that this bound holds: with a bf16 cache, AVX-512
// BF16 hosts round the prefill's queries to bf16 (attention_bf16_test.cpp),
// and a query element the two layouts compute a few ulp apart can round to
// neighbouring bf16 values, a 2^-8 step no reduction-order bound covers.
TEST_P(TwoRanks, SameTokensAndLogitsAsOneRank) {
  const auto &[arch, target, exchange] = GetParam();
  const bool ep = !exchange.empty();
  const std::string ckpt = synth(arch, "tiny", 5);
  const std::string one = compileOnce(ckpt, {"--target", target, "--kv-cache", "f32"});
  std::vector<std::string> flags = {"--target", target, "--tp", "2", "--kv-cache", "f32"};
  if (ep)
    flags.insert(flags.end(), {"--ep", "2", "--ep-exchange", exchange});
  const std::string two = compileOnce(ckpt, flags);
  const std::string manifest = readFile(two + "/ranks/1/manifest.json");
  ASSERT_NE(manifest.find("\"tensor_parallel\""), std::string::npos) << manifest;

  const std::string tag = arch + target + (ep ? "-ep-" + exchange : "");
  const Generated a = generate(one, tag + "-1", 24);
  const Generated b = generate(two, tag + "-2", 24);
  ASSERT_EQ(a.ids.size(), 24u);
  EXPECT_EQ(a.ids, b.ids);
  const LogitGap gap = logitGap(a, b);
  const float scale = gap.scale, worst = gap.worst;
  std::printf("%s %s%s%s: %zu logits, max |tp2 - tp1| %.3g of max |logit| %.3g\n",
              arch.c_str(), target.c_str(), ep ? " ep 2, " : "", exchange.c_str(),
              a.logits.data.size(), worst, scale);
  EXPECT_GT(scale, 0.1f);
  EXPECT_LE(worst, 1e-4f * scale);
}

std::string tpCaseName(const ::testing::TestParamInfo<TpCase> &info) {
  std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param) +
                     (std::get<2>(info.param).empty() ? "" : "_ep_" + std::get<2>(info.param));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Families, TwoRanks,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "qwen3",
                                                              "qwen3-moe", "hunyuan-moe",
                                                              "deepseek-v3", "deepseek-v2-lite"),
                                            ::testing::Values("reference", "portable"),
                                            ::testing::Values("")),
                         tpCaseName);

// Expert parallel (--ep 2): each rank holds half of the experts whole;
// tokens meet them through the staged all-to-all, or the all-reduce.
INSTANTIATE_TEST_SUITE_P(ExpertParallel, TwoRanks,
                         ::testing::Combine(::testing::Values("qwen3-moe", "hunyuan-moe",
                                                              "deepseek-v3"),
                                            ::testing::Values("reference", "portable"),
                                            ::testing::Values("all-to-all", "all-reduce")),
                         tpCaseName);

// Shapes that do not split evenly: an ffn width (dense, or each expert's)
// that does not divide is padded with zero rows / columns, which add
// nothing (silu(0) * 0 = 0); fewer kv heads than ranks (llama tiny's 2 over
// 4 ranks) give each kv head to the ranks whose q heads read it. Either
// way the ranks give one rank's tokens and logits within fp32 reduction
// order (the bound of SameTokensAndLogitsAsOneRank). A padded row that
// was not zero, or a rank holding the wrong kv head, moves the logits by
// O(1) of their scale.
TEST(TensorParallel, UnevenShapesMatchOneRank) {
  struct Case {
    const char *arch, *flag;
    int width, ranks;
  };
  const Case cases[] = {
      {"llama", "--ffn", 173, 2},          // 173 -> 174: 87 columns per rank
      {"qwen3-moe", "--expert-ffn", 33, 2}, // each expert 33 -> 34
      {"llama", nullptr, 0, 4},            // 2 kv heads over 4 ranks
  };
  for (const Case &c : cases) {
    const std::string tag = std::string(c.arch) + "-uneven-" + std::to_string(c.width) + "-" +
                            std::to_string(c.ranks);
    const std::string ckpt = tempDir() + "/" + tag;
    std::vector<std::string> synthArgs = {"synth", "--arch", c.arch, "--seed", "5", "-o", ckpt};
    if (c.flag)
      synthArgs.insert(synthArgs.end(), {c.flag, std::to_string(c.width)});
    CommandResult s = runHyc(synthArgs);
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const std::string one = compileOnce(ckpt, {"--target", "portable"});
    const std::string many =
        compileOnce(ckpt, {"--target", "portable", "--tp", std::to_string(c.ranks)});
    const Generated a = generate(one, tag + "-1", 16);
    const Generated b = generate(many, tag + "-n", 16);
    ASSERT_EQ(a.ids.size(), 16u);
    EXPECT_EQ(a.ids, b.ids) << tag;
    const LogitGap gap = logitGap(a, b);
    std::printf("%s: max |tpN - tp1| %.3g of max |logit| %.3g\n", tag.c_str(), gap.worst,
                gap.scale);
    EXPECT_GT(gap.scale, 0.1f);
    EXPECT_LE(gap.worst, 1e-4f * gap.scale) << tag;
  }
}

// The counts and layouts it cannot split are refused by name at compile
// time, and a run that does not match the artifact's ranks is refused.
TEST(TensorParallel, MismatchesAreRefusedByName) {
  const std::string ckpt = synth("llama", "tiny", 5);
  CommandResult three = runHyc({"compile", ckpt, "-o", tempDir() + "/tp3", "--tp", "3"});
  EXPECT_NE(three.exit_code, 0);
  EXPECT_NE(three.err.find("2 kv heads do not split over 3 ranks"), std::string::npos)
      << three.err;
  // Heads are not padded: MLA's 4 heads over 3 ranks name the weight.
  CommandResult heads = runHyc(
      {"compile", synth("deepseek-v3", "tiny", 5), "-o", tempDir() + "/tp3-mla", "--tp", "3"});
  EXPECT_NE(heads.exit_code, 0);
  EXPECT_NE(heads.err.find("is not a multiple of 3"), std::string::npos) << heads.err;

  CommandResult exe =
      runHyc({"compile", ckpt, "-o", tempDir() + "/tp-exe", "--tp", "2", "--emit", "exe"});
  EXPECT_NE(exe.exit_code, 0);
  EXPECT_NE(exe.err.find("--emit=exe with --tp"), std::string::npos) << exe.err;

  const std::string one = compileOnce(ckpt, {"--target", "reference"});
  const std::string two = compileOnce(ckpt, {"--target", "reference", "--tp", "2"});
  CommandResult r = runHycWithin(60, {"run", two, "--tp", "3", "-n", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--tp 3, but " + two + " was compiled for 2 ranks"), std::string::npos)
      << r.err;
  r = runHycWithin(60, {"run", one, "--tp", "2", "-n", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("was compiled for 1 rank (compile it with --tp 2)"), std::string::npos)
      << r.err;
  r = runHycWithin(60, {"run", two + "/ranks/1", "-n", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("is rank 1 of a 2-rank artifact"), std::string::npos) << r.err;

  // A rank directory left from another compile is not run beside rank 0.
  const std::string mixed = tempDir() + "/tp-mixed";
  ASSERT_EQ(std::system(("rm -rf '" + mixed + "' && cp -r '" + two + "' '" + mixed +
                         "' && rm -rf '" + mixed + "/ranks/1' && cp -r '" + one + "' '" +
                         mixed + "/ranks/1'")
                            .c_str()),
            0);
  r = runHycWithin(60, {"run", mixed, "-n", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("but should be rank 1 of 2"), std::string::npos) << r.err;

  // Rank 1 of another compile of the same geometry (other weights: seed 6)
  // matches rank 0 in every shape and bound; only the compile identity
  // tells them apart. Before identities this ran and gave wrong logits.
  const std::string other =
      compileOnce(synth("llama", "tiny", 6), {"--target", "reference", "--tp", "2"});
  ASSERT_EQ(std::system(("rm -rf '" + mixed + "/ranks/1' && cp -r '" + other + "/ranks/1' '" +
                         mixed + "/ranks/1'")
                            .c_str()),
            0);
  r = runHycWithin(60, {"run", mixed, "-n", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(mixed + "/ranks/1 comes from another compile (compile_id "),
            std::string::npos)
      << r.err;
  // The same command line gives the same identity to every rank of it.
  const std::string again = tempDir() + "/tp-again";
  ASSERT_EQ(std::system(("rm -rf '" + again + "' && cp -r '" + two + "' '" + again + "'")
                            .c_str()),
            0);
  r = runHycWithin(60, {"run", again, "-n", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A GGUF Q4_K_M file over two ranks keeps its codes: rows split (q, k, v,
// gate/up) keep Q4_K / Q6_K as stored; columns split (o_proj, down: K =
// 256 and 768 cut at 128 and 384) keep Q4_K halves as q4z (each half with
// its super-block's d and dmin) and re-quantize a cut Q6_K to 8-bit codes
// from its exact values, which the precision line says. The logits then
// follow numpy's over the file's exactly dequantized weights to the bars of
// one rank (quant_codes_test GgufKQuants: llama.cpp's own max abs 0.16 and
// rms 0.030 on this file times sqrt(3) for activation scales over up to
// three 256-blocks; a rank's part of a row has fewer, and 8-bit codes add
// ~1/16 of a 4-bit rounding), argmax equal at >= 85% of positions. A
// half super-block given the other half's d, or a rank reading the other
// rank's columns, moves logits by O(1) (4-bit codes re-rounded: max abs
// 0.86, argmax 52/64, measured).
TEST(TensorParallel, GgufCodesKeptPerRankFollowNumpy) {
  const std::string dir = sharedDir() + "/golden-gguf/llama-quant-tiny";
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  // Into a directory that does not exist yet: --tp creates it and ranks/.
  std::filesystem::remove_all(tempDir() + "/tp-gguf");
  const std::string out = tempDir() + "/tp-gguf/q4km.hyc";
  CommandResult r = runHyc({"compile", dir + "/Q4_K_M.gguf", "-o", out, "--tp", "2",
                            "--max-seq-len", "96", "--max-batch-tokens", "64", "--kv-cache",
                            "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("precision: w4a8 (--quant auto"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 matrix whose rank part cuts the stored scale blocks (a K split of 2 "
                       "not in whole super-blocks) is re-quantized from its exact values to "
                       "8-bit codes"),
            std::string::npos)
      << r.err;
  for (const std::string &rank : {out, out + "/ranks/1"}) {
    auto manifest = nlohmann::json::parse(readFile(rank + "/manifest.json"));
    std::map<std::string, int> formats;
    for (const auto &t : manifest["weights"]["tensors"]) {
      const std::string name = t["name"];
      if (name.find("proj.weight") == std::string::npos)
        continue;
      const std::string format = name.substr(name.find('#') + 1);
      ++formats[format];
      if (format == "q4k" || format == "q4z") {
        int64_t elements = 1;
        for (int64_t d : t["shape"].get<std::vector<int64_t>>())
          elements *= d;
        const double perWeight = double(t["nbytes"].get<int64_t>()) / double(elements);
        EXPECT_GE(perWeight, 0.5) << rank << " " << name;
        EXPECT_LE(perWeight, 0.6) << rank << " " << name;
      }
    }
    // 2 layers: q, k, (v), gate/up as Q4_K (v of layer 1 is Q6_K); the
    // three Q4_K o / down parts as q4z; layer 1's Q6_K down as q8g32.
    EXPECT_EQ(formats, (std::map<std::string, int>{{"q4k", 7}, {"q4z", 3}, {"q6k", 1},
                                                   {"q8g32", 1}}))
        << rank;
  }

  const nlohmann::json inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
  const std::vector<int32_t> seq = inputs["sequences"]["64"].get<std::vector<int32_t>>();
  std::string ids;
  for (int32_t id : seq)
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const std::string npy = tempDir() + "/tp-gguf-q4km.npy";
  r = runHycWithin(120, {"run", out, "--prompt-ids", ids, "-n", "1", "--ignore-eos",
                         "--no-stats", "--logits-out", npy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  hyrt::NpyArray got, numpy;
  ASSERT_TRUE(hyrt::read_npy_f32(npy, &got).ok());
  ASSERT_TRUE(hyrt::read_npy_f32(dir + "/Q4_K_M.logits_64.npy", &numpy).ok());
  ASSERT_EQ(got.data.size(), numpy.data.size());
  const int64_t vocab = numpy.shape.back();
  double maxAbs = 0, sq = 0;
  int64_t argmaxEqual = 0;
  for (size_t p = 0; p < seq.size(); ++p) {
    const float *a = got.data.data() + p * vocab, *b = numpy.data.data() + p * vocab;
    for (int64_t v = 0; v < vocab; ++v) {
      maxAbs = std::max(maxAbs, double(std::fabs(a[v] - b[v])));
      sq += double(a[v] - b[v]) * double(a[v] - b[v]);
    }
    argmaxEqual += std::max_element(a, a + vocab) - a == std::max_element(b, b + vocab) - b;
  }
  const double rms = std::sqrt(sq / double(got.data.size()));
  std::printf("Q4_K_M over 2 ranks vs numpy: max abs %.4f, rms %.4f, argmax equal %lld/%zu\n",
              maxAbs, rms, static_cast<long long>(argmaxEqual), seq.size());
  EXPECT_LT(maxAbs, 0.3);
  EXPECT_LT(rms, 0.06);
  EXPECT_GE(argmaxEqual * 100, int64_t(seq.size()) * 85);
}

// `hyc serve` on a TP artifact stays up while idle longer than the ranks'
// wait deadline (HYC_TP_TIMEOUT, shortened here): the followers wait for
// rank 0's next step as long as it lives. Then one request over loopback
// gets `hyc run`'s greedy answer, and SIGINT stops every rank cleanly.
TEST(TensorParallel, AnIdleServerKeepsItsRanks) {
  const std::string ckpt = synth("llama", "tiny", 5);
  const std::string two = compileOnce(ckpt, {"--target", "portable", "--tp", "2"});
  const std::string errPath = tempDir() + "/tp-serve.err";
  const auto [pid, port] = startServe(two, "tp-serve", {"HYC_TP_TIMEOUT", "1"});
  ASSERT_FALSE(port.empty()) << readFile(errPath);
  std::this_thread::sleep_for(std::chrono::seconds(3)); // idle: 3x the deadline
  const std::string body = R"({"model":"m","prompt":[1,17,42,7,99],"max_tokens":8,"temperature":0})";
  const std::string request = tempDir() + "/tp-serve.request";
  {
    std::ofstream req(request, std::ios::binary);
    req << "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        << "Content-Length: " << body.size() << "\r\nConnection: close\r\n\r\n"
        << body;
  }
  const auto [reply, rc] = shell("timeout 60 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port +
                                 " && cat \"$0\" >&3 && cat <&3' '" + request + "'");
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(rc, 0) << reply;
  EXPECT_NE(reply.find("200 OK"), std::string::npos) << reply << readFile(errPath);
  EXPECT_NE(reply.find("\"completion_tokens\":8"), std::string::npos) << reply;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << readFile(errPath);
  EXPECT_EQ(readFile(errPath).find("rank 1"), std::string::npos) << readFile(errPath);
}

/// `hyc serve` of a TP=2 artifact whose rank 1 gets `sig` while the server
/// is idle: /health turns 503, and the server exits non-zero within 5 s
/// naming the rank (a frozen rank used to be found only at the next step's
/// collective deadline, and a dead one only by the next request).
class ServedRankFailure : public ::testing::TestWithParam<int> {};

TEST_P(ServedRankFailure, HealthTurns503AndTheServerExitsNamingTheRank) {
  const std::string ckpt = synth("llama", "tiny", 5);
  const std::string two = compileOnce(ckpt, {"--target", "portable", "--tp", "2"});
  const std::string tag = std::to_string(GetParam());
  const std::string errPath = tempDir() + "/tp-fail" + tag + ".err";
  const auto [pid, port] = startServe(two, "tp-fail" + tag);
  ASSERT_FALSE(port.empty()) << readFile(errPath);
  const auto [children, prc] = shell("pgrep -P " + std::to_string(pid));
  ASSERT_EQ(prc, 0) << "no rank 1 under the server";
  const pid_t rank1 = pid_t(std::stol(children));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(rank1, GetParam()), 0);
  bool saw503 = false;
  int status = 0;
  pid_t done = 0;
  while (done == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    if (!saw503) {
      const auto [reply, rc] = shell("timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port +
                                     " && printf \"GET /health HTTP/1.1\\r\\nHost: x\\r\\n"
                                     "Connection: close\\r\\n\\r\\n\" >&3 && cat <&3' 2>/dev/null");
      saw503 = reply.find("HTTP/1.1 503") != std::string::npos &&
               reply.find("rank 1") != std::string::npos;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    done = ::waitpid(pid, &status, WNOHANG);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::kill(rank1, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_NE(done, 0) << "the server did not stop within 10 s: " << readFile(errPath);
  EXPECT_TRUE(saw503) << "/health never answered 503 naming rank 1";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << readFile(errPath);
  EXPECT_NE(readFile(errPath).find("rank 1 (pid " + std::to_string(rank1) + ")"),
            std::string::npos)
      << readFile(errPath);
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(::kill(rank1, 0), 0) << "rank 1 outlived its server";
}

INSTANTIATE_TEST_SUITE_P(Signals, ServedRankFailure, ::testing::Values(SIGKILL, SIGSTOP),
                         [](const auto &info) {
                           return std::string(info.param == SIGKILL ? "Killed" : "Stopped");
                         });

// A rank that cannot set up (its artifact is unreadable) stops both
// processes at once, naming it: no rank waits for it until a deadline.
TEST(TensorParallel, ARankThatCannotStartStopsEveryRank) {
  const std::string ckpt = synth("llama", "tiny", 5);
  const std::string good = compileOnce(ckpt, {"--target", "reference", "--tp", "2"});
  const std::string bad = tempDir() + "/tp-broken-rank";
  ASSERT_EQ(std::system(("rm -rf '" + bad + "' && cp -r '" + good + "' '" + bad + "' && rm '" +
                         bad + "/ranks/1/weights.bin'")
                            .c_str()),
            0);
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = runHycWithin(60, {"run", bad, "-n", "8"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124) << "timed out";
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ranks/1/weights.bin: cannot open"), std::string::npos) << r.err;
}

// Rank 1 killed (SIGKILL) in the middle of a generation: rank 0 stops
// within 5 s with an error naming rank 1, instead of waiting for it.
TEST(TensorParallel, KillingARankMidGenerationStopsTheOthers) {
  // A model slow enough on the reference kernels (~150 tokens/s) that the
  // kill lands mid-generation: 1000 tokens take several seconds.
  const std::string ckpt = synth("llama", "small", 3);
  const std::string art = compileOnce(ckpt, {"--target", "reference", "--tp", "2"});
  const std::string errPath = tempDir() + "/tp-kill.err";
  Generation g = startGeneration(
      {HYC_BIN, "run", art, "-n", "1000", "--ignore-eos", "--print-ids"}, errPath);
  ASSERT_GE(g.pid, 0);
  awaitIds(g, 20);
  const std::vector<pid_t> ranks = childrenOf(g.pid);
  ASSERT_EQ(ranks.size(), 1u) << "expected rank 1 as the only child of rank 0";
  ASSERT_EQ(::kill(ranks[0], SIGKILL), 0);
  int status = 0;
  const double seconds = secondsToExit(g, &status);
  const std::string err = readFile(errPath);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << err;
  EXPECT_LT(seconds, 5.0) << err;
  EXPECT_NE(err.find("rank 1"), std::string::npos) << err;
  EXPECT_NE(err.find("died"), std::string::npos) << err;
  std::printf("rank 0 stopped %.3f s after rank 1 was killed: %s", seconds, err.c_str());
}

// `hyc bench` on a TP artifact starts the ranks and reports how much of the
// step time the all-reduce took: a share in (0, 1) for both phases (zero
// would mean no collective ran, one that nothing else did).
TEST(TensorParallel, BenchReportsTheCollectiveShare) {
  const std::string ckpt = synth("llama", "tiny", 5);
  const std::string two = compileOnce(ckpt, {"--target", "portable", "--tp", "2"});
  CommandResult r = runHycWithin(
      300, {"bench", two, "--input", "16", "--output", "8", "--rounds", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tp"].get<int>(), 2);
  for (const char *key : {"collective_prefill_share", "collective_decode_share"}) {
    const double share = j[key].get<double>();
    EXPECT_GT(share, 0.0) << key;
    EXPECT_LT(share, 1.0) << key;
  }
}

} // namespace
} // namespace hyc::e2e
