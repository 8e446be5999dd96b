//===- Args.cpp - small command-line parser -------------------------------===//
#include "compiler/Args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace hyc::cli {

bool Args::parse(int argc, char **argv, int begin, std::string &error) {
  for (int i = begin; i < argc; ++i) {
    std::string a = argv[i];
    // `-o` is the one short flag: an alias of `--o`.
    if (a == "-o" && valueFlags.count("o"))
      a = "--o";
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      positional.push_back(a);
      positionalIndex.push_back(i);
      continue;
    }
    std::string name = a.substr(2), value;
    bool hasInlineValue = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasInlineValue = true;
    }
    if (boolFlags.count(name)) {
      if (hasInlineValue) {
        error = "flag --" + name + " takes no value";
        return false;
      }
      seenBools.insert(name);
      continue;
    }
    if (!valueFlags.count(name)) {
      error = "unknown flag --" + name + " (known:";
      for (auto &f : valueFlags)
        error += " --" + f;
      for (auto &f : boolFlags)
        error += " --" + f;
      error += ")";
      return false;
    }
    if (!hasInlineValue) {
      if (i + 1 >= argc) {
        error = "flag --" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    values[name] = value;
  }
  return true;
}

bool Args::has(const std::string &flag) const {
  return values.count(flag) || seenBools.count(flag);
}

std::string Args::get(const std::string &flag, const std::string &fallback) const {
  auto it = values.find(flag);
  return it == values.end() ? fallback : it->second;
}

bool Args::getInt(const std::string &flag, int64_t fallback, int64_t &out,
                  std::string &error) const {
  auto it = values.find(flag);
  if (it == values.end()) {
    out = fallback;
    return true;
  }
  if (!parseInteger(it->second, out)) {
    error = "flag --" + flag + " expects an integer, got '" + it->second + "'";
    return false;
  }
  return true;
}

bool parseInteger(const std::string &text, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    return false;
  out = v;
  return true;
}

bool parseReal(const std::string &text, double &out) {
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

std::vector<std::string> splitCommaList(const std::string &text) {
  const char *space = " \t\n\v\f\r";
  std::vector<std::string> names;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const size_t first = item.find_first_not_of(space);
    if (first != std::string::npos)
      names.push_back(item.substr(first, item.find_last_not_of(space) - first + 1));
  }
  return names;
}

} // namespace hyc::cli
