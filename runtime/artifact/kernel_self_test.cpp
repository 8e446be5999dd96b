// The load-time kernel self-test (hyrt/artifact/kernel_self_test.h): inputs
// built directly in the packed B layouts (codegen/pack.h), a scalar sum over
// the same bytes, and a tolerance derived from the inputs.
//
// The inputs are dyadic: A and B values are multiples of 1/8 up to 4 (exact
// in bf16), e4m3 codes up to 3.75 with subnormals, int8 at the extremes of
// the quantizers' range, scales and FP8 block factors powers of two. Every
// partial sum of an element, in any order, is then a multiple of a known
// granule g bounded by sum |terms|, so when that bound is below 2^24 g the
// kernel's fp32 result must be exact whatever order it sums in; otherwise
// it must lie within (K + 4) * 2^-24 * sum |terms| (each add rounds once).
//
// Grouped integer kernels (s8 x u4 / u8 codes with fp16 group scales or
// two-level d * sc scales, optionally through the IQ4_NL code book; the
// u4_grouped / u8_grouped layouts) define their fp32 operation order
// exactly (codegen/brgemm.h), so they are compared bit for bit with a
// scalar evaluation in that order (this file builds with -ffp-contract=off).
#include "hyrt/artifact/kernel_self_test.h"

#include "hyrt/support/decode_streams.h"
#include "hyrt/support/f16.h"
#include "hyrt/support/iq4nl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

