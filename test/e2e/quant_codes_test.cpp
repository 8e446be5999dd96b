// Integer codes with their fp16 scales per 32 K-elements inside the packed
// weight (--quant w4a8: 4-bit, GGUF Q4_0; --quant w8a8-g32: 8-bit, GGUF
// Q8_0). Every variant the host runs against the reference target of the
// same scheme on synthetic dense and MoE models; GGUF Q4_0 / Q8_0 files
// compiled with no --quant keep their blocks bit for bit and follow the
// numpy reference of their exactly dequantized weights.
#include "test/e2e/artifact_bytes.h"
#include "test/e2e/e2e_util.h"
#include "test/e2e/engine_util.h"

#include "hyrt/cli/npy.h"
#include "models/io/gguf.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

const std::vector<std::string> kBounds = {"--max-seq-len", "96", "--max-batch-tokens", "48",
                                          "--kv-cache", "f32"};

struct CodesCase {
  std::string arch, quant;
};

std::string codesName(const ::testing::TestParamInfo<CodesCase> &info) {
  std::string n = info.param.arch + "_" + info.param.quant;
  for (char &c : n)
    if (c == '-')
      c = '_';
  return n;
}

class Codes : public ::testing::TestWithParam<CodesCase> {};

// A dense Llama (hidden 256, ffn 688: K of 8 and 21.5 groups, the last
// padded) and a Qwen3-MoE (expert GEMMs through the grouped and
// token-gathering drivers), teacher-forced 48 tokens, fp32 cache. The
// kernels and the reference quantize activations alike and sum each
// group's integer products exactly; int8 activations make rounding and
// routing discontinuous, so the bar is the W8A8 one (per-position cosine
// >= 0.99). The scheme must differ from per-channel W8A8 (not a rename).
TEST_P(Codes, EveryVariantMatchesTheReferenceOfTheSameScheme) {
  const CodesCase &c = GetParam();
  const std::string dir = tempDir() + "/codes-" + c.arch;
  CommandResult s =
      runHyc({"synth", "--arch", c.arch, "--preset", "small", "--seed", "5", "-o", dir});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::vector<int32_t> t = {1};
  for (int i = 1; i < 48; ++i)
    t.push_back(int32_t(3 + (i * 97) % 1000));
  std::vector<std::string> ref = kBounds, channel = kBounds, fast = kBounds;
  ref.insert(ref.end(), {"--target", "reference", "--quant", c.quant});
  channel.insert(channel.end(), {"--target", "reference", "--quant", "w8a8"});
  fast.insert(fast.end(), {"--target", "portable", "--quant", c.quant});
  const std::vector<float> want = teacherForced(compileOnce(dir, ref), "reference", t);
  ASSERT_FALSE(want.empty());
  EXPECT_GT(maxAbsDiff(want, teacherForced(compileOnce(dir, channel), "reference", t)), 1e-4);
  const std::string art = compileOnce(dir, fast);
  const std::string layout = c.quant == "w4a8" ? "q4_g32" : "q8_g32";
  auto manifest = nlohmann::json::parse(readFile(art + "/manifest.json"));
  int packed = 0;
  for (const auto &tensor : manifest["weights"]["tensors"])
    packed += tensor["dtype"] == layout;
  EXPECT_GT(packed, 0) << "no weight in layout " << layout;
  const size_t vocab = want.size() / (2 * t.size());
  const VariantSplit split = variantsOf(art);
  for (const std::string &skipped : split.skipped)
    std::printf("%s: variant %s skipped\n", c.arch.c_str(), skipped.c_str());
  for (const std::string &isa : split.run) {
    const std::vector<float> got = teacherForced(art, isa, t);
    ASSERT_EQ(got.size(), want.size());
    double worst = 1;
    for (size_t p = 0; p < 2 * t.size(); ++p)
      worst = std::min(worst, hyc::test::cosine(got.data() + p * vocab,
                                                want.data() + p * vocab, vocab));
    std::printf("%s %s %s vs reference: worst per-position cosine %.6f\n", c.arch.c_str(),
                c.quant.c_str(), isa.c_str(), worst);
    EXPECT_GE(worst, 0.99) << isa;
  }
  EXPECT_FALSE(split.run.empty());
}

INSTANTIATE_TEST_SUITE_P(Synth, Codes,
                         ::testing::Values(CodesCase{"llama", "w4a8"},
                                           CodesCase{"llama", "w8a8-g32"},
                                           CodesCase{"qwen3-moe", "w4a8"},
                                           CodesCase{"qwen3-moe", "w8a8-g32"}),
                         codesName);

