// Command-line flag parsing for the hyrt commands (see cli_args.h).
#include "args.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace hyrt::cli {

namespace {

bool parse_int(const std::string &s, int64_t *out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  *out = v;
  return true;
}

bool parse_real(const std::string &s, double *out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v))
    return false;
  *out = v;
  return true;
}

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

} // namespace

void ArgParser::add_switch(const std::string &name, bool *out) {
  flags_.push_back({name, false, [out](const std::string &) {
                      *out = true;
                      return Status::Ok();
                    }});
}

void ArgParser::add_string(const std::string &name, std::string *out,
                           bool *seen) {
  flags_.push_back({name, true, [out, seen](const std::string &v) {
                      *out = v;
                      if (seen)
                        *seen = true;
                      return Status::Ok();
                    }});
}

void ArgParser::add_int(const std::string &name, int64_t *out, int64_t min,
                        int64_t max) {
  flags_.push_back({name, true, [=](const std::string &v) {
                      int64_t x = 0;
                      if (!parse_int(v, &x) || x < min || x > max)
                        return Status::Error(
                            name + " expects an integer " +
                            (max == INT64_MAX
                                 ? ">= " + std::to_string(min)
                                 : "in [" + std::to_string(min) + ", " +
                                       std::to_string(max) + "]") +
                            ", found '" + v + "'");
                      *out = x;
                      return Status::Ok();
                    }});
}

void ArgParser::add_real(const std::string &name, double *out, double min,
                         double max) {
  flags_.push_back({name, true, [=](const std::string &v) {
                      double x = 0;
                      if (!parse_real(v, &x) || x < min || x > max)
                        return Status::Error(
                            name + " expects a number " +
                            (std::isinf(max) ? ">= " + number(min)
                                             : "in [" + number(min) + ", " +
                                                   number(max) + "]") +
                            ", found '" + v + "'");
                      *out = x;
                      return Status::Ok();
                    }});
}

void ArgParser::add_int_list(const std::string &name, std::vector<int32_t> *out,
                             bool *seen) {
  flags_.push_back({name, true, [=](const std::string &v) {
                      std::vector<int32_t> ids;
                      std::string item;
                      std::istringstream in(v);
                      while (std::getline(in, item, ',')) {
                        int64_t x = 0;
                        if (!parse_int(item, &x) || x < 0 || x > INT32_MAX)
                          return Status::Error(
                              name + " expects comma-separated token ids "
                                     "like 1,417,93, found '" +
                              v + "'");
                        ids.push_back(int32_t(x));
                      }
                      if (ids.empty())
                        return Status::Error(name +
                                             " expects at least one token id");
                      *out = std::move(ids);
                      if (seen)
                        *seen = true;
                      return Status::Ok();
                    }});
}

Status ArgParser::parse(const std::vector<std::string> &args,
                        std::vector<std::string> *positional,
                        std::vector<size_t> *positional_index) const {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg.size() < 2 || arg[0] != '-' ||
        (arg[1] != '-' && std::isdigit(static_cast<unsigned char>(arg[1])))) {
      positional->push_back(arg);
      if (positional_index)
        positional_index->push_back(i);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Flag *flag = nullptr;
    for (const Flag &f : flags_)
      if (f.name == name)
        flag = &f;
    if (!flag)
      return Status::Error("unknown flag " + name);
    std::string value;
    if (!flag->takes_value) {
      if (eq != std::string::npos)
        return Status::Error(name + " takes no value");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return Status::Error(name + " needs a value");
    }
    if (Status s = flag->set(value); !s.ok())
      return s;
  }
  return Status::Ok();
}

} // namespace hyrt::cli
