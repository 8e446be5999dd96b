// Every graph fusion against the same model compiled with that fusion left
// out (--disable-pass): the fusion must fire (the fused model makes fewer
// calls of the kernels it merges, counted in the strategy-phase IR), and
// where the fused kernel does the same arithmetic the logits must be
// bit-identical, on the reference and on the kernel targets, whole-sequence
// and incremental.
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/artifact/cpu_features.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <sstream>
#include <sys/stat.h>
#include <utility>

namespace hyc::e2e {
namespace {

struct FusionCase {
  std::string model, pass, target, quant = "f32";
};

/// gtest prints a failing case by name instead of its bytes.
void PrintTo(const FusionCase &c, std::ostream *os) {
  *os << c.model << " " << c.pass << " " << c.target << " " << c.quant;
}

/// Compile flags of a case: target, quantization, bounds.
std::vector<std::string> caseFlags(const FusionCase &c) {
  return {"--max-seq-len", "128", "--max-batch-tokens", "64", "--target", c.target,
          "--quant", c.quant};
}

/// Skips (visibly) when the host cannot run the case's kernels.
bool hostRuns(const FusionCase &c, std::string &why) {
  const char *need = c.target == "reference"     ? nullptr
                     : c.target == "avx512-bf16" ? "avx512_bf16"
                     : c.quant == "w8a8"         ? "avx512_vnni"
                     : c.target == "avx2"        ? "avx2"
                                                 : "avx512f";
  if (need && !hyrt::host_has_cpu_feature(need)) {
    why = std::string("host lacks ") + need + ": the " + c.target + " kernels cannot run";
    return false;
  }
  return true;
}

std::string fusionCaseName(const ::testing::TestParamInfo<FusionCase> &info) {
  std::string n = info.param.model + "_" + info.param.target + "_" + info.param.quant;
  for (char &ch : n)
    if (ch == '-')
      ch = '_';
  return n;
}

/// The compute ops of the case's model after the strategy phase (`hyc
/// compile --emit mlir --compile-to strategy`), one line each: every one of
/// them becomes one kernel call per step of its entry.
std::string strategyIr(const std::string &dir, const std::vector<std::string> &flags) {
  static int n = 0;
  const std::string out = tempDir() + "/strategy" + std::to_string(n++) + ".mlir";
  std::vector<std::string> args = {"compile", dir, "-o", out, "--emit", "mlir",
                                   "--compile-to", "strategy"};
  args.insert(args.end(), flags.begin(), flags.end());
  CommandResult r = runHyc(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return readFile(out);
}

/// Ops `name` (e.g. "hyc.add") in `ir`, over every entry: lines that define
/// results with it, containing `with` and not `without` when those are given.
int64_t callsOf(const std::string &ir, const std::string &name, const std::string &with = "",
                const std::string &without = "") {
  int64_t n = 0;
  std::istringstream lines(ir);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("= " + name + " ");
    if (at == std::string::npos || (!with.empty() && line.find(with) == std::string::npos) ||
        (!without.empty() && line.find(without) != std::string::npos))
      continue;
    ++n;
  }
  return n;
}

/// The calls a fusion removes, by kind: what would still be there, as many
/// as without the fusion, if its pass did nothing.
std::vector<std::pair<std::string, int64_t>> fusedKindCalls(const std::string &pass,
                                                           const std::string &ir) {
  if (pass == "hyc-global-fuse-residual-norm" || pass == "hyc-global-fuse-moe-combine")
    // The residual (or shared experts') add folded into the norm (or the
    // unpermute combine).
    return {{"hyc.add", callsOf(ir, "hyc.add")}};
  if (pass == "hyc-global-fuse-gate-up-silu")
    // gate and up GEMMs become one, the SiLU-multiply its epilogue.
    return {{"hyc.silu_mul", callsOf(ir, "hyc.silu_mul")},
            {"GEMMs", callsOf(ir, "hyc.quant.matmul") + callsOf(ir, "hyc.moe.grouped_matmul")}};
  if (pass == "hyc-global-fuse-activation-quant")
    // Per-token quantizations: each quantize op, plus each W8A8 GEMM that
    // quantizes its own fp32 input (no input_scale).
    return {{"activation quantizations",
             callsOf(ir, "hyc.quant.quantize") +
                 callsOf(ir, "hyc.quant.matmul", "w8a8", "input_scale(")}};
  if (pass == "hyc-global-fuse-kv-append-into-attention")
    return {{"hyc.kv_cache.append", callsOf(ir, "hyc.kv_cache.append")}};
  ADD_FAILURE() << "no kernel kinds known for fusion " << pass;
  return {};
}

/// The fused and the unfused model of a case (the fusion left out with
/// --disable-pass), and the model's 33-token input.
class Fusion : public ::testing::TestWithParam<FusionCase> {
protected:
  void SetUp() override {
    dir = sharedDir() + "/golden/" + GetParam().model;
    struct stat st;
    if (stat(dir.c_str(), &st) != 0)
      GTEST_SKIP() << dir << " is absent";
    flags = caseFlags(GetParam());
    unfusedFlags = flags;
    unfusedFlags.insert(unfusedFlags.end(), {"--disable-pass", GetParam().pass});
  }

