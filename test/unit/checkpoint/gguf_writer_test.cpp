// io::GgufWriter: every metadata type (nested and string arrays included)
// and F32/F16/BF16/I32 tensors read back through io::GgufFile, alignment,
// key replacement, and the writer's error messages.
#include "checkpoint_test_util.h"

#include "models/io/gguf.h"
#include "models/io/gguf_writer.h"

#include <cmath>

namespace hyc::models::test {
namespace {

using io::GgufType;
using io::GgufWriter;
using io::GgufWriteValue;

#define HYC_OK(expr)                                                           \
  do {                                                                         \
    ::hyc::io::Status s_ = (expr);                                             \
    ASSERT_TRUE(s_.ok()) << s_.error();                                        \
  } while (0)

TEST(CheckpointGgufWriter, EveryMetadataTypeAndTensorReadsBack) {
  TempDir dir;
  GgufWriter w;
  HYC_OK(w.set("t.u8", GgufWriteValue::u8(200)));
  HYC_OK(w.set("t.i8", GgufWriteValue::i8(-5)));
  HYC_OK(w.set("t.u16", GgufWriteValue::u16(65000)));
  HYC_OK(w.set("t.i16", GgufWriteValue::i16(-32000)));
  HYC_OK(w.set("t.u32", GgufWriteValue::u32(4000000000u)));
  HYC_OK(w.set("t.i32", GgufWriteValue::i32(-2000000000)));
  HYC_OK(w.set("t.u64", GgufWriteValue::u64(0x123456789ABCDEFull)));
  HYC_OK(w.set("t.i64", GgufWriteValue::i64(-0x123456789ABCDEFll)));
  HYC_OK(w.set("t.f32", GgufWriteValue::f32(1e-6f)));
  HYC_OK(w.set("t.f64", GgufWriteValue::f64(0.1)));
  HYC_OK(w.set("t.true", GgufWriteValue::boolean(true)));
  HYC_OK(w.set("t.false", GgufWriteValue::boolean(false)));
  HYC_OK(w.set("t.str", GgufWriteValue::string("h\xc3\xa9llo \xe2\x96\x81")));
  HYC_OK(w.set("t.empty_str", GgufWriteValue::string("")));
  HYC_OK(w.set("t.strs", GgufWriteValue::string_array({"a", "", "<0x0A>"})));
  HYC_OK(w.set("t.f32s", GgufWriteValue::f32_array({0.5f, -2.0f})));
  HYC_OK(w.set("t.i32s", GgufWriteValue::i32_array({-1, 7})));
  HYC_OK(w.set("t.u32s", GgufWriteValue::u32_array({3, 4, 5})));
  HYC_OK(w.set("t.u8s", GgufWriteValue::array(
                            GgufType::UINT8,
                            {GgufWriteValue::u8(1), GgufWriteValue::u8(255)})));
  HYC_OK(w.set(
      "t.bools",
      GgufWriteValue::array(GgufType::BOOL, {GgufWriteValue::boolean(true),
                                             GgufWriteValue::boolean(false)})));
  HYC_OK(w.set("t.f64s", GgufWriteValue::array(GgufType::FLOAT64,
                                               {GgufWriteValue::f64(2.5)})));
  HYC_OK(w.set("t.nested",
               GgufWriteValue::array(GgufType::ARRAY,
                                     {GgufWriteValue::i32_array({1, 2}),
                                      GgufWriteValue::i32_array({}),
                                      GgufWriteValue::i32_array({3})})));
  HYC_OK(w.set("t.none", GgufWriteValue::array(GgufType::INT64, {})));
  HYC_OK(w.set_string("t.replaced", "old"));
  HYC_OK(w.set_u32("t.after", 1));
  HYC_OK(w.set_string("t.replaced", "new"));
  EXPECT_TRUE(w.has("t.replaced"));

  std::vector<float> a(15), b(14);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = 0.1f * static_cast<float>(i) - 0.7f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = std::ldexp(1.0f, static_cast<int>(i) - 7) * (i % 2 ? -1.0f : 1.0f);
  HYC_OK(w.add_tensor_f32("a", {3, 5}, a));
  HYC_OK(w.add_tensor_f32("b16", {2, 7}, b, io::GGML_F16));
  HYC_OK(w.add_tensor_f32("bbf", {14}, b, io::GGML_BF16));
  HYC_OK(w.add_tensor_f32("c3", {2, 1, 3}, {1, 2, 3, 4, 5, 6}));
  std::vector<uint8_t> ints(12);
  const int32_t iv[3] = {-3, 0, 99};
  std::memcpy(ints.data(), iv, 12);
  HYC_OK(w.add_tensor_bytes("ints", io::GGML_I32, {3}, ints));
  EXPECT_EQ(w.tensor_count(), 5u);
  HYC_OK(w.write(dir.file("t.gguf")));
  EXPECT_FALSE(fs::exists(dir.file("t.gguf.tmp")));

  Expected<io::GgufFile> f = io::GgufFile::open(dir.file("t.gguf"));
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  EXPECT_FALSE(f->has("general.alignment"));
  EXPECT_EQ(f->find("t.u8")->type, GgufType::UINT8);
  EXPECT_EQ(f->find("t.u8")->u, 200u);
  EXPECT_EQ(f->find("t.i8")->i, -5);
  EXPECT_EQ(f->find("t.u16")->u, 65000u);
  EXPECT_EQ(f->find("t.i16")->i, -32000);
  EXPECT_EQ(*f->get_u32("t.u32"), 4000000000u);
  EXPECT_EQ(*f->get_i32("t.i32"), -2000000000);
  EXPECT_EQ(*f->get_u64("t.u64"), 0x123456789ABCDEFull);
  EXPECT_EQ(*f->get_i64("t.i64"), -0x123456789ABCDEFll);
  EXPECT_EQ(*f->get_f32("t.f32"), 1e-6f);
  EXPECT_EQ(f->find("t.f64")->type, GgufType::FLOAT64);
  EXPECT_EQ(*f->get_f64("t.f64"), 0.1);
  EXPECT_TRUE(*f->get_bool("t.true"));
  EXPECT_FALSE(*f->get_bool("t.false"));
  EXPECT_EQ(*f->get_string("t.str"), "h\xc3\xa9llo \xe2\x96\x81");
  EXPECT_EQ(*f->get_string("t.empty_str"), "");
  EXPECT_EQ(*f->get_string_array("t.strs"),
            (std::vector<std::string>{"a", "", "<0x0A>"}));
  EXPECT_EQ(*f->get_f32_array("t.f32s"), (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(*f->get_i32_array("t.i32s"), (std::vector<int32_t>{-1, 7}));
  EXPECT_EQ(*f->get_i32_array("t.u32s"), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(*f->get_i32_array("t.u8s"), (std::vector<int32_t>{1, 255}));
  EXPECT_EQ(f->find("t.bools")->type_string(), "array[bool]");
  ASSERT_EQ(f->find("t.bools")->count, 2u);
  EXPECT_EQ(f->find("t.bools")->raw[0], 1);
  EXPECT_EQ(f->find("t.bools")->raw[1], 0);
  EXPECT_EQ(*f->get_f32_array("t.f64s"), (std::vector<float>{2.5f}));
  const io::GgufValue *nested = f->find("t.nested");
  EXPECT_EQ(nested->type_string(), "array[array[int32]]");
  ASSERT_EQ(nested->arrays.size(), 3u);
  EXPECT_EQ(nested->arrays[0].count, 2u);
  EXPECT_EQ(nested->arrays[1].count, 0u);
  int32_t three = 0;
  std::memcpy(&three, nested->arrays[2].raw, 4);
  EXPECT_EQ(three, 3);
  EXPECT_EQ(f->find("t.none")->type_string(), "array[int64]");
  EXPECT_EQ(f->find("t.none")->count, 0u);
  EXPECT_EQ(*f->get_string("t.replaced"), "new");
  // Replacing keeps the key's position.
  std::vector<std::string> keys;
  for (const auto &kv : f->metadata())
    keys.push_back(kv.first);
  ASSERT_GE(keys.size(), 2u);
  EXPECT_EQ(keys[keys.size() - 2], "t.replaced");
  EXPECT_EQ(keys.back(), "t.after");

  ASSERT_EQ(f->tensor_infos().size(), 5u);
  for (const io::GgufTensorInfo &t : f->tensor_infos())
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
  EXPECT_EQ(f->find_tensor("a")->ne, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(f->find_tensor("c3")->shape, (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(f->find_tensor("b16")->ggml_type, io::GGML_F16);
  EXPECT_EQ(f->find_tensor("bbf")->ggml_type, io::GGML_BF16);
  EXPECT_EQ(*f->read_f32("a"), a);
  EXPECT_EQ(*f->read_f32("b16"), b) << "powers of two are exact in f16";
  EXPECT_EQ(*f->read_f32("bbf"), b);
  EXPECT_EQ(*f->read_f32("c3"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(*f->read_f32("ints"), (std::vector<float>{-3, 0, 99}));
}

TEST(CheckpointGgufWriter, CustomAlignment) {
  TempDir dir;
  GgufWriter w;
  HYC_OK(w.set_string("general.architecture", "x"));
  HYC_OK(w.set_u32("general.alignment", 8)); // ignored: set_alignment wins
  HYC_OK(w.set_alignment(64));
  HYC_OK(w.add_tensor_f32("a", {3}, {1, 2, 3}));
  HYC_OK(w.add_tensor_f32("b", {5}, {1, 2, 3, 4, 5}));
  HYC_OK(w.write(dir.file("a.gguf")));
  Expected<io::GgufFile> f = io::GgufFile::open(dir.file("a.gguf"));
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(*f->get_u32("general.alignment"), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->find_tensor("b")->offset, 64u);
  EXPECT_EQ(*f->read_f32("b"), (std::vector<float>{1, 2, 3, 4, 5}));
}

TEST(CheckpointGgufWriter, Errors) {
  TempDir dir;
  GgufWriter w;
  auto expectError = [](const io::Status &s,
                        std::initializer_list<const char *> parts) {
    ASSERT_FALSE(s.ok());
    for (const char *p : parts)
      EXPECT_NE(s.error().find(p), std::string::npos) << s.error();
  };
  expectError(w.set_alignment(48), {"48", "power of two"});
  expectError(w.set("k", GgufWriteValue::array(GgufType::UINT32,
                                               {GgufWriteValue::u32(1),
                                                GgufWriteValue::string("x")})),
              {"'k'", "element 1", "string"});
  expectError(w.set("", GgufWriteValue::u8(1)), {"empty"});
  HYC_OK(w.add_tensor_f32("t", {2}, {1, 2}));
  expectError(w.add_tensor_f32("t", {2}, {1, 2}), {"'t'", "duplicate"});
  expectError(w.add_tensor_f32("n", {3}, {1, 2}), {"'n'", "3 elements"});
  expectError(w.add_tensor_bytes("q", io::GGML_Q8_0, {2, 17}, {}),
              {"'q'", "multiple of 32"});
  expectError(
      w.add_tensor_bytes("q", io::GGML_Q8_0, {1, 32}, std::vector<uint8_t>(33)),
      {"'q'", "34 bytes"});
  expectError(w.add_tensor_bytes("q4", io::GGML_Q4_0, {2, 17}, {}),
              {"'q4'", "Q4_0", "multiple of 32"});
  expectError(
      w.add_tensor_bytes("q4", io::GGML_Q4_0, {1, 32}, std::vector<uint8_t>(17)),
      {"'q4'", "18 bytes"});
  expectError(w.add_tensor_bytes("q4k", 12, {256}, {}), {"Q4_K", "not supported"});
  expectError(w.add_tensor_f32("d5", {1, 1, 1, 1, 1}, {1}), {"at most 4"});
  HYC_OK(w.add_tensor("bad", io::GGML_F32, {2}, [](uint8_t *) {
    return io::Status(io::Error("disk on fire"));
  }));
  expectError(w.write(dir.file("bad.gguf")),
              {"bad.gguf", "'bad'", "disk on fire"});
  EXPECT_FALSE(fs::exists(dir.file("bad.gguf")));
  EXPECT_FALSE(fs::exists(dir.file("bad.gguf.tmp")));
}

} // namespace
} // namespace hyc::models::test
