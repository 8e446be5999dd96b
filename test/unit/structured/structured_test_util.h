// structured_test_util.h - the real tokenizers (loaded once per process)
// and small helpers shared by the constrained-decoding tests.
#ifndef HYC_TEST_UNIT_STRUCTURED_UTIL_H
#define HYC_TEST_UNIT_STRUCTURED_UTIL_H

#include "hyrt/structured/grammar_constraint.h"
#include "hyrt/structured/json_schema.h"
#include "hyrt/text/tokenizer.h"
#include "test/unit/common/test_files.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace hyc::test {

struct LoadedTokenizer {
  hyrt::Tokenizer tokenizer;
  std::shared_ptr<const hyrt::structured::TokenVocabulary> vocab;
};

/// The tokenizer in ../shared/tokenizers/<name> with its vocabulary
/// trie, or nullptr (and a test failure) when it cannot be read.
inline const LoadedTokenizer *sharedTokenizer(const std::string &name) {
  static std::map<std::string, std::unique_ptr<LoadedTokenizer>> cache;
  auto &slot = cache[name];
  if (slot)
    return slot.get();
  const std::string dir = sharedPath("tokenizers/" + name);
  if (dir.empty()) {
    ADD_FAILURE() << "shared tokenizer " << name << " is missing";
    return nullptr;
  }
  hyrt::TokenizerData data;
  hyrt::Status s = hyrt::read_hf_tokenizer(dir, &data);
  auto loaded = std::make_unique<LoadedTokenizer>();
  if (s.ok())
    s = loaded->tokenizer.init(std::move(data));
  if (s.ok())
    s = hyrt::structured::TokenVocabulary::build(loaded->tokenizer, {},
                                                 &loaded->vocab);
  if (!s.ok()) {
    ADD_FAILURE() << name << ": " << s.message();
    return nullptr;
  }
  slot = std::move(loaded);
  return slot.get();
}

inline std::shared_ptr<const hyrt::structured::Grammar>
compileOrFail(const std::string &schema) {
  std::shared_ptr<const hyrt::structured::Grammar> g;
  hyrt::Status s = hyrt::structured::compile_json_schema_text(
      schema, hyrt::structured::SchemaLimits{}, &g);
  EXPECT_TRUE(s.ok()) << schema << ": " << s.message();
  return g;
}

} // namespace hyc::test

#endif
