// HfConfig: config.json parsing and typed field access.
#include "models/io/hf_config.h"
#include "hyrt/support/json.h"

#include "models/io/mapped_file.h"

#include <cmath>
#include <filesystem>

namespace hyc::io {

using Json = nlohmann::json;

Expected<HfConfig> HfConfig::load(const std::string &path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    file = (std::filesystem::path(path) / "config.json").string();
  Expected<MappedFile> mapped = MappedFile::open(file);
  if (!mapped)
    return mapped.take_error();
  Json parsed;
  const std::string_view text(reinterpret_cast<const char *>(mapped->data()),
                              mapped->size());
  if (std::string e = hyrt::parse_json(text, &parsed); !e.empty())
    return Error(file + ": " + e);
  if (!parsed.is_object())
    return Error(file + ": top level is " + std::string(parsed.type_name()) +
                 ", expected an object");
  return from_json(std::move(parsed), file);
}

HfConfig HfConfig::from_json(Json value, std::string source) {
  HfConfig c;
  c.json_ = std::move(value);
  c.path_ = std::move(source);
  return c;
}

const Json *HfConfig::lookup(const std::string &field) const {
  const Json *node = &json_;
  size_t start = 0;
  while (true) {
    size_t dot = field.find('.', start);
    std::string part = field.substr(start, dot - start);
    if (!node->is_object())
      return nullptr;
    auto it = node->find(part);
    if (it == node->end())
      return nullptr;
    node = &*it;
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return node->is_null() ? nullptr : node;
}

bool HfConfig::has(const std::string &field) const {
  return lookup(field) != nullptr;
}

Expected<const Json *> HfConfig::require(const std::string &field) const {
  if (const Json *v = lookup(field))
    return v;
  return Error(path_ + ": missing field '" + field + "'");
}

Error HfConfig::typeError(const std::string &field, const Json &value,
                          const char *expected) const {
  return Error(path_ + ": field '" + field + "' is " + value.type_name() +
               " (" + value.dump() + "), expected " + expected);
}

Expected<int64_t> HfConfig::get_int(const std::string &field) const {
  Expected<const Json *> v = require(field);
  if (!v)
    return v.take_error();
  const Json &j = **v;
  if (j.is_number_integer())
    return j.get<int64_t>();
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18)
      return static_cast<int64_t>(d);
  }
  return typeError(field, j, "an integer");
}

Expected<double> HfConfig::get_float(const std::string &field) const {
  Expected<const Json *> v = require(field);
  if (!v)
    return v.take_error();
  if (!(*v)->is_number())
    return typeError(field, **v, "a number");
  return (*v)->get<double>();
}

Expected<bool> HfConfig::get_bool(const std::string &field) const {
  Expected<const Json *> v = require(field);
  if (!v)
    return v.take_error();
  if (!(*v)->is_boolean())
    return typeError(field, **v, "a boolean");
  return (*v)->get<bool>();
}

Expected<std::string> HfConfig::get_string(const std::string &field) const {
  Expected<const Json *> v = require(field);
  if (!v)
    return v.take_error();
  if (!(*v)->is_string())
    return typeError(field, **v, "a string");
  return (*v)->get<std::string>();
}

Expected<std::vector<std::string>>
HfConfig::get_string_array(const std::string &field) const {
  Expected<const Json *> v = require(field);
  if (!v)
    return v.take_error();
  const Json &j = **v;
  if (!j.is_array())
    return typeError(field, j, "an array of strings");
  std::vector<std::string> out;
  for (const Json &e : j) {
    if (!e.is_string())
      return typeError(field, j, "an array of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Expected<std::vector<int64_t>>
HfConfig::get_int_array(const std::string &field) const {
  Expected<const Json *> v = require(field);
  if (!v)
    return v.take_error();
  const Json &j = **v;
  if (!j.is_array())
    return typeError(field, j, "an array of integers");
  std::vector<int64_t> out;
  for (const Json &e : j) {
    if (!e.is_number_integer())
      return typeError(field, j, "an array of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

Expected<HfConfig> HfConfig::get_object(const std::string &field) const {
  Expected<const Json *> v = require(field);
  if (!v)
    return v.take_error();
  if (!(*v)->is_object())
    return typeError(field, **v, "an object");
  return from_json(**v, path_ + " (field '" + field + "')");
}

Expected<int64_t> HfConfig::get_int_or(const std::string &field,
                                       int64_t fallback) const {
  return has(field) ? get_int(field) : Expected<int64_t>(fallback);
}

Expected<double> HfConfig::get_float_or(const std::string &field,
                                        double fallback) const {
  return has(field) ? get_float(field) : Expected<double>(fallback);
}

Expected<bool> HfConfig::get_bool_or(const std::string &field,
                                     bool fallback) const {
  return has(field) ? get_bool(field) : Expected<bool>(fallback);
}

Expected<std::string>
HfConfig::get_string_or(const std::string &field,
                        const std::string &fallback) const {
  return has(field) ? get_string(field) : Expected<std::string>(fallback);
}

} // namespace hyc::io
