// Tests for the GGUF reader: the real stories260K file, every metadata
// type, tensor types, and malformed files (truncation, lying offsets, ...).
#include "models/io/gguf.h"

#include "test_util.h"

#include <unistd.h>

namespace hyc::io {
namespace {

using test::Bytes;
using test::TempDir;

const char *kStoriesGguf = "models/stories260K/stories260K-f32.gguf";

/// Builds GGUF files in memory; tensor data offsets are assigned in order.
class GgufBuilder {
public:
  uint32_t version = 3;
  uint64_t alignment = 32;

  Bytes &kv(const std::string &key, GgufType type) {
    ++nKv_;
    kvs_.str64(key).put<uint32_t>(static_cast<uint32_t>(type));
    return kvs_;
  }
  void tensor(const std::string &name, std::vector<uint64_t> ne, uint32_t type,
              std::vector<uint8_t> data, int64_t offsetOverride = -1) {
    while (dataBytes_.size() % alignment)
      dataBytes_.push_back(0);
    uint64_t offset = offsetOverride >= 0 ? offsetOverride : dataBytes_.size();
    infos_.str64(name).put<uint32_t>(ne.size());
    for (uint64_t d : ne)
      infos_.put<uint64_t>(d);
    infos_.put<uint32_t>(type).put<uint64_t>(offset);
    dataBytes_.insert(dataBytes_.end(), data.begin(), data.end());
    ++nTensors_;
  }
  std::vector<uint8_t> build() const {
    Bytes b;
    b.raw("GGUF", 4).put<uint32_t>(version).put<uint64_t>(nTensors_);
    b.put<uint64_t>(nKv_);
    b.raw(kvs_.data.data(), kvs_.data.size());
    b.raw(infos_.data.data(), infos_.data.size());
    b.pad(alignment);
    b.raw(dataBytes_.data(), dataBytes_.size());
    return b.data;
  }

private:
  Bytes kvs_, infos_;
  std::vector<uint8_t> dataBytes_;
  uint64_t nKv_ = 0, nTensors_ = 0;
};

Expected<GgufFile> openBytes(const TempDir &dir, const std::vector<uint8_t> &b,
                             const std::string &name = "t.gguf") {
  test::writeBytes(dir.file(name), b);
  return GgufFile::open(dir.file(name));
}

void expectError(const Expected<GgufFile> &g,
                 std::initializer_list<std::string> parts) {
  ASSERT_FALSE(g.ok());
  for (const std::string &p : parts)
    EXPECT_NE(g.error().find(p), std::string::npos)
        << "missing '" << p << "' in: " << g.error();
}

TEST(GgufTest, OpensStories260K) {
  HYC_REQUIRE_SHARED(path, kStoriesGguf);
  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 32u);
  EXPECT_EQ(g->data_offset(), 14176u);
  EXPECT_EQ(*g->get_string("general.architecture"), "llama");

  const int64_t dim = *g->get_u32("llama.embedding_length");
  const int64_t hidden = *g->get_u32("llama.feed_forward_length");
  const int64_t layers = *g->get_u32("llama.block_count");
  const int64_t heads = *g->get_u32("llama.attention.head_count");
  const int64_t kvHeads = *g->get_u32("llama.attention.head_count_kv");
  EXPECT_EQ(dim, 64);
  EXPECT_EQ(hidden, 172);
  EXPECT_EQ(layers, 5);
  EXPECT_EQ(heads, 8);
  EXPECT_EQ(kvHeads, 4);
  EXPECT_EQ(*g->get_u32("llama.rope.dimension_count"), 8u);
  EXPECT_FLOAT_EQ(*g->get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);

