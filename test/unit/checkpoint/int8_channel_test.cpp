// Channel-INT8 Hugging Face checkpoints (quant_method w8a8_int8 or
// compressed-tensors int-quantized): I8 weights with per-row `weight_scale`
// read back as q * scale, exactly.
#include "checkpoint_test_util.h"

#include "models/checkpoint/synth.h"
#include "models/io/hf_config.h"
#include "models/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

namespace hyc::models::test {
namespace {

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> scale;
};

Quantized quantizeRows(const std::vector<float> &w, int64_t n, int64_t k) {
  Quantized out{std::vector<int8_t>(w.size()), std::vector<float>(n)};
  for (int64_t r = 0; r < n; ++r) {
    float amax = 0;
    for (int64_t c = 0; c < k; ++c)
      amax = std::max(amax, std::fabs(w[r * k + c]));
    float s = amax > 0 ? amax / 127.0f : 1.0f;
    out.scale[r] = s;
    for (int64_t c = 0; c < k; ++c)
      out.q[r * k + c] = int8_t(std::lround(w[r * k + c] / s));
  }
  return out;
}

/// Rewrites a synthetic fp32 llama as channel-INT8 with the given
/// quantization_config; returns the quantized values of one weight.
Quantized writeInt8Copy(const std::string &src, const std::string &dst,
                        const nlohmann::json &quantConfig,
                        const std::string &probe) {
  fs::create_directories(dst);
  auto model = io::SafetensorsModel::open(src);
  EXPECT_TRUE(model.ok()) << model.error();
  std::vector<io::SafetensorsEntry> entries;
  Quantized probeQ;
  for (const std::string &name : model->tensor_names()) {
    auto view = model->tensor(name);
    auto f32 = io::to_f32(*view);
    bool linear = view->shape.size() == 2 && name.find("_proj.weight") != std::string::npos;
    if (!linear) {
      io::SafetensorsEntry e{name, io::DType::F32, view->shape, {}};
      e.bytes.resize(f32->size() * 4);
      std::memcpy(e.bytes.data(), f32->data(), e.bytes.size());
      entries.push_back(std::move(e));
      continue;
    }
    int64_t n = view->shape[0], k = view->shape[1];
    Quantized qz = quantizeRows(*f32, n, k);
    if (name == probe)
      probeQ = qz;
    io::SafetensorsEntry w{name, io::DType::I8, view->shape, {}};
    w.bytes.assign(reinterpret_cast<uint8_t *>(qz.q.data()),
                   reinterpret_cast<uint8_t *>(qz.q.data()) + qz.q.size());
    io::SafetensorsEntry s{name + "_scale", io::DType::F32, {n, 1}, {}};
    s.bytes.resize(n * 4);
    std::memcpy(s.bytes.data(), qz.scale.data(), s.bytes.size());
    entries.push_back(std::move(w));
    entries.push_back(std::move(s));
  }
  EXPECT_TRUE(io::write_safetensors(dst + "/model.safetensors", entries, {}).ok());
  std::ifstream in(src + "/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["quantization_config"] = quantConfig;
  writeText(dst + "/config.json", config.dump(2));
  return probeQ;
}

TEST(Int8Channel, WeightsReadAsQuantTimesScale) {
  TempDir tmp;
  SynthOptions opts;
  opts.arch = "llama";
  opts.seed = 3;
  opts.output_dir = tmp.file("f32");
  ASSERT_TRUE(synthesize(opts).ok());
  const std::string probe = "model.layers.1.mlp.down_proj.weight";
  for (const nlohmann::json &qc :
       {nlohmann::json{{"quant_method", "w8a8_int8"}, {"activation_scheme", "dynamic"}},
        nlohmann::json{{"quant_method", "compressed-tensors"}, {"format", "int-quantized"}}}) {
    std::string dir = tmp.file("int8-" + qc["quant_method"].get<std::string>());
    Quantized qz = writeInt8Copy(opts.output_dir, dir, qc, probe);
    auto ckpt = load_checkpoint(dir);
    ASSERT_TRUE(ckpt.ok()) << ckpt.error();
    std::vector<float> got = readWeight(*ckpt, probe);
    const WeightInfo *info = ckpt->weights->find(probe);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->source_dtype, "I8");
    int64_t k = info->shape[1];
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], float(qz.q[i]) * qz.scale[i / k]) << "element " << i;
    // And close to the fp32 original (half a quantization step).
    auto orig = load_checkpoint(opts.output_dir);
    std::vector<float> f32 = readWeight(*orig, probe);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - f32[i]), 0.5f * qz.scale[i / k] * 1.0001f);
  }
}

TEST(Int8Channel, UnsupportedFormatsAreNamed) {
  TempDir tmp;
  SynthOptions opts;
  opts.arch = "llama";
  opts.output_dir = tmp.file("f32");
  ASSERT_TRUE(synthesize(opts).ok());
  writeInt8Copy(opts.output_dir, tmp.file("marlin"),
                {{"quant_method", "compressed-tensors"}, {"format", "marlin-24"}}, "");
  auto r = load_checkpoint(tmp.file("marlin"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("'marlin-24'"), std::string::npos) << r.error();
  writeInt8Copy(opts.output_dir, tmp.file("bnb"), {{"quant_method", "bitsandbytes"}}, "");
  r = load_checkpoint(tmp.file("bnb"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("'bitsandbytes'"), std::string::npos) << r.error();
}

} // namespace
} // namespace hyc::models::test
