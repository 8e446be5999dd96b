// Dequantizers of ggml's block types, one function per type, each decoding
// one block. Written from the block layouts of ggml's format definition
// (ggml-common.h block_* structs); the arithmetic follows
// dequantize_row_*: scales are fp16 widened exactly, and each value is
// computed with the same fp32 operations in the same order (d * sc first,
// then times the code, then minus dmin * m), so the results are identical
// bit for bit. This file is built with -ffp-contract=off: a fused
// multiply-add would round once where ggml rounds twice.
#include "models/io/gguf_dequant.h"

#include "hyrt/support/iq4nl.h"

#include <cstring>
#include <string>

namespace hyc::io {

namespace {

constexpr int64_t kQK = 256; // k-quant super-block

// The IQ4_NL code book lives in hyrt/support/iq4nl.h, shared with the
// grouped kernels that read these codes as stored.
using hyrt::kIq4nlValues;
const int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                 0, -1, -2, -3, -4, -6, -8, -12};

float half(const uint8_t *p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return f16_to_f32(bits);
}

uint32_t u32le(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

/// Q8_0: f16 d | int8 q[32]. w = d * q.
void blockQ8_0(const uint8_t *b, float *y) {
  const float d = half(b);
  for (int j = 0; j < 32; ++j)
    y[j] = d * float(int8_t(b[2 + j]));
}

/// Q4_0: f16 d | u8 qs[16]; element j is the low nibble of qs[j], element
/// j + 16 the high one. w = d * (q - 8).
void blockQ4_0(const uint8_t *b, float *y) {
  const float d = half(b);
  const uint8_t *qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = float((qs[j] & 0xF) - 8) * d;
    y[j + 16] = float((qs[j] >> 4) - 8) * d;
  }
}

/// Q4_1: f16 d | f16 m | u8 qs[16] (as Q4_0). w = d * q + m.
void blockQ4_1(const uint8_t *b, float *y) {
  const float d = half(b), m = half(b + 2);
  const uint8_t *qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = float(qs[j] & 0xF) * d + m;
    y[j + 16] = float(qs[j] >> 4) * d + m;
  }
}

/// Q5_0: f16 d | u32 qh (bit j: the fifth bit of element j) | u8 qs[16]
/// (low nibbles as Q4_0). w = d * (q - 16).
void blockQ5_0(const uint8_t *b, float *y) {
  const float d = half(b);
  const uint32_t qh = u32le(b + 2);
  const uint8_t *qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0xF) | int((qh >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
    y[j] = float(lo - 16) * d;
    y[j + 16] = float(hi - 16) * d;
  }
}

/// Q5_1: f16 d | f16 m | u32 qh | u8 qs[16] (as Q5_0). w = d * q + m.
void blockQ5_1(const uint8_t *b, float *y) {
  const float d = half(b), m = half(b + 2);
  const uint32_t qh = u32le(b + 4);
  const uint8_t *qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0xF) | int((qh >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
    y[j] = float(lo) * d + m;
    y[j + 16] = float(hi) * d + m;
  }
}

/// IQ4_NL: f16 d | u8 qs[16] (nibble order as Q4_0). w = d * kvalues[q].
void blockIq4Nl(const uint8_t *b, float *y) {
  const float d = half(b);
  const uint8_t *qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float(kIq4nlValues[qs[j] & 0xF]);
    y[j + 16] = d * float(kIq4nlValues[qs[j] >> 4]);
  }
}

/// MXFP4: u8 e (E8M0 exponent) | u8 qs[16] (nibble order as Q4_0).
/// w = kvalues_mxfp4[q] * 2^(e - 128) (the doubled code book, halved scale;
/// e < 2 give float subnormals).
void blockMxfp4(const uint8_t *b, float *y) {
  const uint32_t e = b[0];
  const uint32_t bits = e < 2 ? 0x00200000u << e : (e - 1) << 23;
  float d;
  std::memcpy(&d, &bits, 4);
  const uint8_t *qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = float(kMxfp4Values[qs[j] & 0xF]) * d;
    y[j + 16] = float(kMxfp4Values[qs[j] >> 4]) * d;
  }
}

