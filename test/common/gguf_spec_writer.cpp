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

void GgufSpecWriter::tensor_raw(const std::string &name,
                                const std::vector<int64_t> &shape,
                                uint32_t ggml_type, std::vector<uint8_t> data) {
  tensors_.push_back(Tensor{name, shape, ggml_type, std::move(data)});
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
  auto padded = [&](uint64_t n) {
    return (n + alignment - 1) / alignment * alignment;
  };

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

float fp16_round(float v) {
  const uint16_t h = toHalf(v);
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float mag = exp == 0 ? std::ldexp(float(mant), -24)
                       : std::ldexp(float(1024 + mant), exp - 25);
  if (exp == 0x1f)
    mag = mant ? NAN : INFINITY;
  return (h & 0x8000) ? -mag : mag;
}

namespace ggml_blocks {

namespace {

void putHalf(std::vector<uint8_t> &out, float v) { put(out, toHalf(v)); }

/// Q4_0's nibble order (shared by Q4_1, Q5_*, IQ4_NL, MXFP4, and IQ4_XS
/// per 32 elements): byte j holds element j (low) and j + 16 (high).
void putNibbles32(std::vector<uint8_t> &out, const int *q) {
  for (int j = 0; j < 16; ++j)
    out.push_back(uint8_t((q[j] & 0xF) | (q[j + 16] & 0xF) << 4));
}

uint32_t fifthBits(const Codes &q) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j)
    qh |= uint32_t((q[j] >> 4) & 1) << j;
  return qh;
}

/// Q4_K / Q5_K's 12 bytes of eight 6-bit scales and mins.
void putScalesMins(std::vector<uint8_t> &out, const Codes &sc, const Codes &m) {
  uint8_t s[12] = {};
  for (int j = 0; j < 8; ++j) {
    const int ls = sc[j] & 63, lm = m[j] & 63;
    if (j < 4) {
      s[j] = uint8_t(ls);
      s[j + 4] = uint8_t(lm);
    } else {
      s[j + 4] = uint8_t((ls & 0xF) | (lm & 0xF) << 4);
      s[j - 4] |= uint8_t((ls >> 4) << 6);
      s[j] |= uint8_t((lm >> 4) << 6);
    }
  }
  out.insert(out.end(), s, s + 12);
}

/// Q4_K / Q5_K's 128 bytes of low nibbles: per 64 elements, byte l holds
/// element l (low) and l + 32 (high).
void putNibbles64(std::vector<uint8_t> &out, const Codes &q) {
  for (int j = 0; j < 256; j += 64)
    for (int l = 0; l < 32; ++l)
      out.push_back(uint8_t((q[j + l] & 0xF) | (q[j + l + 32] & 0xF) << 4));
}

/// Q2_K / Q3_K's 64 bytes of 2-bit codes: element i = 128 h + 32 s + l sits
/// in byte 32 h + l at bits 2s.
void putCrumbs(std::vector<uint8_t> &out, const Codes &q) {
  uint8_t qs[64] = {};
  for (int i = 0; i < 256; ++i)
    qs[32 * (i / 128) + i % 32] |=
        uint8_t((q[i] & 3) << (2 * ((i % 128) / 32)));
  out.insert(out.end(), qs, qs + 64);
}

} // namespace

std::vector<uint8_t> q8_0(float d, const Codes &q) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  for (int j = 0; j < 32; ++j)
    out.push_back(uint8_t(int8_t(q[j])));
  return out;
}

std::vector<uint8_t> q4_0(float d, const Codes &q) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  putNibbles32(out, q.data());
  return out;
}

std::vector<uint8_t> q4_1(float d, float m, const Codes &q) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  putHalf(out, m);
  putNibbles32(out, q.data());
  return out;
}

std::vector<uint8_t> q5_0(float d, const Codes &q) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  put(out, fifthBits(q));
  putNibbles32(out, q.data());
  return out;
}

std::vector<uint8_t> q5_1(float d, float m, const Codes &q) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  putHalf(out, m);
  put(out, fifthBits(q));
  putNibbles32(out, q.data());
  return out;
}

