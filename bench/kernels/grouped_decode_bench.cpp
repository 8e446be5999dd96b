// Decode (m = 1) weight-streaming rate of the grouped integer kernels against
// the W8A8 s8_vnni4 kernel, N = K = 4096, on `threads` pinned threads (2 by
// default, the machine class's decode), each on its own half of every
// GEMV's panels as an artifact's decode splits N. Rates are GB/s of packed
// weight bytes read per second, and each pass is judged against the
// streaming read probed right before and after it (codegen::StreamReader
// over windows of the kind's own weight copies: kernel and yardstick read
// the same pages; before, a buffer of the probe's own gave medians of
// 100-108% for some kinds):
// this host's bandwidth swings between phases within seconds, so only the
// ratio to the bracketing probes is comparable between kernels, and the
// kinds are interleaved round by round. The grouped formats: u4 and u8
// with fp16 scales per group of 128 and per 32 (one-level), and the GGUF
// formats kept as stored: Q4_K (u4, two-level scales per 32 in super-blocks
// of 256, asymmetric), IQ4_XS (two-level, code book), IQ4_NL (one-level,
// code book), Q6_K (u8, groups of 16) and AWQ's q4z128 (u4, one group of
// 128 per super-block, asymmetric). Weights are cycled through copies
// larger than the L3, so they come from DRAM as in decode. Plain executable
// (no Google Benchmark, no oneDNN):
//   build/bench/kernels/hyc_grouped_decode_bench [copies_mb] [threads] [rounds] [w8a8-tiles]
//       [N] [K]
// `w8a8-tiles` (AVX-512 VNNI hosts; "-" for none): a comma-separated list of
// prefetch[t|d]:unroll[:streams] (bytes of B ahead, then "t" for prefetcht1
// into L2, "d" for the table's rule by rows, neither for prefetcht0; K quads
// per loop iteration; K streams; tiles.h); each adds the W8A8 kernel
// generated with that tile
// (codegen/tiles.cpp holds the default) as one more kind, so a tile choice
// is judged in the same rounds; a variant's calls ask for its K streams,
// the table's kernels for the host's (hyrt/support/decode_streams.h). The W8A8 kinds also include the 64-column
// kernel (two adjacent panels per call: two streams 32 x K bytes apart).
// AVX-512 BF16 hosts add the bf16 kernel (the default compile's decode) in
// both widths, 32 and 64 columns: the fp32 kernels cannot split K into two
// streams without changing a row's sum order, two adjacent panels can.
// N (a multiple of 64) and K (of 256): the GEMV's shape, e.g. 128256 2048 for
// dense-1b's output head. HYC_BENCH_SYNC=1: the threads meet after every
// GEMV (a dispatch's join) and each round's line gives their waits there;
// =2: each GEMV also split as the runtime's parallelForBalanced does.
#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"
#include "codegen/host_peaks.h"
#include "codegen/pack.h"
#include "codegen/tiles.h"
#include "codegen/x86/brgemm_jit.h"
#include "hyrt/support/decode_streams.h"
#include "hyrt/support/steal_ranges.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace hyc::codegen;
using hyrt::StealRanges;

namespace {

// The GEMV shape: N x K, 4096 x 4096 unless given (arguments 5 and 6).
int kN = 4096, kK = 4096;

using Clock = std::chrono::steady_clock;

// HYC_BENCH_SYNC=1: the threads meet after every GEMV (a dispatch's join);
// gWaitShare[t]: thread t's share of its pass spent waiting there.
int gSync = 0; // 2: the threads also balance each GEMV (StealRanges)
double gWaitShare[64];

/// A kind's weight copies, back to back in one allocation: the bandwidth
/// probes read windows of this very memory (StreamReader over the region),
/// so a kernel and its yardstick read the same pages with the same backing.
struct Copies {
  AlignedBuffer region;
  int64_t count = 0, n_panels = 0, panel_bytes = 0;

