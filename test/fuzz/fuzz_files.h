// Scratch files for the fuzz targets: every hyc reader takes a path, so each
// input is written to a per-process directory on tmpfs and read from there.
#ifndef HYC_TEST_FUZZ_FUZZ_FILES_H
#define HYC_TEST_FUZZ_FUZZ_FILES_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace hyc::fuzz {

/// Tensors larger than this are not read: a fuzzer's input is small, and a
/// large count comes from a header the reader already checked against the
/// file size.
constexpr int64_t kMaxFuzzElements = int64_t(1) << 22;

/// A directory of its own for this fuzzer process (tmpfs when there is one,
/// so a write per execution costs microseconds). Created on first use and
/// left in place: libFuzzer ends the process with _exit.
inline const std::string &scratchDir() {
  static const std::string dir = [] {
    struct stat st;
    std::string base = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
    std::string d = base + "/hyc-fuzz-" + std::to_string(getpid());
    mkdir(d.c_str(), 0700);
    return d;
  }();
  return dir;
}

/// Writes `size` bytes to `name` inside scratchDir() and returns its path.
inline std::string writeScratch(const std::string &name, const uint8_t *data,
                                size_t size) {
  std::string path = scratchDir() + "/" + name;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort(); // the harness itself is broken, not the reader
  if (size && std::fwrite(data, 1, size, f) != size)
    std::abort();
  std::fclose(f);
  return path;
}

/// Splits a fuzz input into two parts at the first occurrence of `sep` (the
/// whole input and "" when absent), for readers that take two files.
inline std::pair<std::string, std::string>
splitAt(const uint8_t *data, size_t size, const std::string &sep) {
  std::string all(reinterpret_cast<const char *>(data), size);
  size_t at = all.find(sep);
  if (at == std::string::npos)
    return {all, ""};
  return {all.substr(0, at), all.substr(at + sep.size())};
}

/// Prints why an input was rejected when HYC_FUZZ_VERBOSE is set (to check
/// that a seed is valid: `HYC_FUZZ_VERBOSE=1 ./fuzz_gguf seed.gguf`).
inline void explain(const std::string &stage, const std::string &message) {
  static const bool verbose = std::getenv("HYC_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "%s: %s\n", stage.c_str(), message.c_str());
}

} // namespace hyc::fuzz

#endif // HYC_TEST_FUZZ_FUZZ_FILES_H
