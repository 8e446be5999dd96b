// hyc_extend_attention_bench: one extend chunk of dense attention over a
// bf16 KV cache (hyrt_cpu_paged_attention), the kernel extend blocks take
// on this host against the fp32 row-blocked kernel, interleaved, as GFLOP/s
// against the fp32 FMA and bf16 dot-product peaks measured in the same run.
// dense-1b's heads (32 query heads, 8 KV heads, dims 64) by default; a
// 512-token chunk at the end of a 4096-token prompt (positions 3584..4095),
// the last chunk of `hyc bench --input 4096`. Threads: HYRT_NUM_THREADS
// (default: every CPU). Not a test.
//
//   hyc_extend_attention_bench [context] [chunk] [rounds] [layers] [page]
//                              [heads] [kv_heads] [dim]
//
// With `layers` > 1 each timed call runs that many layers' caches in turn
// (a decode step's attention: chunk 1 and 16 layers put dense-1b's cache,
// 128 MB at 4000 positions, in DRAM rather than the L3), and the cache's
// bytes read per second are printed beside the GFLOP/s. `page`: positions
// per KV cache page (default 16, the engine's default). `heads`,
// `kv_heads`, `dim`: another model's attention (moe-small: 32 4 128).
// HYC_BENCH_BF16_ONLY=1 times the bf16 kernel alone: the fp32 kernel's
// rounds in between change its cache-resident rate by up to 30%, which
// hides a kernel change's effect. HYC_BENCH_AVX2=1 times the fp32
// row-blocked kernel's AVX2 form (what hosts without AVX-512 and the avx2
// variant run) against the ymm FMA peak, and no bf16 kernel.
// HYC_BENCH_CONTIGUOUS=1: the cache pages in address order (see below).
// Decode runs (chunk 1) over a cache beyond the L3 bracket each bf16 round
// with two streaming reads and print the kernel's share of them, split by
// the host's fast and slow read phases; HYC_BENCH_VERBOSE=1 prints each
// round's probe and kernel GB/s. HYC_BENCH_INT8=1: an int8 cache, its
// int8 dot-product kernel against the bf16 one on the same rows (decode
// chunks: the decode kernel with its keys in int8 dot products against the
// same kernel widening them to bf16).
#include "codegen/host_peaks.h"
#include "codegen/read_phases.h"
#include "hyrt/cpu_kernels.h"
#include "runtime/cpu/host_isa.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// uint16_t elements on 2 MiB boundaries with MADV_HUGEPAGE.
class HugeBuffer {
public:
  explicit HugeBuffer(size_t n) : n_(n) {
    const size_t bytes = (n * 2 + (size_t(2) << 20) - 1) / (size_t(2) << 20) * (size_t(2) << 20);
    p_ = static_cast<uint16_t *>(std::aligned_alloc(size_t(2) << 20, bytes));
    if (!p_) {
      std::fprintf(stderr, "cannot allocate %zu bytes\n", bytes);
      std::exit(1);
    }
    ::madvise(p_, bytes, MADV_HUGEPAGE);
  }
  ~HugeBuffer() { std::free(p_); }
  HugeBuffer(const HugeBuffer &) = delete;
  HugeBuffer &operator=(const HugeBuffer &) = delete;
  uint16_t *data() { return p_; }
  size_t size() const { return n_; }

private:
  uint16_t *p_;
  size_t n_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const int64_t context = argc > 1 ? std::max(64L, std::atol(argv[1])) : 4096;
  const int64_t chunk = argc > 2 ? std::clamp(std::atol(argv[2]), 1L, context) : 512;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const int64_t layers = argc > 4 ? std::max(1L, std::atol(argv[4])) : 1;
  const int64_t kPage = argc > 5 ? std::clamp(std::atol(argv[5]), 1L, 4096L) : 16;
  const int64_t kHeads = argc > 6 ? std::clamp(std::atol(argv[6]), 1L, 256L) : 32;
  const int64_t kKvHeads = argc > 7 ? std::clamp(std::atol(argv[7]), 1L, kHeads) : 8;
  const int64_t kDim = argc > 8 ? std::clamp(std::atol(argv[8]) / 32 * 32, 32L, 256L) : 64;
  if (kHeads % kKvHeads != 0) {
    std::printf("heads (%lld) must be a multiple of kv_heads (%lld)\n", (long long)kHeads,
                (long long)kKvHeads);
    return 2;
  }
  const int64_t pages = (context + kPage - 1) / kPage;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> bits(0, 0x7f);
  const int64_t layerElems = pages * kPage * kKvHeads * kDim;
  // The cache on 2 MiB pages where the host gives them, as the engine's
  // pool (runtime/engine/kv_cache.cpp): 4 KiB pages would make every
  // page's rows a TLB miss.
  HugeBuffer k(size_t(layers * layerElems)), v(k.size());
  for (HugeBuffer *c : {&k, &v})
    for (size_t i = 0; i < c->size(); ++i)
      c->data()[i] = uint16_t((rng() & 1 ? 0xbc00 : 0x3c00) | bits(rng)); // bf16 in +-[0.0078, 0.0156)
  std::vector<void *> kp(static_cast<size_t>(layers)), vp(kp);
  for (int64_t i = 0; i < layers; ++i)
    kp[size_t(i)] = k.data() + i * layerElems, vp[size_t(i)] = v.data() + i * layerElems;
  hyrt_kv_cache_v0 kv{layers, pages, kPage, kKvHeads, kDim, kDim, kp.data(), vp.data(),
                      HYRT_KV_BF16};
  // Scattered pages (a server's cache after many sequences came and went),
  // or with HYC_BENCH_CONTIGUOUS=1 in address order (one sequence in a
  // fresh cache, as `hyc bench` decodes).
  const bool contiguous = std::getenv("HYC_BENCH_CONTIGUOUS") != nullptr;
  std::vector<int32_t> blocks(static_cast<size_t>(pages));
  for (int64_t i = 0; i < pages; ++i)
    blocks[size_t(i)] = int32_t(contiguous ? i : (i * 7919) % pages);
  std::vector<int32_t> positions, seqs, tokens(size_t(chunk), 5);
  for (int64_t p = context - chunk; p < context; ++p)
    positions.push_back(int32_t(p)), seqs.push_back(0);
  std::vector<int32_t> start = {0}, len = {int32_t(chunk)}, prefix = {int32_t(context - chunk)};
  hyrt_step_v0 step{chunk, 1, tokens.data(), positions.data(), seqs.data(), start.data(),
                    len.data(), prefix.data(), blocks.data(), pages, nullptr};
  std::vector<float> q(size_t(chunk * kHeads * kDim)), out(size_t(chunk * kHeads * kDim));
  std::uniform_real_distribution<float> d(-1, 1);
  for (float &x : q)
    x = d(rng);
  // Multiply-adds: every token's scores and weighted values over its positions.
  double macs = 0;
  for (int64_t p = context - chunk; p < context; ++p)
    macs += double(p + 1) * kHeads * 2 * kDim * double(layers);
  // Cache bytes a call reads: every position's K and V rows once (the
  // extend kernels' token blocks read them more often).
  const double cacheBytes = double(context) * kKvHeads * 2 * kDim * 2 * double(layers);
  const int threads = int(std::thread::hardware_concurrency());
  hyc::codegen::HostPeaks peaks = hyc::codegen::measure_compute_peaks(threads);
  const bool avx2 = std::getenv("HYC_BENCH_AVX2") != nullptr;
  hyrt::cpu::portableOnly() = avx2; // no AVX-512 bodies: the AVX2 form
  const bool bf16 = hyrt::cpu::hostHasAvx512Bf16();
  const auto fmaPeak = [&] { return avx2 ? peaks.avx2_fp32_gflops : peaks.fp32_gflops; };
  std::printf("extend chunk of %lld tokens at positions %lld..%lld, %lld heads / %lld KV heads x "
              "%lld, bf16 cache; peaks: fp32 FMA %.0f, bf16 dot %.0f GFLOP/s\n",
              (long long)chunk, (long long)(context - chunk), (long long)(context - 1),
              (long long)kHeads, (long long)kKvHeads, (long long)kDim, fmaPeak(),
              peaks.bf16_gflops);
  std::vector<double> f32, b16;
  auto timed = [&](bool fp32Only) {
    hyrt::cpu::fp32AttentionOnly() = fp32Only;
    const auto t0 = Clock::now();
    for (int64_t layer = 0; layer < layers; ++layer)
      hyrt_cpu_paged_attention(&kv, &step, layer, q.data(), kHeads,
                               1.0f / std::sqrt(float(kDim)), out.data(), 1);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    hyrt::cpu::fp32AttentionOnly() = false;
    return 2 * macs / s * 1e-9;
  };
  timed(true), timed(false); // warm-up
  // HYC_BENCH_INT8=1: an int8 cache of the same shape instead, its int8
  // dot-product kernel (hosts with AVX-512 VNNI) against the bf16 kernel
  // reading the same int8 rows, interleaved.
  if (std::getenv("HYC_BENCH_INT8")) {
    const size_t elems = size_t(layers * layerElems), rowsPerLayer = size_t(pages * kPage * kKvHeads);
    std::vector<int8_t> k8(elems), v8(elems);
    std::vector<float> ks(size_t(layers) * rowsPerLayer), vs(ks.size());
    std::uniform_int_distribution<int> code(-127, 127);
    std::uniform_real_distribution<float> sd(0.004f, 0.012f);
    for (int8_t &x : k8)
      x = int8_t(code(rng));
    for (int8_t &x : v8)
      x = int8_t(code(rng));
    for (float &x : ks)
      x = sd(rng);
    for (float &x : vs)
      x = sd(rng);
    std::vector<void *> k8p(static_cast<size_t>(layers)), v8p(k8p.size());
    std::vector<float *> ksp(static_cast<size_t>(layers)), vsp(ksp.size());
    for (int64_t i = 0; i < layers; ++i) {
      k8p[size_t(i)] = k8.data() + i * layerElems, v8p[size_t(i)] = v8.data() + i * layerElems;
      ksp[size_t(i)] = ks.data() + size_t(i) * rowsPerLayer;
      vsp[size_t(i)] = vs.data() + size_t(i) * rowsPerLayer;
    }
    hyrt_kv_cache_v0 kv8{layers, pages, kPage, kKvHeads, kDim, kDim, k8p.data(), v8p.data(),
                         HYRT_KV_INT8, ksp.data(), vsp.data()};
    auto timed8 = [&](bool int8Dots) {
      hyrt::cpu::int8AttentionDotsOff() = !int8Dots;
      const auto t0 = Clock::now();
      for (int64_t layer = 0; layer < layers; ++layer)
        hyrt_cpu_paged_attention(&kv8, &step, layer, q.data(), kHeads,
                                 1.0f / std::sqrt(float(kDim)), out.data(), 1);
      const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
      hyrt::cpu::int8AttentionDotsOff() = false;
      return 2 * macs / sec * 1e-9;
    };
    timed8(true), timed8(false);
    std::vector<double> i8, viaBf16;
    for (int r = 0; r < rounds; ++r)
      i8.push_back(timed8(true)), viaBf16.push_back(timed8(false));
    hyc::codegen::keep_best_peaks(peaks, hyc::codegen::measure_compute_peaks(threads));
    std::printf("int8 cache; peaks, the better of before and after: bf16 dot %.0f GFLOP/s, int8 "
                "dot %.0f GOP/s\n",
                peaks.bf16_gflops, peaks.int8_gops);
    std::printf("%s%s: %.0f GOP/s (%.0f%% of the int8 peak)\n",
                chunk == 1 ? "decode kernel, keys in int8 dot products" : "int8 dot-product kernel",
                hyrt::cpu::hostHasAvx512Vnni() ? "" : " (not on this host: what it falls back to)",
                median(i8), 100 * median(i8) / peaks.int8_gops);
    std::printf("%s: %.0f GFLOP/s (%.0f%% of the bf16 peak); int8 / bf16 %.2fx\n",
                chunk == 1 ? "decode kernel, keys widened to bf16"
                           : "bf16 dot-product kernel on the int8 rows",
                median(viaBf16), 100 * median(viaBf16) / peaks.bf16_gflops,
                median(i8) / median(viaBf16));
    return 0;
  }
  const bool onlyBf16 = std::getenv("HYC_BENCH_BF16_ONLY") != nullptr;
  // A decode step over a cache far beyond the L3 reads DRAM, whose rate on
  // a shared host swings between phases (bench/README.md, "The bandwidth
  // yardstick"): each bf16 round is bracketed by two streaming reads and its
  // cache GB/s taken as a share of their mean, so that runs in different
  // minutes compare.
  const bool paired = chunk == 1 && cacheBytes > 64e6;
  // Cache bytes per second at a rate (for one-token chunks: a decode step's
  // attention).
  auto gbs = [&](double gflops) { return cacheBytes / (2 * macs / (gflops * 1e9)) * 1e-9; };
  std::vector<double> shares, probes; // per bf16 round: kernel / probe, probe GB/s
  auto probe = [&] { return hyc::codegen::measure_read_gbps(threads, size_t(256) << 20, 1); };
  for (int r = 0; r < rounds; ++r) {
    if (!onlyBf16)
      f32.push_back(timed(true));
    if (bf16) {
      const double before = paired ? probe() : 0;
      b16.push_back(timed(false));
      if (paired && std::getenv("HYC_BENCH_VERBOSE"))
        std::printf("round %d: probe %.1f, kernel %.1f GB/s\n", r, before, gbs(b16.back()));
      if (paired) {
        probes.push_back(0.5 * (before + probe()));
        shares.push_back(gbs(b16.back()) / probes.back());
      }
    }
  }
  // The peaks once more, the better kept (keep_best_peaks): the first
  // measurement of a process often runs before the cores have ramped up, and
  // came out at half the peak here (a kernel at 35% of the bf16 peak then
  // read 65-85%).
  hyc::codegen::keep_best_peaks(peaks, hyc::codegen::measure_compute_peaks(threads));
  std::printf("peaks, the better of before and after the rounds: fp32 FMA %.0f, bf16 dot %.0f "
              "GFLOP/s\n",
              fmaPeak(), peaks.bf16_gflops);
  if (onlyBf16)
    std::printf("fp32 row-blocked kernel: not timed (HYC_BENCH_BF16_ONLY)\n");
  else
    std::printf("fp32 row-blocked kernel%s: %.0f GFLOP/s (%.0f%% of the FMA peak), cache %.1f "
                "GB/s\n",
                avx2 ? " (AVX2 form)" : "", median(f32), 100 * median(f32) / fmaPeak(),
                gbs(median(f32)));
  if (bf16 && onlyBf16)
    std::printf("bf16 dot-product kernel: %.0f GFLOP/s (%.0f%% of the bf16 peak), cache %.1f GB/s\n",
                median(b16), 100 * median(b16) / peaks.bf16_gflops, gbs(median(b16)));
  else if (bf16)
    std::printf("bf16 dot-product kernel: %.0f GFLOP/s (%.0f%% of the bf16 peak), %.2fx, cache "
                "%.1f GB/s\n",
                median(b16), 100 * median(b16) / peaks.bf16_gflops, median(b16) / median(f32),
                gbs(median(b16)));
  else
    std::printf("bf16 dot-product kernel: skipped (no AVX-512 BF16 on this host)\n");
  if (!shares.empty()) {
    const auto [lo, hi] = std::minmax_element(shares.begin(), shares.end());
    std::printf("bf16 kernel's cache GB/s / its bracketing streaming reads: median %.0f%% "
                "(%.0f-%.0f%%)\n",
                100 * median(shares), 100 * *lo, 100 * *hi);
    // The rounds of the host's fast and slow read phases apart
    // (codegen/read_phases.h).
    const auto [plo, phi] = std::minmax_element(probes.begin(), probes.end());
    const hyc::codegen::ReadPhases phases =
        hyc::codegen::split_by_read_phase(probes, shares, *plo, *phi);
    if (phases.split)
      std::printf("  rounds with fast reads (%zu, probe > %.0f GB/s): median %.0f%%; slow (%zu): "
                  "median %.0f%%\n",
                  phases.fast.size(), phases.at, 100 * median(phases.fast), phases.slow.size(),
                  100 * median(phases.slow));
  }
  return 0;
}