  int64_t bytes_each() const { return n_panels * panel_bytes; }
  const uint8_t *panel(int64_t copy, int64_t p) const {
    return region.data() + copy * bytes_each() + p * panel_bytes;
  }
};

/// `count` copies of `w` in one region.
Copies replicate(const PackedB &w, int count) {
  Copies c;
  c.count = count;
  c.n_panels = w.n_panels;
  c.panel_bytes = w.panel_bytes;
  c.region = AlignedBuffer(size_t(count * c.bytes_each()));
  for (int i = 0; i < count; ++i)
    std::memcpy(c.region.data() + i * c.bytes_each(), w.panel(0), size_t(c.bytes_each()));
  return c;
}

/// One pass over `copies` (an N x K GEMV each) on `threads` pinned threads,
/// thread t on the t-th contiguous share of every copy's panels; GB/s of
/// packed weight bytes over the span from the first thread's start to the
/// last one's end (timed inside the threads, after a spin start).
double stream_rate(const BrgemmKernel &kernel, const Copies &copies, const void *a,
                   const BrgemmPostArgs &post, int threads, int panelsPerCall) {
  std::vector<float> c(kN);
  std::vector<Clock::time_point> t0(threads), t1(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int64_t> arrived{0};
  std::vector<std::unique_ptr<StealRanges>> steal;
  if (gSync == 2)
    for (int64_t i = 0; i < copies.count; ++i)
      steal.push_back(std::make_unique<StealRanges>(copies.n_panels / panelsPerCall, threads));
  const std::vector<int> cpus = process_cpus();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      if (!cpus.empty())
        pin_current_thread(cpus[size_t(t) % cpus.size()]);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      t0[t] = Clock::now();
      int64_t gen = 0;
      double waited = 0;
      for (int64_t copy = 0; copy < copies.count; ++copy) {
        if (gSync == 2) { // balanced: a thread done with its share takes from the back of another's
          StealRanges &sr = *steal[size_t(copy)];
          for (int64_t i = sr.next(t); i >= 0; i = sr.next(t))
            kernel(a, kK, copies.panel(copy, i * panelsPerCall), c.data() + i * panelsPerCall * 32,
                   kN, 1, &post);
        } else {
          const int64_t n = copies.n_panels, lo = n * t / threads, hi = n * (t + 1) / threads;
          for (int64_t p = lo; p < hi; p += panelsPerCall)
            kernel(a, kK, copies.panel(copy, p), c.data() + p * 32, kN, 1, &post);
        }
        if (gSync) { // every thread waits for the others after each GEMV, as a dispatch's join
          const auto w0 = Clock::now();
          ++gen;
          arrived.fetch_add(1, std::memory_order_acq_rel);
          while (arrived.load(std::memory_order_acquire) < gen * threads) {
          }
          waited += std::chrono::duration<double>(Clock::now() - w0).count();
        }
      }
      t1[t] = Clock::now();
      gWaitShare[t] = waited / std::chrono::duration<double>(t1[t] - t0[t]).count();
    });
  while (ready.load() < threads) {
  }
  go.store(true, std::memory_order_release);
  for (std::thread &th : pool)
    th.join();
  const double bytes = double(copies.count * copies.bytes_each());
  const double s =
      std::chrono::duration<double>(*std::max_element(t1.begin(), t1.end()) -
                                    *std::min_element(t0.begin(), t0.end()))
          .count();
  return bytes / s / 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
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

} // namespace

