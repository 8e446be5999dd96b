// Decode (m = 1) weight-streaming rate of the grouped integer kernels against
// the W8A8 s8_vnni4 kernel, on one thread, N = K = 4096: GB/s of packed
// weight bytes read per second. The grouped formats: u4 and u8 with fp16
// scales per group of 128 and per 32 (one-level), and the GGUF formats kept
// as stored: Q4_K (u4, two-level scales per 32 in super-blocks of 256,
// asymmetric), IQ4_XS (two-level, code book), IQ4_NL (one-level, code
// book) and Q6_K (u8, groups of 16). Weights are cycled through copies
// larger than the L3, so they come from DRAM as in decode. Plain
// executable (no Google Benchmark, no oneDNN):
//   build/bench/kernels/hyc_grouped_decode_bench [copies_mb]
#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"
#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace hyc::codegen;

namespace {

constexpr int kN = 4096, kK = 4096;

/// Runs one N x K GEMV per pass over `copies`, best of 5 rounds; returns
/// GB/s of packed weight bytes.
double stream_rate(const BrgemmKernel &kernel, const std::vector<PackedB> &copies, const void *a,
                   const BrgemmPostArgs &post) {
  std::vector<float> c(kN);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    double bytes = 0;
    for (const PackedB &w : copies) {
      for (int64_t p = 0; p < w.n_panels; ++p)
        kernel(a, kK, w.panel(p), c.data() + p * 32, kN, 1, &post);
      bytes += double(w.n_panels * w.panel_bytes);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, bytes / s / 1e9);
  }
  return best;
}

GroupedFormat format(int bits, int64_t group, int64_t super_group = 0, bool asymmetric = false,
                     Codebook codebook = Codebook::none) {
  GroupedFormat f;
  f.bits = bits;
  f.group = group;
  f.super_group = super_group;
  f.asymmetric = asymmetric;
  f.codebook = codebook;
  return f;
}

/// Random weights of format f packed once: codes, and fp16 scales (one-level)
/// or sub-scales, sub-mins and super-block factors (two-level).
PackedB random_weights(const GroupedFormat &f, std::mt19937 &rng) {
  const int64_t groups = kK / f.group;
  std::vector<uint8_t> codes(size_t(kN) * kK);
  for (uint8_t &v : codes)
    v = uint8_t(rng() % (1u << f.bits));
  if (f.super_group == 0) {
    std::vector<uint16_t> scales(size_t(kN) * groups, f32_to_f16(0.01f));
    return pack_b_grouped(codes.data(), kN, kK, kK, f, scales.data(),
                          f.asymmetric ? scales.data() : nullptr);
  }
  std::vector<int8_t> sc(size_t(kN) * groups);
  std::vector<uint8_t> m(sc.size());
  for (size_t i = 0; i < sc.size(); ++i) {
    sc[i] = int8_t(rng() % 64);
    m[i] = uint8_t(rng() % 64);
  }
  std::vector<uint16_t> d(size_t(kN) * (kK / f.super_group), f32_to_f16(0.001f));
  return pack_b_grouped_two_level(codes.data(), kN, kK, kK, f, sc.data(),
                                  f.asymmetric ? m.data() : nullptr, d.data(),
                                  f.asymmetric ? d.data() : nullptr);
}

/// A copy of p's panels in memory of its own.
PackedB clone(const PackedB &p) {
  PackedB c;
  c.layout = p.layout;
  c.n = p.n;
  c.k = p.k;
  c.n_panels = p.n_panels;
  c.panel_bytes = p.panel_bytes;
  c.data = AlignedBuffer(p.data.size());
  std::memcpy(c.data.data(), p.data.data(), p.data.size());
  return c;
}

} // namespace

