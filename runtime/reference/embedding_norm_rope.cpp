// Reference kernels for token embedding, RMSNorm and rotary embedding.
#include "hyrt/reference.h"

#include "rope_math.h"

#include <cmath>
#include <cstring>
#include <vector>

extern "C" void hyrt_ref_embedding(const float *table, int64_t vocab,
                                   int64_t dim, const int32_t *ids,
                                   int64_t num_tokens, float *out) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    float *row = out + t * dim;
    const int64_t id = ids[t];
    if (id < 0 || id >= vocab) {
      std::memset(row, 0, sizeof(float) * dim);
      continue;
    }
    std::memcpy(row, table + id * dim, sizeof(float) * dim);
  }
}

extern "C" void hyrt_ref_rms_norm(const float *x, const float *residual,
                                  const float *w, int64_t rows, int64_t dim,
                                  float eps, float *out, float *residual_out) {
  // The sum goes through a row copy so that out / residual_out may alias the
  // inputs (in-place use).
  std::vector<float> s(dim);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * dim;
    for (int64_t i = 0; i < dim; ++i)
      s[i] = residual ? xr[i] + residual[r * dim + i] : xr[i];
    double sum_sq = 0.0;
    for (int64_t i = 0; i < dim; ++i)
      sum_sq += double(s[i]) * double(s[i]);
    const float inv_rms =
        float(1.0 / std::sqrt(sum_sq / double(dim) + double(eps)));
    if (residual_out)
      std::memcpy(residual_out + r * dim, s.data(), sizeof(float) * dim);
    for (int64_t i = 0; i < dim; ++i)
      out[r * dim + i] = s[i] * inv_rms * w[i];
  }
}

namespace rope = hyrt::rope;

extern "C" void hyrt_ref_rope(const float *x, const int32_t *positions,
                              int64_t num_tokens, int64_t heads,
                              int64_t head_dim, int64_t rotary_dim,
                              int32_t neox, const float *inv_freq,
                              float mscale, float *out) {
  const int64_t half = rotary_dim / 2;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float pos = float(positions[t]);
    for (int64_t h = 0; h < heads; ++h) {
      const float *xi = x + (t * heads + h) * head_dim;
      float *o = out + (t * heads + h) * head_dim;
      for (int64_t i = rotary_dim; i < head_dim; ++i)
        o[i] = xi[i];
      for (int64_t i = 0; i < half; ++i) {
        float c, s;
        rope::cosSin(pos, inv_freq[i], mscale, c, s);
        rope::rotatePair(xi, o, i, half, neox != 0, c, s);
      }
    }
  }
}
