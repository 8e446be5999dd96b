// The grouped integer layouts (u4_grouped, u8_grouped; brgemm.h "Grouped
// integer kernels"): fp16 conversion, the per-group quantizer whose fp16
// scales and mins are exactly what the kernels multiply, and the packers
// (one-level fp16 scales; two-level super-block factors with 8-bit
// sub-scales, as GGUF K-quants and AWQ store them).
#include "codegen/pack.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace hyc::codegen {

uint16_t f32_to_f16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  const uint16_t sign = uint16_t((b >> 16) & 0x8000u);
  b &= 0x7FFFFFFFu;
  if (b > 0x7F800000u) // NaN: keep the top payload bits, force quiet
    return uint16_t(sign | 0x7E00u | ((b >> 13) & 0x3FFu));
  if (b >= 0x477FF000u) // >= 65520 (65504 + half an ulp) rounds to inf
    return uint16_t(sign | 0x7C00u);
  if (b < 0x38800000u) { // below 2^-14: a subnormal in units of 2^-24
    float mag;
    std::memcpy(&mag, &b, 4);
    // Scaling by 2^24 is exact; nearbyint rounds half to even.
    return uint16_t(sign | uint16_t(std::nearbyint(mag * 16777216.f)));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits
  // half to even; a carry into the exponent is the correct result.
  const uint32_t rounded = b + 0xFFFu + ((b >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) { // zero or subnormal: m * 2^-24
    const float v = std::ldexp(float(m), -24);
    return sign ? -v : v;
  }
  const uint32_t bits = sign | (e == 31 ? 0x7F800000u | (m << 13)
                                        : ((e + 112) << 23) | (m << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {

int64_t code_quad_bytes(int bits) { return bits == 4 ? 64 : 128; }

/// The next fp16 above h (toward +inf); finite inputs only.
uint16_t f16_next_up(uint16_t h) {
  if ((h & 0x7FFFu) == 0)
    return 0x0001u;
  return (h & 0x8000u) ? uint16_t(h - 1) : uint16_t(h + 1);
}

/// The smallest fp16 >= v (the largest finite one if none is): scales and
/// mins rounded up, so no code has to clamp (pack.h quantize_grouped).
uint16_t f16_at_least(double v) {
  uint16_t h = f32_to_f16(float(v));
  while (double(f16_to_f32(h)) < v && (h & 0x7FFFu) < 0x7BFFu)
    h = f16_next_up(h);
  if ((h & 0x7FFFu) >= 0x7C00u) // overflowed to inf: stay finite
    h = uint16_t((h & 0x8000u) | 0x7BFFu);
  return h;
}

void check(bool ok, const std::string &what) {
  if (!ok)
    throw std::invalid_argument(what);
}

void check_shape(int bits, int64_t n, int64_t k, int64_t group) {
  check(bits == 4 || bits == 8,
        "grouped weights take 4 or 8 bit codes, found " + std::to_string(bits));
  check(group > 0 && group % 16 == 0, "group " + std::to_string(group) +
                                          " must be a positive multiple of 16");
  check(n > 0 && k > 0 && k % group == 0,
        "group " + std::to_string(group) + " does not divide K=" +
            std::to_string(k) + " (N=" + std::to_string(n) + ")");
}

void check_format(const GroupedFormat &f, int64_t n, int64_t k) {
  check(n > 0 && k > 0, "grouped weights need positive N and K, found N=" +
                            std::to_string(n) + " K=" + std::to_string(k));
  const std::string why = validate_grouped_format(f, k);
  check(why.empty(), why);
}

/// What padding columns hold: the zero point where one exists as a code,
/// else 0 (their scales are 0 either way).
int padding_code(const GroupedFormat &f) {
  return f.asymmetric || f.codebook != Codebook::none ? 0 : 1 << (f.bits - 1);
}

/// Writes the code quads of one group (K elements k0 .. k0 + group) of
/// panel `panel` at dst, in the order the kernels read: u8 [group/4][32][4];
/// u4 quads of 64 bytes, byte 4c+e holding column c in its low nibble and
/// column 16+c in its high one.
void write_group_codes(uint8_t *dst, const GroupedFormat &f,
                       const uint8_t *codes, int64_t n, int64_t ldc,
                       int64_t panel, int64_t k0) {
  const int pad = padding_code(f);
  for (int64_t c = 0; c < kPanelCols; ++c) {
    const int64_t col = panel * kPanelCols + c;
    for (int64_t kk = 0; kk < f.group; ++kk) {
      int code = pad; // padding columns contribute 0
      if (col < n) {
        code = codes[col * ldc + k0 + kk];
        check(code < 1 << f.bits,
              "code " + std::to_string(code) + " at [" + std::to_string(col) +
                  "][" + std::to_string(k0 + kk) + "] needs more than " +
                  std::to_string(f.bits) + " bits");
      }
      const int64_t q = kk / 4, e = kk % 4;
      if (f.bits == 8) {
        dst[q * 128 + 4 * c + e] = uint8_t(code);
      } else {
        uint8_t &byte = dst[q * 64 + 4 * (c % 16) + e];
        byte = uint8_t(c < 16 ? (byte & 0xF0) | code
                              : (byte & 0x0F) | (code << 4));
      }
    }
  }
}

/// An empty PackedB with the format's fields and zeroed panels.
PackedB make_packed(const GroupedFormat &f, int64_t n, int64_t k) {
  PackedB p;
  p.layout = f.bits == 4 ? BLayout::u4_grouped : BLayout::u8_grouped;
  p.n = n;
  p.k = k;
  p.group = f.group;
  p.asymmetric = f.asymmetric;
  p.super_group = f.super_group;
  p.codebook = f.codebook;
  p.n_panels = (n + kPanelCols - 1) / kPanelCols;
  p.panel_bytes = grouped_panel_bytes(f, k);
  p.data = AlignedBuffer(size_t(p.n_panels * p.panel_bytes));
  return p;
}

/// fp16 values [N][count] -> one panel's [32] at dst (0 in padding).
void put_f16_row(uint8_t *dst, const uint16_t *src, int64_t n, int64_t panel,
                 int64_t count, int64_t index) {
  uint16_t *out = reinterpret_cast<uint16_t *>(dst);
  for (int64_t c = 0; c < kPanelCols; ++c) {
    const int64_t col = panel * kPanelCols + c;
    out[c] = col < n ? src[col * count + index] : 0;
  }
}

/// Bytes [N][count] (int8 or uint8) -> one panel's [32] at dst (0 in padding).
template <class T>
void put_byte_row(uint8_t *dst, const T *src, int64_t n, int64_t panel,
                  int64_t count, int64_t index) {
  for (int64_t c = 0; c < kPanelCols; ++c) {
    const int64_t col = panel * kPanelCols + c;
    dst[c] = col < n ? uint8_t(src[col * count + index]) : 0;
  }
}

} // namespace

int64_t grouped_panel_bytes(int bits, int64_t k, int64_t group,
                            bool asymmetric) {
  GroupedFormat f;
  f.bits = bits;
  f.group = group;
  f.asymmetric = asymmetric;
  return grouped_panel_bytes(f, k);
}

int64_t grouped_panel_bytes(const GroupedFormat &f, int64_t k) {
  const int64_t codes = f.group / 4 * code_quad_bytes(f.bits);
  const int64_t scale_rows = kPanelCols * 2 * (f.asymmetric ? 2 : 1);
  if (f.super_group <= 0)
    return k / f.group * (codes + scale_rows);
  // Per group: codes, then sc[32] int8 and m[32] uint8.
  const int64_t per_super =
      scale_rows + f.super_group / f.group * (codes + 2 * kPanelCols);
  return k / f.super_group * per_super;
}

PackedB pack_b_grouped(const uint8_t *codes, int64_t n, int64_t k, int64_t ldc,
                       int bits, int64_t group, const uint16_t *scales_f16,
                       const uint16_t *mins_f16) {
  check_shape(bits, n, k, group);
  GroupedFormat f;
  f.bits = bits;
  f.group = group;
  f.asymmetric = mins_f16 != nullptr;
  return pack_b_grouped(codes, n, k, ldc, f, scales_f16, mins_f16);
}

PackedB pack_b_grouped(const uint8_t *codes, int64_t n, int64_t k, int64_t ldc,
                       const GroupedFormat &f, const uint16_t *scales_f16,
                       const uint16_t *mins_f16) {
  check_format(f, n, k);
  check(f.super_group == 0,
        "pack_b_grouped packs one-level scales, found super group " +
            std::to_string(f.super_group) + " (use pack_b_grouped_two_level)");
  check(scales_f16 != nullptr, "scales_f16 is null");
  check((mins_f16 != nullptr) == f.asymmetric,
        std::string(f.asymmetric ? "an asymmetric format needs mins_f16"
                                 : "a symmetric format takes no mins_f16") +
            ", found " + (mins_f16 ? "mins" : "null"));
  const int64_t groups = k / f.group;
  const int64_t codes_bytes = f.group / 4 * code_quad_bytes(f.bits);
  const int64_t group_bytes = grouped_panel_bytes(f, f.group);
  PackedB p = make_packed(f, n, k);
  for (int64_t pn = 0; pn < p.n_panels; ++pn)
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t *dst = p.data.data() + pn * p.panel_bytes + g * group_bytes;
      write_group_codes(dst, f, codes, n, ldc, pn, g * f.group);
      put_f16_row(dst + codes_bytes, scales_f16, n, pn, groups, g);
      if (f.asymmetric)
        put_f16_row(dst + codes_bytes + 64, mins_f16, n, pn, groups, g);
    }
  return p;
}

PackedB pack_b_grouped_two_level(const uint8_t *codes, int64_t n, int64_t k,
                                 int64_t ldc, const GroupedFormat &f,
                                 const int8_t *sub_scales,
                                 const uint8_t *sub_mins, const uint16_t *d_f16,
                                 const uint16_t *dmin_f16) {
  check_format(f, n, k);
  check(f.super_group > 0, "pack_b_grouped_two_level packs two-level scales, "
                           "found super group " +
                               std::to_string(f.super_group) +
                               " (use pack_b_grouped)");
  check(sub_scales != nullptr, "sub_scales is null");
  check(d_f16 != nullptr, "d_f16 is null");
  const char *need = f.asymmetric ? " is null (the format is asymmetric)"
                                  : " is given (the format is symmetric)";
  check((sub_mins != nullptr) == f.asymmetric, std::string("sub_mins") + need);
  check((dmin_f16 != nullptr) == f.asymmetric, std::string("dmin_f16") + need);
  const int64_t groups = k / f.group, supers = k / f.super_group;
  const int64_t per_super = f.super_group / f.group;
  const int64_t codes_bytes = f.group / 4 * code_quad_bytes(f.bits);
  const int64_t header_bytes = f.asymmetric ? 128 : 64;
  const int64_t super_bytes = grouped_panel_bytes(f, f.super_group);
  PackedB p = make_packed(f, n, k);
  for (int64_t pn = 0; pn < p.n_panels; ++pn)
    for (int64_t s = 0; s < supers; ++s) {
      uint8_t *block = p.data.data() + pn * p.panel_bytes + s * super_bytes;
      put_f16_row(block, d_f16, n, pn, supers, s);
      if (f.asymmetric)
        put_f16_row(block + 64, dmin_f16, n, pn, supers, s);
      for (int64_t j = 0; j < per_super; ++j) {
        const int64_t g = s * per_super + j;
        uint8_t *dst = block + header_bytes + j * (codes_bytes + 64);
        write_group_codes(dst, f, codes, n, ldc, pn, g * f.group);
        put_byte_row(dst + codes_bytes, sub_scales, n, pn, groups, g);
        if (f.asymmetric)
          put_byte_row(dst + codes_bytes + 32, sub_mins, n, pn, groups, g);
      }
    }
  return p;
}

void quantize_grouped(const float *w, int64_t n, int64_t k, int64_t ldw,
                      int bits, int64_t group, bool asymmetric, uint8_t *codes,
                      uint16_t *scales_f16, uint16_t *mins_f16) {
  check_shape(bits, n, k, group);
  const int64_t groups = k / group;
  const int zp = 1 << (bits - 1), top = (1 << bits) - 1;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const float *src = w + r * ldw + g * group;
      uint8_t *dst = codes + r * k + g * group;
      float lo = src[0], hi = src[0], amax = 0.f, extreme = 0.f;
      for (int64_t kk = 0; kk < group; ++kk) {
        lo = std::min(lo, src[kk]);
        hi = std::max(hi, src[kk]);
        if (std::fabs(src[kk]) > amax)
          amax = std::fabs(src[kk]), extreme = src[kk];
      }
      uint16_t scale = 0, min = 0;
      if (!asymmetric && bits == 4) {
        // 4 bits, as GGUF Q4_0: the element of largest magnitude lands on
        // code 0 (q = -8) with a scale of its sign, so all 16 levels serve
        // (a step of max|w| / 8, not / 7); an element of the opposite sign
        // as large clamps to q = 7, one step off.
        if (amax > 0.f)
          scale = f32_to_f16(float(double(extreme) / -zp));
        const double s = f16_to_f32(scale);
        for (int64_t kk = 0; kk < group; ++kk) {
          const double q = s != 0 ? std::nearbyint(double(src[kk]) / s) : 0.0;
          dst[kk] = uint8_t(std::clamp<double>(q, -zp, zp - 1) + zp);
        }
      } else if (!asymmetric) {
        if (amax > 0.f)
          scale = f16_at_least(double(amax) / (zp - 1));
        const double s = f16_to_f32(scale);
        for (int64_t kk = 0; kk < group; ++kk) {
          const double q = s > 0 ? std::nearbyint(double(src[kk]) / s) : 0.0;
          dst[kk] = uint8_t(std::clamp<double>(q, -zp, zp - 1) + zp);
        }
      } else {
        if (lo != 0.f || hi != 0.f) {
          min = f16_at_least(-double(lo));
          const double range = double(hi) + f16_to_f32(min);
          if (range > 0)
            scale = f16_at_least(range / top);
        }
        const double s = f16_to_f32(scale), m = f16_to_f32(min);
        for (int64_t kk = 0; kk < group; ++kk) {
          const double q =
              s > 0 ? std::nearbyint((double(src[kk]) + m) / s) : 0.0;
          dst[kk] = uint8_t(std::clamp<double>(q, 0, top));
        }
      }
      scales_f16[r * groups + g] = scale;
      if (asymmetric)
        mins_f16[r * groups + g] = min;
    }
}

} // namespace hyc::codegen
