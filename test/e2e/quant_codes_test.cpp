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
#include "models/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// No --quant: a file whose GEMM matrices are mostly Q4_0 becomes w4a8 (its
// Q8_0 matrices stay 8-bit codes), one of Q8_0 (or Q5_0, whose 5-bit codes
// fit 8-bit ones exactly) alone w8a8-g32, said on the precision line.
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
  const bool q4 = info->ggml_type == 2, q5 = info->ggml_type == 6; // Q4_0, Q5_0 (else Q8_0 = 8)
  ASSERT_TRUE(q4 || q5 || info->ggml_type == 8)
      << stem << " has ggml type " << info->ggml_type;

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
  const size_t blockBytes = q4 ? 18 : q5 ? 22 : 34;
  int64_t mismatches = 0;
  for (int64_t row = 0; row < n; ++row)
    for (int64_t g = 0; g < k / 32; ++g) {
      const uint8_t *block = view.value().data + size_t(row * (k / 32) + g) * blockBytes;
      uint16_t d;
      std::memcpy(&d, block, 2);
      mismatches += packed.scale(row, g) != d;
      uint32_t qh = 0; // Q5_0: bit j is element j's fifth bit
      if (q5)
        std::memcpy(&qh, block + 2, 4);
      for (int j = 0; j < 32; ++j) {
        // Q4_0: nibble j (low nibbles 0..15, high 16..31); Q5_0: the same
        // nibbles after qh, plus 16 x bit j of qh, for weight d (q - 16);
        // Q8_0: int8 j.
        const uint8_t *qs = block + (q5 ? 6 : 2);
        const int nibble = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
        const int stored = q4   ? nibble
                           : q5 ? nibble + int((qh >> j) & 1) * 16 - 16
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
  // there), so only the same-scheme reference is a fair yardstick for the
  // values. Both keep numpy's argmax at >= 85% of positions (issue 29;
  // llama.cpp on these files: 57-64 of 64).
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
    int64_t argmaxEqual = 0;
    for (size_t p = 0; p < seq.size(); ++p) {
      const float *a = got.data() + p * vocab, *b = numpy.data.data() + p * vocab;
      argmaxEqual += std::max_element(a, a + vocab) - a == std::max_element(b, b + vocab) - b;
    }
    std::printf("%s %s default (%s) %s: worst per-position cosine %.6f vs the reference "
                "target, %.6f vs numpy, argmax equal %lld/%zu\n",
                c.model.c_str(), c.type.c_str(), c.quant.c_str(), isa.c_str(), vsSame, vsNumpy,
                static_cast<long long>(argmaxEqual), seq.size());
    EXPECT_GE(vsSame, 0.99) << isa;
    EXPECT_GE(argmaxEqual * 100, int64_t(seq.size()) * 85) << isa;
    if (!moe)
      EXPECT_GE(vsNumpy, 0.99) << isa;
  }
}

INSTANTIATE_TEST_SUITE_P(
    GoldenGguf, GgufCodes,
    ::testing::Values(GgufCodesCase{"llama-quant-tiny", "Q8_0", "w8a8-g32"},
                      GgufCodesCase{"llama-quant-tiny", "Q4_0", "w4a8"},
                      GgufCodesCase{"llama-quant-tiny", "Q5_0", "w8a8-g32"},
                      GgufCodesCase{"qwen3moe-quant-tiny", "Q8_0", "w8a8-g32"},
                      GgufCodesCase{"qwen3moe-quant-tiny", "Q4_0", "w4a8"}),
    ggufCodesName);


