//===- Args.cpp - small command-line parser -------------------------------===//
#include "compiler/Args.h"

#include <cstdlib>

namespace hyc::cli {

bool Args::parse(int argc, char **argv, int begin, std::string &error) {
  for (int i = begin; i < argc; ++i) {
    std::string a = argv[i];
    // `-o` is the one short flag: an alias of `--o`.
    if (a == "-o" && valueFlags.count("o"))
      a = "--o";
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      positional.push_back(a);
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
  char *end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0') {
    error = "flag --" + flag + " expects an integer, got '" + it->second + "'";
    return false;
  }
  out = v;
  return true;
}

} // namespace hyc::cli
