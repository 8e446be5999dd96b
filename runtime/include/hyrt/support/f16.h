// IEEE binary16 -> fp32 for the runtime (the fp16 scales of the integer-code
// layouts): exact, subnormals, infinities and NaN included, as vcvtph2ps
// widens them.
#ifndef HYRT_SUPPORT_F16_H
#define HYRT_SUPPORT_F16_H

#include <cmath>
#include <cstdint>

namespace hyrt {

inline float fromF16(uint16_t h) {
  const int exp = (h >> 10) & 31, mant = h & 1023;
  float v;
  if (exp == 0)
    v = std::ldexp(float(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(float(mant + 1024), exp - 25);
  return h & 0x8000 ? -v : v;
}

} // namespace hyrt

#endif // HYRT_SUPPORT_F16_H
