// GGUF v3 writer: metadata key/values of every GGUF type (nested arrays
// included) and tensors (F32, F16, BF16, Q8_0, Q4_0, I8, I32 data) at a fixed
// alignment (32 unless set). Produces files models/io/gguf.h and llama.cpp
// read.
#ifndef HYC_MODELS_IO_GGUF_WRITER_H
#define HYC_MODELS_IO_GGUF_WRITER_H

#include "models/io/expected.h"
#include "models/io/gguf.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hyc::io {

/// One metadata value to write. Build it with the static constructors.
class GgufWriteValue {
public:
  static GgufWriteValue u8(uint8_t v);
  static GgufWriteValue i8(int8_t v);
  static GgufWriteValue u16(uint16_t v);
  static GgufWriteValue i16(int16_t v);
  static GgufWriteValue u32(uint32_t v);
  static GgufWriteValue i32(int32_t v);
  static GgufWriteValue u64(uint64_t v);
  static GgufWriteValue i64(int64_t v);
  static GgufWriteValue f32(float v);
  static GgufWriteValue f64(double v);
  static GgufWriteValue boolean(bool v);
  static GgufWriteValue string(std::string v);
  /// An array of `elem_type`; every element must have that type (checked by
  /// GgufWriter::set). Nested arrays: elem_type ARRAY.
  static GgufWriteValue array(GgufType elem_type,
                              std::vector<GgufWriteValue> elems);
  static GgufWriteValue string_array(const std::vector<std::string> &v);
  static GgufWriteValue f32_array(const std::vector<float> &v);
  static GgufWriteValue i32_array(const std::vector<int32_t> &v);
  static GgufWriteValue u32_array(const std::vector<uint32_t> &v);

  GgufType type() const { return type_; }
  /// Appends the value (without its type tag) to `out`.
  void serialize(std::vector<uint8_t> &out) const;
  /// Empty when consistent, else what is wrong ("array[uint32] element 3
  /// has type string").
  std::string check() const;

private:
  GgufType type_ = GgufType::UINT8;
  std::vector<uint8_t> scalar_; ///< little-endian bytes of a scalar
  std::string str_;
  GgufType elem_type_ = GgufType::UINT8;
  std::vector<GgufWriteValue> elems_;
};

/// Fills `dst` (exactly the tensor's byte size) when the file is written.
using GgufTensorFill = std::function<Status(uint8_t *dst)>;

/// Collects metadata and tensors, then writes them in one pass:
/// header, key/values in insertion order, tensor infos in insertion order,
/// padding to the alignment, tensor data (each tensor's offset a multiple of
/// the alignment, zero padding between).
class GgufWriter {
public:
  /// Sets a key (a second set of the same key replaces the value in
  /// place). Fails when the value is inconsistent (see
  /// GgufWriteValue::check) or the key is empty.
  Status set(const std::string &key, GgufWriteValue value);
  /// Convenience setters.
  Status set_u32(const std::string &key, uint32_t v) {
    return set(key, GgufWriteValue::u32(v));
  }
  Status set_f32(const std::string &key, float v) {
    return set(key, GgufWriteValue::f32(v));
  }
  Status set_bool(const std::string &key, bool v) {
    return set(key, GgufWriteValue::boolean(v));
  }
  Status set_string(const std::string &key, std::string v) {
    return set(key, GgufWriteValue::string(std::move(v)));
  }
  bool has(const std::string &key) const;

  /// Tensor data alignment, a power of two; written as `general.alignment`
  /// (uint32, last key) when it is not 32. Default 32. A `general.alignment`
  /// key given to set() is ignored: this is the only way to change it.
  Status set_alignment(uint32_t alignment);

  /// A tensor with row-major `shape` (written reversed as ggml ne) whose
  /// bytes are produced at write time by `fill` (so a converter need not
  /// hold every tensor in memory). `ggml_type` is one of F32, F16, BF16,
  /// Q8_0 (innermost dim a multiple of 32), I8, I32. Fails on duplicate
  /// names, more than 4 dims, negative dims or unsupported types.
  Status add_tensor(const std::string &name, uint32_t ggml_type,
                    std::vector<int64_t> shape, GgufTensorFill fill);
  /// A tensor from bytes already in ggml layout for `ggml_type`; fails when
  /// the size does not match.
  Status add_tensor_bytes(const std::string &name, uint32_t ggml_type,
                          std::vector<int64_t> shape,
                          std::vector<uint8_t> bytes);
  /// An F32 tensor, stored as `ggml_type` F32, F16 or BF16 (converted with
  /// round-to-nearest-even).
  Status add_tensor_f32(const std::string &name, std::vector<int64_t> shape,
                        std::vector<float> values,
                        uint32_t ggml_type = GGML_F32);

  size_t tensor_count() const { return tensors_.size(); }

  /// Writes `path`.tmp and renames it to `path`. Errors name the file and,
  /// for a failing fill, the tensor.
  Status write(const std::string &path) const;

private:
  struct Kv {
    std::string key;
    GgufWriteValue value;
  };
  struct Tensor {
    std::string name;
    uint32_t ggml_type;
    std::vector<int64_t> shape;
    size_t nbytes;
    GgufTensorFill fill;
  };

  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

} // namespace hyc::io

#endif // HYC_MODELS_IO_GGUF_WRITER_H
