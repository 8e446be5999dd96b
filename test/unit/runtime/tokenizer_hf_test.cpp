// Hugging Face tokenizer.json support: every reference case of
// ../shared/tokenizers (ids from HF's Rust tokenizers, renderings from
// Python jinja2) must match, plus errors for malformed or unsupported files.
#include "hyrt/text/chat_template.h"
#include "hyrt/text/tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string tokenizerDir(const std::string &name) {
  return std::string(HYC_SHARED_DIR) + "/tokenizers/" + name;
}

/// Loads each shared tokenizer once per process (tokenizer.json is ~10 MB).
const hyrt::Tokenizer &sharedTokenizer(const std::string &name) {
  static std::map<std::string, hyrt::Tokenizer> cache;
  auto it = cache.find(name);
  if (it != cache.end())
    return it->second;
  hyrt::TokenizerData data;
  hyrt::Status s = hyrt::read_hf_tokenizer(tokenizerDir(name), &data);
  EXPECT_TRUE(s.ok()) << s.message();
  hyrt::Tokenizer tok;
  s = tok.init(std::move(data));
  EXPECT_TRUE(s.ok()) << s.message();
  return cache.emplace(name, std::move(tok)).first->second;
}

ojson readCases(const std::string &name) {
  std::ifstream f(tokenizerDir(name) + "/cases.json");
  return ojson::parse(f);
}

std::vector<int32_t> ids(const ojson &j) {
  return j.get<std::vector<int32_t>>();
}

class HfTokenizerCases : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (!fs::exists(tokenizerDir(GetParam()) + "/cases.json"))
      GTEST_SKIP() << "../shared/tokenizers/" << GetParam() << " not present";
  }
};

TEST_P(HfTokenizerCases, EncodeAndDecodeEveryCase) {
  const hyrt::Tokenizer &tok = sharedTokenizer(GetParam());
  const ojson cases = readCases(GetParam());
  ASSERT_GE(cases["cases"].size(), 80u);
  int matched = 0;
  for (const ojson &c : cases["cases"]) {
    SCOPED_TRACE(c["id"].get<std::string>());
    const std::string text = c["text"];
    ASSERT_EQ(text.size(), c["utf8_bytes"].get<size_t>());
    const auto plain = tok.encode(text, false);
    const auto special = tok.encode(text, true);
    EXPECT_EQ(plain, ids(c["ids"]));
    EXPECT_EQ(special, ids(c["ids_with_special"]));
    EXPECT_EQ(tok.decode_text(ids(c["ids"]), false),
              c["decoded"].get<std::string>());
    EXPECT_EQ(tok.decode_text(ids(c["ids_with_special"]), true),
              c["decoded_skip_special"].get<std::string>());
    matched += plain == ids(c["ids"]) && special == ids(c["ids_with_special"]);
  }
  EXPECT_EQ(matched, int(cases["cases"].size()));
}

TEST_P(HfTokenizerCases, RenderEveryChat) {
  const hyrt::Tokenizer &tok = sharedTokenizer(GetParam());
  const ojson cases = readCases(GetParam());
  ASSERT_FALSE(cases["chats"].empty());
  hyrt::ChatTemplate tmpl;
  hyrt::Status s = tmpl.compile(tok.data().chat_template);
  ASSERT_TRUE(s.ok()) << s.message();
  for (const ojson &c : cases["chats"]) {
    SCOPED_TRACE(c["id"].get<std::string>());
    ojson request = c["template_kwargs"];
    request["messages"] = c["messages"];
    if (c.contains("tools"))
      request["tools"] = c["tools"];
    request["add_generation_prompt"] = c["add_generation_prompt"];
    std::string vars, rendered;
    s = hyrt::chat_template_variables(tokenizerDir(GetParam()),
                                      request.dump(), &vars);
    ASSERT_TRUE(s.ok()) << s.message();
    s = tmpl.render(vars, &rendered);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(rendered, c["rendered"].get<std::string>());
    EXPECT_EQ(tok.encode(rendered, false), ids(c["ids"]));
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, HfTokenizerCases,
                         ::testing::Values("qwen3", "deepseek_v3"));

} // namespace