namespace hyrt {

namespace {

/// The brgemm C ABI (hyrt_brgemm_fn in cpu_kernels.h, BrgemmFn in codegen).
struct PostArgs {
  const float *bias, *a_scale, *b_scale;
  const int32_t *a_sum = nullptr; // grouped kernels: [m][k / group]
  // The few-row bodies' form this host's drivers ask for, so the self-test
  // checks the loop that will run.
  int64_t k_streams = hyrt::decodeStreams().streams;
};
using KernelFn = void (*)(const void *a, int64_t lda, const void *b, void *c, int64_t ldc,
                          int64_t m, const PostArgs *post);

enum class Elem { f32, bf16, u8, s8, s32, f8, u4 };

/// "bf16bf16f32" -> {bf16, bf16, f32}; false for another spelling.
bool parse_types(const char *text, Elem out[3]) {
  static const std::pair<const char *, Elem> kNames[] = {{"bf16", Elem::bf16}, {"f32", Elem::f32},
                                                         {"u8", Elem::u8},     {"s8", Elem::s8},
                                                         {"s32", Elem::s32},   {"f8", Elem::f8},
                                                         {"u4", Elem::u4}};
  std::string t = text ? text : "";
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    bool found = false;
    for (const auto &[name, e] : kNames)
      if (t.compare(at, std::strlen(name), name) == 0) {
        out[i] = e;
        at += std::strlen(name);
        found = true;
        break;
      }
    if (!found)
      return false;
  }
  return at == t.size();
}

/// The B layout a B type is packed in (codegen/tiles.cpp b_layout_for).
const char *layout_for(Elem b) {
  switch (b) {
  case Elem::f32:
    return "f32_k1";
  case Elem::bf16:
    return "bf16_vnni2";
  case Elem::s8:
    return "s8_vnni4";
  case Elem::f8:
    return "f8_vnni2";
  case Elem::u4:
    return "u4_grouped";
  case Elem::u8:
    return "u8_grouped";
  default:
    return "";
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Bytes of one packed 32-column panel (codegen/pack.h packed_panel_bytes).
int64_t panel_bytes(Elem b, int64_t k) {
  switch (b) {
  case Elem::f32:
    return k * 128;
  case Elem::bf16:
    return ceil_div(k, 2) * 128;
  case Elem::s8:
    return ceil_div(k, 4) * 128 + 32 * 4; // then int32 comp[32]
  case Elem::f8:
    return ceil_div(k, 128) * 64 * 64;
  default:
    return 0;
  }
}

/// Byte offset of element (k, column c) inside a panel.
int64_t packed_offset(Elem b, int64_t k, int64_t c) {
  switch (b) {
  case Elem::f32:
    return (k * 32 + c) * 4;
  case Elem::bf16:
    return (((k >> 1) * 32 + c) * 2 + (k & 1)) * 2;
  case Elem::s8:
    return ((k >> 2) * 32 + c) * 4 + (k & 3);
  default: // f8: the bf16_vnni2 order, one byte per code
    return ((k >> 1) * 32 + c) * 2 + (k & 1);
  }
}

float bf16_value(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// e4m3fn code -> value (the codes generated here are never NaN).
float e4m3_value(uint8_t code) {
  const int mag = code & 0x7F, e = mag >> 3, mant = mag & 7;
  const float v = e == 0 ? std::ldexp(float(mant), -9) : std::ldexp(float(8 + mant), e - 10);
  return code & 0x80 ? -v : v;
}

/// A fixed pseudo-random stream (xorshift64*): the same problem every load.
struct Stream {
  uint64_t s;
  uint32_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return uint32_t((s * 0x2545F4914F6CDD1Dull) >> 32);
  }
  int range(int lo, int hi) { return lo + int(next() % uint32_t(hi - lo + 1)); }
  float eighth() { return float(range(-32, 32)) / 8.f; } // multiples of 1/8 in [-4, 4]
};

/// 64-byte aligned bytes.
struct Aligned {
  std::vector<uint8_t> raw;
  uint8_t *p = nullptr;
  explicit Aligned(size_t n) : raw(n + 64) {
    p = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) % 64;
  }
};

/// Floats between C rows: a gap past the block's columns that the kernel
/// must not touch; a multiple of 16 for non-temporal kernels, whose rows
/// must start 64-byte aligned.
int64_t c_stride(const hyrt_kernel_v0 &kd) {
  return kd.stream_c ? (kd.n_block + 8 + 15) / 16 * 16 : kd.n_block + 8;
}

constexpr uint32_t kSentinelBits = 0x7FA5A5A5u; // a NaN no kernel writes

/// Runs the kernel on blocks of 1, about half and all of its m_max rows,
/// C prefilled with a sentinel NaN (and the first m rows with c_old when
/// it accumulates): check(cbuf, m) returns "" or why the block is wrong.
template <typename Check>
std::string run_each_m(const hyrt_kernel_v0 &kd, const void *a, int64_t lda, const void *b,
                       const PostArgs &post, const std::vector<float> *c_old, int *calls,
                       Check check) {
  const int M = kd.m_max, NB = kd.n_block;
  const int64_t ldc = c_stride(kd);
  const KernelFn fn = reinterpret_cast<KernelFn>(const_cast<void *>(kd.entry));
  Aligned cmem(size_t(M + 1) * size_t(ldc) * sizeof(float));
  float *cbuf = reinterpret_cast<float *>(cmem.p);
  const size_t cfloats = size_t(M + 1) * size_t(ldc);
  int last_m = 0;
  for (int m : {1, M > 2 ? M / 2 + 1 : M, M}) {
    if (m == last_m)
      continue;
    last_m = m;
    float sentinel;
    std::memcpy(&sentinel, &kSentinelBits, 4);
    std::fill(cbuf, cbuf + cfloats, sentinel);
    if (c_old)
      for (int i = 0; i < m; ++i)
        for (int n = 0; n < NB; ++n)
          cbuf[size_t(i) * ldc + n] = (*c_old)[size_t(i) * NB + n];
    fn(a, lda, b, cbuf, ldc, m, &post);
    ++*calls;
    const std::string why = check(cbuf, m);
    if (!why.empty())
      return why;
  }
  return "";
}

/// Checks C[0..m)[0..NB) against want bit for bit and the rest of cbuf
/// (M + 1 rows of ldc) against the sentinel; returns "" or the first miss.
std::string compare_exact(const float *cbuf, const std::vector<float> &want, int m,
                          int M, int NB, int64_t ldc) {
  for (int i = 0; i <= M; ++i)
    for (int n = 0; n < ldc; ++n) {
      const float got = cbuf[size_t(i) * ldc + n];
      const bool inside = i < m && n < NB;
      float expect;
      if (inside)
        expect = want[size_t(i) * NB + n];
      else
        std::memcpy(&expect, &kSentinelBits, 4);
      if (std::memcmp(&got, &expect, 4) != 0) {
        char msg[200];
        std::snprintf(msg, sizeof msg, " (m=%d): C[%d][%d] = %.9g, expected %.9g%s", m, i, n,
                      double(got), double(expect),
                      inside ? " (bit-exact order of codegen/brgemm.h)" : " (outside its block)");
        return msg;
      }
    }
  return "";
}

/// Where a grouped panel (codegen/pack.h, brgemm.h "Grouped integer
/// kernels") keeps group g's parts: its code quads; one-level, its fp16
/// scales and mins; two-level, its int8 sc and uint8 m and its
/// super-block's fp16 d and dmin.
struct GroupedPanel {
  int64_t G, S; // group, super-block (0: one-level)
  bool asym;
  int64_t codes_bytes;

  int64_t header() const { return asym ? 128 : 64; }
  int64_t group_bytes() const { return codes_bytes + (S ? 64 : header()); }
  int64_t super_bytes() const { return header() + S / G * group_bytes(); }
  int64_t panel_bytes(int64_t K) const { return S ? K / S * super_bytes() : K / G * group_bytes(); }
  int64_t super_base(int64_t g) const { return g / (S / G) * super_bytes(); }
  int64_t codes(int64_t g) const {
    return S ? super_base(g) + header() + g % (S / G) * group_bytes() : g * group_bytes();
  }
  int64_t scales(int64_t g) const { return codes(g) + codes_bytes; }
  int64_t mins(int64_t g) const { return scales(g) + (S ? 32 : 64); }
};

/// A grouped kernel (u4_grouped / u8_grouped panel, one N block of 32, one-
/// or two-level scales, code book or not) on a random problem with code,
/// sub-scale and activation extremes, against the scalar evaluation in the
/// kernels' order (codegen/brgemm.h).
std::string test_grouped_kernel(const hyrt_kernel_v0 &kd, const Elem t[3], int *calls) {
  const int M = kd.m_max, K = kd.k, G = kd.group, groups = K / G, NB = 32;
  const int S = kd.super_group, supers = S ? K / S : 0;
  const bool u4 = t[1] == Elem::u4, asym = kd.asymmetric != 0;
  const bool book = kd.codebook == HYRT_KERNEL_CODEBOOK_IQ4NL;
  const int top = u4 ? 15 : 255, zp = asym ? 0 : book ? 128 : (top + 1) / 2;
  const GroupedPanel layout{G, S, asym, G / 4 * (u4 ? 64 : 128)};
  const int64_t lda = K + 8, ldc = c_stride(kd);
  Stream rng{0xD1B54A32D192ED03ull ^ (uint64_t(K) << 20) ^ uint64_t(G * 131 + M) ^
             (uint64_t(S) << 40) ^ (uint64_t(kd.codebook) << 52)};

  Aligned a(size_t(M * lda));
  std::fill(a.raw.begin(), a.raw.end(), 0x7F); // a kernel reading past K sums these
  // a_sum per row: the group sums, or with two-level scales pairs {sum,
  // A's group scale} (brgemm.h).
  const int per_group = S ? 2 : 1;
  std::vector<int32_t> a_sum(size_t(M) * groups * per_group, 0);
  std::vector<float> a_group_scale(size_t(M) * groups);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      const int v = k < 4 ? (k % 2 ? 127 : -128) : rng.range(-128, 127);
      a.p[size_t(i) * lda + k] = uint8_t(int8_t(v));
      a_sum[(size_t(i) * groups + k / G) * per_group] += v;
    }
  Aligned b(size_t(layout.panel_bytes(K)));
  std::fill(b.raw.begin(), b.raw.end(), 0);
  // Per column: the code values the kernel multiplies, and each group's
  // scale and min as fp32 (brgemm.h: fp16, or d * sc and dmin * m).
  std::vector<int> values(size_t(NB) * K);
  std::vector<float> scales(size_t(NB) * groups), mins(scales.size());
  // Normal fp16 of mixed sign, 2^-10 to 2^4 (scales) or 2^-10 to 2^2 (mins).
  auto random_f16 = [&](int top_exp) {
    return uint16_t((rng.range(0, 1) << 15) | (rng.range(5, top_exp) << 10) | rng.range(0, 1023));
  };
  for (int c = 0; c < NB; ++c)
    for (int s = 0; s < supers; ++s) {
      const uint16_t d = random_f16(19), dmin = random_f16(17);
      std::memcpy(b.p + s * layout.super_bytes() + 2 * c, &d, 2);
      if (asym)
        std::memcpy(b.p + s * layout.super_bytes() + 64 + 2 * c, &dmin, 2);
    }
  for (int g = 0; g < groups; ++g) {
    uint8_t *grp = b.p + layout.codes(g);
    for (int c = 0; c < NB; ++c) {
      for (int kk = 0; kk < G; ++kk) {
        const int k = g * G + kk;
        const int code = k < 4 ? (k % 2 ? top : 0) : rng.range(0, top);
        values[size_t(c) * K + k] = book ? hyrt::kIq4nlU8[code] : code;
        const int64_t q = kk / 4, e = kk % 4;
        if (u4)
          grp[q * 64 + 4 * (c % 16) + e] |= uint8_t(c < 16 ? code : code << 4);
        else
          grp[q * 128 + 4 * c + e] = uint8_t(code);
      }
      float &sc = scales[size_t(c) * groups + g], &mn = mins[size_t(c) * groups + g];
      if (S) {
        // The first group of each super-block takes the byte extremes.
        const int first = g % (S / G) == 0;
        const int8_t sub = int8_t(first ? (c % 2 ? 127 : -128) : rng.range(-128, 127));
        const uint8_t sub_min = uint8_t(first ? (c % 2 ? 255 : 0) : rng.range(0, 255));
        b.p[layout.scales(g) + c] = uint8_t(sub);
        if (asym)
          b.p[layout.mins(g) + c] = sub_min;
        const uint8_t *block = b.p + layout.super_base(g);
        uint16_t d, dmin;
        std::memcpy(&d, block + 2 * c, 2);
        std::memcpy(&dmin, block + 64 + 2 * c, 2);
        sc = hyrt::fromF16(d) * float(sub);
        mn = asym ? hyrt::fromF16(dmin) * float(sub_min) : 0.f;
      } else {
        const uint16_t h = random_f16(19), hm = random_f16(17);
        std::memcpy(b.p + layout.scales(g) + 2 * c, &h, 2);
        sc = hyrt::fromF16(h);
        if (asym) {
          std::memcpy(b.p + layout.mins(g) + 2 * c, &hm, 2);
          mn = hyrt::fromF16(hm);
        }
      }
    }
  }
  std::vector<float> bias(static_cast<size_t>(NB)), a_scale(static_cast<size_t>(M)),
      c_old(static_cast<size_t>(M) * NB);
  for (float &v : bias)
    v = rng.eighth();
  for (float &v : a_scale)
    v = std::ldexp(1.f + float(rng.range(0, 255)) / 256.f, rng.range(-9, -5));
  for (size_t g = 0; S && g < a_group_scale.size(); ++g) {
    float &v = a_group_scale[g];
    v = std::ldexp(1.f + float(rng.range(0, 255)) / 256.f, rng.range(-12, -2));
    std::memcpy(&a_sum[2 * g + 1], &v, 4);
  }
  for (float &v : c_old)
    v = rng.eighth();
  const PostArgs post{bias.data(), a_scale.data(), nullptr, a_sum.data()};
  const bool acc = kd.accumulate != 0, with_bias = kd.epilogue == HYRT_KERNEL_EPILOGUE_BIAS;

  std::vector<float> want(size_t(M) * NB);
  for (int i = 0; i < M; ++i)
    for (int n = 0; n < NB; ++n) {
      float f = 0.f;
      for (int g = 0; g < groups; ++g) {
        int32_t dot = 0;
        for (int k = g * G; k < (g + 1) * G; ++k)
          dot += int32_t(int8_t(a.p[size_t(i) * lda + k])) * values[size_t(n) * K + k];
        const int32_t sum = a_sum[(size_t(i) * groups + g) * per_group];
        const float sc = scales[size_t(n) * groups + g];
        // Two-level: each product by A's group scale rounded on its own.
        const float as = S ? a_group_scale[size_t(i) * groups + g] : 1.f;
        auto by_as = [&](float x) { return S ? x * as : x; };
        if (asym) {
          f = std::fma(by_as(float(dot)), sc, f);
          f = std::fma(-mins[size_t(n) * groups + g], by_as(float(sum)), f);
        } else {
          f = std::fma(by_as(float(dot - zp * sum)), sc, f);
        }
      }
      float c = S ? f : f * a_scale[size_t(i)];
      if (acc)
        c = c_old[size_t(i) * NB + n] + c;
      if (with_bias)
        c = c + bias[size_t(n)];
      want[size_t(i) * NB + n] = c;
    }

  return run_each_m(kd, a.p, lda, b.p, post, acc ? &c_old : nullptr, calls,
                    [&](const float *cbuf, int m) {
                      return compare_exact(cbuf, want, m, M, NB, ldc);
                    });
}

/// Runs one kernel; returns "" or why it failed (and sets *failed_kernel).
std::string test_kernel(const hyrt_kernel_v0 &kd, const Elem t[3], int *calls) {
  const int M = kd.m_max, K = kd.k, NB = kd.n_block;
  const Elem at = t[0], bt = t[1];
  const bool int8 = at == Elem::u8;
  const int64_t lda = K + 8, ldc = c_stride(kd), panels = NB / 32;
  const int64_t pbytes = panel_bytes(bt, K);
  const int a_size = at == Elem::f32 ? 4 : at == Elem::bf16 ? 2 : 1;
  Stream rng{0x9E3779B97F4A7C15ull ^ (uint64_t(K) << 20) ^ uint64_t(M * 131 + NB)};

  // A: rows of K values; the row padding is 0xFF bytes (NaN for float
  // types, 255 for u8), which a kernel reading past K would sum.
  Aligned a(size_t(M * lda * a_size));
  std::fill(a.raw.begin(), a.raw.end(), 0xFF);
  std::vector<double> av(size_t(M) * K);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      uint8_t *dst = a.p + (size_t(i) * lda + k) * a_size;
      double v;
      if (int8) {
        // u8 = q + 128 with q in [-127, 127]; row 0 starts at the extremes.
        const uint8_t u = i == 0 && k < 2 ? uint8_t(k == 0 ? 1 : 255) : uint8_t(rng.range(1, 255));
        *dst = u;
        v = double(int(u) - 128);
      } else {
        const float f = rng.eighth();
        if (at == Elem::bf16) {
          uint32_t bits;
          std::memcpy(&bits, &f, 4);
          const uint16_t h = uint16_t(bits >> 16); // exact: at most 6 significant bits
          std::memcpy(dst, &h, 2);
        } else {
          std::memcpy(dst, &f, 4);
        }
        v = f;
      }
      av[size_t(i) * K + k] = v;
    }

