// The grouped kernel tests' weights, unpacker, problems, scalar reference
// and bit-exact check (grouped_test_util.h).
#include "grouped_test_util.h"

#include "codegen_test_util.h"

#include "codegen/tiles.h"
#include "hyrt/support/iq4nl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

namespace hyc::codegen::test {

GroupedFormat grouped(int bits, int64_t group, int64_t super_group,
                      bool asymmetric, Codebook codebook) {
  GroupedFormat f;
  f.bits = bits;
  f.group = group;
  f.super_group = super_group;
  f.asymmetric = asymmetric;
  f.codebook = codebook;
  return f;
}

GroupedWeights::GroupedWeights(const GroupedFormat &format, int k, int cols)
    : f(format), k(k), cols(cols), codes(size_t(cols) * k, 0),
      scales(size_t(cols) * groups(), 0), mins(scales.size(), 0),
      sc(scales.size(), 0), m(scales.size(), 0), d(size_t(cols) * supers(), 0),
      dmin(d.size(), 0) {}

int GroupedWeights::zero_point() const {
  if (f.asymmetric)
    return 0;
  return f.codebook == Codebook::iq4nl ? 128 : 1 << (f.bits - 1);
}

int GroupedWeights::padding_code() const {
  return f.codebook == Codebook::iq4nl ? 0 : zero_point();
}

int GroupedWeights::value(int n, int kk) const {
  const uint8_t c = codes[size_t(n) * k + kk];
  return f.codebook == Codebook::iq4nl ? hyrt::kIq4nlU8[c] : c;
}

float GroupedWeights::scale(int n, int g) const {
  const size_t e = size_t(n) * groups() + g;
  if (!two_level())
    return f16_to_f32(scales[e]);
  const int s = g / int(f.super_group / f.group);
  return f16_to_f32(d[size_t(n) * supers() + s]) * float(sc[e]);
}

float GroupedWeights::min(int n, int g) const {
  const size_t e = size_t(n) * groups() + g;
  if (!two_level())
    return f16_to_f32(mins[e]);
  const int s = g / int(f.super_group / f.group);
  return f16_to_f32(dmin[size_t(n) * supers() + s]) * float(m[e]);
}

PackedB pack_weights(const GroupedWeights &w, int n_valid) {
  const bool asym = w.f.asymmetric;
  if (w.two_level())
    return pack_b_grouped_two_level(w.codes.data(), n_valid, w.k, w.k, w.f,
                                    w.sc.data(), asym ? w.m.data() : nullptr,
                                    w.d.data(), asym ? w.dmin.data() : nullptr);
  return pack_b_grouped(w.codes.data(), n_valid, w.k, w.k, w.f, w.scales.data(),
                        asym ? w.mins.data() : nullptr);
}

namespace {

/// Codes of one group's quads at src (the layouts of brgemm.h) into w.
void read_group_codes(GroupedWeights &w, const uint8_t *src, int g) {
  const int group = int(w.f.group);
  for (int c = 0; c < kGroupedCols; ++c)
    for (int kk = 0; kk < group; ++kk) {
      const int q = kk / 4, e = kk % 4;
      uint8_t v;
      if (w.f.bits == 8) {
        v = src[q * 128 + 4 * c + e];
      } else {
        const uint8_t byte = src[q * 64 + 4 * (c % 16) + e];
        v = c < 16 ? byte & 0x0F : byte >> 4;
      }
      w.codes[size_t(c) * w.k + g * group + kk] = v;
    }
}

uint16_t f16_at(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

} // namespace

GroupedWeights unpack_panel(const PackedB &p, int64_t panel) {
  const GroupedFormat f =
      grouped(p.layout == BLayout::u4_grouped ? 4 : 8, p.group, p.super_group,
              p.asymmetric, p.codebook);
  GroupedWeights w(f, int(p.k), kGroupedCols);
  const int64_t codes_bytes = f.group / 4 * (f.bits == 4 ? 64 : 128);
  const uint8_t *base = p.panel(panel);
  if (!w.two_level()) {
    const int64_t group_bytes = codes_bytes + (f.asymmetric ? 128 : 64);
    for (int g = 0; g < w.groups(); ++g) {
      const uint8_t *src = base + g * group_bytes;
      read_group_codes(w, src, g);
      for (int c = 0; c < kGroupedCols; ++c) {
        const size_t e = size_t(c) * w.groups() + g;
        w.scales[e] = f16_at(src + codes_bytes + 2 * c);
        if (f.asymmetric)
          w.mins[e] = f16_at(src + codes_bytes + 64 + 2 * c);
      }
    }
    return w;
  }
  const int per_super = int(f.super_group / f.group);
  const int64_t header = f.asymmetric ? 128 : 64;
  const int64_t super_bytes = header + per_super * (codes_bytes + 64);
  for (int s = 0; s < w.supers(); ++s) {
    const uint8_t *block = base + s * super_bytes;
    for (int c = 0; c < kGroupedCols; ++c) {
      w.d[size_t(c) * w.supers() + s] = f16_at(block + 2 * c);
      if (f.asymmetric)
        w.dmin[size_t(c) * w.supers() + s] = f16_at(block + 64 + 2 * c);
    }
    for (int j = 0; j < per_super; ++j) {
      const int g = s * per_super + j;
      const uint8_t *src = block + header + j * (codes_bytes + 64);
      read_group_codes(w, src, g);
      for (int c = 0; c < kGroupedCols; ++c) {
        const size_t e = size_t(c) * w.groups() + g;
        w.sc[e] = int8_t(src[codes_bytes + c]);
        w.m[e] = src[codes_bytes + 32 + c]; // zeros when symmetric
      }
    }
  }
  return w;
}

namespace {

/// Normal fp16 of mixed sign with magnitudes from 2^-14 to 2^6.
uint16_t random_scale(std::mt19937 &rng) {
  const float mag =
      std::ldexp(1.f + float(rng() % 1024) / 1024.f, int(rng() % 21) - 14);
  return f32_to_f16(rng() % 2 ? -mag : mag);
}

/// A scalar activation quantizer: q = round(x / s), s = max|x| / 127 per
/// row (one-level formats) or per group (two-level), and a_sum[m][g] the
/// sum of q over each group.
void quantize_activations(const std::vector<float> &x, Problem &p) {
  const int k = p.k(), groups = p.w.groups(), group = int(p.w.f.group);
  const int span = p.w.two_level() ? group : k; // elements per scale
  p.a.assign(size_t(p.rows) * k, 0);
  p.a_sum.assign(size_t(p.rows) * groups, 0);
  p.a_scale.assign(size_t(p.rows), 0.f);
  p.a_group_scale.assign(p.w.two_level() ? size_t(p.rows) * groups : 0, 0.f);
  for (int m = 0; m < p.rows; ++m)
    for (int k0 = 0; k0 < k; k0 += span) {
      float amax = 0.f;
      for (int kk = k0; kk < k0 + span; ++kk)
        amax = std::max(amax, std::fabs(x[size_t(m) * k + kk]));
      const float s = amax > 0 ? amax / 127.f : 1.f;
      if (p.w.two_level())
        p.a_group_scale[size_t(m) * groups + k0 / group] = s;
      else
        p.a_scale[size_t(m)] = s;
      for (int kk = k0; kk < k0 + span; ++kk) {
        const int q = int(std::nearbyint(x[size_t(m) * k + kk] / s));
        p.a[size_t(m) * k + kk] = int8_t(std::clamp(q, -127, 127));
        p.a_sum[size_t(m) * groups + kk / group] += p.a[size_t(m) * k + kk];
      }
    }
}

/// Saturated activations (127 and -128), then the row sums.
void extreme_activations(Problem &p) {
  const int k = p.k(), groups = p.w.groups(), group = int(p.w.f.group);
  for (int m = 0; m < p.rows; ++m) {
    for (int kk = 0; kk < k; ++kk)
      p.a[size_t(m) * k + kk] = (kk + m) % 3 == 0 ? 127 : int8_t(-128);
    for (int g = 0; g < groups; ++g) {
      int32_t s = 0;
      for (int kk = g * group; kk < (g + 1) * group; ++kk)
        s += p.a[size_t(m) * k + kk];
      p.a_sum[size_t(m) * groups + g] = s;
    }
  }
}

void fill_scales(Problem &p, Fill fill, std::mt19937 &rng) {
  GroupedWeights &w = p.w;
  static const int kSc[] = {-128, 127, -32, 31};
  static const int kMin[] = {0, 63, 255};
  for (int n = 0; n < p.n_valid; ++n) {
    for (int g = 0; g < w.groups(); ++g) {
      const size_t e = size_t(n) * w.groups() + g;
      if (!w.two_level()) {
        w.scales[e] = random_scale(rng);
        if (w.f.asymmetric)
          w.mins[e] = f32_to_f16(uniform(rng) * 4.f);
        continue;
      }
      const bool edge = fill == Fill::extremes && (g + n) % 5 != 0;
      w.sc[e] = int8_t(edge ? kSc[(g + n) % 4] : int(rng() % 256) - 128);
      if (w.f.asymmetric)
        w.m[e] = uint8_t(edge ? kMin[(g + 2 * n) % 3] : rng() % 256);
    }
    for (int s = 0; s < w.supers(); ++s) {
      w.d[size_t(n) * w.supers() + s] = random_scale(rng);
      if (w.f.asymmetric)
        w.dmin[size_t(n) * w.supers() + s] = f32_to_f16(uniform(rng) * 4.f);
    }
  }
}

} // namespace

Problem make_problem(const GroupedFormat &f, int k, int rows, int n_valid,
                     Fill fill, uint32_t seed) {
  Problem p{
      GroupedWeights(f, k, kGroupedCols), n_valid, rows, {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  const int top = (1 << f.bits) - 1;
  for (int n = 0; n < kGroupedCols; ++n)
    for (int kk = 0; kk < k; ++kk) {
      int code = int(rng() % uint32_t(top + 1));
      if (fill == Fill::extremes) // runs of 0 and top, a few in between
        code = (kk / 3 + n) % 4 == 0 ? int(rng() % uint32_t(top + 1))
                                     : ((kk + n) % 2 ? top : 0);
      p.w.codes[size_t(n) * k + kk] =
          uint8_t(n < n_valid ? code : p.w.padding_code());
    }
  fill_scales(p, fill, rng);
  std::vector<float> x(size_t(rows) * k);
  for (float &v : x)
    v = uniform(rng);
  quantize_activations(x, p);
  if (fill == Fill::extremes)
    extreme_activations(p);
  p.bias.resize(kGroupedCols);
  p.c_old.resize(size_t(rows) * kGroupedCols);
  for (float &v : p.bias)
    v = uniform(rng);
  for (float &v : p.c_old)
    v = uniform(rng) * 8.f;
  return p;
}

namespace {

/// C from a finished accumulator: the epilogue of brgemm.h (two-level
/// kernels applied A's scales at the folds).
float epilogue(const Problem &p, float acc, int m, int n, bool accumulate,
               bool bias) {
  float c = p.w.two_level() ? acc : acc * p.a_scale[size_t(m)];
  if (accumulate)
    c = p.c_old[size_t(m) * kGroupedCols + n] + c;
  if (bias)
    c = c + p.bias[size_t(n)];
  return c;
}

} // namespace

float reference(const Problem &p, int m, int n, bool accumulate, bool bias) {
  const GroupedWeights &w = p.w;
  const int k = p.k(), group = int(w.f.group);
  float acc = 0.f;
  for (int g = 0; g < w.groups(); ++g) {
    int32_t dot = 0;
    for (int kk = g * group; kk < (g + 1) * group; ++kk)
      dot += int32_t(p.a[size_t(m) * k + kk]) * w.value(n, kk);
    const int32_t sum = p.a_sum[size_t(m) * w.groups() + g];
    // Two-level: each product by A's group scale, rounded on its own.
    const float as = w.two_level() ? p.a_group_scale[size_t(m) * w.groups() + g] : 1.f;
    auto by_as = [&](float v) { return w.two_level() ? v * as : v; };
    if (!w.f.asymmetric) {
      acc = std::fma(by_as(float(dot - w.zero_point() * sum)), w.scale(n, g), acc);
    } else {
      acc = std::fma(by_as(float(dot)), w.scale(n, g), acc);
      acc = std::fma(-w.min(n, g), by_as(float(sum)), acc);
    }
  }
  return epilogue(p, acc, m, n, accumulate, bias);
}

std::vector<int32_t> Problem::post_sums(int rows) const {
  const int groups = w.groups();
  if (!w.two_level())
    return {a_sum.begin(), a_sum.begin() + size_t(rows) * groups};
  std::vector<int32_t> pairs(size_t(rows) * groups * 2);
  for (size_t e = 0; e < size_t(rows) * groups; ++e) {
    pairs[2 * e] = a_sum[e];
    std::memcpy(&pairs[2 * e + 1], &a_group_scale[e], 4);
  }
  return pairs;
}

void check_kernel(Isa isa, const Problem &p, bool accumulate, bool bias,
                  const KernelRun &run) {
  const BrgemmDesc desc = make_grouped_brgemm_desc(
      isa, p.w.f, p.k(), accumulate, bias ? Epilogue::bias : Epilogue::none);
  ASSERT_EQ(desc.m_max, p.rows);
  BrgemmGenResult gen = generate_brgemm(desc);
  ASSERT_TRUE(gen) << gen.error;
  SCOPED_TRACE(gen.kernel->name() + " n_valid=" + std::to_string(p.n_valid));
  const PackedB packed = pack_weights(p.w, p.n_valid);
  ASSERT_EQ(packed.panel_bytes, grouped_panel_bytes(p.w.f, p.k()));

  const int k = p.k(), groups = p.w.groups();
  const int64_t lda = k + 4, ldc = kGroupedCols + 7;
  for (int m = 1; m <= desc.m_max; ++m) {
    // The last row ends at the guard page: reading past K faults.
    GuardedBuffer a_buf(size_t((m - 1) * lda + k));
    for (int i = 0; i < m; ++i)
      std::memcpy(a_buf.data() + i * lda, &p.a[size_t(i) * k], size_t(k));
    // Guarded too: a kernel reading past the last row's sums faults.
    const std::vector<int32_t> sums = p.post_sums(m);
    GuardedBuffer sum_buf(sums.size() * 4);
    std::memcpy(sum_buf.data(), sums.data(), sums.size() * 4);
    std::vector<float> c(size_t(m + 1) * ldc, -777.f);
    for (int i = 0; i < m; ++i)
      for (int n = 0; n < kGroupedCols; ++n)
        c[size_t(i) * ldc + n] = p.c_old[size_t(i) * kGroupedCols + n];
    BrgemmPostArgs post;
    post.bias = p.bias.data();
    post.a_scale = p.a_scale.data();
    post.a_sum = reinterpret_cast<const int32_t *>(sum_buf.data());
    const auto call = [&] {
      (*gen.kernel)(a_buf.data(), lda, packed.panel(0), c.data(), ldc, m,
                    &post);
    };
    if (run)
      ASSERT_EQ(run(call), "") << "m=" << m;
    else
      call();
    int bad = 0;
    for (int i = 0; i <= m; ++i)
      for (int n = 0; n < ldc; ++n) {
        const float got = c[size_t(i) * ldc + n];
        const bool inside = i < m && n < kGroupedCols;
        const float want =
            inside ? reference(p, i, n, accumulate, bias) : -777.f;
        if (std::memcmp(&got, &want, 4) != 0 && bad++ < 3)
          ADD_FAILURE() << "m=" << m << " C[" << i << "][" << n << "] = " << got
                        << ", expected " << want
                        << (inside ? "" : " (outside the block)");
        // Padding columns add exactly nothing: C is the epilogue of +0.
        const float zero = inside && n >= p.n_valid
                               ? epilogue(p, 0.f, i, n, accumulate, bias)
                               : want;
        if (std::memcmp(&zero, &want, 4) != 0 && bad++ < 3)
          ADD_FAILURE() << "m=" << m << " padding column " << n << " gives "
                        << want << ", not " << zero;
      }
    ASSERT_EQ(bad, 0) << "m=" << m;
  }
}

} // namespace hyc::codegen::test
