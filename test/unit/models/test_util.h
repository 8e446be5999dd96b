// Helpers shared by the models/io unit tests: temp dirs, file bytes, real
// file lookup, and a little-endian byte builder for hand-made checkpoints.
#ifndef HYC_TEST_UNIT_MODELS_TEST_UTIL_H
#define HYC_TEST_UNIT_MODELS_TEST_UTIL_H

#include "test/unit/common/test_files.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace hyc::io::test {

namespace fs = std::filesystem;

/// Path under the shared data dir, or "" when the file is absent.
inline std::string sharedFile(const std::string &rel) {
  return ::hyc::test::sharedPath(rel);
}

#define HYC_REQUIRE_SHARED(var, rel)                                           \
  std::string var = ::hyc::io::test::sharedFile(rel);                          \
  if (var.empty())                                                             \
    GTEST_SKIP() << "shared test data " << (rel) << " not found under "        \
                 << HYC_SHARED_DIR;

using ::hyc::test::TempDir;

inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void writeBytes(const std::string &path,
                       const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

using ::hyc::test::writeText;

/// Appends little-endian values to a byte vector.
class Bytes {
public:
  template <typename T> Bytes &put(T v) {
    uint8_t buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    data.insert(data.end(), buf, buf + sizeof(T));
    return *this;
  }
  Bytes &raw(const void *p, size_t n) {
    const uint8_t *b = static_cast<const uint8_t *>(p);
    data.insert(data.end(), b, b + n);
    return *this;
  }
  Bytes &str64(const std::string &s) {
    put<uint64_t>(s.size());
    return raw(s.data(), s.size());
  }
  Bytes &pad(size_t alignment) {
    while (data.size() % alignment)
      data.push_back(0);
    return *this;
  }
  std::vector<uint8_t> data;
};

template <typename T> std::vector<uint8_t> asBytes(const std::vector<T> &v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

} // namespace hyc::io::test

#endif // HYC_TEST_UNIT_MODELS_TEST_UTIL_H