/// fp16 bits of panel scale (column n, group g) and the code at (n, k) of
/// one packed [N][K] matrix, by the layout's definition (hyrt/gemm_layout.h).
struct PackedCodes {
  const uint8_t *w;
  int bits;
  int64_t groupBytes, panelBytes, quadBytes;
  PackedCodes(const std::string &bytes, int bits, int64_t k)
      : w(reinterpret_cast<const uint8_t *>(bytes.data())), bits(bits),
        groupBytes((bits == 4 ? 64 : 128) * 8 + 64), panelBytes(k / 32 * groupBytes),
        quadBytes(bits == 4 ? 64 : 128) {}
  uint16_t scale(int64_t n, int64_t g) const {
    uint16_t h;
    std::memcpy(&h, w + (n / 32) * panelBytes + g * groupBytes + 8 * quadBytes + 2 * (n % 32), 2);
    return h;
  }
  int code(int64_t n, int64_t k) const {
    const uint8_t *q = w + (n / 32) * panelBytes + (k / 32) * groupBytes +
                       ((k % 32) / 4) * quadBytes;
    const int64_t c = n % 32, e = k % 4;
    if (bits == 8)
      return q[4 * c + e];
    return c < 16 ? q[4 * c + e] & 15 : q[4 * (c - 16) + e] >> 4;
  }
};

struct GgufCodesCase {
  std::string model, type, quant;
};

std::string ggufCodesName(const ::testing::TestParamInfo<GgufCodesCase> &info) {
  std::string n = info.param.model + "_" + info.param.type;
  for (char &c : n)
    if (c == '-')
      c = '_';
  return n;
}

class GgufCodes : public ::testing::TestWithParam<GgufCodesCase> {};

