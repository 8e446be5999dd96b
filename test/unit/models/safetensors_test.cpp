// Tests for the safetensors reader/writer: golden checkpoints, writer round
// trip, sharded index, and malformed headers.
#include "models/io/hf_config.h"
#include "models/io/safetensors.h"

#include "test_util.h"

#include <unistd.h>

namespace hyc::io {
namespace {

using test::Bytes;
using test::TempDir;

const char *kGoldenCases[] = {"llama-tiny", "llama3-tiny", "qwen3moe-tiny",
                              "deepseekv3-tiny", "deepseekv3-grouped-tiny"};

std::vector<int64_t> shapeOf(const SafetensorsModel &m, const std::string &n) {
  const SafetensorsTensorInfo *t = m.find_tensor(n);
  return t ? t->shape : std::vector<int64_t>{-1};
}

TEST(SafetensorsTest, GoldenCheckpointsMatchTheirConfig) {
  HYC_REQUIRE_SHARED(golden, "golden");
  for (const char *name : kGoldenCases) {
    SCOPED_TRACE(name);
    std::string dir = golden + "/" + name;
    auto m = SafetensorsModel::open(dir);
    ASSERT_TRUE(m.ok()) << m.error();
    auto cfg = HfConfig::load(dir);
    ASSERT_TRUE(cfg.ok()) << cfg.error();
    const int64_t hidden = *cfg->get_int("hidden_size");
    const int64_t vocab = *cfg->get_int("vocab_size");
    const int64_t layers = *cfg->get_int("num_hidden_layers");
    const bool tied = *cfg->get_bool_or("tie_word_embeddings", false);
    EXPECT_EQ(shapeOf(*m, "model.embed_tokens.weight"),
              (std::vector<int64_t>{vocab, hidden}));
    EXPECT_EQ(shapeOf(*m, "model.norm.weight"), (std::vector<int64_t>{hidden}));
    EXPECT_EQ(m->has("lm_head.weight"), !tied);
    for (int64_t i = 0; i < layers; ++i)
      EXPECT_EQ(shapeOf(*m, "model.layers." + std::to_string(i) +
                                ".input_layernorm.weight"),
                (std::vector<int64_t>{hidden}));
    EXPECT_FALSE(m->has("model.layers." + std::to_string(layers) +
                        ".input_layernorm.weight"));
    if (cfg->has("q_lora_rank")) { // DeepSeek MLA
      const int64_t qLora = *cfg->get_int("q_lora_rank");
      const int64_t heads = *cfg->get_int("num_attention_heads");
      const int64_t qkHead =
          *cfg->get_int("qk_nope_head_dim") + *cfg->get_int("qk_rope_head_dim");
      EXPECT_EQ(shapeOf(*m, "model.layers.0.self_attn.q_a_proj.weight"),
                (std::vector<int64_t>{qLora, hidden}));
      EXPECT_EQ(shapeOf(*m, "model.layers.0.self_attn.q_b_proj.weight"),
                (std::vector<int64_t>{heads * qkHead, qLora}));
    } else {
      const int64_t headDim = *cfg->get_int("head_dim");
      const int64_t heads = *cfg->get_int("num_attention_heads");
      const int64_t kvHeads = *cfg->get_int("num_key_value_heads");
      EXPECT_EQ(shapeOf(*m, "model.layers.0.self_attn.q_proj.weight"),
                (std::vector<int64_t>{heads * headDim, hidden}));
      EXPECT_EQ(shapeOf(*m, "model.layers.0.self_attn.k_proj.weight"),
                (std::vector<int64_t>{kvHeads * headDim, hidden}));
    }
    for (const std::string &t : m->tensor_names()) {
      auto v = m->tensor(t);
      ASSERT_TRUE(v.ok()) << v.error();
      EXPECT_EQ(v->dtype, DType::F32) << t;
    }
    auto norm = m->read_f32("model.norm.weight");
    ASSERT_TRUE(norm.ok()) << norm.error();
    EXPECT_EQ(norm->size(), static_cast<size_t>(hidden));
    EXPECT_EQ(m->shards().front().metadata().at("format"), "pt");
  }
}

std::vector<SafetensorsEntry> sampleEntries() {
  std::vector<SafetensorsEntry> e;
  e.push_back({"f32",
               DType::F32,
               {2, 2},
               test::asBytes(std::vector<float>{1, 2, 3, 4})});
  e.push_back(
      {"f16", DType::F16, {1}, test::asBytes(std::vector<uint16_t>{0x3C00})});
  e.push_back({"bf16",
               DType::BF16,
               {2},
               test::asBytes(std::vector<uint16_t>{0x3F80, 0x4000})});
  e.push_back({"fp8", DType::F8_E4M3, {3}, {0x38, 0x40, 0x7E}});
  e.push_back({"i8", DType::I8, {1, 1, 1}, {0xFF}});
  e.push_back(
      {"i32", DType::I32, {1}, test::asBytes(std::vector<int32_t>{-5})});
  e.push_back({"scalar", DType::F32, {}, test::asBytes(std::vector<float>{7})});
  e.push_back({"empty", DType::F32, {0, 4}, {}});
  return e;
}

TEST(SafetensorsTest, WriterRoundTrip) {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  Status s = write_safetensors(path, sampleEntries(), {{"format", "pt"}});
  ASSERT_TRUE(s.ok()) << s.error();
  std::vector<uint8_t> raw = test::readBytes(path);
  uint64_t headerLen;
  std::memcpy(&headerLen, raw.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u);
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->tensor_infos().size(), 8u);
  const std::vector<std::vector<float>> want = {
      {1, 2, 3, 4}, {1}, {1, 2}, {1, 2, 448}, {-1}, {-5}, {7}, {}};
  auto entries = sampleEntries();
  for (size_t i = 0; i < entries.size(); ++i) {
    auto v = f->tensor(entries[i].name);
    ASSERT_TRUE(v.ok()) << v.error();
    EXPECT_EQ(v->shape, entries[i].shape);
    EXPECT_EQ(v->dtype, entries[i].dtype);
    EXPECT_EQ(*to_f32(*v), want[i]) << entries[i].name;
  }
}

TEST(SafetensorsTest, WriterRejectsBadEntries) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  Status size = write_safetensors(
      path, {{"w", DType::F32, {3}, std::vector<uint8_t>(8)}});
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().find("tensor 'w': F32 [3] needs 12 bytes, found 8"),
            std::string::npos)
      << size.error();
  Status dup = write_safetensors(
      path, {{"w", DType::I8, {1}, {1}}, {"w", DType::I8, {1}, {1}}});
  EXPECT_FALSE(dup.ok());
  Status q8 = write_safetensors(
      path, {{"q", DType::Q8_0, {32}, std::vector<uint8_t>(34)}});
  ASSERT_FALSE(q8.ok());
  EXPECT_NE(q8.error().find("Q8_0"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
}

// Writes a raw safetensors file with the given JSON header and data size.
std::string writeRaw(const TempDir &dir, const std::string &header,
                     size_t dataBytes,
                     const std::string &name = "x.safetensors") {
  Bytes b;
  b.put<uint64_t>(header.size()).raw(header.data(), header.size());
  b.data.resize(b.data.size() + dataBytes);
  test::writeBytes(dir.file(name), b.data);
  return dir.file(name);
}

void expectOpenError(const std::string &path,
                     std::initializer_list<std::string> parts) {
  auto f = SafetensorsFile::open(path);
  ASSERT_FALSE(f.ok()) << path;
  for (const std::string &p : parts)
    EXPECT_NE(f.error().find(p), std::string::npos)
        << "missing '" << p << "' in: " << f.error();
}

TEST(SafetensorsTest, MalformedHeaders) {
  TempDir dir;
  {
    Bytes b;
    b.put<uint64_t>(1000).raw("{}", 2);
    test::writeBytes(dir.file("len.safetensors"), b.data);
    expectOpenError(dir.file("len.safetensors"),
                    {"len.safetensors", "header length 1000",
                     "past the end of the file (10 bytes"});
  }
  test::writeBytes(dir.file("tiny.safetensors"), {1, 2, 3});
  expectOpenError(dir.file("tiny.safetensors"), {"truncated: 3 bytes"});
  expectOpenError(writeRaw(dir, "{\"a\": {", 0), {"invalid JSON header"});
  expectOpenError(writeRaw(dir, "[1, 2]", 0), {"expected an object"});
  expectOpenError(
      writeRaw(
          dir,
          R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})",
          8),
      {"tensor 'w'", "data_offsets [0, 16]",
       "past the data section (8 bytes)"});
  expectOpenError(
      writeRaw(
          dir,
          R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]}})",
          16),
      {"tensor 'w'", "dtype F32 x shape [2, 3] needs 6 x 4 bytes", "span 16"});
  expectOpenError(
      writeRaw(dir,
               R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                       "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
               16),
      {"tensors 'a' [0, 16] and 'b' [8, 16] overlap"});
  expectOpenError(
      writeRaw(dir, R"({"w": {"shape": [4], "data_offsets": [0, 16]}})", 16),
      {"tensor 'w'", "'dtype'"});
  expectOpenError(
      writeRaw(
          dir,
          R"({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})",
          16),
      {"tensor 'w' shape dim is -4"});
  expectOpenError(
      writeRaw(
          dir,
          R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]}})",
          16),
      {"begin > end"});
}

