// AWQ GEMM word packing and the asymmetric int4 group quantizer.
#include "models/checkpoint/int4_pack.h"

#include "models/io/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace hyc::models {

std::vector<int32_t> pack_awq_rows(const uint8_t *values, int64_t rows, int64_t cols) {
  const int64_t words = cols / 8;
  std::vector<int32_t> out(static_cast<size_t>(rows * words));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < words; ++j) {
      const uint8_t *v = values + r * cols + 8 * j;
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i)
        word |= uint32_t(v[kAwqNibbleColumn[i]] & 15u) << (4 * i);
      out[size_t(r * words + j)] = static_cast<int32_t>(word);
    }
  return out;
}

void unpack_awq_rows(const uint8_t *words, int64_t rows, int64_t cols, uint8_t *values) {
  const int64_t perRow = cols / 8;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < perRow; ++j) {
      uint32_t word;
      std::memcpy(&word, words + 4 * (r * perRow + j), 4);
      uint8_t *v = values + r * cols + 8 * j;
      for (int i = 0; i < 8; ++i)
        v[kAwqNibbleColumn[i]] = uint8_t((word >> (4 * i)) & 15u);
    }
}

namespace {

/// The smallest fp16 at or above `x` (x > 0 and finite); 0x7C00 (infinity)
/// when x is above the largest fp16.
uint16_t f16AtLeast(float x) {
  uint16_t bits = io::f32_to_f16(x);
  if (bits < 0x7C00 && io::f16_to_f32(bits) < x)
    ++bits; // positive fp16 bit patterns order as their values
  return bits;
}

} // namespace

Expected<Int4GroupQuant> quantize_int4_groups(const float *w, int64_t n, int64_t k, int64_t group) {
  if (n < 0 || k <= 0 || group <= 0 || k % group != 0)
    return Error("int4 group quantization: group size " + std::to_string(group) +
                 " does not divide K=" + std::to_string(k));
  Int4GroupQuant out;
  out.n = n, out.k = k, out.group = group;
  const int64_t groups = k / group;
  out.q.resize(size_t(n * k));
  out.zeros.resize(size_t(n * groups));
  out.scales.resize(size_t(n * groups));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const float *x = w + r * k + g * group;
      float lo = 0.0f, hi = 0.0f;
      for (int64_t i = 0; i < group; ++i) {
        if (!std::isfinite(x[i]))
          return Error("int4 group quantization: element [" + std::to_string(r) + "][" +
                       std::to_string(g * group + i) + "] is not finite");
        lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
      }
      const uint16_t sBits = hi > lo ? f16AtLeast((hi - lo) / 15.0f) : 0x3C00;
      if (sBits >= 0x7C00)
        return Error("int4 group quantization: row " + std::to_string(r) + " group " +
                     std::to_string(g) + " spans " + std::to_string(hi - lo) +
                     ", wider than 15 fp16 steps can hold");
      const float s = io::f16_to_f32(sBits);
      const float z = std::clamp(std::nearbyint(-lo / s), 0.0f, 15.0f);
      out.scales[size_t(r * groups + g)] = sBits;
      out.zeros[size_t(r * groups + g)] = uint8_t(z);
      uint8_t *q = out.q.data() + r * k + g * group;
      for (int64_t i = 0; i < group; ++i)
        q[i] = uint8_t(std::clamp(std::nearbyint(x[i] / s) + z, 0.0f, 15.0f));
    }
  return out;
}

void dequantize_int4_groups(const Int4GroupQuant &q, float *out) {
  const int64_t groups = q.k / q.group;
  for (int64_t r = 0; r < q.n; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const float s = io::f16_to_f32(q.scales[size_t(r * groups + g)]);
      const int z = q.zeros[size_t(r * groups + g)];
      const size_t at = size_t(r * q.k + g * q.group);
      for (int64_t i = 0; i < q.group; ++i)
        out[at + size_t(i)] = s * float(int(q.q[at + size_t(i)]) - z);
    }
}

bool int4_groups_to_q4z128(const Int4GroupQuant &q, StoredCodes &out) {
  constexpr int64_t kSub = 128, kSuper = 128;
  if (q.group <= 0 || q.group % kSuper != 0 || q.k % q.group != 0)
    return false;
  const int64_t groups = q.k / q.group, subs = q.k / kSub, supers = q.k / kSuper;
  out = StoredCodes();
  out.format = "q4z128";
  out.n = q.n, out.k = q.k;
  out.codes = q.q;
  // The group's scale and zero point repeat over the 128-blocks it spans:
  // the kernels' two-level layout with one group per super-block (sc = 1),
  // so a kernel folds once per 128 elements.
  out.sub_scales.assign(size_t(q.n * subs), 1);
  out.sub_mins.resize(size_t(q.n * subs));
  out.d.resize(size_t(q.n * supers));
  for (int64_t r = 0; r < q.n; ++r) {
    for (int64_t s = 0; s < subs; ++s)
      out.sub_mins[size_t(r * subs + s)] = q.zeros[size_t(r * groups + s * kSub / q.group)];
    for (int64_t s = 0; s < supers; ++s)
      out.d[size_t(r * supers + s)] = q.scales[size_t(r * groups + s * kSuper / q.group)];
  }
  out.dmin = out.d;
  return true;
}

} // namespace hyc::models
