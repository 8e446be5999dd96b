// GgufSpecWriter: see gguf_spec_writer.h.
#include "test/common/gguf_spec_writer.h"

#include <cmath>
#include <cstring>
#include <fstream>

namespace hyc::test {

namespace {

// GGUF metadata value types and ggml tensor types, numbered as in the spec.
enum : uint32_t {
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
};
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1 };

template <typename T> void put(std::vector<uint8_t> &out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T)); // the test hosts are little-endian (x86-64)
  out.insert(out.end(), b, b + sizeof(T));
}

void putString(std::vector<uint8_t> &out, const std::string &s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

/// IEEE half, round to nearest even (normal and subnormal results).
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(a))
    return sign | 0x7e00;
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < 6.103515625e-05f) // subnormal: multiples of 2^-24
    return sign | uint16_t(std::nearbyint(a * 16777216.0f));
  int e;
  const float m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  uint32_t mant = uint32_t(std::nearbyint((m * 2.0f - 1.0f) * 1024.0f));
  uint32_t exp = uint32_t(e - 1 + 15);
  if (mant == 1024) {
    mant = 0;
    ++exp;
  }
  return sign | uint16_t(exp << 10) | uint16_t(mant);
}

} // namespace

std::vector<uint8_t> &GgufSpecWriter::kv(const std::string &key,
                                         uint32_t type) {
  ++kv_count_;
  putString(kvs_, key);
  put<uint32_t>(kvs_, type);
  return kvs_;
}

void GgufSpecWriter::u32(const std::string &key, uint32_t v) {
  put(kv(key, kU32), v);
}
void GgufSpecWriter::i32(const std::string &key, int32_t v) {
  put(kv(key, kI32), v);
}
void GgufSpecWriter::u64(const std::string &key, uint64_t v) {
  put(kv(key, kU64), v);
}
void GgufSpecWriter::f32(const std::string &key, float v) {
  put(kv(key, kF32), v);
}
void GgufSpecWriter::boolean(const std::string &key, bool v) {
  put<uint8_t>(kv(key, kBool), v ? 1 : 0);
}
void GgufSpecWriter::str(const std::string &key, const std::string &v) {
  putString(kv(key, kString), v);
}

void GgufSpecWriter::strings(const std::string &key,
                             const std::vector<std::string> &v) {
  std::vector<uint8_t> &out = kv(key, kArray);
  put<uint32_t>(out, kString);
  put<uint64_t>(out, v.size());
  for (const std::string &s : v)
    putString(out, s);
}

void GgufSpecWriter::f32s(const std::string &key, const std::vector<float> &v) {
  std::vector<uint8_t> &out = kv(key, kArray);
  put<uint32_t>(out, kF32);
  put<uint64_t>(out, v.size());
  for (float x : v)
    put(out, x);
}

void GgufSpecWriter::i32s(const std::string &key,
                          const std::vector<int32_t> &v) {
  std::vector<uint8_t> &out = kv(key, kArray);
  put<uint32_t>(out, kI32);
  put<uint64_t>(out, v.size());
  for (int32_t x : v)
    put(out, x);
}

void GgufSpecWriter::tensor(const std::string &name,
                            const std::vector<int64_t> &shape,
                            const std::vector<float> &values) {
  Tensor t{name, shape, kGgmlF32, {}};
  for (float x : values)
    put(t.data, x);
  tensors_.push_back(std::move(t));
}

void GgufSpecWriter::tensor_f16(const std::string &name,
                                const std::vector<int64_t> &shape,
                                const std::vector<float> &values) {
  Tensor t{name, shape, kGgmlF16, {}};
  for (float x : values)
    put(t.data, toHalf(x));
  tensors_.push_back(std::move(t));
}

std::vector<uint8_t> GgufSpecWriter::bytes(uint32_t alignment) const {
  std::vector<uint8_t> kvs = kvs_;
  uint64_t kv_count = kv_count_;
  if (alignment != 32) {
    putString(kvs, "general.alignment");
    put<uint32_t>(kvs, kU32);
    put<uint32_t>(kvs, alignment);
    ++kv_count;
  }
  auto padded = [&](uint64_t n) { return (n + alignment - 1) / alignment * alignment; };

  std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_count);
  out.insert(out.end(), kvs.begin(), kvs.end());
  uint64_t offset = 0;
  for (const Tensor &t : tensors_) {
    putString(out, t.name);
    put<uint32_t>(out, uint32_t(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d)
      put<uint64_t>(out, uint64_t(*d));
    put<uint32_t>(out, t.ggml_type);
    put<uint64_t>(out, offset);
    offset = padded(offset + t.data.size());
  }
  out.resize(padded(out.size()), 0);
  const size_t data_start = out.size();
  for (const Tensor &t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(data_start + padded(out.size() - data_start), 0);
  }
  return out;
}

bool GgufSpecWriter::write(const std::string &path, uint32_t alignment) const {
  const std::vector<uint8_t> b = bytes(alignment);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
  return bool(f);
}

} // namespace hyc::test
