// GPTQ (AutoGPTQ v1: zero - 1 stored; GPTQModel gptq_v2) and
// compressed-tensors pack-quantized checkpoints: hand-built files with
// known codes, zero points and scales read back as stored (StoredCodes
// "q4z128") and as s * (q - z) exactly; each packing's word layout pinned by a
// literal word; act-order and other layouts hyc does not read refused by
// name. The files are packed here, from each format's description.
#include "checkpoint_test_util.h"
#include "tiny_llama.h"

#include "models/io/tensor.h"

#include <algorithm>
#include <functional>
#include <map>

namespace hyc::models::test {
namespace {

using Json = nlohmann::json;
using Edit = std::function<void(std::vector<io::SafetensorsEntry> &, Json &)>;

/// A layer as the tests mean it, [N][K] order: w = s * (q - z).
struct Layer {
  int64_t n = 0, k = 0, group = 128;
  std::vector<uint8_t> q;  ///< [N][K], 0..15
  std::vector<uint8_t> z;  ///< [N][K / group]
  std::vector<uint16_t> s; ///< [N][K / group] fp16 bits
};

Json llamaConfig(const Json &quant) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", 16},
          {"hidden_size", 256},
          {"intermediate_size", 256},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1},
          {"quantization_config", quant}};
}

ModelSpec llamaSpec() {
  ModelSpec s = tinyLlamaSpec();
  s.hidden_size = 256;
  s.intermediate_size = 256;
  s.head_dim = 128;
  return s;
}

/// Random codes, zeros in [zLo, zHi], fp16 scales in [2^-10, 2^-3) with 7
/// mantissa bits (so that bf16 holds them too); row 0
/// starts with codes 0..7 and rows 0..7 of group 0 have zeros 0..7 (clamped
/// to [zLo, zHi]) for the literal words.
Layer randomLayer(int64_t n, int64_t k, uint32_t seed, int zLo, int zHi) {
  std::mt19937 rng(seed);
  Layer l;
  l.n = n, l.k = k;
  const int64_t groups = k / l.group;
  l.q.resize(size_t(n * k));
  for (uint8_t &x : l.q)
    x = uint8_t(rng() & 15);
  for (int i = 0; i < 8; ++i)
    l.q[size_t(i)] = uint8_t(i);
  l.z.resize(size_t(n * groups));
  for (uint8_t &x : l.z)
    x = uint8_t(zLo + int(rng() % unsigned(zHi - zLo + 1)));
  for (int r = 0; r < 8; ++r)
    l.z[size_t(r * groups)] = uint8_t(std::clamp(r, zLo, zHi));
  l.s.resize(l.z.size());
  for (uint16_t &x : l.s)
    x = uint16_t((0x1400 + rng() % 0x1C00) & ~7u);
  return l;
}

/// Packs 8 nibbles (value(i) for i in 0..7) naturally: i in bits 4i..4i+3.
uint32_t natural(const std::function<unsigned(int)> &value) {
  uint32_t w = 0;
  for (int i = 0; i < 8; ++i)
    w |= uint32_t(value(i) & 15u) << (4 * i);
  return w;
}

io::SafetensorsEntry words(const std::string &name, std::vector<int64_t> shape,
                           const std::vector<uint32_t> &w) {
  io::SafetensorsEntry e{name, io::DType::I32, std::move(shape), {}};
  e.bytes.resize(w.size() * 4);
  std::memcpy(e.bytes.data(), w.data(), e.bytes.size());
  return e;
}

io::SafetensorsEntry halves(const std::string &name, std::vector<int64_t> shape,
                            const std::vector<uint16_t> &h) {
  io::SafetensorsEntry e{name, io::DType::F16, std::move(shape), {}};
  e.bytes.resize(h.size() * 2);
  std::memcpy(e.bytes.data(), h.data(), e.bytes.size());
  return e;
}

