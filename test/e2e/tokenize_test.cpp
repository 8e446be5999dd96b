// `hyc tokenize` through the real binary on the shared Hugging Face
// tokenizers: stdin taken byte for byte, ids printed as the reference
// implementation gives them, --decode and --chat.
#include "test/e2e/e2e_util.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sys/stat.h>

namespace hyc::e2e {
namespace {

using ojson = nlohmann::ordered_json;

std::string joinIds(const ojson &ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(ids[i].get<int64_t>());
  return s;
}

class TokenizeCli : public ::testing::TestWithParam<std::string> {
protected:
  std::string dir() const { return sharedDir() + "/tokenizers/" + GetParam(); }
  ojson cases() const {
    std::ifstream f(dir() + "/cases.json");
    return ojson::parse(f);
  }
  void SetUp() override {
    struct stat st;
    if (stat((dir() + "/tokenizer.json").c_str(), &st) != 0)
      GTEST_SKIP() << "../shared/tokenizers/" << GetParam() << " not present";
  }
};

TEST_P(TokenizeCli, EncodesAndDecodesStdinByteForByte) {
  // Cases whose text has a trailing newline, a NUL, or special-token text:
  // what a tool that strips or re-encodes its input would get wrong.
  for (const ojson &c : cases()["cases"]) {
    const std::string id = c["id"];
    const std::string text = c["text"];
    if (text.find('\0') == std::string::npos && text.find('\n') == std::string::npos &&
        id.rfind("sp-", 0) != 0)
      continue;
    SCOPED_TRACE(id);
    CommandResult r = runHyc({"tokenize", dir()}, text);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, joinIds(c["ids"]) + "\n");
    r = runHyc({"tokenize", dir(), "--add-special"}, text);
    EXPECT_EQ(r.out, joinIds(c["ids_with_special"]) + "\n");
    r = runHyc({"tokenize", dir(), "--decode"}, joinIds(c["ids"]));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, c["decoded"].get<std::string>());
    break; // one such case per tokenizer keeps the test fast
  }
}

TEST_P(TokenizeCli, RendersChatWithTheCheckpointTemplate) {
  const ojson chat = cases()["chats"][0];
  const std::string file = tempDir() + "/" + GetParam() + "_chat.json";
  ojson request = chat["template_kwargs"];
  request["messages"] = chat["messages"];
  std::ofstream(file) << request.dump();
  CommandResult r = runHyc({"tokenize", dir(), "--chat", file, "--text"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, chat["rendered"].get<std::string>());
  r = runHyc({"tokenize", dir(), "--chat", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, joinIds(chat["ids"]) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Shared, TokenizeCli,
                         ::testing::Values("qwen3", "deepseek_v3"));

TEST(TokenizeCliErrors, MissingTokenizerAndBadUsage) {
  CommandResult r = runHyc({"tokenize", tempDir()}, "hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("expected tokenizer.json"), std::string::npos) << r.err;
  r = runHyc({"tokenize"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: hyc tokenize"), std::string::npos);
}

} // namespace
} // namespace hyc::e2e
