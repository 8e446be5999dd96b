// AutoAWQ GEMM checkpoints (quant_method awq): hand-built files with known
// codes, zero points and fp16 scales read back as stored (StoredCodes
// "q4z128") and as s * (q - z) exactly; the interleaved nibble order pinned by
// a literal word; malformed files refused naming the tensor or field.
// The tests pack with their own shift table (where column c of a word
// lives), not with the loader's nibble-to-column table.
#include "checkpoint_test_util.h"
#include "tiny_llama.h"

#include "models/checkpoint/int4_pack.h"
#include "models/io/tensor.h"

#include <algorithm>
#include <functional>
#include <map>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;

/// Bit offset of column 8j + c inside word j: AWQ GEMM puts columns
/// 0, 2, 4, 6 in nibbles 0..3 and 1, 3, 5, 7 in nibbles 4..7.
constexpr int kColumnShift[8] = {0, 16, 4, 20, 8, 24, 12, 28};

/// Hidden 256 and MLP 256 (two groups of 128 along every K), head_dim 128,
/// one kv head, one layer.
Json awqLlamaConfig(int64_t group = 128) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", 16},
          {"hidden_size", 256},
          {"intermediate_size", 256},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1},
          {"quantization_config",
           {{"quant_method", "awq"},
            {"bits", 4},
            {"group_size", group},
            {"zero_point", true},
            {"version", "gemm"}}}};
}

ModelSpec awqLlamaSpec() {
  ModelSpec s = tinyLlamaSpec();
  s.hidden_size = 256;
  s.intermediate_size = 256;
  s.head_dim = 128;
  return s;
}

/// One layer as the test means it: K-major like the file.
struct Layer {
  int64_t n = 0, k = 0, group = 0;
  std::vector<uint8_t> q;  ///< [K][N]
  std::vector<uint8_t> z;  ///< [K / group][N]
  std::vector<uint16_t> s; ///< [K / group][N] fp16 bits
};

/// Packs K-major [rows][cols] nibbles as AWQ words, little-endian bytes.
std::vector<uint8_t> packWords(const std::vector<uint8_t> &v, int64_t rows, int64_t cols) {
  std::vector<uint8_t> bytes(size_t(rows * cols / 2));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols / 8; ++j) {
      uint32_t word = 0;
      for (int c = 0; c < 8; ++c)
        word |= uint32_t(v[size_t(r * cols + 8 * j + c)]) << kColumnShift[c];
      std::memcpy(bytes.data() + 4 * (r * cols / 8 + j), &word, 4);
    }
  return bytes;
}

/// Random codes and zeros, fp16 scales in [2^-10, 2^-3) with one fp16
/// subnormal; row 0 of the codes starts 0, 1, ..., 7 (the literal word).
Layer randomLayer(int64_t n, int64_t k, int64_t group, uint32_t seed) {
  std::mt19937 rng(seed);
  Layer l{n, k, group, {}, {}, {}};
  l.q.resize(size_t(k * n));
  for (uint8_t &x : l.q)
    x = uint8_t(rng() & 15);
  for (int c = 0; c < 8; ++c)
    l.q[size_t(c)] = uint8_t(c);
  l.z.resize(size_t(k / group * n));
  for (uint8_t &x : l.z)
    x = uint8_t(rng() & 15);
  l.s.resize(l.z.size());
  for (uint16_t &x : l.s)
    x = uint16_t(0x1400 + rng() % 0x1C00); // exponent 5..11: 2^-10 .. 2^-3
  l.s[1] = 0x0123;                         // subnormal
  return l;
}

std::vector<io::SafetensorsEntry> awqEntries(const std::string &prefix, const Layer &l) {
  const int64_t groups = l.k / l.group;
  io::SafetensorsEntry s{prefix + ".scales", io::DType::F16, {groups, l.n}, {}};
  s.bytes.resize(l.s.size() * 2);
  std::memcpy(s.bytes.data(), l.s.data(), s.bytes.size());
  return {{prefix + ".qweight", io::DType::I32, {l.k, l.n / 8}, packWords(l.q, l.k, l.n)},
          {prefix + ".qzeros", io::DType::I32, {groups, l.n / 8}, packWords(l.z, groups, l.n)},
          std::move(s)};
}