TEST(SafetensorsTest, UnsupportedDtypesFailOnAccess) {
  TempDir dir;
  std::string path =
      writeRaw(dir,
               R"({"d": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]},
          "z": {"dtype": "F4_WEIRD", "shape": [3], "data_offsets": [16, 20]}})",
               20);
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error();
  auto d = f->tensor("d");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().find("tensor 'd' has unsupported dtype 'F64'"),
            std::string::npos)
      << d.error();
  auto z = f->tensor("z");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().find("'F4_WEIRD'"), std::string::npos) << z.error();
}

TEST(SafetensorsTest, TruncationAtEveryByteNeverCrashes) {
  TempDir dir;
  std::string path = dir.file("t.safetensors");
  ASSERT_TRUE(write_safetensors(path, sampleEntries()).ok());
  const uint64_t size = std::filesystem::file_size(path);
  for (uint64_t cut = size; cut-- > 0;) {
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(cut)), 0);
    auto f = SafetensorsFile::open(path);
    ASSERT_FALSE(f.ok()) << "cut at " << cut;
    ASSERT_NE(f.error().find(path), std::string::npos) << f.error();
  }
}

TEST(SafetensorsTest, RandomByteFlipsNeverCrash) {
  TempDir dir;
  std::string path = dir.file("t.safetensors");
  ASSERT_TRUE(
      write_safetensors(path, sampleEntries(), {{"format", "pt"}}).ok());
  const std::vector<uint8_t> good = test::readBytes(path);
  std::mt19937 rng(99);
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<uint8_t> bytes = good;
    // Mostly hit the 8-byte length and the JSON header.
    size_t span =
        iter % 4 == 0 ? bytes.size() : std::min<size_t>(bytes.size(), 400);
    bytes[rng() % span] = static_cast<uint8_t>(rng());
    test::writeBytes(path, bytes);
    auto f = SafetensorsFile::open(path);
    if (!f.ok()) {
      ASSERT_NE(f.error().find(path), std::string::npos) << f.error();
      continue;
    }
    for (const SafetensorsTensorInfo &t : f->tensor_infos()) {
      auto v = f->tensor(t.name);
      if (v.ok())
        (void)to_f32(*v);
    }
  }
}

