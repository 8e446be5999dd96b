// e4m3fn encoder (integer round-to-nearest-even on the fp32 bits) and the
// DeepSeek-style block quantizer.
#include "models/checkpoint/fp8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hyc::models {

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// Round-to-nearest-even of m * 2^-shift (m < 2^24, shift >= 0).
uint32_t roundShift(uint32_t m, int shift) {
  if (shift == 0)
    return m;
  if (shift > 25)
    return 0; // m * 2^-shift < 2^-1: rounds to 0
  const uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  return (rem > half || (rem == half && (q & 1u))) ? q + 1 : q;
}

} // namespace

uint8_t f32_to_e4m3fn(float value) {
  const uint32_t b = bitsOf(value);
  const uint8_t sign = static_cast<uint8_t>((b >> 31) << 7);
  const uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u)
    return sign | 0x7F; // NaN
  if (a >= 0x43E00000u) // 448.0f (and infinity): saturate
    return sign | 0x7E;
  // a = M * 2^(ev - 23) with M the 24-bit significand (implicit bit included
  // for normals; fp32 subnormals have ev = -126 and no implicit bit).
  const int biased = static_cast<int>(a >> 23);
  const uint32_t frac = a & 0x7FFFFFu;
  const int ev = biased == 0 ? -126 : biased - 127;
  const uint32_t m = biased == 0 ? frac : (frac | 0x800000u);
  if (ev < -6) {
    // e4m3 subnormal range: quantum 2^-9; q == 8 is the smallest normal
    // (code 0x08), which the code arithmetic below gives for free.
    const int shift = -9 - (ev - 23);
    return sign | static_cast<uint8_t>(roundShift(m, shift));
  }
  // Normal: quantum 2^(ev - 3); q in [8, 16].
  uint32_t q = roundShift(m, 20);
  int e = ev;
  if (q == 16) {
    q = 8;
    ++e;
  }
  return sign | static_cast<uint8_t>(((e + 7) << 3) | (q - 8));
}

Fp8BlockQuant quantize_fp8_block(const float *w, int64_t n, int64_t k,
                                 int64_t block_n, int64_t block_k) {
  Fp8BlockQuant out;
  const int64_t bn = (n + block_n - 1) / block_n;
  const int64_t bk = (k + block_k - 1) / block_k;
  out.scale_shape = {bn, bk};
  out.scale_inv.assign(static_cast<size_t>(bn * bk), 1.0f);
  out.codes.assign(static_cast<size_t>(n * k), 0);
  for (int64_t i = 0; i < bn; ++i)
    for (int64_t j = 0; j < bk; ++j) {
      const int64_t r0 = i * block_n, r1 = std::min(n, r0 + block_n);
      const int64_t c0 = j * block_k, c1 = std::min(k, c0 + block_k);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          amax = std::max(amax, std::fabs(w[r * k + c]));
      const float scale = amax > 0.0f ? amax / 448.0f : 1.0f;
      out.scale_inv[static_cast<size_t>(i * bk + j)] = scale;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          out.codes[static_cast<size_t>(r * k + c)] =
              f32_to_e4m3fn(w[r * k + c] / scale);
    }
  return out;
}

} // namespace hyc::models
