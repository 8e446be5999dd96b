// GGUF K-quant, IQ4, Q4_1 and Q5_1 blocks -> StoredCodes. Each block type's element
// order and bit fields follow ggml's dequantize_row_* (documented in
// ../shared/golden-gguf/README.md); the values are moved, never computed,
// so a kept matrix is the file's bit for bit.
#include "models/checkpoint/gguf_codes.h"

#include <cstring>

namespace hyc::models::detail {
namespace {

/// What one block type holds per super-block of 256 (IQ4_NL, Q4_1, Q5_1:
/// 32).
struct BlockType {
  const char *format;
  int64_t elems, bytes, group; ///< elements and bytes per block; sub-group
  bool asymmetric;
};

bool blockTypeOf(io::DType t, BlockType &b) {
  switch (t) {
  case io::DType::Q4_K: b = {"q4k", 256, 144, 32, true}; return true;
  case io::DType::Q5_K: b = {"q5k", 256, 176, 32, true}; return true;
  case io::DType::Q6_K: b = {"q6k", 256, 210, 16, false}; return true;
  case io::DType::IQ4_XS: b = {"iq4xs", 256, 136, 32, false}; return true;
  case io::DType::IQ4_NL: b = {"iq4nl", 32, 18, 32, false}; return true;
  case io::DType::Q4_1: b = {"q4_1", 32, 20, 32, true}; return true;
  case io::DType::Q5_1: b = {"q5_1", 32, 24, 32, true}; return true;
  default: return false;
  }
}

uint16_t u16At(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

/// Q4_K / Q5_K's 6-bit scale and min of sub-block j (0..7) from the
/// 12-byte field: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4
/// split into a low nibble of byte j + 4 and the top 2 bits of bytes j - 4
/// and j.
void scaleMinK4(int j, const uint8_t *q, uint8_t &sc, uint8_t &m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/// One block: codes[256] (or 32), sc / m per sub-group, d / dmin.
void unpackBlock(io::DType t, const uint8_t *p, uint8_t *codes, int8_t *sc, uint8_t *m,
                 uint16_t &d, uint16_t &dmin) {
  switch (t) {
  case io::DType::Q4_K: // d, dmin, scales[12], qs[128]: per 64 elements,
  case io::DType::Q5_K: // 32 low nibbles then 32 high; Q5_K: qh[32] first
  {
    const bool q5 = t == io::DType::Q5_K;
    d = u16At(p), dmin = u16At(p + 2);
    const uint8_t *scales = p + 4, *qh = p + 16, *qs = p + (q5 ? 48 : 16);
    for (int s = 0; s < 8; ++s) {
      uint8_t scale, min;
      scaleMinK4(s, scales, scale, min);
      sc[s] = int8_t(scale), m[s] = min;
      for (int l = 0; l < 32; ++l) {
        int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 15;
        if (q5)
          q += ((qh[l] >> s) & 1) << 4;
        codes[32 * s + l] = uint8_t(q);
      }
    }
    return;
  }
  case io::DType::Q6_K: { // ql[128], qh[64], scales[16] int8, d
    const uint8_t *ql = p, *qh = p + 128;
    d = u16At(p + 208), dmin = 0;
    for (int s = 0; s < 16; ++s)
      sc[s] = int8_t(p[192 + s]), m[s] = 0;
    for (int half = 0; half < 2; ++half)
      for (int quarter = 0; quarter < 4; ++quarter)
        for (int l = 0; l < 32; ++l) {
          const uint8_t low = ql[64 * half + l + 32 * (quarter % 2)];
          const int q = ((quarter < 2 ? low & 15 : low >> 4)) |
                        (((qh[32 * half + l] >> (2 * quarter)) & 3) << 4);
          codes[128 * half + 32 * quarter + l] = uint8_t(q + 96); // q - 32 + 128
        }
    return;
  }
  case io::DType::IQ4_XS: { // d, scales_h (u16), scales_l[4], qs[128]
    d = u16At(p), dmin = 0;
    const uint16_t high = u16At(p + 2);
    for (int s = 0; s < 8; ++s) {
      const int ls = ((p[4 + s / 2] >> (4 * (s % 2))) & 15) | (((high >> (2 * s)) & 3) << 4);
      sc[s] = int8_t(ls - 32), m[s] = 0;
      for (int j = 0; j < 16; ++j) {
        codes[32 * s + j] = p[8 + 16 * s + j] & 15;
        codes[32 * s + j + 16] = p[8 + 16 * s + j] >> 4;
      }
    }
    return;
  }
  case io::DType::Q4_1: // d, m, qs[16]: w = d * q + m, kept as d * q - dmin
  case io::DType::Q5_1: // d, m, qh (u32: bit j is element j's fifth), qs[16]
  {
    const bool q5 = t == io::DType::Q5_1;
    d = u16At(p), dmin = uint16_t(u16At(p + 2) ^ 0x8000); // -m: the sign bit
    sc[0] = 1, m[0] = 1;
    uint32_t qh = 0;
    if (q5)
      std::memcpy(&qh, p + 4, 4);
    const uint8_t *qs = p + (q5 ? 8 : 4);
    for (int j = 0; j < 16; ++j) {
      codes[j] = uint8_t((qs[j] & 15) | (((qh >> j) & 1) << 4));
      codes[j + 16] = uint8_t((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
    return;
  }
  default: // IQ4_NL: d, qs[16] (as Q4_0)
    d = u16At(p), dmin = 0;
    sc[0] = 1, m[0] = 0;
    for (int j = 0; j < 16; ++j) {
      codes[j] = p[2 + j] & 15;
      codes[j + 16] = p[2 + j] >> 4;
    }
    return;
  }
}

} // namespace

std::string gguf_codes_format(io::DType type) {
  BlockType b;
  return blockTypeOf(type, b) ? b.format : "";
}

bool gguf_codes(const io::TensorView &v, StoredCodes &out) {
  BlockType b;
  if (!blockTypeOf(v.dtype, b) || v.shape.size() != 2 || v.shape[0] <= 0 ||
      v.shape[1] <= 0 || v.shape[1] % b.elems != 0)
    return false;
  const int64_t n = v.shape[0], k = v.shape[1], blocks = n * k / b.elems;
  if (v.nbytes != size_t(blocks * b.bytes))
    return false;
  const int64_t subs = b.elems / b.group; // sub-groups per block
  StoredCodes c;
  c.format = b.format, c.n = n, c.k = k;
  c.codes.resize(size_t(n * k));
  c.sub_scales.resize(size_t(blocks * subs));
  c.d.resize(size_t(blocks));
  std::vector<uint8_t> mins(size_t(blocks * subs));
  std::vector<uint16_t> dmins(static_cast<size_t>(blocks));
  // Blocks run along each row, rows one after another: block i is row
  // i / (k / elems), the same index order as [N][K / super].
  for (int64_t i = 0; i < blocks; ++i)
    unpackBlock(v.dtype, v.data + i * b.bytes, c.codes.data() + i * b.elems,
                c.sub_scales.data() + i * subs, mins.data() + i * subs, c.d[size_t(i)],
                dmins[size_t(i)]);
  if (b.asymmetric) {
    c.sub_mins = std::move(mins);
    c.dmin = std::move(dmins);
  }
  out = std::move(c);
  return true;
}

} // namespace hyc::models::detail