TEST(SafetensorsTest, ShardedIndex) {
  TempDir dir;
  auto entries = sampleEntries();
  std::vector<SafetensorsEntry> a(entries.begin(), entries.begin() + 3),
      b(entries.begin() + 3, entries.end());
  ASSERT_TRUE(
      write_safetensors(dir.file("model-00001-of-00002.safetensors"), a).ok());
  ASSERT_TRUE(
      write_safetensors(dir.file("model-00002-of-00002.safetensors"), b).ok());
  nlohmann::json index;
  index["metadata"] = {{"total_size", 100}};
  for (const auto &e : a)
    index["weight_map"][e.name] = "model-00001-of-00002.safetensors";
  for (const auto &e : b)
    index["weight_map"][e.name] = "model-00002-of-00002.safetensors";
  std::string indexPath = dir.file("model.safetensors.index.json");
  test::writeText(indexPath, index.dump());
  auto m = SafetensorsModel::open(dir.path().string());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->shards().size(), 2u);
  EXPECT_EQ(m->tensor_names().size(), entries.size());
  EXPECT_EQ(*m->read_f32("f32"), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(*m->read_f32("i32"), (std::vector<float>{-5}));
  auto absent = m->tensor("nope");
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.error().find("no tensor named 'nope'"), std::string::npos);

  nlohmann::json lying = index;
  lying["weight_map"]["ghost"] = "model-00001-of-00002.safetensors";
  test::writeText(indexPath, lying.dump());
  auto ghost = SafetensorsModel::open(indexPath);
  ASSERT_FALSE(ghost.ok());
  EXPECT_NE(ghost.error().find("tensor 'ghost' in shard "
                               "'model-00001-of-00002.safetensors', but that "
                               "shard has no such tensor"),
            std::string::npos)
      << ghost.error();

  nlohmann::json missing = index;
  missing["weight_map"]["extra"] = "model-00003-of-00002.safetensors";
  test::writeText(indexPath, missing.dump());
  auto noShard = SafetensorsModel::open(indexPath);
  ASSERT_FALSE(noShard.ok());
  EXPECT_NE(noShard.error().find("model.safetensors.index.json: shard "
                                 "'model-00003-of-00002.safetensors'"),
            std::string::npos)
      << noShard.error();
  EXPECT_NE(noShard.error().find("No such file"), std::string::npos)
      << noShard.error();

  test::writeText(indexPath, "{\"weight_map\": ");
  auto badJson = SafetensorsModel::open(indexPath);
  ASSERT_FALSE(badJson.ok());
  EXPECT_NE(badJson.error().find("invalid JSON"), std::string::npos);

  TempDir empty;
  auto none = SafetensorsModel::open(empty.path().string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("neither"), std::string::npos);
}

} // namespace
} // namespace hyc::io
