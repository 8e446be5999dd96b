//===- CompileIdentity.cpp - what makes two compiles the same -------------===//
#include "compiler/CompileIdentity.h"

#include "hyrt/artifact/artifact.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <dirent.h>
#include <set>
#include <sys/stat.h>
#include <vector>

namespace hyc::compiler {

namespace {

/// Options that do not change what is written: where it goes, which rank
/// (each rank's manifest says so itself) and what the compile prints.
const std::set<std::string> &notIdentity() {
  static const std::set<std::string> names = {
      "output", "tp-rank", "help", "print-schedule", "print-ir-after-all"};
  return names;
}

std::string valueText(const CompileOptions &o, const OptionField &field) {
  struct Show {
    const CompileOptions &o;
    std::string operator()(bool CompileOptions::*f) const { return o.*f ? "1" : "0"; }
    std::string operator()(std::string CompileOptions::*f) const { return o.*f; }
    std::string operator()(int64_t CompileOptions::*f) const { return std::to_string(o.*f); }
    std::string operator()(double CompileOptions::*f) const { return std::to_string(o.*f); }
    std::string operator()(std::vector<std::string> CompileOptions::*f) const {
      std::string s;
      for (const std::string &v : o.*f)
        s += (s.empty() ? "" : ",") + v;
      return s;
    }
  };
  return std::visit(Show{o}, field);
}

/// "path size mtime" of a regular file; of a directory, of each regular
/// file in it (a checkpoint directory: config, shards, tokenizer), sorted.
void describeSource(const std::string &path, std::vector<std::string> &lines) {
  char resolved[PATH_MAX];
  const std::string where = ::realpath(path.c_str(), resolved) ? resolved : path;
  struct stat st {};
  if (::stat(where.c_str(), &st) != 0) {
    lines.push_back(where + " missing");
    return;
  }
  auto line = [&](const std::string &p, const struct stat &s) {
    lines.push_back(p + " " + std::to_string(s.st_size) + " " +
                    std::to_string(int64_t(s.st_mtim.tv_sec)) + "." +
                    std::to_string(int64_t(s.st_mtim.tv_nsec)));
  };
  if (!S_ISDIR(st.st_mode)) {
    line(where, st);
    return;
  }
  std::vector<std::string> files;
  if (DIR *d = ::opendir(where.c_str())) {
    while (const dirent *e = ::readdir(d))
      files.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(files.begin(), files.end());
  for (const std::string &name : files) {
    struct stat fs {};
    const std::string p = where + "/" + name;
    if (::stat(p.c_str(), &fs) == 0 && S_ISREG(fs.st_mode))
      line(p, fs);
  }
}

} // namespace

std::string compileIdentityText(const CompileOptions &options) {
  std::vector<std::string> lines;
  for (const OptionSpec &spec : compileOptionTable())
    if (!notIdentity().count(spec.name))
      lines.push_back(std::string("--") + spec.name + "=" + valueText(options, spec.field));
  std::sort(lines.begin(), lines.end());
  describeSource(options.input, lines);
  for (const std::string *extra : {&options.calibration, &options.tokenizer})
    if (!extra->empty())
      describeSource(*extra, lines);
  std::string text;
  for (const std::string &l : lines)
    text += l + "\n";
  return text;
}

std::string compileIdentity(const CompileOptions &options) {
  const std::string text = compileIdentityText(options);
  return hyrt::tensor_hash(text.data(), text.size());
}

} // namespace hyc::compiler
