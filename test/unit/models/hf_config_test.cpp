// Tests for HfConfig: typed getters, nested fields, and error messages.
#include "models/io/hf_config.h"

#include "test_util.h"

namespace hyc::io {
namespace {

using test::TempDir;

TEST(HfConfigTest, TypedGettersAndErrors) {
  TempDir dir;
  test::writeText(dir.file("config.json"), R"({
    "hidden_size": 128, "rms_norm_eps": 1e-5, "tie_word_embeddings": true,
    "model_type": "llama", "architectures": ["LlamaForCausalLM"],
    "eos_token_id": [2, 7], "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
    "max_position_embeddings": 512.0, "head_dim": null, "bad": "12"})");
  auto c = HfConfig::load(dir.path().string());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(*c->get_int("hidden_size"), 128);
  EXPECT_EQ(*c->get_int("max_position_embeddings"), 512);
  EXPECT_DOUBLE_EQ(*c->get_float("rms_norm_eps"), 1e-5);
  EXPECT_DOUBLE_EQ(*c->get_float("hidden_size"), 128.0);
  EXPECT_TRUE(*c->get_bool("tie_word_embeddings"));
  EXPECT_EQ(*c->get_string("model_type"), "llama");
  EXPECT_EQ(*c->get_string_array("architectures"),
            (std::vector<std::string>{"LlamaForCausalLM"}));
  EXPECT_EQ(*c->get_int_array("eos_token_id"), (std::vector<int64_t>{2, 7}));
  EXPECT_DOUBLE_EQ(*c->get_float("rope_scaling.factor"), 8.0);
  auto rope = c->get_object("rope_scaling");
  ASSERT_TRUE(rope.ok()) << rope.error();
  EXPECT_EQ(*rope->get_string("rope_type"), "llama3");
  EXPECT_FALSE(c->has("head_dim")); // null counts as missing
  EXPECT_EQ(*c->get_int_or("head_dim", 32), 32);
  EXPECT_EQ(*c->get_int_or("hidden_size", 1), 128);

  auto missing = c->get_int("num_hidden_layers");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find(dir.file("config.json")), std::string::npos);
  EXPECT_NE(missing.error().find("missing field 'num_hidden_layers'"),
            std::string::npos);
  auto mistyped = c->get_int("bad");
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.error().find(
                "field 'bad' is string (\"12\"), expected an integer"),
            std::string::npos)
      << mistyped.error();
  EXPECT_FALSE(c->get_int("rms_norm_eps").ok());
  EXPECT_FALSE(c->get_int_or("bad", 3).ok());
  auto nested = rope->get_int("factorx");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().find("(field 'rope_scaling')"), std::string::npos)
      << nested.error();
}

TEST(HfConfigTest, LoadErrors) {
  TempDir dir;
  auto none = HfConfig::load(dir.path().string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("config.json"), std::string::npos);
  test::writeText(dir.file("config.json"), "{\"a\": ");
  auto bad = HfConfig::load(dir.file("config.json"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("invalid JSON"), std::string::npos);
  test::writeText(dir.file("config.json"), "[1]");
  auto arr = HfConfig::load(dir.file("config.json"));
  ASSERT_FALSE(arr.ok());
  EXPECT_NE(arr.error().find("expected an object"), std::string::npos);
}

} // namespace
} // namespace hyc::io
