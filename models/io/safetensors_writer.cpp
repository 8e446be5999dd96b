// write_safetensors: serializes tensors + metadata into one .safetensors file.
#include "models/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <set>

namespace hyc::io {

Status write_safetensors(const std::string &path,
                         const std::vector<SafetensorsEntry> &tensors,
                         const std::map<std::string, std::string> &metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto &[k, v] : metadata)
      meta[k] = v;
    header["__metadata__"] = meta;
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const SafetensorsEntry &t : tensors) {
    const std::string where = path + ": tensor '" + t.name + "'";
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      return Error(where + ": duplicate or reserved name");
    if (t.dtype == DType::Q8_0 || t.dtype == DType::Q8_GROUPED)
      return Error(where + ": dtype " + dtype_name(t.dtype) +
                   " cannot be stored in safetensors");
    Expected<int64_t> numel = shape_numel(t.shape);
    if (!numel)
      return Error(where + ": " + numel.error());
    Expected<size_t> bytes = dtype_data_bytes(t.dtype, *numel);
    if (!bytes)
      return Error(where + ": " + bytes.error());
    if (*bytes != t.bytes.size())
      return Error(where + ": " + dtype_name(t.dtype) + " " +
                   shape_to_string(t.shape) + " needs " +
                   std::to_string(*bytes) + " bytes, found " +
                   std::to_string(t.bytes.size()));
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.empty() ? "{}" : header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t headerLen = text.size();

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Error(tmp + ": cannot open for writing");
    out.write(reinterpret_cast<const char *>(&headerLen), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const SafetensorsEntry &t : tensors)
      out.write(reinterpret_cast<const char *>(t.bytes.data()),
                static_cast<std::streamsize>(t.bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return Error(tmp + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Error(path + ": cannot rename " + tmp + " into place");
  }
  return Status();
}

} // namespace hyc::io
