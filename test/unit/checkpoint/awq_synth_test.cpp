// `synth --awq`: the written AWQ GEMM tensors, unpacked here from the raw
// safetensors words with this file's own shift table, are what
// read_stored_codes gives; the dequantized weights are within half a step
// of the fp32 synth model of the same seed; the quantizer holds skewed
// groups within half a step too; widths AWQ cannot group are refused; MoE
// experts load per expert.
#include "checkpoint_test_util.h"

#include "models/checkpoint/int4_pack.h"
#include "models/checkpoint/synth.h"
#include "models/io/tensor.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace hyc::models::test {
namespace {

/// Bit offset of column 8j + c inside AWQ word j.
constexpr int kColumnShift[8] = {0, 16, 4, 20, 8, 24, 12, 28};

uint8_t nibble(const io::TensorView &words, int64_t row, int64_t col) {
  const int64_t perRow = words.shape[1];
  uint32_t w;
  std::memcpy(&w, words.data + 4 * (row * perRow + col / 8), 4);
  return uint8_t((w >> kColumnShift[col % 8]) & 15);
}

uint16_t halfBits(const io::TensorView &scales, int64_t row, int64_t col) {
  uint16_t h;
  std::memcpy(&h, scales.data + 2 * (row * scales.shape[1] + col), 2);
  return h;
}

bool isLinear(const std::string &name) { return name.find("_proj.weight") != std::string::npos; }

SynthOptions smallLlama(const std::string &dir, bool awq) {
  SynthOptions o;
  o.arch = "llama";
  o.preset = "small";
  o.intermediate_size = 512;
  o.seed = 11;
  o.output_dir = dir;
  o.awq = awq;
  return o;
}

TEST(AwqSynth, StoredCodesMatchTheWrittenWordsAndTheFp32Model) {
  TempDir tmp;
  SynthOptions awq = smallLlama(tmp.file("awq"), true);
  awq.dequantize_fp8_to = tmp.file("awq-as-f32");
  ASSERT_TRUE(synthesize(awq).ok());
  ASSERT_TRUE(synthesize(smallLlama(tmp.file("f32"), false)).ok());

  std::ifstream in(tmp.file("awq") + "/config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  EXPECT_EQ(config["quantization_config"], (nlohmann::json{{"quant_method", "awq"},
                                                           {"bits", 4},
                                                           {"group_size", 128},
                                                           {"zero_point", true},
                                                           {"version", "gemm"}}));

  HYC_CKPT_LOAD(ckpt, tmp.file("awq"));
  HYC_CKPT_LOAD(f32, tmp.file("f32"));
  HYC_CKPT_LOAD(copy, tmp.file("awq-as-f32"));
  EXPECT_TRUE(ckpt.warnings.empty()) << ckpt.warnings.front();
  auto raw = io::SafetensorsModel::open(tmp.file("awq"));
  ASSERT_TRUE(raw.ok()) << raw.error();

  size_t linear = 0;
  std::set<int> zeros;
  for (const WeightInfo &w : f32.weights->weights()) {
    SCOPED_TRACE(w.name);
    const WeightInfo *info = ckpt.weights->find(w.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->shape, w.shape);
    const std::vector<float> got = readWeight(ckpt, w.name);
    EXPECT_EQ(readWeight(copy, w.name), got) << "the dequantized copy differs";
    const std::vector<float> orig = readWeight(f32, w.name);
    if (!isLinear(w.name)) {
      EXPECT_EQ(info->source_dtype, "F32");
      EXPECT_EQ(got, orig);
      continue;
    }
    ++linear;
    EXPECT_EQ(info->source_dtype, "AWQ_INT4");
    const int64_t n = w.shape[0], k = w.shape[1];
    const std::string prefix = w.name.substr(0, w.name.size() - 7);
    auto qweight = raw->tensor(prefix + ".qweight");
    auto qzeros = raw->tensor(prefix + ".qzeros");
    auto scales = raw->tensor(prefix + ".scales");
    ASSERT_TRUE(qweight.ok() && qzeros.ok() && scales.ok());
    ASSERT_EQ(qweight->dtype, io::DType::I32);
    ASSERT_EQ(qweight->shape, (std::vector<int64_t>{k, n / 8}));
    ASSERT_EQ(qzeros->shape, (std::vector<int64_t>{k / 128, n / 8}));
    ASSERT_EQ(scales->dtype, io::DType::F16);
    ASSERT_EQ(scales->shape, (std::vector<int64_t>{k / 128, n}));

    StoredCodes sc;
    ASSERT_TRUE(ckpt.weights->read_stored_codes(w.name, sc));
    ASSERT_EQ(sc.codes.size(), size_t(n * k));
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        ASSERT_EQ(sc.codes[size_t(r * k + c)], nibble(*qweight, c, r))
            << "[" << r << "][" << c << "]";
        const uint8_t z = nibble(*qzeros, c / 128, r);
        const uint16_t s = halfBits(*scales, c / 128, r);
        ASSERT_EQ(sc.sub_mins[size_t(r * k / 128 + c / 128)], z);
        ASSERT_EQ(sc.d[size_t(r * k / 128 + c / 128)], s);
        zeros.insert(z);
        // Within half a step of the seeded fp32 weight (the quantizer's
        // scale is rounded up so that the clamp never costs more).
        const double step = io::f16_to_f32(s);
        ASSERT_LE(std::fabs(double(got[size_t(r * k + c)]) - orig[size_t(r * k + c)]),
                  0.5 * step * (1 + 1e-6))
            << "[" << r << "][" << c << "] step " << step;
      }
  }
  EXPECT_EQ(linear, 4u * 7u); // q, k, v, o, gate, up, down in 4 layers
  // The zero points follow each group's range (the seeded weights are
  // symmetric about 0, so they sit near 7.5: both sides occur).
  EXPECT_TRUE(zeros.count(7) && zeros.count(8));
}

