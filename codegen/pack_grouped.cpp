// The grouped integer layouts (u4_grouped, u8_grouped; brgemm.h "Grouped
// integer kernels"): fp16 conversion, the per-group quantizer whose fp16
// scales and mins are exactly what the kernels multiply, and the packer.
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

} // namespace

int64_t grouped_panel_bytes(int bits, int64_t k, int64_t group,
                            bool asymmetric) {
  const int64_t per_group =
      group / 4 * code_quad_bytes(bits) + kPanelCols * 2 * (asymmetric ? 2 : 1);
  return k / group * per_group;
}

PackedB pack_b_grouped(const uint8_t *codes, int64_t n, int64_t k, int64_t ldc,
                       int bits, int64_t group, const uint16_t *scales_f16,
                       const uint16_t *mins_f16) {
  check_shape(bits, n, k, group);
  const bool asym = mins_f16 != nullptr;
  const int64_t groups = k / group;
  const int64_t codes_bytes = group / 4 * code_quad_bytes(bits);
  const int64_t group_bytes = grouped_panel_bytes(bits, group, group, asym);
  PackedB p;
  p.layout = bits == 4 ? BLayout::u4_grouped : BLayout::u8_grouped;
  p.n = n;
  p.k = k;
  p.group = group;
  p.asymmetric = asym;
  p.n_panels = (n + kPanelCols - 1) / kPanelCols;
  p.panel_bytes = grouped_panel_bytes(bits, k, group, asym);
  p.data = AlignedBuffer(size_t(p.n_panels * p.panel_bytes));
  const int zero_point = asym ? 0 : 1 << (bits - 1);
  for (int64_t pn = 0; pn < p.n_panels; ++pn)
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t *dst = p.data.data() + pn * p.panel_bytes + g * group_bytes;
      uint16_t *scales = reinterpret_cast<uint16_t *>(dst + codes_bytes);
      uint16_t *mins = scales + kPanelCols;
      for (int64_t c = 0; c < kPanelCols; ++c) {
        const int64_t col = pn * kPanelCols + c;
        const bool real = col < n;
        if (real) {
          scales[c] = scales_f16[col * groups + g];
          if (asym)
            mins[c] = mins_f16[col * groups + g];
        }
        for (int64_t kk = 0; kk < group; ++kk) {
          int code = zero_point; // padding columns contribute 0
          if (real) {
            code = codes[col * ldc + g * group + kk];
            check(code < 1 << bits, "code " + std::to_string(code) + " at [" +
                                        std::to_string(col) + "][" +
                                        std::to_string(g * group + kk) +
                                        "] needs more than " +
                                        std::to_string(bits) + " bits");
          }
          const int64_t q = kk / 4, e = kk % 4;
          if (bits == 8) {
            dst[q * 128 + 4 * c + e] = uint8_t(code);
          } else {
            uint8_t &byte = dst[q * 64 + 4 * (c % 16) + e];
            byte = uint8_t(c < 16 ? (byte & 0xF0) | code
                                  : (byte & 0x0F) | (code << 4));
          }
        }
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