  /// Compiles and loads both artifacts (the caller has checked hostRuns).
  void loadBoth() {
    fused = loadModel(compileOnce(dir, flags));
    unfused = loadModel(compileOnce(dir, unfusedFlags));
    tokens = goldenTokens(dir, "33");
  }

  std::string dir;
  std::vector<std::string> flags, unfusedFlags;
  LoadedModel fused, unfused;
  std::vector<int32_t> tokens;
};

// Compiles only (to the strategy phase), so it runs on every host.
TEST_P(Fusion, FusedModelMakesFewerCallsOfTheFusedKinds) {
  const auto withFusion = fusedKindCalls(GetParam().pass, strategyIr(dir, flags));
  const auto without = fusedKindCalls(GetParam().pass, strategyIr(dir, unfusedFlags));
  ASSERT_EQ(withFusion.size(), without.size());
  ASSERT_FALSE(withFusion.empty());
  for (size_t i = 0; i < withFusion.size(); ++i) {
    std::printf("%s %s: %s, fused %lld, unfused %lld\n", GetParam().model.c_str(),
                GetParam().pass.c_str(), withFusion[i].first.c_str(),
                (long long)withFusion[i].second, (long long)without[i].second);
    EXPECT_LT(withFusion[i].second, without[i].second)
        << withFusion[i].first << ": " << GetParam().pass << " fused nothing";
  }
}

TEST_P(Fusion, FusedEqualsUnfusedBitForBit) {
  if (std::string why; !hostRuns(GetParam(), why))
    GTEST_SKIP() << why;
  loadBoth();
  ASSERT_TRUE(fused.engine && unfused.engine);
  EXPECT_EQ(maxAbsDiff(wholeSequenceLogits(*fused.engine, tokens),
                       wholeSequenceLogits(*unfused.engine, tokens)),
            0.0f);
  EXPECT_EQ(maxAbsDiff(incrementalLogits(*fused.engine, tokens, 20),
                       incrementalLogits(*unfused.engine, tokens, 20)),
            0.0f);
}

/// Three sequences of different lengths decoded together for a few steps:
/// every step's logits, concatenated.
std::vector<float> batchedDecode(hyrt::Engine &engine, const std::vector<int32_t> &tokens) {
  std::vector<int64_t> seqs;
  std::vector<float> all, step;
  for (size_t len : {5, 12, 20}) {
    seqs.push_back(engine.add_sequence());
    EXPECT_TRUE(engine
                    .extend(seqs.back(),
                            std::vector<int32_t>(tokens.begin(), tokens.begin() + len), &step)
                    .ok());
  }
  for (size_t i = 0; i < 6; ++i) {
    std::vector<int32_t> next = {tokens[20 + i], tokens[21 + i], tokens[22 + i]};
    hyrt::Status st = engine.decode(seqs, next, &step);
    EXPECT_TRUE(st.ok()) << st.message();
    all.insert(all.end(), step.begin(), step.end());
  }
  for (int64_t s : seqs)
    EXPECT_TRUE(engine.release(s).ok());
  return all;
}

TEST_P(Fusion, BatchedDecodeFusedEqualsUnfused) {
  if (std::string why; !hostRuns(GetParam(), why))
    GTEST_SKIP() << why;
  loadBoth();
  ASSERT_TRUE(fused.engine && unfused.engine);
  std::vector<float> x = batchedDecode(*fused.engine, tokens),
                     y = batchedDecode(*unfused.engine, tokens);
  ASSERT_FALSE(x.empty());
  EXPECT_EQ(maxAbsDiff(x, y), 0.0f);
}

/// Extend computes only the last token's logits unless every row is asked
/// for (hyc.logit_rows): that row must be the one the all-rows extend gives.
class LastTokenLogits : public ::testing::TestWithParam<FusionCase> {};

TEST_P(LastTokenLogits, EqualTheLastRowOfAllRows) {
  const FusionCase &c = GetParam();
  std::string dir = sharedDir() + "/golden/" + c.model;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  if (std::string why; !hostRuns(c, why))
    GTEST_SKIP() << why;
  LoadedModel m = loadModel(compileOnce(dir, caseFlags(c)));
  ASSERT_TRUE(m.engine);
  auto tokens = goldenTokens(dir, "33");
  std::vector<float> all = wholeSequenceLogits(*m.engine, tokens), last;
  int64_t seq = m.engine->add_sequence();
  ASSERT_TRUE(m.engine->extend(seq, tokens, &last, /*all_rows=*/false).ok());
  ASSERT_TRUE(m.engine->release(seq).ok());
  const size_t vocab = m.engine->vocab_size();
  ASSERT_EQ(last.size(), vocab);
  // The reference's rows are independent of the batch: bit-identical. The
  // generated kernels give small M (here the one row) more accumulator sets
  // to hide FMA latency, so the lm_head's K-term sums are split differently
  // than in a full row block: fp32 reassociation error, at most
  // K * 2^-24 * sum|terms| ~ 128 * 6e-8 * 2 = 1.5e-5 for these logits.
  const float d = maxAbsDiff(last, std::vector<float>(all.end() - vocab, all.end()));
  if (c.target == "reference")
    EXPECT_EQ(d, 0.0f);
  else
    EXPECT_LT(d, 1.5e-5f);
}

INSTANTIATE_TEST_SUITE_P(
    Extend, LastTokenLogits,
    ::testing::Values(FusionCase{"llama-tiny", "", "reference"},
                      FusionCase{"llama-tiny", "", "avx512"},
                      FusionCase{"qwen3moe-tiny", "", "avx512"},
                      FusionCase{"deepseekv3-tiny", "", "reference"}),
    fusionCaseName);


INSTANTIATE_TEST_SUITE_P(
    ResidualNorm, Fusion,
    ::testing::Values(FusionCase{"llama-tiny", "hyc-global-fuse-residual-norm", "reference"},
                      FusionCase{"llama-tiny", "hyc-global-fuse-residual-norm", "avx512"},
                      FusionCase{"qwen3moe-tiny", "hyc-global-fuse-residual-norm", "avx512"},
                      FusionCase{"deepseekv3-tiny", "hyc-global-fuse-residual-norm",
                                 "reference"}),
    fusionCaseName);

// Every weight scheme and kernel family, dense, MoE experts and DeepSeek's
// dense first layer plus shared experts.
INSTANTIATE_TEST_SUITE_P(
    GateUpSilu, Fusion,
    ::testing::Values(
        FusionCase{"llama-tiny", "hyc-global-fuse-gate-up-silu", "reference"},
        FusionCase{"llama-tiny", "hyc-global-fuse-gate-up-silu", "reference", "w8a8"},
        FusionCase{"llama-tiny", "hyc-global-fuse-gate-up-silu", "avx512"},
        FusionCase{"llama-tiny", "hyc-global-fuse-gate-up-silu", "avx2"},
        FusionCase{"llama-tiny", "hyc-global-fuse-gate-up-silu", "avx512", "bf16"},
        FusionCase{"llama-tiny", "hyc-global-fuse-gate-up-silu", "avx512-bf16", "bf16"},
        FusionCase{"llama-tiny", "hyc-global-fuse-gate-up-silu", "avx512", "w8a8"},
        FusionCase{"qwen3moe-tiny", "hyc-global-fuse-gate-up-silu", "reference"},
        FusionCase{"qwen3moe-tiny", "hyc-global-fuse-gate-up-silu", "avx512", "w8a8"},
        FusionCase{"qwen3moe-tiny", "hyc-global-fuse-gate-up-silu", "avx512", "bf16"},
        FusionCase{"deepseekv3-tiny", "hyc-global-fuse-gate-up-silu", "avx512", "w8a8"},
        // moe_intermediate_size 16: half-filled 32-column panels.
        FusionCase{"deepseekv3-grouped-tiny", "hyc-global-fuse-gate-up-silu", "avx512"},
        FusionCase{"deepseekv3-grouped-tiny", "hyc-global-fuse-gate-up-silu", "avx512", "w8a8"}),
    fusionCaseName);

// Activations read by several W8A8 GEMMs (q/k/v; DeepSeek's q_a and kv_a)
// are quantized once.
INSTANTIATE_TEST_SUITE_P(
    ActivationQuant, Fusion,
    ::testing::Values(
        FusionCase{"llama-tiny", "hyc-global-fuse-activation-quant", "reference", "w8a8"},
        FusionCase{"llama-tiny", "hyc-global-fuse-activation-quant", "avx512", "w8a8"},
        FusionCase{"qwen3moe-tiny", "hyc-global-fuse-activation-quant", "avx512", "w8a8"},
        FusionCase{"deepseekv3-tiny", "hyc-global-fuse-activation-quant", "avx512", "w8a8"}),
    fusionCaseName);

// DeepSeek-V3 adds its shared experts to the routed ones.
INSTANTIATE_TEST_SUITE_P(
    MoeCombine, Fusion,
    ::testing::Values(
        FusionCase{"deepseekv3-tiny", "hyc-global-fuse-moe-combine", "reference"},
        FusionCase{"deepseekv3-tiny", "hyc-global-fuse-moe-combine", "avx512", "w8a8"},
        FusionCase{"deepseekv3-grouped-tiny", "hyc-global-fuse-moe-combine", "avx512"}),
    fusionCaseName);

INSTANTIATE_TEST_SUITE_P(
    KvAppendIntoAttention, Fusion,
    ::testing::Values(
        FusionCase{"llama-tiny", "hyc-global-fuse-kv-append-into-attention", "reference"},
        FusionCase{"llama-tiny", "hyc-global-fuse-kv-append-into-attention", "avx512"},
        FusionCase{"qwen3moe-tiny", "hyc-global-fuse-kv-append-into-attention", "avx512"}),
    fusionCaseName);

} // namespace
} // namespace hyc::e2e