/// A checkpoint whose every linear layer is AWQ with random values; the
/// layers by canonical weight name. `edit` may change the entries and the
/// config before they are written.
std::map<std::string, Layer> writeAwqCheckpoint(
    const std::string &dir, int64_t group = 128,
    const std::function<void(std::vector<io::SafetensorsEntry> &, Json &)> &edit = nullptr) {
  std::map<std::string, Layer> layers;
  std::vector<io::SafetensorsEntry> entries;
  uint32_t seed = 1;
  for (const WeightInfo &w : required_weights(awqLlamaSpec())) {
    if (w.name.find("_proj.weight") == std::string::npos) {
      entries.push_back(f32Entry(w.name, w.shape));
      continue;
    }
    Layer l = randomLayer(w.shape[0], w.shape[1], group, seed++);
    for (io::SafetensorsEntry &e : awqEntries(w.name.substr(0, w.name.size() - 7), l))
      entries.push_back(std::move(e));
    layers.emplace(w.name, std::move(l));
  }
  Json config = awqLlamaConfig(group);
  if (edit)
    edit(entries, config);
  writeText(dir + "/config.json", config.dump());
  EXPECT_TRUE(io::write_safetensors(dir + "/model.safetensors", entries).ok());
  return layers;
}

/// Value of fp16 bits, computed here (not io::f16_to_f32).
float half(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0 ? m * std::ldexp(1.0, -24) : (1024 + m) * std::ldexp(1.0, e - 25);
  return float((h & 0x8000) ? -v : v);
}