// The quantizer on skewed groups (the seeded weights are symmetric; these
// are not): zero points across 0..15, s the smallest fp16 holding the
// group's range (widened to 0) in 15 steps, every element within s / 2;
// all-zero and one-signed groups; NaN refused.
TEST(AwqSynth, QuantizerHoldsEveryGroupWithinHalfAStep) {
  const int64_t n = 64, k = 256, group = 128;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> w(size_t(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < k / group; ++g) {
      const float centre = 0.1f * (2 * unit(rng) - 1), width = 0.02f + 0.2f * unit(rng);
      for (int64_t i = 0; i < group; ++i)
        w[size_t(r * k + g * group + i)] = centre + width * (unit(rng) - 0.5f);
    }
  std::fill_n(w.begin(), group, 0.0f);                                            // row 0, group 0
  std::generate_n(w.begin() + k, group, [&] { return 0.2f + 0.1f * unit(rng); }); // > 0
  std::generate_n(w.begin() + 2 * k + group, group, [&] { return -0.3f * unit(rng); }); // < 0
  Expected<Int4GroupQuant> q = quantize_int4_groups(w.data(), n, k, group);
  ASSERT_TRUE(q.ok()) << q.error();
  std::set<int> zeros;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < k / group; ++g) {
      SCOPED_TRACE("row " + std::to_string(r) + " group " + std::to_string(g));
      const float *x = &w[size_t(r * k + g * group)];
      const float lo = std::min(0.0f, *std::min_element(x, x + group));
      const float hi = std::max(0.0f, *std::max_element(x, x + group));
      const uint16_t sBits = q->scales[size_t(r * 2 + g)];
      const float s = io::f16_to_f32(sBits);
      const int z = q->zeros[size_t(r * 2 + g)];
      zeros.insert(z);
      if (hi == lo) {
        EXPECT_EQ(sBits, 0x3C00); // 1.0
        EXPECT_EQ(z, 0);
      } else {
        EXPECT_GE(15.0f * s, hi - lo);
        EXPECT_LT(15.0f * io::f16_to_f32(uint16_t(sBits - 1)), hi - lo) << "not the smallest";
        EXPECT_EQ(z, int(std::nearbyint(-lo / s)));
      }
      for (int64_t i = 0; i < group; ++i) {
        const int code = q->q[size_t(r * k + g * group + i)];
        ASSERT_LE(code, 15);
        ASSERT_LE(std::fabs(double(s) * (code - z) - x[i]), 0.5 * s * (1 + 1e-6)) << i;
      }
    }
  EXPECT_GT(zeros.size(), 8u);
  EXPECT_TRUE(zeros.count(0) && zeros.count(15)); // the one-signed groups
  w[7] = std::nanf("");
  EXPECT_FALSE(quantize_int4_groups(w.data(), n, k, group).ok());
}

TEST(AwqSynth, WidthsAwqCannotGroupAreRefused) {
  TempDir tmp;
  SynthOptions tiny;
  tiny.arch = "llama";
  tiny.awq = true;
  tiny.output_dir = tmp.file("tiny");
  Status s = synthesize(tiny);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("is [N, K] = [64, 64]; AWQ needs K a multiple of 128"),
            std::string::npos)
      << s.error();
  SynthOptions small = smallLlama(tmp.file("small"), true);
  small.intermediate_size.reset(); // 688
  s = synthesize(small);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("mlp.down_proj.weight' is [N, K] = [256, 688]"), std::string::npos)
      << s.error();
  SynthOptions both = smallLlama(tmp.file("both"), true);
  both.int8 = true;
  EXPECT_FALSE(synthesize(both).ok());
}

TEST(AwqSynth, MoeExpertsLoadPerExpert) {
  TempDir tmp;
  SynthOptions o;
  o.arch = "qwen3-moe";
  o.preset = "small";
  o.awq = true;
  o.output_dir = tmp.file("moe");
  ASSERT_TRUE(synthesize(o).ok());
  HYC_CKPT_LOAD(ckpt, o.output_dir);
  const WeightInfo *expert = ckpt.weights->find("model.layers.1.mlp.experts.7.down_proj.weight");
  ASSERT_NE(expert, nullptr);
  EXPECT_EQ(expert->source_dtype, "AWQ_INT4");
  EXPECT_EQ(ckpt.weights->stored_codes_format(expert->name), "q4z128");
  const WeightInfo *router = ckpt.weights->find("model.layers.1.mlp.gate.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->source_dtype, "F32");
}

} // namespace
} // namespace hyc::models::test