/// AutoGPTQ: qweight [K / 8, N] along K, qzeros [K / g, N / 8] along N
/// holding z - zeroOffset, scales [K / g, N] F16, g_idx [K] = k / g.
std::vector<io::SafetensorsEntry> gptqEntries(const std::string &prefix, const Layer &l,
                                              int zeroOffset, bool gIdx) {
  const int64_t groups = l.k / l.group;
  std::vector<uint32_t> qw(size_t(l.k / 8 * l.n)), qz(size_t(groups * l.n / 8));
  for (int64_t r = 0; r < l.k / 8; ++r)
    for (int64_t c = 0; c < l.n; ++c)
      qw[size_t(r * l.n + c)] = natural([&](int i) { return l.q[size_t(c * l.k + 8 * r + i)]; });
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t j = 0; j < l.n / 8; ++j)
      qz[size_t(g * l.n / 8 + j)] = natural(
          [&](int i) { return unsigned(l.z[size_t((8 * j + i) * groups + g)] - zeroOffset); });
  std::vector<uint16_t> sc(size_t(groups * l.n));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < l.n; ++c)
      sc[size_t(g * l.n + c)] = l.s[size_t(c * groups + g)];
  std::vector<io::SafetensorsEntry> out = {words(prefix + ".qweight", {l.k / 8, l.n}, qw),
                                           words(prefix + ".qzeros", {groups, l.n / 8}, qz),
                                           halves(prefix + ".scales", {groups, l.n}, sc)};
  if (gIdx) {
    std::vector<uint32_t> idx(size_t(l.k));
    for (int64_t k = 0; k < l.k; ++k)
      idx[size_t(k)] = uint32_t(k / l.group);
    out.push_back(words(prefix + ".g_idx", {l.k}, idx));
  }
  return out;
}

/// compressed-tensors pack-quantized: weight_packed [N, K / 8] along K,
/// scales [N, K / g] (F16 or, converted, BF16), zero points packed
/// [ceil(N / 8), K / g] along N, unpacked I8 z - 8, or none (z = 8).
enum class CtZeros { Packed, Int8, None };
std::vector<io::SafetensorsEntry> ctEntries(const std::string &prefix, const Layer &l,
                                            CtZeros zeros, bool bf16Scales) {
  const int64_t groups = l.k / l.group;
  std::vector<uint32_t> packed(size_t(l.n * l.k / 8));
  for (int64_t r = 0; r < l.n; ++r)
    for (int64_t j = 0; j < l.k / 8; ++j)
      packed[size_t(r * l.k / 8 + j)] =
          natural([&](int i) { return l.q[size_t(r * l.k + 8 * j + i)]; });
  std::vector<io::SafetensorsEntry> out = {
      words(prefix + ".weight_packed", {l.n, l.k / 8}, packed)};
  io::SafetensorsEntry s = halves(prefix + ".weight_scale", {l.n, groups}, l.s);
  if (bf16Scales) {
    s.dtype = io::DType::BF16;
    for (size_t i = 0; i < l.s.size(); ++i) {
      const uint16_t b = io::f32_to_bf16(io::f16_to_f32(l.s[i]));
      std::memcpy(s.bytes.data() + 2 * i, &b, 2);
    }
  }
  out.push_back(std::move(s));
  if (zeros == CtZeros::Packed) {
    std::vector<uint32_t> zw(size_t((l.n + 7) / 8 * groups));
    for (int64_t r = 0; r < (l.n + 7) / 8; ++r)
      for (int64_t g = 0; g < groups; ++g)
        zw[size_t(r * groups + g)] =
            natural([&](int i) { return l.z[size_t((8 * r + i) * groups + g)]; });
    out.push_back(words(prefix + ".weight_zero_point", {(l.n + 7) / 8, groups}, zw));
  } else if (zeros == CtZeros::Int8) {
    io::SafetensorsEntry z{prefix + ".weight_zero_point", io::DType::I8, {l.n, groups}, {}};
    for (uint8_t v : l.z)
      z.bytes.push_back(uint8_t(int8_t(int(v) - 8)));
    out.push_back(std::move(z));
  }
  // The unpacked [N, K]; hyc checks its shape, not its (I64) values.
  io::SafetensorsEntry shape{prefix + ".weight_shape", io::DType::I32, {2}, {}};
  const int32_t nk[2] = {int32_t(l.n), int32_t(l.k)};
  shape.bytes.assign(reinterpret_cast<const uint8_t *>(nk),
                     reinterpret_cast<const uint8_t *>(nk) + 8);
  out.push_back(std::move(shape));
  return out;
}

using Writer = std::function<std::vector<io::SafetensorsEntry>(const std::string &, const Layer &)>;

