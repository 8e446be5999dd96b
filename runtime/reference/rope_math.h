// The per-element arithmetic of RoPE, shared by the reference kernel and
// the optimized one (runtime/cpu/rope.cpp) so that they agree bit for bit by
// construction: fp32 angle as in llama2.c and Hugging Face, cos/sin in
// double, then one rotation of an (a, b) pair.
#ifndef HYRT_REFERENCE_ROPE_MATH_H
#define HYRT_REFERENCE_ROPE_MATH_H

#include <cmath>
#include <cstdint>

namespace hyrt::rope {

/// cos and sin of position `pos` at frequency `inv_freq`, times `mscale`.
inline void cosSin(float pos, float inv_freq, float mscale, float &c, float &s) {
  const float angle = pos * inv_freq;
  c = float(std::cos(double(angle))) * mscale;
  s = float(std::sin(double(angle))) * mscale;
}

/// Rotates pair i of a head (NeoX: i and i + half; interleaved: 2i, 2i + 1)
/// from `x` into `o`.
inline void rotatePair(const float *x, float *o, int64_t i, int64_t half, bool neox,
                       float c, float s) {
  const int64_t a = neox ? i : 2 * i;
  const int64_t b = neox ? i + half : 2 * i + 1;
  const float x0 = x[a], x1 = x[b];
  o[a] = x0 * c - x1 * s;
  o[b] = x0 * s + x1 * c;
}

} // namespace hyrt::rope

#endif // HYRT_REFERENCE_ROPE_MATH_H
