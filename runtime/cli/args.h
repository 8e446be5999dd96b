// Command-line flag parsing for the hyrt commands (private to libhyrt):
// typed flags with range checks, "--flag value" and "--flag=value" forms,
// and errors that name the flag and the offending value.
#pragma once

#include "hyrt/status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hyrt::cli {

/// Declares flags, then parses an argument list against them.
class ArgParser {
public:
  /// A flag without a value.
  void add_switch(const std::string &name, bool *out);
  /// A string-valued flag; `seen` (optional) is set when it occurs.
  void add_string(const std::string &name, std::string *out,
                  bool *seen = nullptr);
  /// An integer flag in [min, max].
  void add_int(const std::string &name, int64_t *out, int64_t min,
               int64_t max = INT64_MAX);
  /// A real-valued flag in [min, max] (max may be infinity).
  void add_real(const std::string &name, double *out, double min, double max);
  /// A comma-separated list of integers >= 0 ("1,417,93").
  void add_int_list(const std::string &name, std::vector<int32_t> *out,
                    bool *seen = nullptr);

  /// Parses `args`; non-flag arguments go to `positional`, and their
  /// indices in `args` to `positional_index` when it is given. Errors name
  /// the flag: "unknown flag --foo", "--top-p expects a number in [0, 1],
  /// found 'x'", "--seed needs a value".
  Status parse(const std::vector<std::string> &args,
               std::vector<std::string> *positional,
               std::vector<size_t> *positional_index = nullptr) const;

private:
  struct Flag {
    std::string name;
    bool takes_value;
    std::function<Status(const std::string &)> set;
  };
  std::vector<Flag> flags_;
};

} // namespace hyrt::cli