/// Every linear layer of llamaSpec() written by `write` with random values
/// (zeros in [zLo, zHi]); the layers by canonical name.
std::map<std::string, Layer> writeCheckpoint(const std::string &dir, const Json &quant,
                                             const Writer &write, int zLo, int zHi,
                                             const Edit &edit = nullptr) {
  std::map<std::string, Layer> layers;
  std::vector<io::SafetensorsEntry> entries;
  uint32_t seed = 7;
  for (const WeightInfo &w : required_weights(llamaSpec())) {
    if (w.name.find("_proj.weight") == std::string::npos) {
      entries.push_back(f32Entry(w.name, w.shape));
      continue;
    }
    Layer l = randomLayer(w.shape[0], w.shape[1], seed++, zLo, zHi);
    for (io::SafetensorsEntry &e : write(w.name.substr(0, w.name.size() - 7), l))
      entries.push_back(std::move(e));
    layers.emplace(w.name, std::move(l));
  }
  Json config = llamaConfig(quant);
  if (edit)
    edit(entries, config);
  writeText(dir + "/config.json", config.dump());
  EXPECT_TRUE(io::write_safetensors(dir + "/model.safetensors", entries).ok());
  return layers;
}

/// Every layer reads back as stored: dtype, StoredCodes, fp32 s * (q - z).
void expectStored(const Checkpoint &ckpt, const std::map<std::string, Layer> &layers,
                  const std::string &dtype) {
  for (const WeightInfo &w : ckpt.weights->weights())
    for (const char *part : {".qweight", ".qzeros", ".scales", ".g_idx", ".weight_packed",
                             ".weight_scale", ".weight_zero_point", ".weight_shape"})
      EXPECT_EQ(w.name.find(part), std::string::npos) << w.name;
  for (const auto &[name, l] : layers) {
    SCOPED_TRACE(name);
    const WeightInfo *info = ckpt.weights->find(name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->source_dtype, dtype);
    EXPECT_EQ(info->shape, (std::vector<int64_t>{l.n, l.k}));
    ASSERT_EQ(ckpt.weights->stored_codes_format(name), "q4z128");
    StoredCodes sc;
    ASSERT_TRUE(ckpt.weights->read_stored_codes(name, sc));
    ASSERT_EQ(sc.codes, l.q);
    for (int c = 0; c < 8; ++c)
      ASSERT_EQ(sc.codes[size_t(c)], c) << "the literal word";
    const int64_t groups = l.k / l.group;
    for (int64_t r = 0; r < l.n; ++r)
      for (int64_t b = 0; b < l.k / 128; ++b) { // one sub-block per 128
        const size_t g = size_t(r * groups + b * 128 / l.group);
        ASSERT_EQ(sc.sub_scales[size_t(r * l.k / 128 + b)], 1);
        ASSERT_EQ(sc.sub_mins[size_t(r * l.k / 128 + b)], l.z[g])
            << "zero of row " << r << " sub-block " << b;
        ASSERT_EQ(sc.d[size_t(r * l.k / 128 + b)], l.s[g]);
      }
    EXPECT_EQ(sc.dmin, sc.d);
    const std::vector<float> got = readWeight(ckpt, name);
    for (int64_t i = 0; i < l.n * l.k; ++i) {
      const size_t g = size_t(i / l.k * groups + i % l.k / l.group);
      ASSERT_EQ(got[size_t(i)], io::f16_to_f32(l.s[g]) * float(int(l.q[size_t(i)]) - l.z[g])) << i;
    }
  }
}

Json gptqConfig(const std::string &format) {
  return {{"quant_method", "gptq"}, {"bits", 4},    {"group_size", 128},
          {"desc_act", false},      {"sym", false}, {"checkpoint_format", format}};
}

TEST(GptqLoad, ReadsKnownCodesZerosAndScalesAsStored) {
  // v1 stores zero - 1: zeros 1..16 (16 is a stored 15, the wrap of a zero
  // of 0 minus one, which v1 readers take as 16), with g_idx.
  {
    TempDir dir;
    const auto layers = writeCheckpoint(
        dir.str(), gptqConfig("gptq"),
        [](const std::string &p, const Layer &l) { return gptqEntries(p, l, 1, true); }, 1, 16);
    HYC_CKPT_LOAD(ckpt, dir.str());
    EXPECT_TRUE(ckpt.warnings.empty()) << ckpt.warnings.front();
    expectStored(ckpt, layers, "GPTQ_INT4");
  }
  // gptq_v2 stores the zero itself; no g_idx.
  {
    TempDir dir;
    const auto layers = writeCheckpoint(
        dir.str(), gptqConfig("gptq_v2"),
        [](const std::string &p, const Layer &l) { return gptqEntries(p, l, 0, false); }, 0, 15);
    HYC_CKPT_LOAD(ckpt, dir.str());
    expectStored(ckpt, layers, "GPTQ_INT4");
  }
}

