// --quant fp8: e4m3 weights with one factor per 128 x 128 block, widened to
// bf16 inside the GEMM. A DeepSeek FP8 checkpoint (hyc synth --fp8) keeps
// its codes and factors bit for bit, stores one byte per weight, and every
// variant this host runs follows the checkpoint's exact fp32
// dequantization.
#include "test/e2e/artifact_bytes.h"
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace hyc::e2e {
namespace {

/// The layers fp8 leaves 16-bit (router, head, embeddings, MLA's kv_b read
/// by the attention) kept fp32 instead, so that the fp8 artifact and the
/// fp32 dequantized checkpoint differ only in how the GEMMs read the
/// quantized weights.
const std::vector<std::string> kKeepF32 = {"--keep-f32",
                                           "mlp.gate.weight,lm_head,embed_tokens,kv_b_proj"};

std::vector<std::string> flags(std::vector<std::string> extra) {
  std::vector<std::string> f = {"--max-seq-len", "96", "--max-batch-tokens", "48",
                                "--kv-cache", "f32"};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

struct Fp8Checkpoint {
  std::string fp8, f32;
};

/// DeepSeek-V3 (MLA, shared + routed experts; the small preset, so that K
/// spans whole and partial 128 blocks) with FP8 linear layers, and its
/// exact fp32 twin.
const Fp8Checkpoint &deepseekFp8() {
  static const Fp8Checkpoint c = [] {
    Fp8Checkpoint d{tempDir() + "/dsv3-fp8", tempDir() + "/dsv3-fp8-as-f32"};
    CommandResult s = runHyc({"synth", "--arch", "deepseek-v3", "--preset", "small", "--fp8",
                              "--seed", "5", "-o", d.fp8, "--dequantized-copy", d.f32});
    EXPECT_EQ(s.exit_code, 0) << s.err;
    return d;
  }();
  return c;
}

/// The checkpoint tensors an artifact entry holds, in storage order:
/// expert by expert, a [gate; up] name's parts one after the other.
std::vector<std::string> storedNames(std::string base, int64_t experts) {
  std::vector<std::string> out;
  for (int64_t e = 0; e < experts; ++e) {
    std::string name = base;
    if (size_t at = name.find('*'); at != std::string::npos)
      name.replace(at, 1, std::to_string(e));
    const size_t open = name.find('{'), close = name.find('}');
    if (open == std::string::npos) {
      out.push_back(name);
      continue;
    }
    const std::string body = name.substr(open + 1, close - open - 1);
    const size_t comma = body.find(',');
    for (const std::string &part : {body.substr(0, comma), body.substr(comma + 1)})
      out.push_back(name.substr(0, open) + part + name.substr(close + 1));
  }
  return out;
}

// The reference artifact stores the codes row-major ("f8e4m3") and the
// factors as they are: both equal the checkpoint's bytes, for dense,
// [gate; up] and stacked-expert entries alike.
TEST(Fp8Checkpoint, CodesAndFactorsKeptBitForBit) {
  const Fp8Checkpoint &c = deepseekFp8();
  const std::string ref = compileOnce(c.fp8, flags({"--target", "reference", "--quant", "fp8"}));
  const std::string file = c.fp8 + "/model.safetensors";
  auto manifest = nlohmann::json::parse(readFile(ref + "/manifest.json"));
  int checked = 0, stacks = 0;
  for (const auto &t : manifest["weights"]["tensors"]) {
    const std::string name = t["name"];
    const size_t hash = name.find("#fp8");
    if (hash == std::string::npos)
      continue;
    const bool scale = name.find(".scale") != std::string::npos;
    const std::string base = name.substr(0, hash);
    const int64_t experts = base.find('*') != std::string::npos ? t["shape"][0].get<int64_t>() : 1;
    std::string want;
    for (const std::string &n : storedNames(base, experts)) {
      const StoredTensor s = storedTensor(file, scale ? n + "_scale_inv" : n);
      ASSERT_EQ(s.dtype, scale ? "F32" : "F8_E4M3") << n;
      want += s.bytes;
    }
    if (!scale)
      EXPECT_EQ(t["dtype"], "f8e4m3") << name;
    EXPECT_EQ(artifactTensor(ref, name), want) << name;
    ++checked;
    stacks += experts > 1;
  }
  EXPECT_GE(checked, 10);
  EXPECT_GE(stacks, 2) << "no expert stack was checked";
}

// The kernel artifact packs one byte per weight: each f8_vnni2 entry is
// its matrices' 32-column panels of K rounded up to whole 128 blocks,
// half of what the same weights take as bf16.
TEST(Fp8Checkpoint, KernelArtifactStoresOneBytePerWeight) {
  const Fp8Checkpoint &c = deepseekFp8();
  const std::string art = compileOnce(c.fp8, flags({"--target", "portable", "--quant", "fp8"}));
  const std::string bf16 = compileOnce(c.fp8, flags({"--target", "portable", "--quant", "bf16"}));
  auto manifest = nlohmann::json::parse(readFile(art + "/manifest.json"));
  int64_t fp8Bytes = 0, fp8Weights = 0;
  for (const auto &t : manifest["weights"]["tensors"]) {
    if (t["dtype"] != "f8_vnni2")
      continue;
    const std::vector<int64_t> shape = t["shape"];
    const std::string name = t["name"];
    const int64_t experts = shape.size() == 3 ? shape[0] : 1;
    const int64_t parts = name.find('{') != std::string::npos ? 2 : 1;
    const int64_t rows = shape[shape.size() - 2] / parts, k = shape.back();
    EXPECT_EQ(t["nbytes"].get<int64_t>(),
              experts * parts * ((rows + 31) / 32 * 32) * ((k + 127) / 128 * 128))
        << name;
    fp8Bytes += t["nbytes"].get<int64_t>();
    fp8Weights += experts * parts * rows * k;
  }
  ASSERT_GT(fp8Weights, 0);
  const int64_t size = int64_t(readFile(art + "/weights.bin").size());
  const int64_t bf16Size = int64_t(readFile(bf16 + "/weights.bin").size());
  std::printf("fp8 weights.bin %lld bytes (%lld fp8 weights in %lld bytes), bf16 %lld\n",
              (long long)size, (long long)fp8Weights, (long long)fp8Bytes, (long long)bf16Size);
  // bf16 holds the same weights in two bytes each (both pad rows to
  // panels; fp8 also pads K to whole blocks, the difference bounds that).
  EXPECT_LE(size + fp8Weights - (fp8Bytes - fp8Weights), bf16Size);
}

// The reference target's fp8 GEMM is the fp32 GEMM of the dequantized
// weights (identical logits); every kernel variant this host runs stays
// within the DESIGN.md bf16 tolerance (atol = rtol = 1e-2) of it, prefill
// and decode, and a different seed is far outside it.
TEST(Fp8Checkpoint, EveryVariantMatchesTheFp32Dequantization) {
  const Fp8Checkpoint &c = deepseekFp8();
  std::vector<int32_t> t = {1};
  for (int i = 1; i < 40; ++i)
    t.push_back(int32_t(3 + (i * 53) % 500));
  const std::vector<float> want =
      teacherForced(compileOnce(c.f32, flags({"--target", "reference"})), "reference", t);
  ASSERT_FALSE(want.empty());
  std::vector<std::string> refFlags = flags({"--target", "reference", "--quant", "fp8"});
  refFlags.insert(refFlags.end(), kKeepF32.begin(), kKeepF32.end());
  EXPECT_EQ(maxAbsDiff(teacherForced(compileOnce(c.fp8, refFlags), "reference", t), want), 0.0f);

  std::vector<std::string> fast = flags({"--target", "portable", "--quant", "fp8"});
  fast.insert(fast.end(), kKeepF32.begin(), kKeepF32.end());
  const std::string art = compileOnce(c.fp8, fast);
  const VariantSplit split = variantsOf(art);
  for (const std::string &skipped : split.skipped)
    std::printf("fp8: variant %s skipped\n", skipped.c_str());
  for (const std::string &isa : split.run) {
    const std::vector<float> got = teacherForced(art, isa, t);
    ASSERT_EQ(got.size(), want.size());
    std::printf("fp8 %s vs fp32 dequantization: max abs diff %.3g\n", isa.c_str(),
                maxAbsDiff(got, want));
    EXPECT_LE(hyc::test::maxExcess(want, got, 1e-2, 1e-2), 0.0) << isa;
  }
  EXPECT_FALSE(split.run.empty());

  const std::string other = tempDir() + "/dsv3-fp8-seed6";
  ASSERT_EQ(runHyc({"synth", "--arch", "deepseek-v3", "--preset", "small", "--fp8", "--seed",
                    "6", "-o", other})
                .exit_code,
            0);
  const std::vector<float> far =
      teacherForced(compileOnce(other, refFlags), "reference", t);
  EXPECT_GT(hyc::test::maxExcess(want, far, 1e-2, 1e-2), 0.0) << "the tolerance cannot tell two models apart";
}

} // namespace
} // namespace hyc::e2e
