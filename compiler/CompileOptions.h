//===- CompileOptions.h - `hyc compile`'s options, declared once -*- C++ -*-===//
//
// Every `hyc compile` option is one entry of compileOptionTable(): its name,
// kind, range or choices, default and help. The parser, the value checks and
// `--help` all read that table, so an option cannot be accepted without being
// described and checked. What the table cannot say (one option needs
// another, a range that depends on another option) is checked after it, in
// checkOptionCombinations().
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_COMPILEOPTIONS_H
#define HYC_COMPILER_COMPILEOPTIONS_H

#include "compiler/Pipeline.h"

#include <cstdint>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace hyc::compiler {

/// `hyc compile`'s options once parsed and checked. The values of options
/// left out are the table's defaults.
struct CompileOptions {
  std::string input;  ///< the one positional: checkpoint or .mlir file
  std::string output; ///< -o / --output
  std::string target, quant, quantLmHead, emit, compileTo, kvCache;
  std::string epExchange, calibration, tokenizer;
  std::vector<std::string> keepBf16, keepF32, keepInt8, disabledPasses;
  bool help = false, bf16Activations = false, calibrationBuild = false;
  bool printSchedule = false, printIrAfterAll = false, allowReference = false;
  int64_t threads = 0, tp = 0, tpRank = 0, ep = 0;
  /// 0 when not given: the model's context, at most 2048.
  int64_t maxSeqLen = 0, maxBatchTokens = 0, maxSeqs = 0;
  double smoothAlpha = 0;
  Phase lastPhase = Phase::Import; ///< --compile-to as a phase
  std::set<std::string> given;     ///< names of the options on the command line

  bool isGiven(const std::string &name) const { return given.count(name) != 0; }
  /// --emit=lib or exe: an artifact directory rather than one file.
  bool emitsArtifact() const { return emit == "lib" || emit == "exe"; }
  /// A hyc IR file rather than a checkpoint: no weights.
  bool isMlirInput() const {
    return input.size() > 5 && input.compare(input.size() - 5, 5, ".mlir") == 0;
  }
};

enum class OptionKind {
  Flag,    ///< no value
  Text,    ///< a string checked later (a path, --target's names)
  Choice,  ///< one of `choices`
  Integer, ///< an integer in [min, max]
  Real,    ///< a number in [realMin, realMax]
  List,    ///< comma-separated names
};

/// One value a Choice option accepts.
struct OptionChoice {
  const char *name;
  const char *meaning = ""; ///< shown in --help after the name; may be empty
  /// Another spelling accepted for `name` (--compile-to's `lower`).
  const char *alias = nullptr;
};

/// Where an option's value goes in CompileOptions.
using OptionField = std::variant<bool CompileOptions::*, std::string CompileOptions::*,
                                 int64_t CompileOptions::*, double CompileOptions::*,
                                 std::vector<std::string> CompileOptions::*>;

/// One `hyc compile` option.
struct OptionSpec {
  const char *name; ///< without the leading "--"
  OptionKind kind;
  OptionField field;
  const char *metavar = "";   ///< the value's name in --help ("N", "PATH")
  const char *help = "";      ///< Choice: the text before the list of choices
  const char *helpAfter = ""; ///< Choice: the text after it
  /// The value when the option is left out; nullptr: none (the field's
  /// zero, which the command reads as "not given").
  const char *defaultValue = nullptr;
  std::vector<OptionChoice> choices; ///< Choice
  int64_t min = 0, max = 0;          ///< Integer
  double realMin = 0, realMax = 0;   ///< Real
  const char *unit = "";             ///< Integer: "ranks" in "expects 1..64 ranks"
  /// Integer: refuse with "must be in [min, max]" instead of "expects
  /// min..max" (the wording --threads has always had, which scripts grep).
  bool intervalWording = false;
  const char *shortName = nullptr; ///< "o" for -o
};

/// Every `hyc compile` option, in --help order.
const std::vector<OptionSpec> &compileOptionTable();

/// `hyc compile --help`, generated from the table.
std::string compileUsage();

/// Why a command line was refused.
struct OptionError {
  std::string message;
  /// 2: a usage error (an unknown flag, a value that is not a number or not
  /// one of the choices); 1: a request the compiler refuses (a number out of
  /// range, options that contradict each other).
  int exitCode = 2;
  bool showUsage = false; ///< follow the message with the usage text
};

/// Parses argv[1..argc) (argv[0] is "compile") against the table into
/// `options`, then checks each value and checkOptionCombinations(). False
/// with `error` set on the first problem.
bool parseCompileOptions(int argc, char **argv, CompileOptions &options,
                         OptionError &error);

/// Whether `quant` quantizes activations to int8 per token (w8a8, w8a8-g128,
/// w8a8-g32, w4a8): the schemes under which the output head can be int8.
bool integerQuant(const std::string &quant);

/// The checks one option's table entry cannot make: an option that needs
/// another, or a value whose range depends on another option.
bool checkOptionCombinations(const CompileOptions &options, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_COMPILEOPTIONS_H
