// `hyc compile`'s option table: --help describes every entry, values are
// checked against its ranges and choices with errors that name the option,
// what it expects and what it got, and flags land in CompileOptions.
#include "compiler/CompileOptions.h"

#include <gtest/gtest.h>

namespace hyc::compiler {
namespace {

/// Parses `hyc compile ARGS...` (argv[0] is "compile").
bool parse(std::vector<std::string> args, CompileOptions &options, OptionError &error) {
  args.insert(args.begin(), "compile");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  return parseCompileOptions(int(argv.size()), argv.data(), options, error);
}

/// The refusal of `args` (a compile of m.gguf to out/ with them added).
OptionError refusal(std::vector<std::string> args) {
  args.insert(args.begin(), {"m.gguf", "-o", "out"});
  CompileOptions options;
  OptionError error;
  EXPECT_FALSE(parse(args, options, error)) << "accepted: " << args.back();
  return error;
}

TEST(CompileOptions, HelpDescribesEveryOptionAndChoice) {
  const std::string usage = compileUsage();
  for (const OptionSpec &spec : compileOptionTable()) {
    EXPECT_NE(usage.find(std::string("--") + spec.name), std::string::npos) << spec.name;
    if (spec.shortName)
      EXPECT_NE(usage.find(std::string("-") + spec.shortName + ", --" + spec.name),
                std::string::npos)
          << spec.name;
    for (const OptionChoice &c : spec.choices)
      EXPECT_NE(usage.find(c.name), std::string::npos) << spec.name << " " << c.name;
    if (spec.kind != OptionKind::Flag)
      EXPECT_NE(usage.find(std::string("--") + spec.name + " " + spec.metavar),
                std::string::npos)
          << spec.name;
  }
  EXPECT_NE(usage.find("(1..4096, default 2)"), std::string::npos) << usage;
  EXPECT_NE(usage.find("auto (default: the checkpoint's"), std::string::npos) << usage;
}

TEST(CompileOptions, TableNamesAreUniqueAndDefaultsAreValid) {
  std::set<std::string> names;
  for (const OptionSpec &spec : compileOptionTable()) {
    EXPECT_TRUE(names.insert(spec.name).second) << "declared twice: " << spec.name;
    EXPECT_STRNE(spec.help, "") << spec.name << " has no help";
    EXPECT_EQ(spec.kind == OptionKind::Choice, !spec.choices.empty()) << spec.name;
  }
  // Every default goes through the same checks as a given value.
  CompileOptions options;
  OptionError error;
  ASSERT_TRUE(parse({"m.gguf", "-o", "out"}, options, error)) << error.message;
  EXPECT_EQ(options.target, "portable");
  EXPECT_EQ(options.quant, "auto");
  EXPECT_EQ(options.emit, "lib");
  EXPECT_EQ(options.kvCache, "auto");
  EXPECT_EQ(options.threads, 2);
  EXPECT_EQ(options.tp, 1);
  EXPECT_EQ(options.maxSeqLen, 0) << "not given: the model's context decides";
  EXPECT_EQ(options.maxBatchTokens, 512);
  EXPECT_EQ(options.maxSeqs, 16);
  EXPECT_DOUBLE_EQ(options.smoothAlpha, 0.5);
  EXPECT_TRUE(options.given.count("output"));
  EXPECT_FALSE(options.isGiven("quant"));
}

TEST(CompileOptions, OutOfRangeValuesAreRefusedNamingOptionExpectedAndFound) {
  OptionError e = refusal({"--max-seqs", "0"});
  EXPECT_EQ(e.message, "--max-seqs expects 1..65536, got 0");
  EXPECT_EQ(e.exitCode, 1);
  e = refusal({"--max-batch-tokens", "4611686018427387904"});
  EXPECT_EQ(e.message, "--max-batch-tokens expects 1..1048576, got 4611686018427387904");
  e = refusal({"--tp", "65"});
  EXPECT_EQ(e.message, "--tp expects 1..64 ranks, got 65");
  e = refusal({"--threads", "0"});
  EXPECT_EQ(e.message, "--threads must be in [1, 4096], got 0");
  e = refusal({"--smooth-alpha", "2", "--calibration", "c.json"});
  EXPECT_EQ(e.message, "--smooth-alpha expects a number in [0, 1], got '2'");
  e = refusal({"--max-seqs", "many"});
  EXPECT_EQ(e.message, "flag --max-seqs expects an integer, got 'many'");
  EXPECT_EQ(e.exitCode, 2);
}

TEST(CompileOptions, UnknownChoicesAreRefusedListingTheChoices) {
  OptionError e = refusal({"--kv-cache", "int4"});
  EXPECT_EQ(e.message, "--kv-cache expects auto|f32|bf16|int8, got 'int4'");
  EXPECT_EQ(e.exitCode, 2);
  e = refusal({"--quant=fp4"});
  EXPECT_EQ(e.message, "--quant expects auto|f32|bf16|w8a8|w8a8-g128|w8a8-g32|w4a8|fp8, got 'fp4'");
  e = refusal({"--emit", "wat"});
  EXPECT_EQ(e.message, "--emit expects lib|exe|mlir|llvm|obj, got 'wat'");
  e = refusal({"--compile-to", "tiles"});
  EXPECT_EQ(e.message,
            "--compile-to expects import|global|strategy|kernel|llvm, got 'tiles'");
}

TEST(CompileOptions, MalformedCommandLinesAreUsageErrors) {
  OptionError e = refusal({"--bogus", "1"});
  EXPECT_NE(e.message.find("unknown flag --bogus"), std::string::npos) << e.message;
  EXPECT_TRUE(e.showUsage);
  CompileOptions options;
  ASSERT_FALSE(parse({}, options, e));
  EXPECT_EQ(e.message, "expected one INPUT, got 0");
  ASSERT_FALSE(parse({"m.gguf"}, options, e));
  EXPECT_EQ(e.message, "missing -o OUT");
  ASSERT_TRUE(parse({"--help"}, options, e));
  EXPECT_TRUE(options.help);
}

TEST(CompileOptions, FlagsParseIntoTheOptions) {
  CompileOptions o;
  OptionError error;
  ASSERT_TRUE(parse({"m.gguf",
                     "-o",
                     "out.hyc",
                     "--target",
                     "avx512,amx",
                     "--quant=w8a8",
                     "--quant-lm-head",
                     "int8",
                     "--keep-bf16",
                     "q_proj, k_proj",
                     "--emit=mlir",
                     "--compile-to",
                     "lower",
                     "--threads",
                     "8",
                     "--max-seq-len",
                     "128",
                     "--kv-cache",
                     "int8",
                     "--print-schedule",
                     "--disable-pass=hyc-global-fuse-residual-norm"},
                    o, error))
      << error.message;
  EXPECT_EQ(o.input, "m.gguf");
  EXPECT_EQ(o.output, "out.hyc");
  EXPECT_EQ(o.target, "avx512,amx");
  EXPECT_EQ(o.quant, "w8a8");
  EXPECT_EQ(o.quantLmHead, "int8");
  EXPECT_EQ(o.keepBf16, (std::vector<std::string>{"q_proj", "k_proj"}));
  EXPECT_EQ(o.emit, "mlir");
  EXPECT_EQ(o.compileTo, "llvm") << "`lower` is llvm's other name";
  EXPECT_EQ(o.lastPhase, Phase::Llvm);
  EXPECT_EQ(o.threads, 8);
  EXPECT_EQ(o.maxSeqLen, 128);
  EXPECT_EQ(o.kvCache, "int8");
  EXPECT_TRUE(o.printSchedule);
  EXPECT_FALSE(o.printIrAfterAll);
  EXPECT_EQ(o.disabledPasses, std::vector<std::string>{"hyc-global-fuse-residual-norm"});
  EXPECT_TRUE(o.isGiven("threads"));
}

TEST(CompileOptions, DashOWinsOverOutputForThePerRankCompiles) {
  CompileOptions o;
  OptionError error;
  ASSERT_TRUE(parse({"m.gguf", "--output", "whole", "--tp", "2", "--tp-rank", "1", "-o",
                     "whole/ranks/1"},
                    o, error))
      << error.message;
  EXPECT_EQ(o.output, "whole/ranks/1");
  EXPECT_EQ(o.tp, 2);
  EXPECT_EQ(o.tpRank, 1);
}

TEST(CompileOptions, CombinationsTheTableCannotCheck) {
  EXPECT_EQ(refusal({"--tp", "2", "--tp-rank", "2"}).message,
            "--tp-rank expects 0..1 (--tp 2), got 2");
  EXPECT_EQ(refusal({"--tp", "4", "--ep", "2"}).message,
            "--ep 2 expects 1 or the --tp count 4 (experts are placed over the "
            "tensor-parallel ranks)");
  EXPECT_EQ(refusal({"--smooth-alpha", "0.3"}).message,
            "--smooth-alpha needs --calibration FILE");
  EXPECT_NE(refusal({"--quant-lm-head", "int8"})
                .message.find("--quant-lm-head int8 needs an integer --quant"),
            std::string::npos);
  CompileOptions o;
  OptionError e;
  ASSERT_FALSE(parse({"m.mlir", "-o", "out"}, o, e));
  EXPECT_EQ(e.message, "a .mlir input has no weights; use --emit=mlir|llvm|obj");
  EXPECT_EQ(e.exitCode, 1);
}

} // namespace
} // namespace hyc::compiler
