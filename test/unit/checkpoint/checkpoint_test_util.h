// Helpers for the models/checkpoint tests: shared-data lookup with skip,
// temp directories, and writers for hand-made config.json / safetensors.
#ifndef HYC_TEST_UNIT_CHECKPOINT_CHECKPOINT_TEST_UTIL_H
#define HYC_TEST_UNIT_CHECKPOINT_CHECKPOINT_TEST_UTIL_H

#include "models/checkpoint/model_spec.h"
#include "models/io/safetensors.h"

#include "test/unit/common/test_files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace hyc::models::test {

namespace fs = std::filesystem;

using ::hyc::test::sharedPath;

#define HYC_CKPT_REQUIRE_SHARED(var, rel)                                      \
  std::string var = ::hyc::models::test::sharedPath(rel);                      \
  if (var.empty())                                                             \
    GTEST_SKIP() << "shared test data " << (rel) << " not found under "        \
                 << HYC_SHARED_DIR;

using ::hyc::test::TempDir;
using ::hyc::test::writeText;

/// An F32 safetensors entry filled with `value`.
inline io::SafetensorsEntry f32Entry(const std::string &name,
                                     std::vector<int64_t> shape,
                                     float value = 0.5f) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> v(static_cast<size_t>(n), value);
  io::SafetensorsEntry e;
  e.name = name;
  e.shape = std::move(shape);
  e.bytes.resize(v.size() * 4);
  std::memcpy(e.bytes.data(), v.data(), e.bytes.size());
  return e;
}

/// Entries for every weight the spec requires (F32, constant).
inline std::vector<io::SafetensorsEntry> entriesFor(const ModelSpec &spec) {
  std::vector<io::SafetensorsEntry> out;
  for (const WeightInfo &w : required_weights(spec))
    out.push_back(f32Entry(w.name, w.shape));
  return out;
}

/// Reads a weight as fp32 through the checkpoint's source.
inline std::vector<float> readWeight(const Checkpoint &ckpt,
                                     const std::string &name) {
  const WeightInfo *info = ckpt.weights->find(name);
  EXPECT_NE(info, nullptr) << name;
  if (!info)
    return {};
  int64_t n = 1;
  for (int64_t d : info->shape)
    n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  Status s = ckpt.weights->read_f32(name, out.data());
  EXPECT_TRUE(s.ok()) << s.error();
  return out;
}

/// Loads or fails the test with the loader's message.
#define HYC_CKPT_LOAD(var, ...)                                                \
  ::hyc::io::Expected<::hyc::models::Checkpoint> var##_result =                \
      ::hyc::models::load_checkpoint(__VA_ARGS__);                             \
  ASSERT_TRUE(var##_result.ok()) << var##_result.error();                      \
  ::hyc::models::Checkpoint &var = *var##_result;

} // namespace hyc::models::test

#endif // HYC_TEST_UNIT_CHECKPOINT_CHECKPOINT_TEST_UTIL_H