  auto tokens = g->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.error();
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  auto scores = g->get_f32_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.ok()) << scores.error();
  EXPECT_EQ(scores->size(), 512u);
  auto types = g->get_i32_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok()) << types.error();
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[3], 6);
  EXPECT_EQ((*types)[300], 1);
  EXPECT_EQ(*g->get_u32("tokenizer.ggml.bos_token_id"), 1u);

  const int64_t vocab = static_cast<int64_t>(tokens->size());
  const int64_t kvDim = dim / heads * kvHeads;
  std::map<std::string, std::vector<int64_t>> want = {
      {"token_embd.weight", {vocab, dim}},
      {"output.weight", {vocab, dim}},
      {"output_norm.weight", {dim}}};
  for (int64_t i = 0; i < layers; ++i) {
    std::string p = "blk." + std::to_string(i) + ".";
    want[p + "attn_q.weight"] = {dim, dim};
    want[p + "attn_k.weight"] = {kvDim, dim};
    want[p + "attn_v.weight"] = {kvDim, dim};
    want[p + "attn_output.weight"] = {dim, dim};
    want[p + "attn_norm.weight"] = {dim};
    want[p + "ffn_norm.weight"] = {dim};
    want[p + "ffn_gate.weight"] = {hidden, dim};
    want[p + "ffn_up.weight"] = {hidden, dim};
    want[p + "ffn_down.weight"] = {dim, hidden};
  }
  ASSERT_EQ(g->tensor_infos().size(), want.size());
  uint64_t end = 0;
  for (const GgufTensorInfo &t : g->tensor_infos()) {
    ASSERT_TRUE(want.count(t.name)) << t.name;
    EXPECT_EQ(t.shape, want[t.name]) << t.name;
    EXPECT_EQ(t.ggml_type, GGML_F32) << t.name;
    end = std::max(end, g->data_offset() + t.offset + t.nbytes);
  }
  EXPECT_EQ(end, std::filesystem::file_size(path));
  auto embd = g->tensor("token_embd.weight");
  ASSERT_TRUE(embd.ok()) << embd.error();
  EXPECT_EQ(embd->dtype, DType::F32);
  EXPECT_EQ(embd->nbytes, 512u * 64 * 4);
  // ggml ne is the reverse of the row-major shape.
  const GgufTensorInfo *ffnDown = g->find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(ffnDown, nullptr);
  EXPECT_EQ(ffnDown->ne, (std::vector<int64_t>{172, 64}));
}

TEST(GgufTest, EveryMetadataTypeAndTypedGetters) {
  TempDir dir;
  GgufBuilder b;
  b.kv("u8", GgufType::UINT8).put<uint8_t>(200);
  b.kv("i8", GgufType::INT8).put<int8_t>(-100);
  b.kv("u16", GgufType::UINT16).put<uint16_t>(60000);
  b.kv("i16", GgufType::INT16).put<int16_t>(-30000);
  b.kv("u32", GgufType::UINT32).put<uint32_t>(4000000000u);
  b.kv("i32", GgufType::INT32).put<int32_t>(-2000000000);
  b.kv("f32", GgufType::FLOAT32).put<float>(1.5f);
  b.kv("bool", GgufType::BOOL).put<uint8_t>(1);
  b.kv("str", GgufType::STRING).str64("hello");
  b.kv("u64", GgufType::UINT64).put<uint64_t>(1ull << 40);
  b.kv("i64", GgufType::INT64).put<int64_t>(-(1ll << 40));
  b.kv("f64", GgufType::FLOAT64).put<double>(0.25);
  b.kv("f32s", GgufType::ARRAY)
      .put<uint32_t>(6)
      .put<uint64_t>(2)
      .put<float>(1.f)
      .put<float>(-2.f);
  b.kv("i32s", GgufType::ARRAY)
      .put<uint32_t>(5)
      .put<uint64_t>(2)
      .put<int32_t>(7)
      .put<int32_t>(-9);
  b.kv("u64s", GgufType::ARRAY)
      .put<uint32_t>(10)
      .put<uint64_t>(1)
      .put<uint64_t>(1ull << 40);
  b.kv("strs", GgufType::ARRAY)
      .put<uint32_t>(8)
      .put<uint64_t>(2)
      .str64("a")
      .str64("");
  Bytes &nested = b.kv("nested", GgufType::ARRAY);
  nested.put<uint32_t>(9).put<uint64_t>(2);
  nested.put<uint32_t>(8).put<uint64_t>(2).str64("x y").str64("z");
  nested.put<uint32_t>(8).put<uint64_t>(0);
  b.version = 2; // v2 has the same layout with 64-bit counts
  auto g = openBytes(dir, b.build());
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g->metadata().size(), 17u);
  EXPECT_EQ(*g->get_u32("u8"), 200u);
  EXPECT_EQ(*g->get_i32("i8"), -100);
  EXPECT_EQ(*g->get_u32("u16"), 60000u);
  EXPECT_EQ(*g->get_i32("i16"), -30000);
  EXPECT_EQ(*g->get_u32("u32"), 4000000000u);
  EXPECT_EQ(*g->get_i64("u32"), 4000000000ll);
  EXPECT_EQ(*g->get_i32("i32"), -2000000000);
  EXPECT_EQ(*g->get_f32("f32"), 1.5f);
  EXPECT_EQ(*g->get_bool("bool"), true);
  EXPECT_EQ(*g->get_string("str"), "hello");
  EXPECT_EQ(*g->get_u64("u64"), 1ull << 40);
  EXPECT_EQ(*g->get_i64("i64"), -(1ll << 40));
  EXPECT_EQ(*g->get_f64("f64"), 0.25);
  EXPECT_EQ(*g->get_f32_array("f32s"), (std::vector<float>{1.f, -2.f}));
  EXPECT_EQ(*g->get_i32_array("i32s"), (std::vector<int32_t>{7, -9}));
  EXPECT_EQ(*g->get_string_array("strs"), (std::vector<std::string>{"a", ""}));
  const GgufValue *n = g->find("nested");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type_string(), "array[array[string]]");
  ASSERT_EQ(n->arrays.size(), 2u);
  EXPECT_EQ(n->arrays[0].strings, (std::vector<std::string>{"x y", "z"}));
  EXPECT_TRUE(n->arrays[1].strings.empty());

  auto mistyped = g->get_u32("str");
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.error().find("key 'str' has type string, expected uint32"),
            std::string::npos)
      << mistyped.error();
  EXPECT_NE(mistyped.error().find(dir.file("t.gguf")), std::string::npos);
  auto arrayMistyped = g->get_f32_array("strs");
  ASSERT_FALSE(arrayMistyped.ok());
  EXPECT_NE(arrayMistyped.error().find(
                "has type array[string], expected array[float32]"),
            std::string::npos)
      << arrayMistyped.error();
  auto range = g->get_u32("i8");
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.error().find("is -100, which does not fit in uint32"),
            std::string::npos)
      << range.error();
  EXPECT_FALSE(g->get_i32("u32").ok());
  EXPECT_FALSE(g->get_i32_array("u64s").ok());
  auto missing = g->get_string("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("missing key 'nope'"), std::string::npos);
}