// No --quant: a file whose GEMM matrices are all Q4_0 becomes w4a8, one
// with Q4_0 and Q8_0 (or Q8_0 alone) w8a8-g32, said on the precision line.
// ffn_down of layer 0 (dense) or its first expert (MoE): every code and
// every fp16 scale in the artifact equals the file's block (Q4_0 nibble n
// as code n, or n + 120 as an 8-bit code; Q8_0 byte q as q + 128). Then
// the default (portable) artifact runs every variant on kernels only and
// follows the numpy reference of the dequantized weights to the W8A8 bar.
TEST_P(GgufCodes, DefaultCompileKeepsTheBlocksBitForBit) {
  const GgufCodesCase &c = GetParam();
  const std::string dir = sharedDir() + "/golden-gguf/" + c.model;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  const std::string file = dir + "/" + c.type + ".gguf";
  const std::string out = tempDir() + "/gguf-codes-" + c.model + "-" + c.type;
  CommandResult r = runHyc({"compile", file, "-o", out + "-ref.hyc", "--target", "reference",
                            "--max-seq-len", "96", "--max-batch-tokens", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("precision: " + c.quant + " (--quant auto"), std::string::npos) << r.err;

  auto gguf = io::GgufFile::open(file);
  ASSERT_TRUE(gguf.ok()) << gguf.error();
  const bool moe = c.model.find("moe") != std::string::npos;
  const std::string stem = moe ? "blk.0.ffn_down_exps.weight" : "blk.0.ffn_down.weight";
  const io::GgufTensorInfo *info = gguf.value().find_tensor(stem);
  ASSERT_NE(info, nullptr) << stem;
  auto view = gguf.value().tensor(stem);
  ASSERT_TRUE(view.ok()) << view.error();
  const int64_t k = info->shape.back(), n = info->shape[info->shape.size() - 2];
  const bool q4 = info->ggml_type == 2; // GGML_Q4_0 (else Q8_0 = 8)
  ASSERT_TRUE(q4 || info->ggml_type == 8) << stem << " has ggml type " << info->ggml_type;

  const std::string suffix = c.quant == "w4a8" ? "#q4g32" : "#q8g32";
  const int bits = c.quant == "w4a8" ? 4 : 8;
  auto manifest = nlohmann::json::parse(readFile(out + "-ref.hyc/manifest.json"));
  std::string name;
  for (const auto &t : manifest["weights"]["tensors"]) {
    const std::string tn = t["name"];
    if (tn.find("layers.0.mlp.") != std::string::npos &&
        tn.find("down_proj.weight" + suffix) != std::string::npos)
      name = tn;
  }
  ASSERT_FALSE(name.empty()) << "no layer-0 down_proj" << suffix << " in the artifact";
  const std::string bytes = artifactTensor(out + "-ref.hyc", name);
  const PackedCodes packed(bytes, bits, k);
  ASSERT_GE(int64_t(bytes.size()), (n + 31) / 32 * packed.panelBytes);
  const size_t blockBytes = q4 ? 18 : 34;
  int64_t mismatches = 0;
  for (int64_t row = 0; row < n; ++row)
    for (int64_t g = 0; g < k / 32; ++g) {
      const uint8_t *block = view.value().data + size_t(row * (k / 32) + g) * blockBytes;
      uint16_t d;
      std::memcpy(&d, block, 2);
      mismatches += packed.scale(row, g) != d;
      for (int j = 0; j < 32; ++j) {
        // Q4_0: nibble j (low nibbles 0..15, high 16..31); Q8_0: int8 j.
        const int stored = q4 ? (j < 16 ? block[2 + j] & 15 : block[2 + j - 16] >> 4)
                              : int(int8_t(block[2 + j]));
        const int want = q4 ? (bits == 4 ? stored : stored + 120) : stored + 128;
        mismatches += packed.code(row, g * 32 + j) != want;
      }
    }
  EXPECT_EQ(mismatches, 0) << name << " (expert 0 of a stack)";

  // The default target on kernels only, against the reference target of
  // the same (auto-chosen) scheme, both with an fp32 cache: the W8A8 bar.
  // The dense file is also held to that bar against numpy; the MoE one is
  // not: its router sits on near ties, where a rounding flips an expert
  // (even bf16 weights with fp32 activations give a worst cosine of 0.85
  // there), so only the same-scheme reference is a fair yardstick.
  r = runHyc({"compile", file, "-o", out + ".hyc", "--max-seq-len", "96",
              "--max-batch-tokens", "64", "--kv-cache", "f32", "--print-schedule"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("hyrt_ref_"), std::string::npos) << "a reference kernel in the schedule";
  const nlohmann::json inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
  const std::vector<int32_t> seq = inputs["sequences"]["64"].get<std::vector<int32_t>>();
  hyrt::NpyArray numpy;
  ASSERT_TRUE(hyrt::read_npy_f32(dir + "/" + c.type + ".logits_64.npy", &numpy).ok());
  const int64_t vocab = numpy.shape.back();
  LoadedModel ref = loadModel(out + "-ref.hyc", 16, "reference");
  ASSERT_TRUE(ref.engine);
  const std::vector<float> same = wholeSequenceLogits(*ref.engine, seq);
  auto worstCosine = [&](const std::vector<float> &a, const std::vector<float> &b) {
    double worst = 1;
    for (size_t p = 0; p < seq.size(); ++p)
      worst = std::min(worst, hyc::test::cosine(a.data() + p * vocab, b.data() + p * vocab,
                                                vocab));
    return worst;
  };
  for (const std::string &isa : variantsOf(out + ".hyc").run) {
    LoadedModel m = loadModel(out + ".hyc", 16, isa);
    ASSERT_TRUE(m.engine) << isa;
    const std::vector<float> got = wholeSequenceLogits(*m.engine, seq);
    ASSERT_EQ(got.size(), numpy.data.size());
    const double vsSame = worstCosine(got, same), vsNumpy = worstCosine(got, numpy.data);
    std::printf("%s %s default (%s) %s: worst per-position cosine %.6f vs the reference "
                "target, %.6f vs numpy\n",
                c.model.c_str(), c.type.c_str(), c.quant.c_str(), isa.c_str(), vsSame, vsNumpy);
    EXPECT_GE(vsSame, 0.99) << isa;
    if (!moe)
      EXPECT_GE(vsNumpy, 0.99) << isa;
  }
}

INSTANTIATE_TEST_SUITE_P(
    GoldenGguf, GgufCodes,
    ::testing::Values(GgufCodesCase{"llama-quant-tiny", "Q8_0", "w8a8-g32"},
                      GgufCodesCase{"llama-quant-tiny", "Q4_0", "w4a8"},
                      GgufCodesCase{"qwen3moe-quant-tiny", "Q8_0", "w8a8-g32"},
                      GgufCodesCase{"qwen3moe-quant-tiny", "Q4_0", "w8a8-g32"}),
    ggufCodesName);

} // namespace
} // namespace hyc::e2e
