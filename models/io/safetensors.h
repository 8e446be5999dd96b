// safetensors reader (single file or sharded via model.safetensors.index.json)
// and writer (used by `hyc synth` to produce test checkpoints).
#ifndef HYC_MODELS_IO_SAFETENSORS_H
#define HYC_MODELS_IO_SAFETENSORS_H

#include "models/io/expected.h"
#include "models/io/mapped_file.h"
#include "models/io/tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace hyc::io {

/// One header entry. Offsets are relative to the start of the data section
/// (right after the JSON header), as in the file.
struct SafetensorsTensorInfo {
  std::string name;
  /// The dtype string as written in the file ("F32", "F64", ...).
  std::string dtype_name;
  /// Meaningful only when `supported`.
  DType dtype = DType::F32;
  bool supported = false;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// One open .safetensors file. Move-only; views point into its mapping.
class SafetensorsFile {
public:
  /// Opens and validates the header: JSON well-formed, every entry has a
  /// dtype/shape/data_offsets, offsets lie inside the data section, do not
  /// overlap and match shape x dtype size. Unsupported dtypes (supported:
  /// F32, F16, BF16, F8_E4M3, I8, I32) are accepted here and rejected by
  /// tensor().
  static Expected<SafetensorsFile> open(const std::string &path);

  const std::string &path() const { return file_.path(); }
  /// The "__metadata__" object (non-string values are kept as JSON text).
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// Tensor entries ordered by data offset.
  const std::vector<SafetensorsTensorInfo> &tensor_infos() const {
    return tensors_;
  }
  /// nullptr when absent.
  const SafetensorsTensorInfo *find_tensor(const std::string &name) const;
  /// Zero-copy view; fails for absent tensors and unsupported dtypes.
  Expected<TensorView> tensor(const std::string &name) const;
  /// Absolute file offset of the data section (8 + header length).
  uint64_t data_offset() const { return data_offset_; }

private:
  SafetensorsFile() = default;
  friend class SafetensorsHeaderParser;

  MappedFile file_;
  uint64_t data_offset_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

/// A checkpoint made of one or more safetensors files.
class SafetensorsModel {
public:
  /// `path` is a .safetensors file, a model.safetensors.index.json, or a
  /// directory holding one of them (the index wins). With an index, every
  /// shard named in weight_map must open and hold the tensors mapped to it.
  static Expected<SafetensorsModel> open(const std::string &path);

  /// Tensor names in sorted order.
  std::vector<std::string> tensor_names() const;
  bool has(const std::string &name) const { return where_.count(name) != 0; }
  /// nullptr when absent.
  const SafetensorsTensorInfo *find_tensor(const std::string &name) const;
  /// Zero-copy view into the shard that holds `name`.
  Expected<TensorView> tensor(const std::string &name) const;
  /// fp32 copy of a tensor of any supported dtype.
  Expected<std::vector<float>> read_f32(const std::string &name) const;
  const std::vector<SafetensorsFile> &shards() const { return shards_; }

private:
  static Expected<SafetensorsModel> open_index(const std::string &index_path);

  std::string path_;
  std::vector<SafetensorsFile> shards_;
  std::unordered_map<std::string, size_t> where_;
};

/// One tensor to write. `bytes` holds the little-endian element data.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Writes a .safetensors file (header padded to 8 bytes; tensors in the
/// given order). Fails on duplicate names, dtypes safetensors cannot
/// represent (Q8_0, Q8_GROUPED), or bytes that do not match shape x dtype.
/// Writes to `path`.tmp and renames, so readers never see a partial file.
Status
write_safetensors(const std::string &path,
                  const std::vector<SafetensorsEntry> &tensors,
                  const std::map<std::string, std::string> &metadata = {});

} // namespace hyc::io

#endif // HYC_MODELS_IO_SAFETENSORS_H