  // B: packed panels, zero padded in K; s8 panels end with comp.
  Aligned b(size_t(panels * pbytes));
  std::fill(b.raw.begin(), b.raw.end(), 0);
  std::vector<double> bv(size_t(NB) * K); // [n][k]: the sums below read it in order
  for (int n = 0; n < NB; ++n) {
    uint8_t *panel = b.p + (n / 32) * pbytes;
    const int c = n % 32;
    int64_t colsum = 0;
    for (int k = 0; k < K; ++k) {
      uint8_t *dst = panel + packed_offset(bt, k, c);
      double v;
      switch (bt) {
      case Elem::s8: {
        const int8_t q =
            n == 0 && k < 2 ? int8_t(k == 0 ? -127 : 127) : int8_t(rng.range(-127, 127));
        std::memcpy(dst, &q, 1);
        colsum += q;
        v = q;
        break;
      }
      case Elem::f8: {
        const uint8_t code = uint8_t(rng.range(0, 0x47) | (rng.next() & 0x80));
        *dst = code;
        v = e4m3_value(code);
        break;
      }
      default: {
        const float f = rng.eighth();
        if (bt == Elem::bf16) {
          uint32_t bits;
          std::memcpy(&bits, &f, 4);
          const uint16_t h = uint16_t(bits >> 16);
          std::memcpy(dst, &h, 2);
          v = bf16_value(h);
        } else {
          std::memcpy(dst, &f, 4);
          v = f;
        }
      }
      }
      bv[size_t(n) * K + k] = v;
    }
    if (bt == Elem::s8) {
      const int32_t comp = int32_t(128 * colsum);
      std::memcpy(panel + ceil_div(K, 4) * 128 + c * 4, &comp, 4);
    }
  }

