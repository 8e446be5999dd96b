// e4m3fn -> bf16 (see fp8.h and hyrt_cpu_f8_to_bf16 in hyrt/cpu_kernels.h).
#include "fp8.h"
#include "host_isa.h"

#include "hyrt/cpu_kernels.h"

#include <array>

namespace hyrt::cpu {

namespace {

/// bf16 bits of one code. e4m3fn is S.EEEE.MMM with bias 7; bf16 is
/// S.EEEEEEEE.MMMMMMM with bias 127, so a normal code (E >= 1) moves its
/// exponent by 120 and its mantissa up 4 bits. A subnormal (E = 0) is
/// M * 2^-9, normalized here; S.1111.111 is NaN.
uint16_t widen(uint8_t code) {
  const uint16_t sign = uint16_t((code & 0x80) << 8);
  const unsigned mag = code & 0x7F;
  if (mag == 0x7F)
    return sign | 0x7FC0;
  if (mag >= 8)
    return sign | uint16_t((mag << 4) + (120u << 7));
  if (mag == 0)
    return sign;
  // M * 2^-9 = 2^(p - 9) * (M / 2^p) with p the position of M's top bit.
  int p = 2;
  while (!(mag & (1u << p)))
    --p;
  const unsigned exponent = unsigned(p - 9 + 127);
  const unsigned fraction = (mag & ~(1u << p)) << (7 - p);
  return sign | uint16_t((exponent << 7) | fraction);
}

const std::array<uint16_t, 256> &table() {
  static const std::array<uint16_t, 256> t = [] {
    std::array<uint16_t, 256> v{};
    for (int c = 0; c < 256; ++c)
      v[size_t(c)] = widen(uint8_t(c));
    return v;
  }();
  return t;
}

} // namespace

void f8ToBf16Portable(const uint8_t *in, uint16_t *out, int64_t n) {
  const std::array<uint16_t, 256> &t = table();
  for (int64_t i = 0; i < n; ++i)
    out[i] = t[in[i]];
}

} // namespace hyrt::cpu

extern "C" void hyrt_cpu_f8_to_bf16(const uint8_t *in, uint16_t *out, int64_t n) {
  if (hyrt::cpu::hostHasAvx512BwVl())
    hyrt::cpu::f8ToBf16Avx512(in, out, n);
  else
    hyrt::cpu::f8ToBf16Portable(in, out, n);
}