TEST(GgufTest, TensorTypesAndUnsupportedType) {
  TempDir dir;
  GgufBuilder b;
  b.kv("general.alignment", GgufType::UINT32).put<uint32_t>(64);
  b.alignment = 64;
  std::vector<float> f32 = {1, 2, 3, 4, 5, 6};
  b.tensor("a", {3, 2}, GGML_F32, test::asBytes(f32));
  b.tensor("h", {2}, GGML_F16,
           test::asBytes(std::vector<uint16_t>{0x3C00, 0xC000}));
  b.tensor("b", {2}, GGML_BF16,
           test::asBytes(std::vector<uint16_t>{0x3F80, 0x4000}));
  Bytes q;
  q.put<uint16_t>(0x4000);
  for (int j = 0; j < 32; ++j)
    q.put<int8_t>(static_cast<int8_t>(j));
  b.tensor("q", {32, 1}, GGML_Q8_0, q.data);
  b.tensor("iq2", {256}, 16, std::vector<uint8_t>(66)); // IQ2_XXS
  auto g = openBytes(dir, b.build());
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ(g->data_offset() % 64, 0u);
  auto a = g->tensor("a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(*to_f32(*a), f32);
  EXPECT_EQ(*to_f32(*g->tensor("h")), (std::vector<float>{1, -2}));
  EXPECT_EQ(*to_f32(*g->tensor("b")), (std::vector<float>{1, 2}));
  auto qv = g->read_f32("q");
  ASSERT_TRUE(qv.ok()) << qv.error();
  EXPECT_EQ((*qv)[31], 62.0f);
  auto iq2 = g->tensor("iq2");
  ASSERT_FALSE(iq2.ok());
  EXPECT_NE(iq2.error().find(
                "unsupported tensor type 16 (IQ2_XXS) for tensor 'iq2'"),
            std::string::npos)
      << iq2.error();
  EXPECT_FALSE(g->tensor("absent").ok());
}

TEST(GgufTest, BadMagicAndVersion) {
  TempDir dir;
  GgufBuilder b;
  std::vector<uint8_t> bytes = b.build();
  bytes[0] = 'X';
  expectError(openBytes(dir, bytes), {"t.gguf", "bad magic", "'XGUF'"});
  for (uint32_t version : {1u, 4u}) {
    GgufBuilder v;
    v.version = version;
    expectError(openBytes(dir, v.build()),
                {"unsupported GGUF version " + std::to_string(version),
                 "expected 2 or 3"});
  }
  expectError(openBytes(dir, {}), {"t.gguf", "truncated", "magic"});
}

TEST(GgufTest, TruncatedCopiesOfRealFileNeverCrash) {
  HYC_REQUIRE_SHARED(path, kStoriesGguf);
  TempDir dir;
  std::string copy = dir.file("trunc.gguf");
  std::filesystem::copy_file(path, copy);
  const uint64_t dataOffset = 14176, size = std::filesystem::file_size(path);
  std::vector<uint64_t> cuts;
  for (uint64_t c = 0; c < dataOffset; c += 7)
    cuts.push_back(c);
  for (uint64_t c = dataOffset; c < size; c += 4099)
    cuts.push_back(c);
  cuts.push_back(size - 1);
  // Truncate from the longest to the shortest so one copy suffices.
  for (auto it = cuts.rbegin(); it != cuts.rend(); ++it) {
    ASSERT_EQ(::truncate(copy.c_str(), static_cast<off_t>(*it)), 0);
    auto g = GgufFile::open(copy);
    ASSERT_FALSE(g.ok()) << "cut at " << *it;
    ASSERT_NE(g.error().find(copy), std::string::npos) << g.error();
    if (*it >= dataOffset)
      ASSERT_NE(g.error().find("past the end of the file"), std::string::npos)
          << g.error();
    else if (*it < dataOffset - 32)
      ASSERT_NE(g.error().find("truncated"), std::string::npos) << g.error();
  }
}

TEST(GgufTest, LyingTensorOffsetsAndSizes) {
  TempDir dir;
  {
    GgufBuilder b;
    b.tensor("w", {4}, GGML_F32, std::vector<uint8_t>(16), 1 << 20);
    expectError(openBytes(dir, b.build()),
                {"t.gguf", "tensor 'w'", "data offset 1048576",
                 "past the end of the file"});
  }
  {
    GgufBuilder b; // data claims 8 floats, file holds 4
    b.tensor("w", {8}, GGML_F32, std::vector<uint8_t>(16));
    expectError(openBytes(dir, b.build()),
                {"tensor 'w'", "32 bytes of F32 [8]",
                 "extends past the end of the file"});
  }
  {
    GgufBuilder b;
    b.tensor("w", {4}, GGML_F32, std::vector<uint8_t>(16));
    b.tensor("v", {4}, GGML_F32, std::vector<uint8_t>(16), 8);
    expectError(openBytes(dir, b.build()),
                {"tensor 'v'", "offset 8", "multiple of the alignment 32"});
  }
  {
    GgufBuilder b;
    b.tensor("q", {40}, GGML_Q8_0, std::vector<uint8_t>(68));
    expectError(openBytes(dir, b.build()),
                {"tensor 'q'", "ne[0]=40", "multiple of 32"});
  }
  {
    GgufBuilder b;
    b.tensor("w", {1, 1, 1, 1, 1}, GGML_F32, std::vector<uint8_t>(4));
    expectError(openBytes(dir, b.build()), {"'w'", "5 dims"});
  }
}

TEST(GgufTest, DuplicatesAndAbsurdCounts) {
  TempDir dir;
  {
    GgufBuilder b;
    b.tensor("w", {4}, GGML_F32, std::vector<uint8_t>(16));
    b.tensor("w", {4}, GGML_F32, std::vector<uint8_t>(16));
    expectError(openBytes(dir, b.build()),
                {"duplicate tensor name 'w'", "0 and 1"});
  }
  {
    GgufBuilder b;
    b.kv("k", GgufType::UINT8).put<uint8_t>(1);
    b.kv("k", GgufType::UINT8).put<uint8_t>(2);
    expectError(openBytes(dir, b.build()), {"key 'k'", "duplicate key"});
  }
  {
    Bytes raw;
    raw.raw("GGUF", 4).put<uint32_t>(3).put<uint64_t>(1ull << 40);
    raw.put<uint64_t>(0);
    expectError(openBytes(dir, raw.data),
                {"claims 1099511627776 tensors", "bytes"});
    Bytes kvs;
    kvs.raw("GGUF", 4).put<uint32_t>(3).put<uint64_t>(0);
    kvs.put<uint64_t>(~0ull);
    expectError(openBytes(dir, kvs.data), {"metadata entries"});
  }
  {
    GgufBuilder b;
    b.kv("arr", GgufType::ARRAY).put<uint32_t>(8).put<uint64_t>(1ull << 60);
    expectError(openBytes(dir, b.build()),
                {"key 'arr'", "array of 1152921504606846976 string"});
    GgufBuilder c;
    c.kv("arr", GgufType::ARRAY).put<uint32_t>(4).put<uint64_t>(1ull << 62);
    expectError(openBytes(dir, c.build()), {"key 'arr'", "uint32"});
    GgufBuilder d;
    d.kv("bad", GgufType::ARRAY).put<uint32_t>(13).put<uint64_t>(0);
    expectError(openBytes(dir, d.build()),
                {"key 'bad'", "invalid array element type 13"});
    GgufBuilder e;
    e.kv("s", GgufType::STRING).put<uint64_t>(1000).raw("abc", 3);
    expectError(openBytes(dir, e.build()),
                {"key 's'", "truncated", "need 1000 bytes"});
  }
  {
    GgufBuilder b;
    b.kv("general.alignment", GgufType::UINT32).put<uint32_t>(24);
    expectError(openBytes(dir, b.build()),
                {"general.alignment", "24", "power of two"});
    GgufBuilder c;
    c.kv("general.alignment", GgufType::STRING).str64("32");
    expectError(openBytes(dir, c.build()),
                {"general.alignment", "has type string, expected uint32"});
  }
}

TEST(GgufTest, RandomByteFlipsNeverCrash) {
  TempDir dir;
  GgufBuilder b;
  b.kv("general.architecture", GgufType::STRING).str64("llama");
  b.kv("n", GgufType::UINT32).put<uint32_t>(5);
  b.kv("toks", GgufType::ARRAY)
      .put<uint32_t>(8)
      .put<uint64_t>(3)
      .str64("a")
      .str64("bb")
      .str64("c");
  b.kv("f", GgufType::ARRAY)
      .put<uint32_t>(6)
      .put<uint64_t>(2)
      .put<float>(1)
      .put<float>(2);
  b.tensor("w", {8, 2}, GGML_F32, std::vector<uint8_t>(64, 0x3F));
  b.tensor("q", {32}, GGML_Q8_0, std::vector<uint8_t>(34, 1));
  const std::vector<uint8_t> good = b.build();
  std::mt19937 rng(1234);
  std::string path = dir.file("flip.gguf");
  int opened = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::vector<uint8_t> bytes = good;
    for (int k = 0; k < 1 + iter % 3; ++k)
      bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    test::writeBytes(path, bytes);
    auto g = GgufFile::open(path);
    if (!g.ok()) {
      ASSERT_NE(g.error().find(path), std::string::npos) << g.error();
      continue;
    }
    ++opened;
    for (const GgufTensorInfo &t : g->tensor_infos()) {
      auto v = g->tensor(t.name);
      if (v.ok())
        (void)to_f32(*v); // must stay inside the mapping
    }
  }
  EXPECT_GT(opened, 0);
}

TEST(GgufTest, MissingFileNamesPath) {
  auto g = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

// Found by fuzz_gguf: 2^62 + 1 F32 elements take 2^64 + 4 bytes, which
// wrapped to 4, passed the bounds check, and read_f32 then sized its buffer
// by the element count (std::length_error, an abort).
TEST(GgufTest, ByteSizeOverflowIsRefused) {
  TempDir dir;
  GgufBuilder b;
  b.tensor("huge", {(uint64_t(1) << 62) + 1}, GGML_F32, std::vector<uint8_t>(4));
  expectError(openBytes(dir, b.build()),
              {"t.gguf", "tensor 'huge'", "4611686018427387905",
               "byte size overflows"});
}

} // namespace
} // namespace hyc::io