std::vector<uint8_t> iq4_nl(float d, const Codes &idx) {
  return q4_0(d, idx); // same bytes: f16 d, nibbles in Q4_0's order
}

std::vector<uint8_t> mxfp4(uint8_t e, const Codes &idx) {
  std::vector<uint8_t> out = {e};
  putNibbles32(out, idx.data());
  return out;
}

std::vector<uint8_t> q2_K(float d, float dmin, const Codes &sc, const Codes &m,
                          const Codes &q) {
  std::vector<uint8_t> out;
  for (int j = 0; j < 16; ++j)
    out.push_back(uint8_t((sc[j] & 0xF) | (m[j] & 0xF) << 4));
  putCrumbs(out, q);
  putHalf(out, d);
  putHalf(out, dmin);
  return out;
}

std::vector<uint8_t> q3_K(float d, const Codes &sc, const Codes &q) {
  std::vector<uint8_t> out;
  uint8_t hmask[32] = {};
  for (int i = 0; i < 256; ++i)
    hmask[i % 32] |= uint8_t(((q[i] >> 2) & 1) << (i / 32));
  out.insert(out.end(), hmask, hmask + 32);
  putCrumbs(out, q);
  uint8_t s[12] = {};
  for (int j = 0; j < 16; ++j) {
    const int l = sc[j] & 63;
    if (j < 8)
      s[j] = uint8_t(l & 0xF);
    else
      s[j - 8] |= uint8_t((l & 0xF) << 4);
    s[8 + j % 4] |= uint8_t((l >> 4) << (2 * (j / 4)));
  }
  out.insert(out.end(), s, s + 12);
  putHalf(out, d);
  return out;
}

std::vector<uint8_t> q4_K(float d, float dmin, const Codes &sc, const Codes &m,
                          const Codes &q) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  putHalf(out, dmin);
  putScalesMins(out, sc, m);
  putNibbles64(out, q);
  return out;
}

std::vector<uint8_t> q5_K(float d, float dmin, const Codes &sc, const Codes &m,
                          const Codes &q) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  putHalf(out, dmin);
  putScalesMins(out, sc, m);
  uint8_t qh[32] = {};
  for (int i = 0; i < 256; ++i)
    qh[i % 32] |= uint8_t(((q[i] >> 4) & 1) << (i / 32));
  out.insert(out.end(), qh, qh + 32);
  putNibbles64(out, q);
  return out;
}

std::vector<uint8_t> q6_K(float d, const Codes &sc, const Codes &q) {
  uint8_t ql[128] = {}, qh[64] = {};
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, k = (i % 128) / 32, l = i % 32;
    ql[64 * h + l + 32 * (k & 1)] |= uint8_t((q[i] & 0xF) << (k < 2 ? 0 : 4));
    qh[32 * h + l] |= uint8_t(((q[i] >> 4) & 3) << (2 * k));
  }
  std::vector<uint8_t> out(ql, ql + 128);
  out.insert(out.end(), qh, qh + 64);
  for (int j = 0; j < 16; ++j)
    out.push_back(uint8_t(int8_t(sc[j])));
  putHalf(out, d);
  return out;
}

std::vector<uint8_t> iq4_xs(float d, const Codes &ls, const Codes &idx) {
  std::vector<uint8_t> out;
  putHalf(out, d);
  uint16_t scalesH = 0;
  uint8_t scalesL[4] = {};
  for (int s = 0; s < 8; ++s) {
    scalesL[s / 2] |= uint8_t((ls[s] & 0xF) << (4 * (s % 2)));
    scalesH |= uint16_t(((ls[s] >> 4) & 3) << (2 * s));
  }
  put(out, scalesH);
  out.insert(out.end(), scalesL, scalesL + 4);
  for (int s = 0; s < 8; ++s)
    putNibbles32(out, idx.data() + 32 * s);
  return out;
}

} // namespace ggml_blocks

} // namespace hyc::test