// GGUF K-quant, IQ4 and Q4_1 / Q5_1 files (Q4_K_M: Q4_K + Q6_K (+ Q5_K,
// Q8_0 in the MoE file); IQ4_XS; IQ4_NL; Q4_1; Q5_1) compiled with no
// --quant: w4a8 (Q5_1: w8a8-g32) with every block matrix kept in its own
// format (the manifest names it; the 4-bit ones at 0.5-0.6 bytes per
// weight, Q4_1 at its own 0.625), layer 0's Q4_K down projection bit for bit
// (decoded here from the file's blocks, packed layout read by its
// definition), and the logits of every variant close to numpy's over the
// exactly dequantized weights. The weights are the file's, so the int8
// activations are the only extra error, the same kind llama.cpp has on
// these files: its measured max abs 0.11-0.16 and rms 0.021-0.030
// (golden-gguf README). Its activation scales cover 256 (Q8_K) or 32
// (Q8_0) elements; ours cover a group of 32 (two-level formats) or a whole
// row (one-level IQ4_NL, Q4_1, Q5_1; K = 256 here, 768 for the down projection: at
// most three of its 256-blocks, sqrt(3) on independent rounding errors),
// so the bars are llama.cpp's own figures times sqrt(3): max abs 0.16 *
// sqrt(3) < 0.3 and rms 0.030 * sqrt(3) < 0.06 on the dense file, with the
// argmax equal at >= 85% of positions (llama.cpp: 59/64 and up). The MoE
// file's router sits on near ties, where activation rounding flips experts
// (llama.cpp on the same files: max abs 1.7-2.1, rms 0.097-0.14, argmax
// 59-60/64): its bars are llama.cpp's figures on that very file times
// sqrt(3), the same argmax bar, and the reference target of the same
// scheme (the same int8 activations, exact integer sums in double) at the
// W8A8 bar of this file (per-position cosine >= 0.99: fp32 sums in another
// order still flip a near tie).
struct KQuantCase {
  std::string model, type;
  double llamaMaxAbs = 0, llamaRms = 0; ///< llama.cpp vs numpy, sequence 64
};

class GgufKQuants : public ::testing::TestWithParam<KQuantCase> {};

