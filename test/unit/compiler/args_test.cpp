// The driver's flag parser: values, booleans, positionals and clear errors.
#include "compiler/Args.h"

#include <gtest/gtest.h>

namespace hyc::cli {
namespace {

bool parse(Args &a, std::vector<std::string> argv, std::string &error) {
  std::vector<char *> ptrs;
  for (auto &s : argv)
    ptrs.push_back(s.data());
  return a.parse(int(ptrs.size()), ptrs.data(), 1, error);
}

TEST(Args, ValuesBooleansAndPositionals) {
  Args a({"max-seq-len", "emit"}, {"help"});
  std::string error;
  ASSERT_TRUE(parse(a, {"compile", "m.gguf", "--max-seq-len", "128", "--emit=llvm", "--help"}, error))
      << error;
  EXPECT_EQ(a.positionals(), std::vector<std::string>{"m.gguf"});
  EXPECT_EQ(a.get("emit"), "llvm");
  EXPECT_TRUE(a.has("help"));
  int64_t n = 0;
  ASSERT_TRUE(a.getInt("max-seq-len", 7, n, error));
  EXPECT_EQ(n, 128);
  ASSERT_TRUE(a.getInt("missing", 7, n, error));
  EXPECT_EQ(n, 7);
}

TEST(Args, ErrorsNameTheFlag) {
  std::string error;
  Args a({"max-seq-len"}, {"help"});
  EXPECT_FALSE(parse(a, {"compile", "--bogus", "1"}, error));
  EXPECT_NE(error.find("unknown flag --bogus"), std::string::npos) << error;
  Args b({"max-seq-len"}, {});
  EXPECT_FALSE(parse(b, {"compile", "--max-seq-len"}, error));
  EXPECT_NE(error.find("--max-seq-len needs a value"), std::string::npos) << error;
  Args c({"max-seq-len"}, {});
  ASSERT_TRUE(parse(c, {"compile", "--max-seq-len", "12x"}, error));
  int64_t n;
  EXPECT_FALSE(c.getInt("max-seq-len", 0, n, error));
  EXPECT_NE(error.find("expects an integer, got '12x'"), std::string::npos) << error;
  Args d({}, {"help"});
  EXPECT_FALSE(parse(d, {"compile", "--help=yes"}, error));
  EXPECT_NE(error.find("takes no value"), std::string::npos) << error;
}

} // namespace
} // namespace hyc::cli

namespace hyc::cli {
namespace {
TEST(Args, DashOIsAnAliasWhenOIsAFlag) {
  std::string error;
  Args a({"o"}, {});
  ASSERT_TRUE(parse(a, {"compile", "in.gguf", "-o", "out.hyc"}, error)) << error;
  EXPECT_EQ(a.get("o"), "out.hyc");
  EXPECT_EQ(a.positionals(), std::vector<std::string>{"in.gguf"});
  Args b({"x"}, {});
  ASSERT_TRUE(parse(b, {"run", "-o"}, error));
  EXPECT_EQ(b.positionals(), std::vector<std::string>{"-o"});
}
} // namespace
} // namespace hyc::cli