TEST(AwqPack, NibbleOrderIsInterleaved) {
  // Columns 0..7 holding 0..7: nibbles (low first) 0, 2, 4, 6, 1, 3, 5, 7.
  const uint8_t columns[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<int32_t> word = pack_awq_rows(columns, 1, 8);
  ASSERT_EQ(word.size(), 1u);
  EXPECT_EQ(uint32_t(word[0]), 0x75316420u) << "natural order would be 0x76543210";
  EXPECT_EQ(packWords({columns, columns + 8}, 1, 8),
            (std::vector<uint8_t>{0x20, 0x64, 0x31, 0x75}));
  uint8_t back[8];
  const uint8_t bytes[4] = {0x20, 0x64, 0x31, 0x75};
  unpack_awq_rows(bytes, 1, 8, back);
  for (int c = 0; c < 8; ++c)
    EXPECT_EQ(back[c], c) << "column " << c;
}

TEST(AwqLoad, ReadsKnownCodesZerosAndScalesAsStored) {
  TempDir dir;
  const std::map<std::string, Layer> layers = writeAwqCheckpoint(dir.str());
  HYC_CKPT_LOAD(ckpt, dir.str());
  EXPECT_TRUE(ckpt.warnings.empty()) << ckpt.warnings.front();
  // The packed tensors stand for their weights; none is listed itself.
  for (const WeightInfo &w : ckpt.weights->weights())
    for (const char *part : {".qweight", ".qzeros", ".scales"})
      EXPECT_EQ(w.name.find(part), std::string::npos) << w.name;
  for (const auto &[name, l] : layers) {
    SCOPED_TRACE(name);
    const WeightInfo *info = ckpt.weights->find(name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->source_dtype, "AWQ_INT4");
    EXPECT_EQ(info->shape, (std::vector<int64_t>{l.n, l.k}));
    EXPECT_EQ(ckpt.weights->stored_codes_format(name), "q4z128");
    StoredCodes sc;
    ASSERT_TRUE(ckpt.weights->read_stored_codes(name, sc));
    EXPECT_EQ(sc.format, "q4z128");
    ASSERT_EQ(sc.n, l.n);
    ASSERT_EQ(sc.k, l.k);
    ASSERT_EQ(sc.codes.size(), size_t(l.n * l.k));
    // One sub-block per 128-block: the kernels fold once per group.
    ASSERT_EQ(sc.sub_scales.size(), size_t(l.n * l.k / 128));
    ASSERT_EQ(sc.sub_mins.size(), size_t(l.n * l.k / 128));
    ASSERT_EQ(sc.d.size(), size_t(l.n * l.k / 128));
    EXPECT_EQ(sc.dmin, sc.d);
    // The literal word of row k = 0: columns 0..7 hold 0..7.
    for (int c = 0; c < 8; ++c)
      ASSERT_EQ(sc.codes[size_t(c * l.k)], c) << "column " << c;
    for (int64_t n = 0; n < l.n; ++n)
      for (int64_t k = 0; k < l.k; ++k)
        ASSERT_EQ(sc.codes[size_t(n * l.k + k)], l.q[size_t(k * l.n + n)])
            << "code [" << n << "][" << k << "]";
    for (int64_t n = 0; n < l.n; ++n) {
      for (int64_t b = 0; b < l.k / 128; ++b) {
        ASSERT_EQ(sc.sub_scales[size_t(n * l.k / 128 + b)], 1);
        ASSERT_EQ(sc.sub_mins[size_t(n * l.k / 128 + b)], l.z[size_t(b * l.n + n)])
            << "zero of row " << n << " sub-block " << b;
      }
      for (int64_t b = 0; b < l.k / 128; ++b)
        ASSERT_EQ(sc.d[size_t(n * l.k / 128 + b)], l.s[size_t(b * l.n + n)])
            << "scale of row " << n << " block " << b;
    }
    // fp32: s * (q - z), bit for bit.
    const std::vector<float> w = readWeight(ckpt, name);
    for (int64_t n = 0; n < l.n; ++n)
      for (int64_t k = 0; k < l.k; ++k) {
        const size_t g = size_t(k / 128 * l.n + n);
        const float want = half(l.s[g]) * float(int(l.q[size_t(k * l.n + n)]) - l.z[g]);
        ASSERT_EQ(w[size_t(n * l.k + k)], want) << "[" << n << "][" << k << "]";
      }
    // And the StoredCodes formula gives the same numbers.
    for (int64_t i = 0; i < l.n * l.k; ++i) {
      const int64_t n = i / l.k, k = i % l.k;
      const float d = half(sc.d[size_t(n * l.k / 128 + k / 128)]);
      const float m = sc.sub_mins[size_t(n * l.k / 128 + k / 128)];
      ASSERT_EQ(d * float(sc.sub_scales[size_t(n * l.k / 128 + k / 128)]) * sc.codes[size_t(i)] -
                    d * m,
                w[size_t(i)])
          << i;
    }
  }
}

// AWQ groups of 64 fit no StoredCodes layout (one d per 128): the layer
// still reads as fp32, exactly, and says so by its dtype. Groups of 256
// are q4z128 with each scale and zero point repeated over two 128-blocks.
TEST(AwqLoad, OtherGroupSizes) {
  {
    TempDir dir;
    const auto layers = writeAwqCheckpoint(dir.str(), 64);
    HYC_CKPT_LOAD(ckpt, dir.str());
    const std::string name = "model.layers.0.mlp.down_proj.weight";
    const Layer &l = layers.at(name);
    EXPECT_EQ(ckpt.weights->find(name)->source_dtype, "AWQ_INT4_G64");
    EXPECT_EQ(ckpt.weights->stored_codes_format(name), "");
    StoredCodes sc;
    EXPECT_FALSE(ckpt.weights->read_stored_codes(name, sc));
    const std::vector<float> w = readWeight(ckpt, name);
    for (int64_t n = 0; n < l.n; ++n)
      for (int64_t k = 0; k < l.k; ++k) {
        const size_t g = size_t(k / 64 * l.n + n);
        ASSERT_EQ(w[size_t(n * l.k + k)],
                  half(l.s[g]) * float(int(l.q[size_t(k * l.n + n)]) - l.z[g]));
      }
  }
  {
    TempDir dir;
    const auto layers = writeAwqCheckpoint(dir.str(), 256);
    HYC_CKPT_LOAD(ckpt, dir.str());
    const std::string name = "model.layers.0.self_attn.q_proj.weight";
    const Layer &l = layers.at(name);
    EXPECT_EQ(ckpt.weights->find(name)->source_dtype, "AWQ_INT4");
    StoredCodes sc;
    ASSERT_TRUE(ckpt.weights->read_stored_codes(name, sc));
    for (int64_t n = 0; n < l.n; ++n) {
      ASSERT_EQ(sc.d[size_t(n * 2)], l.s[size_t(n)]);
      ASSERT_EQ(sc.d[size_t(n * 2 + 1)], l.s[size_t(n)]);
      for (int64_t b = 0; b < 2; ++b)
        ASSERT_EQ(sc.sub_mins[size_t(n * 2 + b)], l.z[size_t(n)]);
    }
  }
}

/// Loads a checkpoint edited by `edit` and expects an error with every part.
void expectAwqError(const std::function<void(std::vector<io::SafetensorsEntry> &, Json &)> &edit,
                    const std::vector<std::string> &parts, int64_t group = 128) {
  TempDir dir;
  writeAwqCheckpoint(dir.str(), group, edit);
  Expected<Checkpoint> r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok()) << "accepted";
  expectContains(r.error(), parts);
}

io::SafetensorsEntry &entry(std::vector<io::SafetensorsEntry> &entries, const std::string &name) {
  for (io::SafetensorsEntry &e : entries)
    if (e.name == name)
      return e;
  ADD_FAILURE() << "no entry " << name;
  return entries.front();
}

const std::string kQ = "model.layers.0.self_attn.q_proj";
const std::string kK = "model.layers.0.self_attn.k_proj";

