// Byte-level views of checkpoints and artifacts for tests that check
// weights are kept as stored: one safetensors tensor, one artifact tensor.
#ifndef HYC_TEST_E2E_ARTIFACT_BYTES_H
#define HYC_TEST_E2E_ARTIFACT_BYTES_H

#include "test/e2e/e2e_util.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hyc::e2e {

/// One tensor of a safetensors file: its header entry and bytes.
struct StoredTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

inline StoredTensor storedTensor(const std::string &file, const std::string &name) {
  const std::string all = readFile(file);
  uint64_t headerBytes = 0;
  std::memcpy(&headerBytes, all.data(), 8);
  auto header = nlohmann::json::parse(all.substr(8, headerBytes));
  StoredTensor t;
  if (!header.contains(name))
    return t;
  t.dtype = header[name]["dtype"];
  t.shape = header[name]["shape"].get<std::vector<int64_t>>();
  auto offsets = header[name]["data_offsets"].get<std::vector<uint64_t>>();
  t.bytes = all.substr(8 + headerBytes + offsets[0], offsets[1] - offsets[0]);
  return t;
}

/// The bytes of artifact tensor `name` in weights.bin.
inline std::string artifactTensor(const std::string &art, const std::string &name) {
  auto manifest = nlohmann::json::parse(readFile(art + "/manifest.json"));
  const std::string all = readFile(art + "/weights.bin");
  for (const auto &t : manifest["weights"]["tensors"])
    if (t["name"] == name)
      return all.substr(t["offset"].get<size_t>(), t["nbytes"].get<size_t>());
  return "";
}

} // namespace hyc::e2e

#endif // HYC_TEST_E2E_ARTIFACT_BYTES_H