TEST(GptqLoad, WordLayoutIsNaturalAlongK) {
  // Codes 0..7 down K in column 0: word 0x76543210 at qweight[0][0].
  Layer l = randomLayer(8, 128, 1, 0, 15);
  const auto e = gptqEntries("m", l, 1, false);
  uint32_t w;
  std::memcpy(&w, e[0].bytes.data(), 4);
  EXPECT_EQ(w, 0x76543210u);
  // Zeros 0..7 across columns 0..7 of group 0, stored minus one (v1).
  for (int c = 0; c < 8; ++c)
    l.z[size_t(c)] = uint8_t(c + 1);
  std::memcpy(&w, gptqEntries("m", l, 1, false)[1].bytes.data(), 4);
  EXPECT_EQ(w, 0x76543210u);
}

void expectError(const Json &quant, const Writer &write, const Edit &edit,
                 const std::vector<std::string> &parts) {
  TempDir dir;
  writeCheckpoint(dir.str(), quant, write, 1, 15, edit);
  Expected<Checkpoint> r = load_checkpoint(dir.str());
  ASSERT_FALSE(r.ok()) << "accepted";
  expectContains(r.error(), parts);
}

const std::string kQ = "model.layers.0.self_attn.q_proj";

TEST(GptqLoad, UnreadLayoutsAreNamed) {
  const Writer gptq = [](const std::string &p, const Layer &l) {
    return gptqEntries(p, l, 1, true);
  };
  const auto config = [&](const char *field, Json value) {
    Json c = gptqConfig("gptq");
    c[field] = std::move(value);
    return c;
  };
  expectError(config("desc_act", true), gptq, nullptr,
              {"quant_method gptq", "desc_act = true, expected false", "act-order"});
  expectError(config("bits", 8), gptq, nullptr, {"bits = 8, expected 4"});
  expectError(config("group_size", -1), gptq, nullptr,
              {"group_size = -1", "positive multiple of 32"});
  expectError(config("checkpoint_format", "marlin"), gptq, nullptr,
              {"checkpoint_format = 'marlin', expected 'gptq' or 'gptq_v2'"});
  expectError(config("group_size", 96), gptq, nullptr, {"group_size 96 does not divide K="});
  // desc_act false in the config, but g_idx reorders K.
  expectError(gptqConfig("gptq"), gptq,
              [](auto &e, Json &) {
                for (io::SafetensorsEntry &t : e)
                  if (t.name == kQ + ".g_idx")
                    std::swap_ranges(t.bytes.begin(), t.bytes.begin() + 4,
                                     t.bytes.begin() + 4 * 200); // k 0 <-> 200
              },
              {"'" + kQ + ".g_idx'[0] = 1, expected 0", "act-order"});
  expectError(gptqConfig("gptq"), gptq,
              [](auto &e, Json &) {
                for (io::SafetensorsEntry &t : e)
                  if (t.name == kQ + ".qzeros") {
                    t.shape = {1, 64};
                  }
              },
              {"'" + kQ + ".qzeros' has shape [1, 64], expected [2, 32]"});
  expectError(gptqConfig("gptq"), gptq,
              [](auto &e, Json &) {
                e.erase(std::find_if(e.begin(), e.end(),
                                     [](const auto &t) { return t.name == kQ + ".scales"; }));
              },
              {"'" + kQ + ".scales' is missing", "qweight, qzeros and scales"});
}

Json ctConfig(bool symmetric, int64_t group = 128) {
  return {{"quant_method", "compressed-tensors"},
          {"format", "pack-quantized"},
          {"config_groups",
           {{"group_0",
             {{"targets", {"Linear"}},
              {"weights",
               {{"num_bits", 4},
                {"type", "int"},
                {"symmetric", symmetric},
                {"strategy", "group"},
                {"group_size", group},
                {"actorder", nullptr}}},
              {"input_activations", nullptr}}}}},
          {"ignore", {"lm_head"}}};
}

