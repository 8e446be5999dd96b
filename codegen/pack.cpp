// Weight packers (VNNI pair/quad panels with zero padding, s8 compensation),
// bf16 conversion and the symmetric int8 quantizers.
#include "codegen/pack.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <new>

#include <sys/mman.h>

namespace hyc::codegen {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

PackedB make_packed(BLayout layout, int64_t n, int64_t k) {
  PackedB p;
  p.layout = layout;
  p.n = n;
  p.k = k;
  p.n_panels = ceil_div(n, kPanelCols);
  p.panel_bytes = packed_panel_bytes(layout, k);
  p.data = AlignedBuffer(size_t(p.n_panels * p.panel_bytes));
  return p;
}

} // namespace

void AlignedBuffer::Free::operator()(uint8_t *p) const { std::free(p); }

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0)
    return;
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  const size_t rounded = (bytes + align - 1) / align * align;
  void *p = std::aligned_alloc(align, rounded);
  if (!p)
    throw std::bad_alloc();
  if (align == kHugePage)
    madvise(p, rounded, MADV_HUGEPAGE); // advisory: failure is harmless
  std::memset(p, 0, rounded);
  data_.reset(static_cast<uint8_t *>(p));
}

int64_t packed_k_steps(BLayout layout, int64_t k) {
  switch (layout) {
  case BLayout::f32_k1:
    return k;
  case BLayout::bf16_vnni2:
    return ceil_div(k, 2);
  case BLayout::s8_vnni4:
    return ceil_div(k, 4);
  case BLayout::f8_vnni2: // K pairs of whole 128-blocks, 64 bytes each
    return ceil_div(k, 128) * 64;
  case BLayout::u8_grouped:
  case BLayout::u4_grouped:
    return ceil_div(k, 4);
  }
  return 0;
}

int64_t packed_comp_offset(int64_t k) {
  return packed_k_steps(BLayout::s8_vnni4, k) * 128;
}

int64_t packed_panel_bytes(BLayout layout, int64_t k) {
  if (layout == BLayout::u8_grouped || layout == BLayout::u4_grouped)
    return 0; // depends on the group: grouped_panel_bytes
  const int64_t body =
      packed_k_steps(layout, k) * (layout == BLayout::f8_vnni2 ? 64 : 128);
  return layout == BLayout::s8_vnni4 ? body + kPanelCols * 4 : body;
}

uint16_t f32_to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep sign, force quiet
    return uint16_t((bits >> 16) | 0x0040u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

float bf16_to_f32(uint16_t x) {
  const uint32_t bits = uint32_t(x) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

PackedB pack_b_f32(const float *w, int64_t n, int64_t k, int64_t ldw) {
  PackedB p = make_packed(BLayout::f32_k1, n, k);
  for (int64_t pn = 0; pn < p.n_panels; ++pn) {
    float *dst = reinterpret_cast<float *>(p.data.data() + pn * p.panel_bytes);
    const int64_t cols = std::min<int64_t>(kPanelCols, n - pn * kPanelCols);
    for (int64_t c = 0; c < cols; ++c) {
      const float *src = w + (pn * kPanelCols + c) * ldw;
      for (int64_t kk = 0; kk < k; ++kk)
        dst[kk * kPanelCols + c] = src[kk];
    }
  }
  return p;
}

namespace {

template <class Load> PackedB pack_bf16_impl(int64_t n, int64_t k, Load load) {
  PackedB p = make_packed(BLayout::bf16_vnni2, n, k);
  for (int64_t pn = 0; pn < p.n_panels; ++pn) {
    uint16_t *dst =
        reinterpret_cast<uint16_t *>(p.data.data() + pn * p.panel_bytes);
    const int64_t cols = std::min<int64_t>(kPanelCols, n - pn * kPanelCols);
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t kk = 0; kk < k; ++kk)
        dst[((kk >> 1) * kPanelCols + c) * 2 + (kk & 1)] =
            load(pn * kPanelCols + c, kk);
  }
  return p;
}

} // namespace

PackedB pack_b_bf16(const uint16_t *w, int64_t n, int64_t k, int64_t ldw) {
  return pack_bf16_impl(n, k,
                        [&](int64_t r, int64_t kk) { return w[r * ldw + kk]; });
}

PackedB pack_b_bf16_from_f32(const float *w, int64_t n, int64_t k,
                             int64_t ldw) {
  return pack_bf16_impl(n, k, [&](int64_t r, int64_t kk) {
    return f32_to_bf16(w[r * ldw + kk]);
  });
}

PackedB pack_b_f8(const uint8_t *codes, int64_t n, int64_t k, int64_t ldw) {
  constexpr int64_t kBlock = 128;
  PackedB p;
  p.layout = BLayout::bf16_vnni2;
  p.n = n;
  p.k = k;
  p.n_panels = ceil_div(n, kPanelCols);
  p.panel_bytes = ceil_div(k, kBlock) * kBlock * kPanelCols;
  p.data = AlignedBuffer(size_t(p.n_panels * p.panel_bytes));
  for (int64_t pn = 0; pn < p.n_panels; ++pn) {
    uint8_t *dst = p.data.data() + pn * p.panel_bytes;
    const int64_t cols = std::min<int64_t>(kPanelCols, n - pn * kPanelCols);
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t kk = 0; kk < k; ++kk)
        dst[((kk >> 1) * kPanelCols + c) * 2 + (kk & 1)] =
            codes[(pn * kPanelCols + c) * ldw + kk];
  }
  return p;
}

