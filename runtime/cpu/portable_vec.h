// Internal to runtime/cpu: element access, dot and axpy over fp32, bf16 or
// int8 rows for the portable kernel bodies (an int8 row's scale is the
// caller's: it multiplies the dot product or the axpy weight once per row). Always inlined, so each GCC target
// clone of a caller vectorizes them for its own ISA without a call per row.
#ifndef HYRT_CPU_PORTABLE_VEC_H
#define HYRT_CPU_PORTABLE_VEC_H

#include "../reference/bf16.h"

#include <cstdint>

namespace hyrt::cpu {

inline __attribute__((always_inline)) float elem(const float *p, int64_t i) { return p[i]; }
inline __attribute__((always_inline)) float elem(const uint16_t *p, int64_t i) {
  return hyrt::fromBf16(p[i]); // exact widening
}
inline __attribute__((always_inline)) float elem(const int8_t *p, int64_t i) {
  return float(p[i]); // the code; the row's scale is applied by the caller
}

template <typename T>
inline __attribute__((always_inline)) float dot(const float *a, const T *b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i)
    acc += a[i] * elem(b, i);
  return acc;
}

template <typename T>
inline __attribute__((always_inline)) void axpy(float w, const T *x, float *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] += w * elem(x, i);
}

} // namespace hyrt::cpu

#endif // HYRT_CPU_PORTABLE_VEC_H
