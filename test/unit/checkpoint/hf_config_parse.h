// Helpers for tests of one family's config.json reading: the ModelSpec a
// hand-written config gives through the family registry, and its error.
#ifndef HYC_TEST_UNIT_CHECKPOINT_HF_CONFIG_PARSE_H
#define HYC_TEST_UNIT_CHECKPOINT_HF_CONFIG_PARSE_H

#include "models/checkpoint/family.h"
#include "models/io/hf_config.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace hyc::models::test {

/// The spec of `config` (named `path` in messages) from the family its
/// architectures select; warnings go to `warnings` when given.
inline io::Expected<ModelSpec> parseHfConfig(const nlohmann::json &config,
                                             const std::string &path,
                                             std::vector<std::string> *warnings = nullptr) {
  io::HfConfig c = io::HfConfig::from_json(config, path);
  io::Expected<const detail::Family *> f = detail::family_for_hf(c);
  if (!f)
    return f.take_error();
  std::vector<std::string> local;
  return (*f)->from_hf(c, warnings ? *warnings : local);
}

/// Expects `config` to be refused with an error containing every part.
inline void expectHfConfigError(const nlohmann::json &config, const std::string &path,
                                std::initializer_list<const char *> parts) {
  io::Expected<ModelSpec> s = parseHfConfig(config, path);
  ASSERT_FALSE(s.ok()) << "accepted: " << config.dump();
  for (const char *p : parts)
    EXPECT_NE(s.error().find(p), std::string::npos) << "'" << p << "' not in: " << s.error();
}

} // namespace hyc::models::test

#endif // HYC_TEST_UNIT_CHECKPOINT_HF_CONFIG_PARSE_H
