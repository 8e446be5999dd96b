// Hugging Face config.json loader with typed getters whose errors name the
// file, the field, and the expected versus found JSON type.
#ifndef HYC_MODELS_IO_HF_CONFIG_H
#define HYC_MODELS_IO_HF_CONFIG_H

#include "models/io/expected.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace hyc::io {

/// A parsed config.json. Field names may be dotted paths into nested
/// objects ("rope_scaling.factor"). A field whose value is null counts as
/// missing.
class HfConfig {
public:
  /// `path` is a config.json file or a directory containing one.
  static Expected<HfConfig> load(const std::string &path);
  /// Wraps an already parsed object; `source` names it in errors.
  static HfConfig from_json(nlohmann::json json, std::string source);

  const std::string &path() const { return path_; }
  const nlohmann::json &json() const { return json_; }

  /// Present and not null.
  bool has(const std::string &field) const;

  /// Integer-valued (2.0 is accepted as 2; 2.5 is not).
  Expected<int64_t> get_int(const std::string &field) const;
  /// Any number.
  Expected<double> get_float(const std::string &field) const;
  Expected<bool> get_bool(const std::string &field) const;
  Expected<std::string> get_string(const std::string &field) const;
  /// Array of strings.
  Expected<std::vector<std::string>>
  get_string_array(const std::string &field) const;
  /// Array of integers.
  Expected<std::vector<int64_t>> get_int_array(const std::string &field) const;
  /// A nested object (e.g. "rope_scaling") as its own HfConfig.
  Expected<HfConfig> get_object(const std::string &field) const;

  /// Like the getters above, but a missing (or null) field yields
  /// `fallback`; a present field of the wrong type is still an error.
  Expected<int64_t> get_int_or(const std::string &field,
                               int64_t fallback) const;
  Expected<double> get_float_or(const std::string &field,
                                double fallback) const;
  Expected<bool> get_bool_or(const std::string &field, bool fallback) const;
  Expected<std::string> get_string_or(const std::string &field,
                                      const std::string &fallback) const;

private:
  const nlohmann::json *lookup(const std::string &field) const;
  Expected<const nlohmann::json *> require(const std::string &field) const;
  Error typeError(const std::string &field, const nlohmann::json &value,
                  const char *expected) const;

  std::string path_;
  nlohmann::json json_;
};

} // namespace hyc::io

#endif // HYC_MODELS_IO_HF_CONFIG_H
