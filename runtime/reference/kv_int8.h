// Symmetric int8 rows of the KV cache (one fp32 scale per row): the one
// definition of the rounding, shared by every append (reference, fused
// decode, MLA latent) so that the kernels and the reference write the same
// codes and scales bit for bit, and by the kernels' dequantization.
#ifndef HYRT_REFERENCE_KV_INT8_H
#define HYRT_REFERENCE_KV_INT8_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hyrt {

/// Quantizes n floats into `codes` and returns the row's scale:
/// scale = max|x| / 127, code = x * (127 / max|x|) rounded to nearest even
/// (so the largest element maps to +-127 exactly and |x - code * scale| is at
/// most scale / 2 up to one fp32 rounding). An all-zero row (or one whose
/// maximum is not a positive finite number) gets scale 0 and zero codes
/// rather than a division by zero: it dequantizes to zeros.
inline float quantizeKvRow(const float *x, int64_t n, int8_t *codes) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    amax = std::fmax(amax, std::fabs(x[i]));
  if (!(amax > 0.0f) || !std::isfinite(amax)) {
    for (int64_t i = 0; i < n; ++i) // a loop, not memset: GCC's object-size check
      codes[i] = 0;                 // warned on size_t(n) for a negative n
    return 0.0f;
  }
  const float inv = 127.0f / amax;
  for (int64_t i = 0; i < n; ++i) {
    const float c = std::nearbyint(x[i] * inv);
    codes[i] = int8_t(c > 127.0f ? 127.0f : c < -127.0f ? -127.0f : c);
  }
  return amax / 127.0f;
}

/// The fp32 value a code stands for (what every kernel computes on load).
inline float dequantKv(int8_t code, float scale) { return float(code) * scale; }

} // namespace hyrt

#endif // HYRT_REFERENCE_KV_INT8_H
