// FP8 (e4m3fn) to bf16 widening for the FP8 weight-only GEMM: a portable
// body (a 256-entry table) and an AVX-512BW one (arithmetic on the 7-bit
// magnitude, a table for the eight subnormals); both exact, the same bits.
#ifndef HYRT_CPU_FP8_H
#define HYRT_CPU_FP8_H

#include <cstdint>

namespace hyrt::cpu {

/// The bf16 bits of every e4m3fn code.
void f8ToBf16Portable(const uint8_t *in, uint16_t *out, int64_t n);
void f8ToBf16Avx512(const uint8_t *in, uint16_t *out, int64_t n);

} // namespace hyrt::cpu

#endif // HYRT_CPU_FP8_H