int main(int argc, char **argv) {
  if (!host_supports(Isa::avx512_vnni) && !host_supports(Isa::avx2)) {
    std::printf("needs avx512_vnni or avx2\n");
    return 0;
  }
  const double copies_mb = argc > 1 ? std::atof(argv[1]) : 256;
  const Isa isa = host_supports(Isa::avx512_vnni) ? Isa::avx512_vnni : Isa::avx2;
  std::mt19937 rng(1);
  std::vector<int8_t> a(kK);
  for (int8_t &v : a)
    v = int8_t(int(rng() % 255) - 127);
  std::vector<uint8_t> a_u8(kK); // u8 = q + 128 for the W8A8 kernel
  for (int k = 0; k < kK; ++k)
    a_u8[k] = uint8_t(a[k] + 128);
  const float a_scale = 0.01f;
  std::vector<float> b_scale(kN, 0.01f);

  const GroupedFormat kFormats[] = {
      format(4, 128),                             // W4A8 g128
      format(8, 128),                             // W8A8 g128 codes
      format(4, 32),                              // Q4_0
      format(4, 32, 256, true),                   // Q4_K
      format(4, 32, 256, false, Codebook::iq4nl), // IQ4_XS
      format(4, 32, 0, false, Codebook::iq4nl),   // IQ4_NL
      format(8, 16, 256),                         // Q6_K
  };
  const int kinds = int(sizeof kFormats / sizeof kFormats[0]) + 1; // + W8A8

  std::printf("isa %s, N = K = %d, m = 1, one thread, ~%.0f MB of weight copies per kind\n",
              isa_name(isa), kN, copies_mb);
  std::printf("%-48s %10s %10s\n", "kernel", "MB/GEMV", "GB/s");
  for (int kind = 0; kind < kinds; ++kind) {
    const bool grouped = kind + 1 < kinds;
    BrgemmDesc d;
    std::vector<PackedB> copies;
    std::vector<int32_t> a_sum;
    int64_t one = 0;
    if (grouped) {
      const GroupedFormat &f = kFormats[kind];
      d = make_grouped_brgemm_desc(isa, f, kK);
      // Two-level kernels read {sum, A's group scale} pairs (brgemm.h).
      const size_t per = f.super_group ? 2 : 1;
      a_sum.assign(size_t(kK / f.group) * per, 0);
      for (int k = 0; k < kK; ++k)
        a_sum[size_t(k / f.group) * per] += a[k];
      for (size_t g = 0; per == 2 && g < size_t(kK / f.group); ++g)
        std::memcpy(&a_sum[2 * g + 1], &a_scale, sizeof(float));
      one = grouped_panel_bytes(f, kK) * (kN / 32);
      const int n_copies = std::max(1, int(copies_mb * 1e6 / double(one)));
      const PackedB first = random_weights(f, rng);
      for (int i = 0; i < n_copies; ++i)
        copies.push_back(clone(first));
    } else {
      d = make_brgemm_desc(isa, DataType::u8, DataType::s8, DataType::f32, kK);
      std::vector<int8_t> w(size_t(kN) * kK);
      for (int8_t &v : w)
        v = int8_t(int(rng() % 255) - 127);
      one = packed_panel_bytes(BLayout::s8_vnni4, kK) * (kN / 32);
      const int n_copies = std::max(1, int(copies_mb * 1e6 / double(one)));
      for (int i = 0; i < n_copies; ++i)
        copies.push_back(pack_b_s8(w.data(), kN, kK, kK));
    }
    BrgemmGenResult g = generate_brgemm(d);
    if (!g) {
      std::printf("%s\n", g.error.c_str());
      return 1;
    }
    BrgemmPostArgs post;
    post.a_scale = &a_scale;
    post.b_scale = b_scale.data();
    post.a_sum = a_sum.data();
    const void *act = grouped ? static_cast<const void *>(a.data()) : a_u8.data();
    std::printf("%-48s %10.2f %10.2f\n", g.kernel->name().c_str(), double(one) / 1e6,
                stream_rate(*g.kernel, copies, act, post));
  }
  return 0;
}