/// Q2_K: u8 scales[16] (per 16 values: low nibble scale, high nibble min) |
/// u8 qs[64] | f16 d | f16 dmin. Each 128 values read 32 bytes of qs four
/// times, 2 bits at shifts 0, 2, 4, 6; the 32 values of one shift are two
/// groups of 16 (qs[l] and qs[l + 16]). w = (d * sc) * q - dmin * m.
void blockQ2_K(const uint8_t *b, float *y) {
  const uint8_t *scales = b, *q = b + 16;
  const float d = half(b + 80), dmin = half(b + 82);
  int is = 0;
  for (int half128 = 0; half128 < 2; ++half128, q += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int group = 0; group < 2; ++group, ++is) {
        const float dl = d * float(scales[is] & 0xF);
        const float ml = dmin * float(scales[is] >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * float((q[l + 16 * group] >> shift) & 3) - ml;
      }
}

/// The 6-bit scale `i` (0..15) of a Q3_K block's 12 scale bytes: low four
/// bits in byte i (i < 8) or the high nibble of byte i - 8, high two bits in
/// byte 8 + i % 4 at bit 2 * (i / 4).
int q3kScale(const uint8_t *s, int i) {
  const int low = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
  const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return low | high << 4;
}

/// Q3_K: u8 hmask[32] | u8 qs[64] | u8 scales[12] | f16 d. Low two bits as
/// Q2_K; the third bit of value l + 32 * k (k = 0..7 in Q2_K's order)
/// is bit k of hmask[l], and a clear bit subtracts 4. Scales are 6-bit,
/// offset 32. w = (d * (sc - 32)) * (q - 4 * !h).
void blockQ3_K(const uint8_t *b, float *y) {
  const uint8_t *hm = b, *q = b + 32, *scales = b + 96;
  const float d = half(b + 108);
  int is = 0, bit = 0;
  for (int half128 = 0; half128 < 2; ++half128, q += 32)
    for (int shift = 0; shift < 8; shift += 2, ++bit)
      for (int group = 0; group < 2; ++group, ++is) {
        const float dl = d * float(q3kScale(scales, is) - 32);
        for (int l = 16 * group; l < 16 * group + 16; ++l) {
          const int low = (q[l] >> shift) & 3;
          const int sub = (hm[l] >> bit) & 1 ? 0 : 4;
          *y++ = dl * float(low - sub);
        }
      }
}

/// The 6-bit scale and min of sub-block j (0..7) of Q4_K / Q5_K's 12 bytes:
/// j < 4: scale = s[j] & 63, min = s[j + 4] & 63; otherwise the low four
/// bits come from s[j + 4] (scale low nibble, min high nibble) and the high
/// two from the top bits of s[j - 4] (scale) and s[j] (min).
void k4ScaleMin(const uint8_t *s, int j, int *sc, int *m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
    *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
}

/// Q4_K and Q5_K's shared body: per pair of 32-value sub-blocks, the low
/// nibbles then the high nibbles of 32 bytes of q, each with its 6-bit
/// scale and min; with `qh` (Q5_K) the fifth bit of value l of sub-block s
/// is bit s of qh[l].
void blockK4or5(const uint8_t *b, const uint8_t *qh, const uint8_t *q, float *y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t *scales = b + 4;
  for (int sub = 0; sub < 8; sub += 2, q += 32) {
    int sc, m;
    k4ScaleMin(scales, sub, &sc, &m);
    const float d1 = d * float(sc), m1 = dmin * float(m);
    k4ScaleMin(scales, sub + 1, &sc, &m);
    const float d2 = d * float(sc), m2 = dmin * float(m);
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * float((q[l] & 0xF) | (qh ? ((qh[l] >> sub) & 1) << 4 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * float((q[l] >> 4) | (qh ? ((qh[l] >> (sub + 1)) & 1) << 4 : 0)) - m2;
  }
}

/// Q4_K: f16 d | f16 dmin | u8 scales[12] | u8 qs[128]. Per 64 values, 32
/// bytes: the first 32 values are their low nibbles (sub-block 2i), the
/// next 32 their high nibbles (sub-block 2i + 1). w = (d * sc) * q - dmin * m.
void blockQ4_K(const uint8_t *b, float *y) { blockK4or5(b, nullptr, b + 16, y); }

/// Q5_K: f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 qs[128]. Low
/// nibbles as Q4_K; the fifth bit of value l of sub-block s is bit s of
/// qh[l]. w = (d * sc) * q - dmin * m.
void blockQ5_K(const uint8_t *b, float *y) { blockK4or5(b, b + 16, b + 48, y); }

/// Q6_K: u8 ql[128] | u8 qh[64] | int8 scales[16] | f16 d. Per 128 values,
/// 64 bytes of ql and 32 of qh: value l + 32 * k (k = 0..3) takes its low
/// nibble from ql[l + 32 * (k & 1)] (low nibble for k < 2, high otherwise)
/// and its top two bits from qh[l] at bit 2k; scale index l / 16 + 2k.
/// w = (d * sc) * (q - 32).
void blockQ6_K(const uint8_t *b, float *y) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t *sc = reinterpret_cast<const int8_t *>(b + 192);
  const float d = half(b + 208);
  for (int half128 = 0; half128 < 2;
       ++half128, y += 128, ql += 64, qh += 32, sc += 8)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l) {
        const uint8_t lowByte = ql[l + 32 * (k & 1)];
        const int low = k < 2 ? lowByte & 0xF : lowByte >> 4;
        const int q = (low | ((qh[l] >> (2 * k)) & 3) << 4) - 32;
        y[l + 32 * k] = d * float(sc[l / 16 + 2 * k]) * float(q);
      }
}

/// IQ4_XS: f16 d | u16 scales_h | u8 scales_l[4] | u8 qs[128]. Sub-block
/// s (32 values, 16 bytes of qs, nibbles as IQ4_NL) has the 6-bit scale
/// (nibble s % 2 of scales_l[s / 2]) | (bits 2s..2s+1 of scales_h) << 4.
/// w = (d * (ls - 32)) * kvalues[q].
void blockIq4Xs(const uint8_t *b, float *y) {
  const float d = half(b);
  const uint32_t scalesH = uint32_t(b[2]) | uint32_t(b[3]) << 8;
  const uint8_t *scalesL = b + 4, *qs = b + 8;
  for (int s = 0; s < 8; ++s, y += 32, qs += 16) {
    const int ls = ((scalesL[s / 2] >> (4 * (s % 2))) & 0xF) |
                   int((scalesH >> (2 * s)) & 3) << 4;
    const float dl = d * float(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * float(kIq4nlValues[qs[j] & 0xF]);
      y[j + 16] = dl * float(kIq4nlValues[qs[j] >> 4]);
    }
  }
}

struct Format {
  DType dtype;
  QuantBlock block;
  void (*decode)(const uint8_t *block, float *out);
};

constexpr Format kFormats[] = {
    {DType::Q4_0, {32, 18}, blockQ4_0},
    {DType::Q4_1, {32, 20}, blockQ4_1},
    {DType::Q5_0, {32, 22}, blockQ5_0},
    {DType::Q5_1, {32, 24}, blockQ5_1},
    {DType::Q8_0, {32, 34}, blockQ8_0},
    {DType::Q2_K, {kQK, 84}, blockQ2_K},
    {DType::Q3_K, {kQK, 110}, blockQ3_K},
    {DType::Q4_K, {kQK, 144}, blockQ4_K},
    {DType::Q5_K, {kQK, 176}, blockQ5_K},
    {DType::Q6_K, {kQK, 210}, blockQ6_K},
    {DType::IQ4_NL, {32, 18}, blockIq4Nl},
    {DType::IQ4_XS, {kQK, 136}, blockIq4Xs},
    {DType::MXFP4, {32, 17}, blockMxfp4},
};

const Format *formatOf(DType dtype) {
  for (const Format &f : kFormats)
    if (f.dtype == dtype)
      return &f;
  return nullptr;
}

} // namespace

bool quant_block(DType dtype, QuantBlock *block) {
  const Format *f = formatOf(dtype);
  if (f && block)
    *block = f->block;
  return f != nullptr;
}

Status dequantize(DType dtype, const uint8_t *blocks, int64_t n, float *out) {
  const Format *f = formatOf(dtype);
  if (!f)
    return Error(std::string(dtype_name(dtype)) + " is not a block type");
  if (n < 0 || n % f->block.elements != 0)
    return Error(std::string(dtype_name(dtype)) + " holds whole blocks of " +
                 std::to_string(f->block.elements) + " values, asked for " +
                 std::to_string(n));
  for (int64_t i = 0; i < n / f->block.elements; ++i)
    f->decode(blocks + i * f->block.bytes, out + i * f->block.elements);
  return Status();
}

} // namespace hyc::io
