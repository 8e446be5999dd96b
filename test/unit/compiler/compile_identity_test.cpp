// The compile identity every tensor-parallel rank carries: the ranks of one
// command line agree whatever their -o, --tp-rank and option order; another
// precision, another checkpoint or the same checkpoint rewritten do not.
#include "compiler/CompileIdentity.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace hyc::compiler {
namespace {

CompileOptions parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "compile");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  CompileOptions options;
  OptionError error;
  EXPECT_TRUE(parseCompileOptions(int(argv.size()), argv.data(), options, error))
      << error.message;
  return options;
}

class CompileIdentityTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hyc_identity_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/config.json") << "{}";
    std::ofstream(dir_ + "/model.safetensors") << "weights";
  }
  void TearDown() override {
    ::unlink((dir_ + "/config.json").c_str());
    ::unlink((dir_ + "/model.safetensors").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(CompileIdentityTest, RanksOfOneCommandAgree) {
  const std::string rank0 =
      compileIdentity(parsed({dir_, "--tp", "2", "--quant", "w8a8", "-o", "a"}));
  EXPECT_EQ(rank0.size(), 16u);
  EXPECT_EQ(rank0, compileIdentity(parsed(
                       {dir_, "--quant", "w8a8", "--tp", "2", "--tp-rank", "1", "-o", "a/ranks/1"})));
  EXPECT_EQ(rank0, compileIdentity(parsed({dir_, "--tp", "2", "--quant", "w8a8", "-o", "b",
                                           "--print-schedule"})));
}

TEST_F(CompileIdentityTest, OtherOptionsOrSourcesDiffer) {
  const std::string base = compileIdentity(parsed({dir_, "--tp", "2", "-o", "a"}));
  EXPECT_NE(base, compileIdentity(parsed({dir_, "--tp", "2", "--quant", "w8a8", "-o", "a"})));
  EXPECT_NE(base, compileIdentity(parsed({dir_, "--tp", "2", "--kv-cache", "int8", "-o", "a"})));
  EXPECT_NE(base, compileIdentity(parsed({dir_, "--tp", "2", "--threads", "4", "-o", "a"})));
  // The same directory with a shard rewritten (another size).
  std::ofstream(dir_ + "/model.safetensors") << "other weights";
  EXPECT_NE(base, compileIdentity(parsed({dir_, "--tp", "2", "-o", "a"})));
  // The text names each source file of the directory with its size.
  const std::string text = compileIdentityText(parsed({dir_, "--tp", "2", "-o", "a"}));
  EXPECT_NE(text.find("/model.safetensors 13 "), std::string::npos) << text;
  EXPECT_NE(text.find("/config.json 2 "), std::string::npos) << text;
  EXPECT_EQ(text.find("--output"), std::string::npos) << text;
  EXPECT_EQ(text.find("--tp-rank"), std::string::npos) << text;
}

} // namespace
} // namespace hyc::compiler
