// The AVX-512 helpers of runtime/cpu/vec_avx512.h that promise bit-exact
// agreement with a scalar definition: toBf16x16 against hyrt::toBf16 on
// every class of float (round-to-even ties both ways, carries into the
// exponent, the largest finite values rounding to infinity, subnormals,
// infinities, signalling and quiet NaNs with payloads) and on random bits.
#include "runtime/cpu/host_isa.h"
#include "runtime/reference/bf16.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <random>
#include <vector>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#include "runtime/cpu/vec_avx512.h"

namespace {

void convert16(const uint32_t *bits, uint16_t *out) {
  __m512 v;
  std::memcpy(&v, bits, 64);
  const __m256i r = hyrt::cpu::toBf16x16(v);
  std::memcpy(out, &r, 32);
}

#pragma GCC pop_options

TEST(VecAvx512, ToBf16x16EqualsTheScalarRounding) {
  if (!hyrt::cpu::hostHasAvx512BwVl())
    GTEST_SKIP() << "host lacks AVX-512 BW/VL: the AVX-512 helpers do not run here";
  std::vector<uint32_t> bits = {
      0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u, // zeros, +-1
      0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f807fffu, // ties to even (down, up), off-tie
      0x3fffffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f7f7fffu, // carries; max finite -> inf
      0x00000001u, 0x007fffffu, 0x00008000u, 0x80018000u, // subnormals, a subnormal tie
      0x7f800000u, 0xff800000u, 0x7f800001u, 0xffc00000u, // infinities, NaNs
      0x7fa00000u, 0x7f80ffffu, 0xffbfffffu, 0x7fffffffu};
  std::mt19937 rng(7);
  while (bits.size() % 16 != 0 || bits.size() < 4096)
    bits.push_back(uint32_t(rng()));
  for (size_t i = 0; i < bits.size(); i += 16) {
    uint16_t got[16];
    convert16(bits.data() + i, got);
    for (size_t j = 0; j < 16; ++j) {
      float f;
      std::memcpy(&f, &bits[i + j], 4);
      ASSERT_EQ(got[j], hyrt::toBf16(f)) << std::hex << "bits 0x" << bits[i + j];
    }
  }
}

} // namespace