  // Epilogue operands: powers of two, so scaling is exact.
  const int blocks = bt == Elem::f8 ? int(ceil_div(K, 128)) : 0;
  std::vector<float> bias(static_cast<size_t>(NB)), a_scale(static_cast<size_t>(M)),
      b_scale(static_cast<size_t>(std::max(NB, blocks)));
  for (float &v : bias)
    v = rng.eighth();
  for (float &v : a_scale)
    v = std::ldexp(1.f, rng.range(-2, 1));
  for (float &v : b_scale)
    v = std::ldexp(1.f, rng.range(-1, 1));
  const PostArgs post{bias.data(), a_scale.data(), b_scale.data()};
  const bool acc = kd.accumulate != 0, with_bias = kd.epilogue == HYRT_KERNEL_EPILOGUE_BIAS;
  std::vector<float> c_old(size_t(M) * NB);
  for (float &v : c_old)
    v = rng.eighth();

  // The scalar result per element, its sum of magnitudes and granule.
  std::vector<double> want(size_t(M) * NB), mag(want.size()), tol(want.size());
  for (int i = 0; i < M; ++i)
    for (int n = 0; n < NB; ++n) {
      double s = 0, m = 0, g = 1.0 / 8; // C and bias are multiples of 1/8
      if (int8) {
        double dot = 0; // exact: |dot| < 2^53
        for (int k = 0; k < K; ++k)
          dot += av[size_t(i) * K + k] * bv[size_t(n) * K + k];
        const double scale = double(a_scale[size_t(i)]) * b_scale[size_t(n)];
        s = dot * scale;
        m = std::fabs(s);
        g = std::min(g, scale);
      } else {
        const double granule = bt == Elem::f8 ? std::ldexp(1.0, -3 - 9) : 1.0 / 64;
        g = std::min(g, bt == Elem::f8 ? granule / 2 : granule); // factors >= 1/2
        for (int k = 0; k < K; ++k) {
          double p = av[size_t(i) * K + k] * bv[size_t(n) * K + k];
          if (bt == Elem::f8)
            p *= b_scale[size_t(k / 128)];
          s += p;
          m += std::fabs(p);
        }
      }
      const size_t e = size_t(i) * NB + n;
      if (acc) {
        s += c_old[e];
        m += std::fabs(c_old[e]);
      }
      if (with_bias) {
        s += bias[size_t(n)];
        m += std::fabs(bias[size_t(n)]);
      }
      want[e] = s;
      mag[e] = m;
      tol[e] = m <= std::ldexp(g, 24) ? 0.0 : (K + 2.0 * blocks + 4) * std::ldexp(1.0, -24) * m;
    }