TEST(CtPackedLoad, ReadsKnownCodesZerosAndScalesAsStored) {
  struct Case {
    bool symmetric;
    CtZeros zeros;
    bool bf16;
  };
  for (const Case &c : {Case{false, CtZeros::Packed, false}, Case{false, CtZeros::Int8, true},
                        Case{true, CtZeros::None, false}}) {
    SCOPED_TRACE(int(c.zeros));
    TempDir dir;
    const int zLo = c.symmetric ? 8 : 0, zHi = c.symmetric ? 8 : 15;
    const auto layers = writeCheckpoint(
        dir.str(), ctConfig(c.symmetric),
        [&](const std::string &p, const Layer &l) { return ctEntries(p, l, c.zeros, c.bf16); }, zLo,
        zHi);
    HYC_CKPT_LOAD(ckpt, dir.str());
    EXPECT_TRUE(ckpt.warnings.empty()) << ckpt.warnings.front();
    expectStored(ckpt, layers, "CT_INT4");
  }
}

TEST(CtPackedLoad, WordLayoutIsNaturalAlongKAndZerosAlongN) {
  Layer l = randomLayer(8, 128, 1, 0, 15);
  const auto e = ctEntries("m", l, CtZeros::Packed, false);
  uint32_t w;
  std::memcpy(&w, e[0].bytes.data(), 4); // row 0, K 0..7
  EXPECT_EQ(w, 0x76543210u);
  std::memcpy(&w, e[2].bytes.data(), 4); // group 0, rows 0..7
  EXPECT_EQ(w, 0x76543210u);
}

TEST(CtPackedLoad, UnreadLayoutsAreNamed) {
  const Writer packed = [](const std::string &p, const Layer &l) {
    return ctEntries(p, l, CtZeros::Packed, false);
  };
  const auto weights = [](const char *field, Json value) {
    Json c = ctConfig(false);
    c["config_groups"]["group_0"]["weights"][field] = std::move(value);
    return c;
  };
  expectError(
      weights("num_bits", 8), packed, nullptr,
      {"compressed-tensors pack-quantized", "config_groups.group_0", "num_bits = 8, expected 4"});
  expectError(weights("strategy", "channel"), packed, nullptr,
              {"weights.strategy = 'channel', expected 'group'"});
  expectError(weights("actorder", "group"), packed, nullptr,
              {"weights.actorder = \"group\", expected null"});
  Json twoGroups = ctConfig(false);
  twoGroups["config_groups"]["group_1"] = ctConfig(false, 64)["config_groups"]["group_0"];
  expectError(twoGroups, packed, nullptr, {"group_size 64, asymmetric differs from another"});
  Json w4a8 = ctConfig(false);
  w4a8["config_groups"]["group_0"]["input_activations"] = {{"num_bits", 8}};
  expectError(w4a8, packed, nullptr, {"input_activations is set"});
  // Asymmetric without zero points; zero points out of int4; a BF16 scale
  // fp16 cannot hold; no weight_shape.
  const auto drop = [](const std::string &suffix) {
    return [suffix](std::vector<io::SafetensorsEntry> &e, Json &) {
      e.erase(
          std::find_if(e.begin(), e.end(), [&](const auto &t) { return t.name == kQ + suffix; }));
    };
  };
  expectError(ctConfig(false), packed, drop(".weight_zero_point"),
              {"'" + kQ + ".weight_zero_point' is missing (asymmetric"});
  expectError(ctConfig(false), packed, drop(".weight_shape"),
              {"'" + kQ + ".weight_shape' is missing"});
  expectError(
      ctConfig(false),
      [](const std::string &p, const Layer &l) { return ctEntries(p, l, CtZeros::Int8, false); },
      [](auto &e, Json &) {
        for (io::SafetensorsEntry &t : e)
          if (t.name == kQ + ".weight_zero_point")
            t.bytes[3] = uint8_t(int8_t(9));
      },
      {"'" + kQ + ".weight_zero_point'[1][1] = 9, expected an int4 zero point"});
  expectError(
      ctConfig(false),
      [](const std::string &p, const Layer &l) { return ctEntries(p, l, CtZeros::Packed, true); },
      [](auto &e, Json &) {
        for (io::SafetensorsEntry &t : e)
          if (t.name == kQ + ".weight_scale") {
            const uint16_t tiny = io::f32_to_bf16(std::ldexp(1.0f, -40));
            std::memcpy(t.bytes.data() + 2, &tiny, 2);
          }
      },
      {"'" + kQ + ".weight_scale'[0][1]", "is not an fp16 value"});
}

} // namespace
} // namespace hyc::models::test
