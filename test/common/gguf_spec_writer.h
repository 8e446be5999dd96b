// A minimal GGUF v3 writer written from the format specification alone
// (ggml's docs/gguf.md), independent of hyc's own writer
// (models/io/gguf_writer.cpp), so that the loaders are tested against files
// whose layout was not derived from the code that reads them:
//
//   "GGUF" | u32 version 3 | u64 tensor_count | u64 kv_count
//   kv:     string key | u32 value type | value
//   tensor: string name | u32 n_dims | u64 ne[n_dims] (ne[0] innermost)
//           | u32 ggml type | u64 offset (from the data section, aligned)
//   padding to general.alignment (32 by default) | tensor data
//
// string = u64 byte length + bytes (no NUL); array = u32 element type + u64
// count + elements; everything little-endian.
#ifndef HYC_TEST_COMMON_GGUF_SPEC_WRITER_H
#define HYC_TEST_COMMON_GGUF_SPEC_WRITER_H

#include <cstdint>
#include <string>
#include <vector>

namespace hyc::test {

class GgufSpecWriter {
public:
  void u32(const std::string &key, uint32_t v);
  void i32(const std::string &key, int32_t v);
  void u64(const std::string &key, uint64_t v);
  void f32(const std::string &key, float v);
  void boolean(const std::string &key, bool v);
  void str(const std::string &key, const std::string &v);
  void strings(const std::string &key, const std::vector<std::string> &v);
  void f32s(const std::string &key, const std::vector<float> &v);
  void i32s(const std::string &key, const std::vector<int32_t> &v);

  /// An F32 tensor given in row-major order with its row-major shape
  /// (outermost first, as numpy / torch write it); the tensor info stores
  /// the dims reversed, ggml's ne order.
  void tensor(const std::string &name, const std::vector<int64_t> &shape,
              const std::vector<float> &values);
  /// An F16 tensor (values rounded to nearest even).
  void tensor_f16(const std::string &name, const std::vector<int64_t> &shape,
                  const std::vector<float> &values);

  /// The whole file; `alignment` also becomes general.alignment when it is
  /// not the default 32.
  std::vector<uint8_t> bytes(uint32_t alignment = 32) const;
  /// Writes bytes() to `path`; false on an I/O error.
  bool write(const std::string &path, uint32_t alignment = 32) const;

private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    uint32_t ggml_type;
    std::vector<uint8_t> data;
  };
  std::vector<uint8_t> &kv(const std::string &key, uint32_t type);

  uint64_t kv_count_ = 0;
  std::vector<uint8_t> kvs_;
  std::vector<Tensor> tensors_;
};

} // namespace hyc::test

#endif // HYC_TEST_COMMON_GGUF_SPEC_WRITER_H