PackedB pack_b_s8(const int8_t *w, int64_t n, int64_t k, int64_t ldw) {
  PackedB p = make_packed(BLayout::s8_vnni4, n, k);
  const int64_t comp_off = packed_comp_offset(k);
  for (int64_t pn = 0; pn < p.n_panels; ++pn) {
    uint8_t *panel = p.data.data() + pn * p.panel_bytes;
    int8_t *dst = reinterpret_cast<int8_t *>(panel);
    int32_t comp[kPanelCols] = {};
    const int64_t cols = std::min<int64_t>(kPanelCols, n - pn * kPanelCols);
    for (int64_t c = 0; c < cols; ++c) {
      const int8_t *src = w + (pn * kPanelCols + c) * ldw;
      int32_t sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        dst[((kk >> 2) * kPanelCols + c) * 4 + (kk & 3)] = src[kk];
        sum += src[kk];
      }
      comp[c] = 128 * sum;
    }
    std::memcpy(panel + comp_off, comp, sizeof(comp));
  }
  return p;
}

PackedB pack_b_s8_grouped(const int8_t *w, int64_t n, int64_t k, int64_t ldw,
                          int64_t group) {
  const int64_t groups = (k + group - 1) / group;
  const int64_t block = packed_panel_bytes(BLayout::s8_vnni4, group);
  PackedB out = make_packed(BLayout::s8_vnni4, n, group);
  out.panel_bytes = groups * block;
  out.data = AlignedBuffer(size_t(out.n_panels * out.panel_bytes));
  std::vector<int8_t> part(size_t(n * group));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t width = std::min(group, k - g * group);
    std::fill(part.begin(), part.end(), int8_t(0));
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(&part[size_t(r * group)], w + r * ldw + g * group, size_t(width));
    const PackedB pg = pack_b_s8(part.data(), n, group, group);
    for (int64_t p = 0; p < out.n_panels; ++p)
      std::memcpy(out.data.data() + p * out.panel_bytes + g * block, pg.panel(p),
                  size_t(block));
  }
  return out;
}

void quantize_s8_per_group(const float *w, int64_t n, int64_t k, int64_t ldw,
                           int64_t group, int8_t *q, float *scales) {
  const int64_t groups = (k + group - 1) / group;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t k0 = g * group, k1 = std::min(k, k0 + group);
      float amax = 0.f;
      for (int64_t kk = k0; kk < k1; ++kk)
        amax = std::max(amax, std::fabs(w[r * ldw + kk]));
      const float scale = amax > 0.f ? amax / 127.f : 1.f;
      scales[r * groups + g] = scale;
      for (int64_t kk = k0; kk < k1; ++kk) {
        const float v = std::nearbyint(w[r * ldw + kk] / scale);
        q[r * k + kk] = int8_t(std::clamp(v, -127.f, 127.f));
      }
    }
}

void quantize_s8_per_channel(const float *w, int64_t n, int64_t k, int64_t ldw,
                             int8_t *q, float *scales) {
  for (int64_t r = 0; r < n; ++r) {
    const float *row = w + r * ldw;
    float amax = 0.f;
    for (int64_t kk = 0; kk < k; ++kk)
      amax = std::max(amax, std::fabs(row[kk]));
    const float scale = amax > 0.f ? amax / 127.f : 1.f;
    scales[r] = scale;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float v = std::nearbyint(row[kk] / scale);
      q[r * k + kk] = int8_t(std::clamp(v, -127.f, 127.f));
    }
  }
}

void quantize_u8_per_token(const float *x, int64_t m, int64_t k, int64_t ldx,
                           uint8_t *q, int64_t ldq, float *scales) {
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * ldx;
    float amax = 0.f;
    for (int64_t kk = 0; kk < k; ++kk)
      amax = std::max(amax, std::fabs(row[kk]));
    const float scale = amax > 0.f ? amax / 127.f : 1.f;
    scales[r] = scale;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float v =
          std::clamp(std::nearbyint(row[kk] / scale), -127.f, 127.f);
      q[r * ldq + kk] = uint8_t(int(v) + 128);
    }
  }
}

} // namespace hyc::codegen
