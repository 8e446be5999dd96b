//===- Args.h - small command-line parser for the hyc subcommands -*- C++ -*-===//
//
// `--name value` and `--name=value`, boolean `--flag`, positionals, and `-o`
// as an alias of `--o` when "o" is a value flag. Unknown
// flags are errors that name the flag and list the known ones.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_ARGS_H
#define HYC_COMPILER_ARGS_H

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hyc::cli {

class Args {
public:
  /// `valueFlags` take a value; `boolFlags` do not.
  Args(std::set<std::string> valueFlags, std::set<std::string> boolFlags)
      : valueFlags(std::move(valueFlags)), boolFlags(std::move(boolFlags)) {}

  /// Parses argv[begin..argc). Returns false with `error` set on bad input.
  bool parse(int argc, char **argv, int begin, std::string &error);

  bool has(const std::string &flag) const;
  std::string get(const std::string &flag, const std::string &fallback = "") const;
  /// Integer value; false with `error` naming the flag on a malformed value.
  bool getInt(const std::string &flag, int64_t fallback, int64_t &out,
              std::string &error) const;
  const std::vector<std::string> &positionals() const { return positional; }
  /// Where each positional was: its index in argv.
  const std::vector<int> &positionalIndices() const { return positionalIndex; }

private:
  std::set<std::string> valueFlags, boolFlags;
  std::map<std::string, std::string> values;
  std::set<std::string> seenBools;
  std::vector<std::string> positional;
  std::vector<int> positionalIndex;
};

/// A whole string as a base-10 integer; false when it is not one (or does
/// not fit in int64_t).
bool parseInteger(const std::string &text, int64_t &out);
/// A whole string as a finite number; false when it is not one.
bool parseReal(const std::string &text, double &out);
/// The trimmed, non-empty names of a comma-separated list ("a, b,,c").
std::vector<std::string> splitCommaList(const std::string &text);

} // namespace hyc::cli

#endif // HYC_COMPILER_ARGS_H
