// GGUF K-quant, IQ4, Q4_1 and Q5_1 tensors read as integer codes with their scales
// (WeightSource::read_stored_codes): for every such tensor of the
// llama.cpp-quantized golden files, the value StoredCodes' formula gives
// (model_spec.h, evaluated here in ggml's fp32 order) equals the tensor's
// fp32 dequantization (read_f32, itself checked bit for bit against the
// format definitions by gguf_quant_test.cpp) for every element, so the
// codes, sub-scales, mins and super-block scales are the file's own. A
// wrong nibble order, sub-block index or bit field changes values.
#include "checkpoint_test_util.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

namespace hyc::models::test {
namespace {

const int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                      1,    13,   25,  38,  53,  69,  89,  113};

float f16(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023;
  if (exp == 0)
    return (sign ? -1.0f : 1.0f) * std::ldexp(float(man), -24);
  uint32_t bits = exp == 31 ? sign | 0x7F800000u | (man << 13)
                            : sign | ((exp + 112) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// (bits, group, super, asymmetric, codebook) of each format, as
/// model_spec.h's StoredCodes documents them.
struct Format {
  int bits, group, super;
  bool asym, codebook;
};
const std::map<std::string, Format> kFormats = {
    {"q4k", {4, 32, 256, true, false}},   {"q5k", {8, 32, 256, true, false}},
    {"q6k", {8, 16, 256, false, false}},  {"iq4xs", {4, 32, 256, false, true}},
    {"iq4nl", {4, 32, 32, false, true}},  {"q4_1", {4, 32, 32, true, false}},
    {"q5_1", {8, 32, 32, true, false}},
};

/// Compares every stored-codes tensor of `file`, adding the formats seen.
void checkFile(const std::string &file, std::set<std::string> &seen) {
  auto loaded = load_checkpoint(file);
  ASSERT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error());
  const WeightSource &w = *loaded.value().weights;
  for (const WeightInfo &info : w.weights()) {
    const std::string format = w.stored_codes_format(info.name);
    if (format.empty())
      continue;
    SCOPED_TRACE(file + ": " + info.name + " (" + format + ")");
    ASSERT_EQ(kFormats.count(format), 1u);
    const Format f = kFormats.at(format);
    StoredCodes c;
    ASSERT_TRUE(w.read_stored_codes(info.name, c));
    ASSERT_EQ(c.format, format);
    ASSERT_EQ(std::vector<int64_t>({c.n, c.k}), info.shape);
    const int64_t n = c.n, k = c.k;
    ASSERT_EQ(c.codes.size(), size_t(n * k));
    ASSERT_EQ(c.sub_scales.size(), size_t(n * k / f.group));
    ASSERT_EQ(c.d.size(), size_t(n * k / f.super));
    ASSERT_EQ(c.sub_mins.size(), f.asym ? size_t(n * k / f.group) : 0u);
    ASSERT_EQ(c.dmin.size(), f.asym ? size_t(n * k / f.super) : 0u);
    std::vector<float> ref(size_t(n * k));
    ASSERT_TRUE(w.read_f32(info.name, ref.data()).ok());
    const int zero = f.asym ? 0 : f.bits == 4 && !f.codebook ? 8 : 128;
    int64_t mismatches = 0;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < k; ++i) {
        const int64_t e = r * k + i, g = e / f.group, s = e / f.super;
        const int code = c.codes[size_t(e)];
        ASSERT_LT(code, 1 << f.bits);
        const int value = f.codebook ? kIq4[code] + 128 : code;
        // ggml's order: the sub-block's scale (and min) first, in fp32.
        const float scale = f16(c.d[size_t(s)]) * float(c.sub_scales[size_t(g)]);
        float v = scale * float(value - zero);
        if (f.asym)
          v -= f16(c.dmin[size_t(s)]) * float(c.sub_mins[size_t(g)]);
        mismatches += std::memcmp(&v, &ref[size_t(e)], 4) != 0;
      }
    EXPECT_EQ(mismatches, 0) << "of " << n * k << " elements";
    seen.insert(format);
  }
}

TEST(GgufStoredCodes, EveryKQuantAndIq4ValueIsTheFilesOwn) {
  HYC_CKPT_REQUIRE_SHARED(dir, "golden-gguf");
  std::set<std::string> seen;
  for (const char *model : {"llama-quant-tiny", "qwen3moe-quant-tiny"})
    for (const char *type : {"Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS", "IQ4_NL", "Q4_1", "Q5_1"}) {
      const std::string file = dir + "/" + model + "/" + type + ".gguf";
      if (fs::exists(file))
        checkFile(file, seen);
    }
  EXPECT_EQ(seen,
            std::set<std::string>({"q4k", "q5k", "q6k", "iq4xs", "iq4nl", "q4_1", "q5_1"}));
}

TEST(GgufStoredCodes, OtherTypesHaveNoStoredCodes) {
  HYC_CKPT_REQUIRE_SHARED(dir, "golden-gguf");
  for (const char *type : {"Q4_0", "Q8_0", "Q2_K"}) {
    auto loaded = load_checkpoint(dir + "/llama-quant-tiny/" + type + ".gguf");
    ASSERT_TRUE(loaded.ok());
    const WeightSource &w = *loaded.value().weights;
    StoredCodes c;
    c.format = "untouched";
    for (const WeightInfo &info : w.weights())
      if (info.source_dtype == type) {
        EXPECT_EQ(w.stored_codes_format(info.name), "") << info.name;
        EXPECT_FALSE(w.read_stored_codes(info.name, c)) << info.name;
      }
    EXPECT_EQ(c.format, "untouched");
  }
}

} // namespace
} // namespace hyc::models::test