/// Q4_K's 6-bit scale and min of sub-block j from the 12-byte field.
void q4kScaleMin(int j, const uint8_t *q, int &sc, int &m) {
  sc = j < 4 ? q[j] & 63 : (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
  m = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
}

TEST_P(GgufKQuants, DefaultCompileKeepsEveryFormatAndFollowsNumpy) {
  const KQuantCase &c = GetParam();
  const std::string dir = sharedDir() + "/golden-gguf/" + c.model;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    GTEST_SKIP() << dir << " is absent";
  const std::string file = dir + "/" + c.type + ".gguf";
  const std::string out = tempDir() + "/gguf-kq-" + c.model + "-" + c.type + ".hyc";
  CommandResult r = runHyc({"compile", file, "-o", out, "--max-seq-len", "96",
                            "--max-batch-tokens", "64", "--kv-cache", "f32", "--print-schedule"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Q5_1's 5-bit codes are 8-bit codes here: the file is w8a8-g32.
  const bool eightBit = c.type == "Q5_1";
  EXPECT_NE(r.err.find(eightBit ? "precision: w8a8-g32 (--quant auto"
                                : "precision: w4a8 (--quant auto"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("hyrt_ref_"), std::string::npos) << "a reference kernel in the schedule";

  // Every GEMM weight in a codes layout; 4-bit ones at 0.5-0.6 bytes each.
  auto gguf = io::GgufFile::open(file);
  ASSERT_TRUE(gguf.ok()) << gguf.error();
  auto manifest = nlohmann::json::parse(readFile(out + "/manifest.json"));
  int64_t fourBit = 0;
  for (const auto &t : manifest["weights"]["tensors"]) {
    const std::string name = t["name"];
    if (name.find("proj.weight") == std::string::npos)
      continue;
    const std::string format = name.substr(name.find('#') + 1);
    EXPECT_TRUE(format == "q4k" || format == "q5k" || format == "q6k" || format == "iq4xs" ||
                format == "iq4nl" || format == "q8g32" || format == "q4_1" ||
                format == "q5_1")
        << name << " is not kept as codes";
    int64_t elements = 1;
    for (int64_t d : t["shape"].get<std::vector<int64_t>>())
      elements *= d;
    const double perWeight = double(t["nbytes"].get<int64_t>()) / double(elements);
    if (format == "q4k" || format == "iq4xs" || format == "iq4nl") {
      EXPECT_GE(perWeight, 0.5) << name;
      EXPECT_LE(perWeight, 0.6) << name;
      ++fourBit;
    }
    if (format == "q4_1") { // the file's own 20 bytes per 32: codes, scale, min
      EXPECT_EQ(perWeight, 0.625) << name;
      ++fourBit;
    }
  }
  EXPECT_EQ(fourBit > 0, !eightBit);

  // Layer 0's down projection of the dense Q4_K_M file: Q4_K, bit for bit.
  if (c.type == "Q4_K_M" && c.model.find("moe") == std::string::npos) {
    const io::GgufTensorInfo *info = gguf.value().find_tensor("blk.0.ffn_down.weight");
    ASSERT_NE(info, nullptr);
    auto view = gguf.value().tensor("blk.0.ffn_down.weight");
    ASSERT_TRUE(view.ok()) << view.error();
    const int64_t k = info->shape.back(), n = info->shape[info->shape.size() - 2];
    const std::string bytes = artifactTensor(out, "model.layers.0.mlp.down_proj.weight#q4k");
    // Per panel of 32 columns and super-block of 256: d[32], dmin[32]
    // (fp16); per group of 32: 8 K quads of 64 bytes (byte 4c + e: code of
    // K 4q + e, column c low nibble, c + 16 high), sc[32] s8, m[32] u8.
    const int64_t groupBytes = 8 * 64 + 64, superBytes = 128 + 8 * groupBytes;
    const int64_t panelBytes = k / 256 * superBytes;
    ASSERT_EQ(int64_t(bytes.size()), (n + 31) / 32 * panelBytes);
    const auto *w = reinterpret_cast<const uint8_t *>(bytes.data());
    int64_t mismatches = 0;
    for (int64_t row = 0; row < n; ++row)
      for (int64_t s = 0; s < k / 256; ++s) {
        const uint8_t *block = view.value().data + size_t(row * (k / 256) + s) * 144;
        const uint8_t *super = w + (row / 32) * panelBytes + s * superBytes;
        const int64_t col = row % 32;
        mismatches += std::memcmp(super + 2 * col, block, 2) != 0;        // d
        mismatches += std::memcmp(super + 64 + 2 * col, block + 2, 2) != 0; // dmin
        for (int j = 0; j < 8; ++j) {
          const uint8_t *group = super + 128 + j * groupBytes;
          int sc, m;
          q4kScaleMin(j, block + 4, sc, m);
          mismatches += int8_t(group[512 + col]) != sc || group[512 + 32 + col] != m;
          for (int l = 0; l < 32; ++l) {
            const int stored = (block[16 + 32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
            const uint8_t b = group[(l / 4) * 64 + 4 * (col % 16) + l % 4];
            mismatches += (col < 16 ? b & 15 : b >> 4) != stored;
          }
        }
      }
    EXPECT_EQ(mismatches, 0) << "layer 0 down_proj";
  }

  const nlohmann::json inputs = nlohmann::json::parse(readFile(dir + "/inputs.json"));
  const std::vector<int32_t> seq = inputs["sequences"]["64"].get<std::vector<int32_t>>();
  hyrt::NpyArray numpy;
  ASSERT_TRUE(hyrt::read_npy_f32(dir + "/" + c.type + ".logits_64.npy", &numpy).ok());
  const int64_t vocab = numpy.shape.back();
  struct Diff {
    double maxAbs = 0, rms = 0;
    int64_t argmaxEqual = 0;
  };
  auto diff = [&](const std::vector<float> &got, const std::vector<float> &want) {
    Diff d;
    double sq = 0;
    for (size_t p = 0; p < seq.size(); ++p) {
      const float *a = got.data() + p * vocab, *b = want.data() + p * vocab;
      for (int64_t v = 0; v < vocab; ++v) {
        d.maxAbs = std::max(d.maxAbs, double(std::fabs(a[v] - b[v])));
        sq += double(a[v] - b[v]) * double(a[v] - b[v]);
      }
      d.argmaxEqual += std::max_element(a, a + vocab) - a == std::max_element(b, b + vocab) - b;
    }
    d.rms = std::sqrt(sq / double(got.size()));
    return d;
  };
  const bool moe = c.model.find("moe") != std::string::npos;
  std::vector<float> same;
  if (moe) {
    r = runHyc({"compile", file, "-o", out + "-ref", "--target", "reference", "--max-seq-len",
                "96", "--max-batch-tokens", "64", "--kv-cache", "f32"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    LoadedModel ref = loadModel(out + "-ref", 16, "reference");
    ASSERT_TRUE(ref.engine);
    same = wholeSequenceLogits(*ref.engine, seq);
  }
  for (const std::string &isa : variantsOf(out).run) {
    LoadedModel m = loadModel(out, 16, isa);
    ASSERT_TRUE(m.engine) << isa;
    const std::vector<float> got = wholeSequenceLogits(*m.engine, seq);
    ASSERT_EQ(got.size(), numpy.data.size());
    const Diff d = diff(got, numpy.data);
    std::printf("%s %s %s vs numpy: max abs %.4f, rms %.4f, argmax equal %lld/%zu\n",
                c.model.c_str(), c.type.c_str(), isa.c_str(), d.maxAbs, d.rms,
                static_cast<long long>(d.argmaxEqual), seq.size());
    if (moe) {
      double worst = 1;
      for (size_t p = 0; p < seq.size(); ++p)
        worst = std::min(worst, hyc::test::cosine(got.data() + p * vocab,
                                                  same.data() + p * vocab, vocab));
      std::printf("  vs the reference target: worst per-position cosine %.6f\n", worst);
      EXPECT_GE(worst, 0.99) << isa;
    }
    const double sqrt3 = std::sqrt(3.0);
    EXPECT_LT(d.maxAbs, moe ? c.llamaMaxAbs * sqrt3 : 0.3) << isa;
    EXPECT_LT(d.rms, moe ? c.llamaRms * sqrt3 : 0.06) << isa;
    EXPECT_GE(d.argmaxEqual * 100, int64_t(seq.size()) * 85) << isa;
  }
}

INSTANTIATE_TEST_SUITE_P(
    GoldenGguf, GgufKQuants,
    ::testing::Values(KQuantCase{"llama-quant-tiny", "Q4_K_M"},
                      KQuantCase{"llama-quant-tiny", "IQ4_XS"},
                      KQuantCase{"llama-quant-tiny", "IQ4_NL"},
                      KQuantCase{"llama-quant-tiny", "Q4_1"},
                      KQuantCase{"llama-quant-tiny", "Q5_1"},
                      // golden-gguf/qwen3moe-quant-tiny/README.md
                      KQuantCase{"qwen3moe-quant-tiny", "Q4_K_M", 1.7, 0.097},
                      KQuantCase{"qwen3moe-quant-tiny", "IQ4_XS", 1.9, 0.13},
                      KQuantCase{"qwen3moe-quant-tiny", "IQ4_NL", 2.1, 0.14}),
    [](const ::testing::TestParamInfo<KQuantCase> &info) {
      std::string n = info.param.model + "_" + info.param.type;
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });


/// Compiles the fp32 twin `f32` for the reference target into `ref` and
/// expects every variant of `out` that this host runs to follow its logits
/// over 48 positions to the W8A8 bar (worst per-position cosine >= 0.99).
void expectVariantsFollowFp32Twin(const std::string &out, const std::string &f32,
                                  const std::string &ref, const char *label) {
  std::vector<std::string> compile = {"compile", f32, "-o", ref, "--quant", "f32", "--target",
                                      "reference"};
  compile.insert(compile.end(), kBounds.begin(), kBounds.end());
  ASSERT_EQ(runHyc(compile).exit_code, 0);
  LoadedModel exact = loadModel(ref, 16, "reference");
  ASSERT_TRUE(exact.engine);
  std::vector<int32_t> seq;
  for (int i = 0; i < 48; ++i)
    seq.push_back(int32_t(1 + (i * 37) % 500));
  const std::vector<float> want = wholeSequenceLogits(*exact.engine, seq);
  const int64_t vocab = int64_t(want.size() / seq.size());
  for (const std::string &isa : variantsOf(out).run) {
    LoadedModel m = loadModel(out, 16, isa);
    ASSERT_TRUE(m.engine) << isa;
    const std::vector<float> got = wholeSequenceLogits(*m.engine, seq);
    double worst = 1;
    for (size_t p = 0; p < seq.size(); ++p)
      worst = std::min(worst, hyc::test::cosine(got.data() + p * vocab, want.data() + p * vocab,
                                                size_t(vocab)));
    std::printf("%s %s vs its fp32 dequantization: worst per-position cosine %.6f\n", label,
                isa.c_str(), worst);
    EXPECT_GE(worst, 0.99) << isa;
  }
}

// `hyc synth --awq` (AutoAWQ GEMM packing: int32 words of 8 output columns
// in the nibble order 0, 2, 4, 6, 1, 3, 5, 7; an fp16 scale and a 4-bit
// zero point per 128 K-elements) compiled with no --quant keeps every code,
// zero point and scale as stored: layer 0's q_proj is unpacked here from
// the safetensors words and from the packed panel by its definition (per
// 32 columns and super-block of 128: d[32] and dmin[32] fp16 = the group's
// scale, then its one group: 32 K quads of 64 bytes, sc[32] = 1 and m[32]
// = the zero point). Then every variant follows the fp32 twin (the exact
// dequantization, --quant f32) to the W8A8 bar.
TEST(AwqInt4, DefaultCompileKeepsCodesAndZeroPointsBitForBit) {
  const std::string awq = tempDir() + "/awq-kept", f32 = tempDir() + "/awq-kept-f32";
  CommandResult r = runHyc({"synth", "--arch", "llama", "--preset", "small", "--ffn", "512",
                            "--awq", "--seed", "7", "-o", awq, "--dequantized-copy", f32});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out = awq + ".hyc", ref = f32 + ".hyc";
  std::vector<std::string> compile = {"compile", awq, "-o", out};
  compile.insert(compile.end(), kBounds.begin(), kBounds.end());
  r = runHyc(compile);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("precision: w4a8 (--quant auto"), std::string::npos) << r.err;

  auto st = io::SafetensorsFile::open(awq + "/model.safetensors");
  ASSERT_TRUE(st.ok()) << st.error();
  const std::string prefix = "model.layers.0.self_attn.q_proj.";
  auto qweight = st.value().tensor(prefix + "qweight"), qzeros = st.value().tensor(prefix + "qzeros"),
       scales = st.value().tensor(prefix + "scales");
  ASSERT_TRUE(qweight.ok() && qzeros.ok() && scales.ok());
  const int64_t k = qweight.value().shape[0], n = qweight.value().shape[1] * 8;
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  auto nibble = [&](const io::TensorView &v, int64_t row, int64_t col) {
    uint32_t word;
    std::memcpy(&word, v.data + (row * (n / 8) + col / 8) * 4, 4);
    for (int i = 0; i < 8; ++i)
      if (order[i] == col % 8)
        return int((word >> (4 * i)) & 15);
    return -1;
  };
  const std::string bytes = artifactTensor(out, prefix + "weight#q4z128");
  const int64_t groupBytes = 32 * 64 + 64, superBytes = 128 + groupBytes;
  const int64_t panelBytes = k / 128 * superBytes;
  ASSERT_EQ(int64_t(bytes.size()), (n + 31) / 32 * panelBytes);
  const auto *w = reinterpret_cast<const uint8_t *>(bytes.data());
  int64_t mismatches = 0, nonzeroZeros = 0;
  for (int64_t col = 0; col < n; ++col)
    for (int64_t s = 0; s < k / 128; ++s) {
      const uint8_t *super = w + (col / 32) * panelBytes + s * superBytes;
      const int64_t c = col % 32;
      const uint8_t *scale = scales.value().data + (s * n + col) * 2;
      mismatches += std::memcmp(super + 2 * c, scale, 2) != 0;
      mismatches += std::memcmp(super + 64 + 2 * c, scale, 2) != 0;
      const int zero = nibble(qzeros.value(), s, col);
      nonzeroZeros += zero != 0;
      const uint8_t *group = super + 128;
      mismatches += int8_t(group[2048 + c]) != 1 || group[2048 + 32 + c] != zero;
      for (int l = 0; l < 128; ++l) {
        const uint8_t b = group[(l / 4) * 64 + 4 * (c % 16) + l % 4];
        mismatches += (c < 16 ? b & 15 : b >> 4) != nibble(qweight.value(), s * 128 + l, col);
      }
    }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(nonzeroZeros, 0) << "zero points all 0: the check has no teeth";

  expectVariantsFollowFp32Twin(out, f32, ref, "awq");
}

// The same for a Qwen3-MoE AWQ checkpoint: the stacked experts keep their
// codes as q4z128 too (the grouped GEMMs over the expert stacks run the
// same kernels), and every variant follows the fp32 twin to the W8A8 bar.
TEST(AwqInt4, MoeExpertsKeepTheirCodesAndFollowTheFp32Twin) {
  const std::string awq = tempDir() + "/moe-awq-kept", f32 = tempDir() + "/moe-awq-kept-f32";
  CommandResult r = runHyc({"synth", "--arch", "qwen3-moe", "--preset", "small", "--awq",
                            "--seed", "5", "-o", awq, "--dequantized-copy", f32});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out = awq + ".hyc", ref = f32 + ".hyc";
  std::vector<std::string> compile = {"compile", awq, "-o", out};
  compile.insert(compile.end(), kBounds.begin(), kBounds.end());
  r = runHyc(compile);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto manifest = nlohmann::json::parse(readFile(out + "/manifest.json"));
  int experts = 0, others = 0;
  for (const auto &t : manifest["weights"]["tensors"]) {
    const std::string name = t["name"];
    if (name.size() < 7 || name.substr(name.size() - 7) != "#q4z128")
      continue;
    ++(name.find(".experts.") != std::string::npos ? experts : others);
  }
  EXPECT_GT(experts, 0) << "no expert stack kept its codes";
  EXPECT_GT(others, 0) << "no attention projection kept its codes";

  expectVariantsFollowFp32Twin(out, f32, ref, "moe awq");
}

} // namespace
} // namespace hyc::e2e