TEST(AwqLoad, MalformedConfigIsNamed) {
  expectAwqError([](auto &, Json &c) { c["quantization_config"]["bits"] = 8; },
                 {"config.json", "quant_method awq", "bits = 8, expected 4"});
  expectAwqError([](auto &, Json &c) { c["quantization_config"]["group_size"] = 100; },
                 {"group_size = 100", "positive multiple of 32"});
  expectAwqError([](auto &, Json &c) { c["quantization_config"]["group_size"] = -1; },
                 {"group_size = -1", "positive multiple of 32"});
  expectAwqError([](auto &, Json &c) { c["quantization_config"]["zero_point"] = false; },
                 {"zero_point = false, expected true"});
  expectAwqError([](auto &, Json &c) { c["quantization_config"]["version"] = "gemv"; },
                 {"version = 'gemv', expected 'gemm'"});
  expectAwqError([](auto &, Json &c) { c["quantization_config"]["bits"] = "four"; },
                 {"quantization_config.bits"});
}

TEST(AwqLoad, MalformedLayersAreNamed) {
  // Group 96 is a multiple of 32 but does not divide K = 256.
  expectAwqError([](auto &, Json &c) { c["quantization_config"]["group_size"] = 96; },
                 {"AWQ layer 'model.layers.0.", "group_size 96 does not divide K=256"});
  expectAwqError([](auto &e, Json &) { entry(e, kQ + ".qweight").dtype = io::DType::F32; },
                 {"AWQ layer '" + kQ + "'", "'" + kQ + ".qweight' has dtype F32, expected I32"});
  expectAwqError(
      [](auto &e, Json &) {
        io::SafetensorsEntry &s = entry(e, kQ + ".scales");
        s.dtype = io::DType::BF16;
      },
      {"'" + kQ + ".scales' has dtype BF16, expected F16"});
  expectAwqError(
      [](auto &e, Json &) {
        io::SafetensorsEntry &z = entry(e, kQ + ".qzeros");
        z.shape = {1, 64}; // [K / group, N / 8] is [2, 32]
        z.bytes.resize(64 * 4);
      },
      {"'" + kQ + ".qzeros' has shape [1, 64], expected [2, 32]", "K=256, N=256"});
  expectAwqError(
      [](auto &e, Json &) {
        io::SafetensorsEntry &s = entry(e, kQ + ".scales");
        s.shape = {2, 128};
        s.bytes.resize(2 * 128 * 2);
      },
      {"'" + kQ + ".scales' has shape [2, 128], expected [2, 256]"});
  expectAwqError(
      [](auto &e, Json &) {
        e.erase(std::find_if(e.begin(), e.end(),
                             [](const auto &x) { return x.name == kQ + ".scales"; }));
      },
      {"'" + kQ + ".scales' is missing", "qweight, qzeros and scales"});
  expectAwqError(
      [](auto &e, Json &) {
        io::SafetensorsEntry &q = entry(e, kQ + ".qweight");
        q.shape = {256, 4, 8};
      },
      {"'" + kQ + ".qweight' has shape [256, 4, 8], expected [K, N / 8]"});
  // A qweight whose N disagrees with the config surfaces as the weight's
  // shape: k_proj is [128, 256] for one kv head of 128.
  expectAwqError(
      [](auto &e, Json &) {
        for (const char *part : {".qweight", ".qzeros", ".scales"}) {
          io::SafetensorsEntry &t = entry(e, kK + part);
          t.shape[1] *= 2;
          t.bytes.resize(t.bytes.size() * 2);
        }
      },
      {"'" + kK + ".weight' has shape [256, 256], expected [128, 256]"});
  // A qzeros with no qweight, and a float weight beside its packed form.
  expectAwqError(
      [](auto &e, Json &) {
        io::SafetensorsEntry z = entry(e, kQ + ".qzeros");
        z.name = "model.layers.0.self_attn.extra.qzeros";
        e.push_back(std::move(z));
      },
      {"'model.layers.0.self_attn.extra.qzeros' has no "
       "'model.layers.0.self_attn.extra.qweight'"});
  expectAwqError(
      [](auto &e, Json &) {
        e.push_back(f32Entry(kQ + ".weight", {256, 256}));
      },
      {"'" + kQ + ".weight' is stored beside '" + kQ + ".qweight'"});
  // quant_method awq over a float checkpoint.
  expectAwqError(
      [](auto &e, Json &) {
        e.clear();
        for (const WeightInfo &w : required_weights(awqLlamaSpec()))
          e.push_back(f32Entry(w.name, w.shape));
      },
      {"quant_method is 'awq', but no tensor ends in '.qweight'"});
}

} // namespace
} // namespace hyc::models::test
