// FP8 e4m3fn encoding (every code round-trips, ties to even, subnormals,
// saturation) and `synth --fp8`: DeepSeek-style block-scaled weights read
// back through load_checkpoint equal decode(e4m3) * scale_inv exactly,
// recomputed here from the raw safetensors bytes with an independent decoder,
// and the dequantized copy is the same model in fp32.
#include "checkpoint_test_util.h"

#include "models/checkpoint/fp8.h"
#include "models/checkpoint/synth.h"
#include "models/io/tensor.h"

#include <cmath>
#include <limits>
#include <map>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

/// Independent e4m3fn decoder (not io::f8_e4m3_to_f32).
float decodeE4m3(uint8_t code) {
  const int e = (code >> 3) & 0xF, m = code & 7;
  if (e == 0xF && m == 7)
    return std::numeric_limits<float>::quiet_NaN();
  const double mag =
      e == 0 ? m * std::ldexp(1.0, -9) : (8 + m) * std::ldexp(1.0, e - 10);
  return static_cast<float>((code & 0x80) ? -mag : mag);
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(CheckpointFp8Encode, EveryCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float ours = decodeE4m3(code);
    const float io = io::f8_e4m3_to_f32(code);
    if (std::isnan(ours)) {
      EXPECT_TRUE(std::isnan(io)) << c;
      EXPECT_EQ(f32_to_e4m3fn(io), code) << c;
      continue;
    }
    EXPECT_EQ(bits(ours), bits(io)) << "decoders disagree on code " << c;
    EXPECT_EQ(f32_to_e4m3fn(io), code) << "code " << c << " value " << io;
  }
  EXPECT_EQ(f32_to_e4m3fn(0.0f), 0x00);
  EXPECT_EQ(f32_to_e4m3fn(-0.0f), 0x80);
  EXPECT_EQ(io::f8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9)); // min subnormal
  EXPECT_EQ(io::f8_e4m3_to_f32(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(io::f8_e4m3_to_f32(0x08), std::ldexp(1.0f, -6)); // min normal
  EXPECT_EQ(io::f8_e4m3_to_f32(0x7E), 448.0f);
}

TEST(CheckpointFp8Encode, MidpointsTieToEvenAndNeighboursRoundToNearest) {
  for (int sign : {0, 0x80})
    for (int c = 0; c < 0x7E; ++c) {
      const uint8_t lo = static_cast<uint8_t>(sign | c),
                    hi = static_cast<uint8_t>(sign | (c + 1));
      const float a = decodeE4m3(lo), b = decodeE4m3(hi);
      const float mid = (a + b) / 2; // exact in fp32
      ASSERT_EQ(static_cast<double>(mid),
                (static_cast<double>(a) + static_cast<double>(b)) / 2);
      const uint8_t even = (lo & 1) == 0 ? lo : hi;
      EXPECT_EQ(f32_to_e4m3fn(mid), even)
          << "tie between codes " << +lo << " and " << +hi;
      EXPECT_EQ(f32_to_e4m3fn(std::nextafter(mid, a)), lo) << +lo;
      EXPECT_EQ(f32_to_e4m3fn(std::nextafter(mid, b)), hi) << +hi;
    }
}

TEST(CheckpointFp8Encode, UnderflowSaturationNan) {
  const float tiny = std::ldexp(1.0f, -10); // half the smallest subnormal
  EXPECT_EQ(f32_to_e4m3fn(tiny), 0x00) << "tie to even (zero)";
  EXPECT_EQ(f32_to_e4m3fn(std::nextafter(tiny, 1.0f)), 0x01);
  EXPECT_EQ(f32_to_e4m3fn(-tiny), 0x80);
  EXPECT_EQ(f32_to_e4m3fn(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(f32_to_e4m3fn(-std::numeric_limits<float>::denorm_min()), 0x80);
  EXPECT_EQ(f32_to_e4m3fn(3 * tiny), 0x02) << "1.5 ulp ties to even";
  EXPECT_EQ(f32_to_e4m3fn(448.0f), 0x7E);
  EXPECT_EQ(f32_to_e4m3fn(463.9f), 0x7E);
  EXPECT_EQ(f32_to_e4m3fn(464.0f), 0x7E);
  EXPECT_EQ(f32_to_e4m3fn(1e30f), 0x7E);
  EXPECT_EQ(f32_to_e4m3fn(-1e30f), 0xFE);
  EXPECT_EQ(f32_to_e4m3fn(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(f32_to_e4m3fn(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(f32_to_e4m3fn(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(f32_to_e4m3fn(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
}

TEST(CheckpointFp8Encode, MatchesBruteForceNearest) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-14, 10);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::ldexp(mant(rng), expo(rng));
    // Nearest finite code by |decode - x| in double, ties to the even code;
    // everything at or past 448 saturates.
    int best = -1;
    double best_err = 0;
    for (int c = 0; c < 256; ++c) {
      const float v = decodeE4m3(static_cast<uint8_t>(c));
      if (std::isnan(v) || (std::signbit(v) != std::signbit(x)))
        continue;
      const double err = std::fabs(static_cast<double>(v) - x);
      if (best < 0 || err < best_err || (err == best_err && (c & 1) == 0)) {
        best = c;
        best_err = err;
      }
    }
    ASSERT_EQ(f32_to_e4m3fn(x), best) << "x = " << x;
  }
}

TEST(CheckpointFp8Encode, BlockQuantizerScales) {
  // [3, 5] with 2x2 blocks: a zero block gets scale 1, partial blocks work.
  std::vector<float> w = {0, 0, 1, -2, 3, //
                          0, 0, 4, 5,  6, //
                          7, 8, 0, 0,  -9};
  Fp8BlockQuant q = quantize_fp8_block(w.data(), 3, 5, 2, 2);
  ASSERT_EQ(q.scale_shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(q.scale_inv[0], 1.0f);
  EXPECT_EQ(q.scale_inv[1], 5.0f / 448.0f);
  EXPECT_EQ(q.scale_inv[2], 6.0f / 448.0f);
  EXPECT_EQ(q.scale_inv[3], 8.0f / 448.0f);
  EXPECT_EQ(q.scale_inv[4], 1.0f);
  EXPECT_EQ(q.scale_inv[5], 9.0f / 448.0f);
  EXPECT_EQ(q.codes[0], 0x00);
  EXPECT_EQ(q.codes[2 * 5 + 4], 0xFE) << "block max maps to -448";
}

//===----------------------------------------------------------------------===//
// synth --fp8.
//===----------------------------------------------------------------------===//

/// A .safetensors file parsed here, independently of models/io.
struct RawSafetensors {
  std::vector<uint8_t> file;
  Json header;
  size_t data = 0;
  bool load(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    file.assign(std::istreambuf_iterator<char>(in), {});
    if (file.size() < 8)
      return false;
    uint64_t len = 0;
    std::memcpy(&len, file.data(), 8);
    header = Json::parse(file.begin() + 8, file.begin() + 8 + len);
    data = 8 + len;
    return true;
  }
  bool has(const std::string &name) const { return header.contains(name); }
  std::string dtype(const std::string &name) const {
    return header[name]["dtype"];
  }
  std::vector<int64_t> shape(const std::string &name) const {
    return header[name]["shape"].get<std::vector<int64_t>>();
  }
  const uint8_t *bytes(const std::string &name) const {
    return file.data() + data + header[name]["data_offsets"][0].get<size_t>();
  }
};

bool isQuantizedName(const std::string &name) {
  for (const char *m :
       {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
        "q_a_proj.weight", "q_b_proj.weight", "kv_b_proj.weight",
        "kv_a_proj_with_mqa.weight", "gate_proj.weight", "up_proj.weight",
        "down_proj.weight"}) {
    const std::string s = std::string(".") + m;
    if (name.size() > s.size() &&
        name.compare(name.size() - s.size(), s.size(), s) == 0)
      return true;
  }
  return false;
}

Status synthFp8(const std::string &arch, const std::string &dir,
                const std::string &deq) {
  SynthOptions o;
  o.arch = arch;
  o.seed = 11;
  o.output_dir = dir;
  o.fp8 = true;
  o.dequantize_fp8_to = deq;
  return synthesize(o);
}

TEST(CheckpointSynthFp8, DeepseekWeightsAreDecodeTimesScaleInvExactly) {
  TempDir dir;
  const std::string fp8 = dir.file("fp8"), deq = dir.file("fp32");
  Status s = synthFp8("deepseek-v3", fp8, deq);
  ASSERT_TRUE(s.ok()) << s.error();

  Json config = Json::parse(std::ifstream(fp8 + "/config.json"));
  EXPECT_EQ(config["quantization_config"],
            Json::parse(R"({"quant_method": "fp8", "fmt": "e4m3",
              "activation_scheme": "dynamic",
              "weight_block_size": [128, 128]})"));
  Json deq_config = Json::parse(std::ifstream(deq + "/config.json"));
  EXPECT_FALSE(deq_config.contains("quantization_config"));
  Json stripped = config;
  stripped.erase("quantization_config");
  EXPECT_EQ(deq_config, stripped) << "same config minus quantization_config";

  HYC_CKPT_LOAD(q, fp8);
  HYC_CKPT_LOAD(f, deq);
  Expected<ModelSpec> want = synth_spec("deepseek-v3", "tiny");
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(to_string(q.spec), to_string(*want));
  EXPECT_EQ(to_string(f.spec), to_string(*want));
  EXPECT_TRUE(q.warnings.empty());
  ASSERT_TRUE(f.tokenizer.has_value()) << "tokenizer.bin copied";
  EXPECT_EQ(f.weights->weights().size(), required_weights(f.spec).size())
      << "no *_scale_inv in the fp32 copy";

  RawSafetensors raw;
  ASSERT_TRUE(raw.load(fp8 + "/model.safetensors"));
  size_t quantized = 0, subnormal = 0, underflow = 0, multi_block = 0,
         partial = 0;
  for (const WeightInfo &w : required_weights(q.spec)) {
    const std::vector<float> got = readWeight(q, w.name);
    const std::vector<float> twin = readWeight(f, w.name);
    ASSERT_EQ(got.size(), twin.size());
    EXPECT_EQ(std::memcmp(got.data(), twin.data(), got.size() * 4), 0)
        << w.name << ": dequantized copy differs";
    EXPECT_EQ(f.weights->find(w.name)->source_dtype, "F32") << w.name;
    ASSERT_TRUE(raw.has(w.name)) << w.name;
    if (!isQuantizedName(w.name)) {
      EXPECT_EQ(raw.dtype(w.name), "F32") << w.name;
      EXPECT_FALSE(raw.has(w.name + "_scale_inv")) << w.name;
      continue;
    }
    ++quantized;
    EXPECT_EQ(q.weights->find(w.name)->source_dtype, "F8_E4M3") << w.name;
    ASSERT_EQ(raw.dtype(w.name), "F8_E4M3") << w.name;
    const std::string sname = w.name + "_scale_inv";
    ASSERT_TRUE(raw.has(sname)) << sname;
    ASSERT_EQ(raw.dtype(sname), "F32");
    const int64_t n = w.shape[0], k = w.shape[1];
    const int64_t bn = (n + 127) / 128, bk = (k + 127) / 128;
    ASSERT_EQ(raw.shape(sname), (std::vector<int64_t>{bn, bk})) << sname;
    multi_block += bn > 1 || bk > 1;
    partial += n % 128 != 0 || k % 128 != 0;
    const uint8_t *codes = raw.bytes(w.name);
    const uint8_t *scales = raw.bytes(sname);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        const uint8_t code = codes[r * k + c];
        float scale;
        std::memcpy(&scale, scales + 4 * ((r / 128) * bk + c / 128), 4);
        const float want_v = decodeE4m3(code) * scale;
        const float got_v = got[static_cast<size_t>(r * k + c)];
        ASSERT_EQ(bits(got_v), bits(want_v))
            << w.name << "[" << r << "][" << c << "] code " << +code;
        ASSERT_NE(code & 0x7F, 0x7F) << "no NaN codes";
        if ((code & 0x78) == 0 && (code & 7) != 0)
          ++subnormal;
        if ((code & 0x7F) == 0)
          ++underflow;
      }
  }
  EXPECT_GT(quantized, 20u);
  EXPECT_GT(subnormal, 100u) << "subnormal codes must be exercised";
  EXPECT_GT(underflow, 10u);
  EXPECT_GT(multi_block, 0u) << "some weight spans several blocks";
  EXPECT_GT(partial, 0u) << "some weight has partial blocks";
  // The dense layer-0 MLP: [172, 64] has a full and a partial row block.
  EXPECT_EQ(raw.shape("model.layers.0.mlp.gate_proj.weight_scale_inv"),
            (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(raw.shape("model.layers.0.mlp.down_proj.weight_scale_inv"),
            (std::vector<int64_t>{1, 2}));
}

TEST(CheckpointSynthFp8, OutsideTheWideBlockValuesAreTheSeededOnes) {
  TempDir dir;
  ASSERT_TRUE(synthFp8("llama", dir.file("q"), "").ok());
  SynthOptions o;
  o.arch = "llama";
  o.seed = 11;
  o.output_dir = dir.file("f");
  ASSERT_TRUE(synthesize(o).ok());
  HYC_CKPT_LOAD(q, dir.file("q"));
  HYC_CKPT_LOAD(f, dir.file("f"));
  EXPECT_EQ(to_string(q.spec), to_string(f.spec));
  // gate_proj [172, 64]: rows 128.. are in the second (partial) row block,
  // untouched by the dynamic-range rescaling of block (0, 0).
  const std::string name = "model.layers.1.mlp.gate_proj.weight";
  std::vector<float> a = readWeight(q, name), b = readWeight(f, name);
  ASSERT_EQ(a.size(), 172u * 64u);
  float amax = 0;
  for (size_t i = 128 * 64; i < a.size(); ++i)
    amax = std::max(amax, std::fabs(b[i]));
  for (size_t i = 128 * 64; i < a.size(); ++i) {
    // e4m3 keeps 3 mantissa bits: relative error <= 2^-4 for normals,
    // absolute <= half a subnormal step otherwise.
    const float tol = std::max(std::fabs(b[i]) * 0.0625f,
                               amax / 448.0f * std::ldexp(1.0f, -10));
    ASSERT_LE(std::fabs(a[i] - b[i]), tol) << i;
  }
  EXPECT_EQ(readWeight(q, "model.embed_tokens.weight"),
            readWeight(f, "model.embed_tokens.weight"))
      << "embeddings are not quantized";
}

TEST(CheckpointSynthFp8, EveryArchLoads) {
  for (const std::string &arch : synth_archs()) {
    TempDir dir;
    Status s = synthFp8(arch, dir.file("q"), dir.file("f"));
    ASSERT_TRUE(s.ok()) << arch << ": " << s.error();
    HYC_CKPT_LOAD(q, dir.file("q"));
    HYC_CKPT_LOAD(f, dir.file("f"));
    EXPECT_EQ(to_string(q.spec), to_string(f.spec)) << arch;
    const std::string name = "model.layers.0.self_attn.o_proj.weight";
    EXPECT_EQ(q.weights->find(name)->source_dtype, "F8_E4M3") << arch;
    EXPECT_EQ(readWeight(q, name), readWeight(f, name)) << arch;
  }
}

TEST(CheckpointSynthFp8, DequantizedCopyErrors) {
  TempDir dir;
  ASSERT_TRUE(synthFp8("llama", dir.file("q"), "").ok());
  Status s = write_dequantized_copy(dir.file("q"), dir.file("q"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("input directory"), std::string::npos) << s.error();
  s = write_dequantized_copy(dir.file("missing"), dir.file("out"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("missing"), std::string::npos) << s.error();
}

} // namespace
} // namespace hyc::models::test