int main(int argc, char **argv) {
  if (!host_supports(Isa::avx512_vnni) && !host_supports(Isa::avx2)) {
    std::printf("needs avx512_vnni or avx2\n");
    return 0;
  }
  const double copies_mb = argc > 1 ? std::atof(argv[1]) : 256;
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 7;
  if (argc > 6) {
    kN = std::atoi(argv[5]);
    kK = std::atoi(argv[6]);
    if (kN < 64 || kN % 64 != 0 || kK < 256 || kK % 256 != 0) {
      std::printf("N: a multiple of 64, K: a multiple of 256; found %s %s\n", argv[5], argv[6]);
      return 1;
    }
  }
  const Isa isa = host_supports(Isa::avx512_vnni) ? Isa::avx512_vnni : Isa::avx2;
  gSync = std::getenv("HYC_BENCH_SYNC") ? std::atoi(std::getenv("HYC_BENCH_SYNC")) : 0;
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
      format(4, 128, 128, true),                  // AWQ / GPTQ int4 (q4z128)
  };
  // W8A8 tile variants (prefetch bytes, unroll, K streams), before the
  // 64-column and the default W8A8 kinds.
  using Prefetch = BrgemmTile::Prefetch;
  std::vector<std::tuple<int, int, int, Prefetch>> tiles;
  if (argc > 4 && isa == Isa::avx512_vnni && std::strcmp(argv[4], "-") != 0)
    for (const char *p = argv[4]; *p;) {
      char *end = nullptr;
      const long pf = std::strtol(p, &end, 10);
      long unroll = 4, streams = 1;
      Prefetch to = Prefetch::l1; // an explicit variant: prefetcht0 unless "t"
      if (end && *end == 't') // "4096t": prefetcht1, into L2 only
        to = Prefetch::l2, ++end;
      else if (end && *end == 'd') // "4096d": by the body's rows, as the table's kernels
        to = Prefetch::by_rows, ++end;
      if (end && *end == ':')
        unroll = std::strtol(end + 1, &end, 10);
      if (end && *end == ':')
        streams = std::strtol(end + 1, &end, 10);
      if (unroll < 1 || unroll > 64 || pf < 0 || streams < 1 || streams > 2 || end == p) {
        std::printf("w8a8-tiles: expected prefetch[t|d]:unroll[:streams], found \"%s\"\n",
                    argv[4]);
        return 1;
      }
      tiles.push_back({int(pf), int(unroll), int(streams), to});
      p = *end == ',' ? end + 1 : end;
    }
  // HYC_BENCH_NO_GROUPED=1: the bf16 and W8A8 kinds alone (quicker rounds,
  // so more of them fall in one bandwidth phase).
  const char *noGrouped = std::getenv("HYC_BENCH_NO_GROUPED");
  const int nFormats = noGrouped && std::strcmp(noGrouped, "1") == 0
                           ? 0
                           : int(sizeof kFormats / sizeof kFormats[0]);
  // + W8A8 with 64 columns (AVX-512 VNNI) + W8A8 (the reference, last)
  const int wide = isa == Isa::avx512_vnni ? 1 : 0;
  // bf16 x bf16 in 32 and 64 columns (AVX-512 BF16), before the W8A8 kinds.
  const int bf16Kinds = host_supports(Isa::avx512_bf16) ? 2 : 0;
  const int kinds = nFormats + bf16Kinds + int(tiles.size()) + wide + 1;
  std::vector<uint16_t> a_bf16(static_cast<size_t>(kK));
  for (int k = 0; k < kK; ++k)
    a_bf16[size_t(k)] = f32_to_bf16(0.01f * float(a[size_t(k)]));

  std::printf("isa %s, N = %d, K = %d, m = 1, %d threads, ~%.0f MB of weight copies per kind, "
              "%d interleaved rounds; the table's W8A8 kernels read %d K stream(s) (%s)\n",
              isa_name(isa), kN, kK, threads, copies_mb, rounds, hyrt::decodeStreams().streams,
              hyrt::decodeStreams().why.c_str());
  struct Kind {
    std::string name;
    double mb = 0;
    Copies copies;
    std::unique_ptr<StreamReader> probe; // windows of `copies`
    std::vector<int32_t> a_sum;
    BrgemmPostArgs post;
    bool grouped = false;
    const void *act = nullptr;
    int panelsPerCall = 1;
    std::unique_ptr<BrgemmKernel> kernel;
    std::vector<double> gbps, ratio;
  };
  std::vector<Kind> all(kinds);
  for (int kind = 0; kind < kinds; ++kind) {
    const bool grouped = kind < nFormats;
    const bool bf16 = !grouped && kind < nFormats + bf16Kinds;
    BrgemmDesc d;
    Copies copies;
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
      copies = replicate(random_weights(f, rng), n_copies);
    } else if (bf16) {
      const int n_block = kind == nFormats ? 32 : 64;
      d = make_brgemm_desc(Isa::avx512_bf16, DataType::bf16, DataType::bf16, DataType::f32, kK,
                           n_block);
      std::vector<uint16_t> w(size_t(kN) * kK);
      for (uint16_t &v : w)
        v = f32_to_bf16(0.001f * float(int(rng() % 255) - 127));
      one = packed_panel_bytes(BLayout::bf16_vnni2, kK) * (kN / 32);
      const int n_copies = std::max(1, int(copies_mb * 1e6 / double(one)));
      copies = replicate(pack_b_bf16(w.data(), kN, kK, kK), n_copies);
    } else {
      const bool wideKind = wide && kind + 2 == kinds;
      d = make_brgemm_desc(isa, DataType::u8, DataType::s8, DataType::f32, kK,
                           wideKind ? 64 : 32);
      std::vector<int8_t> w(size_t(kN) * kK);
      for (int8_t &v : w)
        v = int8_t(int(rng() % 255) - 127);
      one = packed_panel_bytes(BLayout::s8_vnni4, kK) * (kN / 32);
      const int n_copies = std::max(1, int(copies_mb * 1e6 / double(one)));
      copies = replicate(pack_b_s8(w.data(), kN, kK, kK), n_copies);
    }
    const int tileIndex = kind - nFormats - bf16Kinds;
    const bool variant = !grouped && !bf16 && tileIndex < int(tiles.size());
    BrgemmTile tile{};
    if (variant) {
      tile = *find_brgemm_tile(isa, DataType::u8, DataType::s8, 32);
      tile.prefetch_b = std::get<0>(tiles[size_t(tileIndex)]);
      tile.k_unroll = std::get<1>(tiles[size_t(tileIndex)]);
      tile.k_streams = std::get<2>(tiles[size_t(tileIndex)]);
      tile.prefetch_to = std::get<3>(tiles[size_t(tileIndex)]);
    }
    BrgemmGenResult g = variant ? x86::generate_avx512_vnni(d, tile) : generate_brgemm(d);
    if (!g) {
      std::printf("%s\n", g.error.c_str());
      return 1;
    }
    Kind &k = all[size_t(kind)];
    k.name = g.kernel->name();
    if (variant)
      k.name += " pf" + std::to_string(tile.prefetch_b) + " u" + std::to_string(tile.k_unroll) +
                " s" + std::to_string(tile.k_streams) +
                (tile.prefetch_to == Prefetch::l2        ? " t1"
                 : tile.prefetch_to == Prefetch::by_rows ? " by-rows"
                                                         : "");
    k.mb = double(one) / 1e6;
    k.copies = std::move(copies);
    k.probe = std::make_unique<StreamReader>(threads, k.copies.region.data(),
                                             k.copies.region.size());
    k.a_sum = std::move(a_sum);
    k.grouped = grouped;
    k.act = grouped ? static_cast<const void *>(a.data())
            : bf16  ? static_cast<const void *>(a_bf16.data())
                    : static_cast<const void *>(a_u8.data());
    k.panelsPerCall = d.n_block / 32;
    k.kernel = std::move(g.kernel);
    k.post.a_scale = &a_scale;
    k.post.b_scale = b_scale.data();
    k.post.a_sum = k.a_sum.data();
    // The two-stream loop runs where the call asks for it: a tile variant
    // asks for its own streams, the table's kernels for the host's choice
    // (as the runtime's drivers do).
    k.post.k_streams = variant ? tile.k_streams : hyrt::decodeStreams().streams;
  }
  // Probe windows: 128 MB, or the whole region when it is smaller (each
  // window is read right after the kernel's pass over the same region; at
  // most the L3's worth of it is still cached, which can only raise a probe
  // and so lower a ratio, never raise it).
  const size_t window = size_t(128) << 20;
  // One line per round on stderr (each kind's GB/s and its ratio to its
  // bracketing probes): the host's bandwidth phases show round by round.
  for (int round = 0; round < rounds; ++round) {
    std::fprintf(stderr, "round %d:", round + 1);
    for (Kind &k : all) {
      const double before = k.probe->read_window_gbps(window);
      const double rate =
          stream_rate(*k.kernel, k.copies, k.act, k.post, threads, k.panelsPerCall);
      const double after = k.probe->read_window_gbps(window);
      k.gbps.push_back(rate);
      k.ratio.push_back(rate / (0.5 * (before + after)));
      std::fprintf(stderr, " %.1f (%.0f%%)", rate, 100 * k.ratio.back());
      if (gSync)
        std::fprintf(stderr, " [wait %.0f/%.0f%%]", 100 * gWaitShare[0], 100 * gWaitShare[1 % threads]);
    }
    std::fprintf(stderr, "\n");
  }
  // Each kind's rate over the W8A8 kernel's in the same round (the last
  // kind): kernels compared in adjacent moments, whatever the phase.
  const Kind &w8 = all.back();
  std::printf("%-48s %9s %9s %9s %9s %9s\n", "kernel", "MB/GEMV", "GB/s", "best", "/ probes",
              "/ W8A8");
  for (const Kind &k : all) {
    std::vector<double> vs_w8;
    for (size_t r = 0; r < k.gbps.size(); ++r)
      vs_w8.push_back(k.gbps[r] / w8.gbps[r]);
    std::printf("%-48s %9.2f %9.2f %9.2f %8.0f%% %9.2f\n", k.name.c_str(), k.mb, median(k.gbps),
                *std::max_element(k.gbps.begin(), k.gbps.end()), 100 * median(k.ratio),
                median(vs_w8));
  }
  std::printf("GB/s: median and best pass; / probes: median over rounds of the pass's rate over\n"
              "the mean of the streaming reads probed right before and after it; / W8A8: median\n"
              "over rounds of the rate over the W8A8 kernel's in the same round.\n");
  return 0;
}