  return run_each_m(kd, a.p, lda, b.p, post, acc ? &c_old : nullptr, calls,
                    [&](const float *cbuf, int m) -> std::string {
    double worst = -1, worst_tol = 0, worst_want = 0, worst_got = 0;
    int wi = -1, wn = -1;
    for (int i = 0; i <= M; ++i)
      for (int n = 0; n < ldc; ++n) {
        const float got = cbuf[size_t(i) * ldc + n];
        if (i >= m || n >= NB) {
          uint32_t bits;
          std::memcpy(&bits, &got, 4);
          if (bits != kSentinelBits) {
            char msg[160];
            std::snprintf(msg, sizeof msg,
                          " (m=%d): wrote C[%d][%d] = %g outside its %d x %d block", m, i, n,
                          double(got), m, NB);
            return msg;
          }
          continue;
        }
        const size_t e = size_t(i) * NB + n;
        const double err = std::fabs(double(got) - want[e]);
        // NaN (an element not written, or a NaN computed) is worse than any error.
        const double rank = std::isnan(err) ? INFINITY : err - tol[e];
        if (rank > 0 && rank > worst) {
          worst = rank;
          worst_tol = tol[e];
          worst_want = want[e];
          worst_got = got;
          wi = i;
          wn = n;
        }
      }
    if (wi >= 0) {
      char msg[200];
      std::snprintf(msg, sizeof msg,
                    " (m=%d): C[%d][%d] = %.9g, expected %.9g (largest error %.3g, tolerance %.3g)",
                    m, wi, wn, worst_got, worst_want, std::fabs(worst_got - worst_want), worst_tol);
      return msg;
    }
    return "";
  });
}

