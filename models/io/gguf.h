// GGUF (v2/v3) reader: metadata key/values with typed getters and zero-copy
// tensor views over a memory-mapped file.
#ifndef HYC_MODELS_IO_GGUF_H
#define HYC_MODELS_IO_GGUF_H

#include "models/io/expected.h"
#include "models/io/mapped_file.h"
#include "models/io/tensor.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hyc::io {

/// GGUF metadata value types, numbered as in the file format.
enum class GgufType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

/// "uint32", "string", "array", ...
const char *gguf_type_name(GgufType type);

/// ggml tensor type ids that hyc reads.
enum GgmlType : uint32_t {
  GGML_F32 = 0,
  GGML_F16 = 1,
  GGML_Q4_0 = 2,
  GGML_Q4_1 = 3,
  GGML_Q5_0 = 6,
  GGML_Q5_1 = 7,
  GGML_Q8_0 = 8,
  GGML_Q2_K = 10,
  GGML_Q3_K = 11,
  GGML_Q4_K = 12,
  GGML_Q5_K = 13,
  GGML_Q6_K = 14,
  GGML_IQ4_NL = 20,
  GGML_IQ4_XS = 23,
  GGML_I8 = 24,
  GGML_I32 = 26,
  GGML_BF16 = 30,
  GGML_MXFP4 = 39,
};

/// ggml's name for a tensor type id ("Q4_K"), or "unknown".
const char *ggml_type_name(uint32_t ggml_type);

/// The ggml tensor types hyc reads, for messages: "F32, F16, BF16, Q4_0, ...".
const char *ggml_supported_types();

/// One metadata value. Which fields are meaningful depends on `type`:
/// unsigned integers and BOOL use `u`, signed integers `i`, floats `f`,
/// STRING `str`. For ARRAY, `elem_type` and `count` describe the elements;
/// numeric/bool elements stay in the file (`raw`, little-endian, unaligned),
/// string elements are in `strings`, nested arrays in `arrays`.
struct GgufValue {
  GgufType type = GgufType::UINT8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string str;
  GgufType elem_type = GgufType::UINT8;
  uint64_t count = 0;
  const uint8_t *raw = nullptr;
  std::vector<std::string> strings;
  std::vector<GgufValue> arrays;

  /// "uint32", "string", "array[string]", "array[array[int32]]", ...
  std::string type_string() const;
};

/// One tensor-info record. `ne` is in ggml order (ne[0] is the innermost,
/// fastest-varying dim); `shape` is the same dims reversed, i.e. row-major
/// as everywhere else in hyc: ggml ne=[64, 512] is shape [512, 64].
struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  std::vector<int64_t> ne;
  std::vector<int64_t> shape;
  /// Offset relative to the start of the data section.
  uint64_t offset = 0;
  /// Data bytes; 0 when the type is unsupported (size unknown). A block
  /// type's rows (ne[0]) hold whole blocks: open() checks it.
  uint64_t nbytes = 0;
};

/// An open GGUF file. Move-only; TensorViews and GgufValue::raw point into
/// its mapping and stay valid while it lives.
///
/// Integer getters accept any integer-typed value that fits the requested
/// type; float getters accept FLOAT32 and FLOAT64. Every error names the file
/// and key or tensor, and what was expected versus found.
class GgufFile {
public:
  /// Opens and validates header, metadata, tensor infos and tensor bounds.
  /// Tensors of unsupported ggml types are accepted here and rejected by
  /// tensor().
  static Expected<GgufFile> open(const std::string &path);

  const std::string &path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  /// `general.alignment` or 32.
  uint64_t alignment() const { return alignment_; }
  /// Absolute file offset of the (aligned) tensor data section.
  uint64_t data_offset() const { return data_offset_; }

  /// All key/value pairs in file order.
  const std::vector<std::pair<std::string, GgufValue>> &metadata() const {
    return metadata_;
  }
  /// nullptr when absent.
  const GgufValue *find(const std::string &key) const;
  bool has(const std::string &key) const { return find(key) != nullptr; }

  Expected<uint32_t> get_u32(const std::string &key) const;
  Expected<uint64_t> get_u64(const std::string &key) const;
  Expected<int32_t> get_i32(const std::string &key) const;
  Expected<int64_t> get_i64(const std::string &key) const;
  Expected<float> get_f32(const std::string &key) const;
  Expected<double> get_f64(const std::string &key) const;
  Expected<bool> get_bool(const std::string &key) const;
  Expected<std::string> get_string(const std::string &key) const;
  Expected<std::vector<std::string>>
  get_string_array(const std::string &key) const;
  /// FLOAT32 or FLOAT64 elements.
  Expected<std::vector<float>> get_f32_array(const std::string &key) const;
  /// Integer elements that fit in int32.
  Expected<std::vector<int32_t>> get_i32_array(const std::string &key) const;

  /// Tensor infos in file order.
  const std::vector<GgufTensorInfo> &tensor_infos() const { return tensors_; }
  /// nullptr when absent.
  const GgufTensorInfo *find_tensor(const std::string &name) const;
  /// Zero-copy view (row-major shape). Fails for absent tensors and for
  /// ggml types not in ggml_supported_types().
  Expected<TensorView> tensor(const std::string &name) const;
  /// fp32 copy of a tensor of any supported type (block types dequantized).
  Expected<std::vector<float>> read_f32(const std::string &name) const;

private:
  GgufFile() = default;
  friend class GgufParser;

  Expected<const GgufValue *> lookup(const std::string &key) const;
  Error typeError(const std::string &key, const GgufValue &v,
                  const char *expected) const;

  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

} // namespace hyc::io

#endif // HYC_MODELS_IO_GGUF_H
