// bf16 <-> fp32 for the runtime's kernels (KV cache rows, converted GEMM
// activations): round to nearest even, NaN kept a quiet NaN; bf16 -> fp32
// is exact.
#ifndef HYRT_REFERENCE_BF16_H
#define HYRT_REFERENCE_BF16_H

#include <cstdint>
#include <cstring>

namespace hyrt {

inline uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float fromBf16(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace hyrt

#endif // HYRT_REFERENCE_BF16_H