/// Ends the calling thread's use of AMX tiles (tilerelease), so that the
/// loader thread does not carry tile state after running AMX kernels.
void release_tiles() {
#if defined(__x86_64__)
  __asm__ volatile(".byte 0xc4, 0xe2, 0x78, 0x49, 0xc0" ::: "memory");
#endif
}

} // namespace

KernelSelfTestResult self_test_kernels(const hyrt_kernel_table_v0 &table) {
  KernelSelfTestResult r;
  const auto start = std::chrono::steady_clock::now();
  if (table.version != HYRT_KERNEL_TABLE_VERSION) {
    r.untested.push_back("every kernel (hyc_kernels_v0 version " + std::to_string(table.version) +
                         ", this runtime reads " + std::to_string(HYRT_KERNEL_TABLE_VERSION) + ")");
    return r;
  }
  // Per family and K mod 64 (every generator's K step and unroll divides
  // 64, so this is every K tail the family has), the smallest K.
  std::map<std::string, std::map<int, const hyrt_kernel_v0 *>> families;
  for (int32_t i = 0; i < table.num_kernels; ++i) {
    const hyrt_kernel_v0 &k = table.kernels[i];
    Elem t[3];
    const bool parsed = k.entry && k.isa && k.b_layout && parse_types(k.types, t);
    const bool grouped = parsed && t[0] == Elem::s8;
    const bool known =
        parsed && t[2] == Elem::f32 && (t[0] != Elem::u8 || t[1] == Elem::s8) &&
        (!grouped || t[1] == Elem::u4 || t[1] == Elem::u8) &&
        std::strcmp(layout_for(t[1]), k.b_layout) == 0 && k.m_max > 0 && k.k > 0 &&
        k.n_block > 0 && k.n_block % 32 == 0 && (t[1] != Elem::f8 || k.k % 128 == 0) &&
        (grouped ? k.n_block == 32 && k.group > 0 && k.group % 16 == 0 && k.k % k.group == 0 &&
                       (k.super_group == 0 || (k.super_group > 0 && k.super_group % k.group == 0 &&
                                               k.k % k.super_group == 0)) &&
                       (k.codebook == HYRT_KERNEL_CODEBOOK_NONE ||
                        (k.codebook == HYRT_KERNEL_CODEBOOK_IQ4NL && t[1] == Elem::u4 &&
                         k.asymmetric == 0))
                 : k.group == 0 && k.asymmetric == 0 && k.super_group == 0 && k.codebook == 0) &&
        (k.epilogue == HYRT_KERNEL_EPILOGUE_NONE || k.epilogue == HYRT_KERNEL_EPILOGUE_BIAS) &&
        (k.stream_c == 0 ||
         (k.stream_c == 1 && !k.accumulate && k.epilogue == HYRT_KERNEL_EPILOGUE_NONE));
    if (!known) {
      r.untested.push_back(k.name ? k.name : "(unnamed kernel)");
      continue;
    }
    const std::string family =
        std::string(k.isa) + " " + k.types + " " + k.b_layout + " N" + std::to_string(k.n_block) +
        (grouped ? " g" + std::to_string(k.group) +
                       (k.super_group ? "s" + std::to_string(k.super_group) : "") +
                       (k.asymmetric ? "a" : "") + (k.codebook ? " iq4" : "")
                 : "") +
        (k.accumulate ? " acc" : "") + (k.epilogue ? " bias" : "") + (k.stream_c ? " nt" : "");
    // Grouped kernels have no K tails: their code differs only by the number
    // of groups, so the smallest K stands for the family.
    const hyrt_kernel_v0 *&pick = families[family][grouped ? 0 : k.k % 64];
    if (!pick || k.k < pick->k)
      pick = &k;
  }
  bool amx = false;
  std::ostringstream ran;
  for (const auto &[family, classes] : families) {
    ++r.families;
    ran << (r.families > 1 ? ", " : "") << family << " (K";
    bool first = true;
    for (const auto &[k_class, kd] : classes) {
      ran << (first ? " " : ", ") << kd->k;
      first = false;
      Elem t[3];
      parse_types(kd->types, t);
      amx = amx || std::strcmp(kd->isa, "amx") == 0;
      ++r.kernels;
      const std::string why = t[0] == Elem::s8 ? test_grouped_kernel(*kd, t, &r.calls)
                                               : test_kernel(*kd, t, &r.calls);
      if (!why.empty() && r.passed) {
        r.passed = false;
        r.failed_kernel = kd->name ? kd->name : "(unnamed kernel)";
        r.failure = r.failed_kernel + why;
      }
    }
    ran << ")";
  }
  if (amx)
    release_tiles();
  r.ran = ran.str();
  r.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string describe_self_test(const KernelSelfTestResult &r) {
  char head[160];
  std::snprintf(head, sizeof head, "%s: %d kernel famil%s (%d kernel%s, %d calls) in %.1f ms",
                r.passed ? "passed" : "FAILED", r.families, r.families == 1 ? "y" : "ies",
                r.kernels, r.kernels == 1 ? "" : "s", r.calls, r.ms);
  std::string out = head;
  if (!r.passed)
    out += ": " + r.failure;
  else if (!r.ran.empty())
    out += ": " + r.ran;
  if (!r.untested.empty()) {
    out += "; not testable by this runtime: ";
    for (size_t i = 0; i < r.untested.size(); ++i)
      out += (i ? ", " : "") + r.untested[i];
  }
  return out;
}

} // namespace hyrt
