// File helpers shared by the unit tests: shared-data lookup, a temporary
// directory removed at scope exit, and small writers.
#ifndef HYC_TEST_UNIT_COMMON_TEST_FILES_H
#define HYC_TEST_UNIT_COMMON_TEST_FILES_H

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace hyc::test {

/// Path under the shared data dir (HYC_SHARED_DIR), or "" when absent.
inline std::string sharedPath(const std::string &rel) {
  std::filesystem::path p = std::filesystem::path(HYC_SHARED_DIR) / rel;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

/// A fresh directory, removed at scope exit.
class TempDir {
public:
  explicit TempDir(const std::string &prefix = "hyc-test-") {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::filesystem::path &path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

inline void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

} // namespace hyc::test

#endif // HYC_TEST_UNIT_COMMON_TEST_FILES_H
