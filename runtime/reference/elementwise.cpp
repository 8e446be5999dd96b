// Elementwise reference kernels (placeholder until the reference set lands).
#include "hyrt/reference.h"

#include <cmath>

extern "C" void hyrt_ref_add(const float *a, const float *b, int64_t n,
                             float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] + b[i];
}

extern "C" void hyrt_ref_silu_mul(const float *gate, const float *up,
                                  int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}
