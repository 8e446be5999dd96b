// Decode (m = 1) weight-streaming rate of the grouped integer kernels (u4 and
// u8 codes, fp16 scales per group of 128) against the W8A8 s8_vnni4 kernel,
// on one thread, N = K = 4096: GB/s of packed weight bytes read per second.
// Weights are cycled through copies larger than the L3, so they come from
// DRAM as in decode. Plain executable (no Google Benchmark, no oneDNN):
//   build/bench/kernels/hyc_grouped_decode_bench [copies_mb]
#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"
#include "codegen/pack.h"
#include "codegen/tiles.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace hyc::codegen;

namespace {

constexpr int kN = 4096, kK = 4096, kGroup = 128;

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
  std::vector<int32_t> a_sum(kK / kGroup, 0);
  for (int k = 0; k < kK; ++k)
    a_sum[k / kGroup] += a[k];
  const float a_scale = 0.01f;
  std::vector<float> b_scale(kN, 0.01f);
  BrgemmPostArgs post;
  post.a_scale = &a_scale;
  post.b_scale = b_scale.data();
  post.a_sum = a_sum.data();

  std::printf("isa %s, N = K = %d, m = 1, one thread, ~%.0f MB of weight copies per kind\n",
              isa_name(isa), kN, copies_mb);
  std::printf("%-44s %10s %10s\n", "kernel", "MB/GEMV", "GB/s");
  for (int kind = 0; kind < 3; ++kind) {
    BrgemmDesc d;
    std::vector<PackedB> copies;
    int64_t one = 0;
    if (kind < 2) {
      const int bits = kind == 0 ? 4 : 8;
      d = make_grouped_brgemm_desc(isa, bits == 4 ? DataType::u4 : DataType::u8, kK, kGroup, false);
      std::vector<uint8_t> codes(size_t(kN) * kK);
      for (uint8_t &v : codes)
        v = uint8_t(rng() % (1u << bits));
      std::vector<uint16_t> scales(size_t(kN) * (kK / kGroup), f32_to_f16(0.01f));
      one = grouped_panel_bytes(bits, kK, kGroup, false) * (kN / 32);
      const int n_copies = std::max(1, int(copies_mb * 1e6 / double(one)));
      for (int i = 0; i < n_copies; ++i)
        copies.push_back(
            pack_b_grouped(codes.data(), kN, kK, kK, bits, kGroup, scales.data(), nullptr));
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
    std::vector<uint8_t> a_u8(kK); // u8 = q + 128 for the W8A8 kernel
    for (int k = 0; k < kK; ++k)
      a_u8[k] = uint8_t(a[k] + 128);
    const void *act = kind < 2 ? static_cast<const void *>(a.data()) : a_u8.data();
    std::printf("%-44s %10.2f %10.2f\n", g.kernel->name().c_str(), double(one) / 1e6,
                stream_rate(*g.kernel, copies, act, post));
  }
  return 0;
}
