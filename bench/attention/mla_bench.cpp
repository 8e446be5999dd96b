// hyc_attention_bench: the absorbed MLA kernel (hyrt_cpu_mla_attention)
// over a bf16 latent cache, against the host's limits measured in the same
// run: decode at contexts 512..16384 as GB/s over the latent bytes read
// (positions x (kv_lora_rank + rope) x 2 bytes, plus the bf16 kv_b read by
// the folds) against the streaming read bandwidth, caches flushed before
// each timed call, and a 512-token prefill
// chunk as GFLOP/s against the host's fastest floating-point peak (bf16
// `vdpbf16ps` where it executes, which the decode kernel uses for the
// latent attention there, else fp32 FMA: a rate the kernels cannot exceed,
// so a share above 100% would be a measurement error). The plain form's
// time is printed with the absorbed form's work per second for comparison,
// not as a share of a peak: it does other work. mla-small's heads (16) and
// DeepSeek-V3's (128), rank 512, rope 64, nope 128, v 128.
// HYC_BENCH_AVX2=1 times the AVX2 + FMA forms (what hosts without AVX-512
// and the avx2 variant run) against the ymm FMA peak. Not a test.
#include "codegen/host_peaks.h"
#include "hyrt/cpu_kernels.h"
#include "runtime/cpu/host_isa.h"

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kNope = 128, kRope = 64, kV = 128, kRank = 512, kRow = kRank + kRope;

struct Run {
  double ms, attnMacs, foldMacs;
};


/// T tokens of one sequence ending at position n - 1 (T = 1: decode).
Run run(int64_t heads, int64_t T, int64_t n, int64_t splits, bool quick,
        int64_t plainForm = 0) {
  const int64_t page = 64, pages = (n + page - 1) / page;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> bits(0, 0x7f);
  std::vector<uint16_t> cache(static_cast<size_t>(pages * page * kRow));
  for (uint16_t &x : cache)
    x = uint16_t(0x3c00 | bits(rng)); // small normal bf16 values
  void *base = cache.data();
  hyrt_kv_cache_v0 kv{1, pages, page, 1, kRow, 0, &base, nullptr, HYRT_KV_BF16};
  std::vector<int32_t> pos(static_cast<size_t>(T)), seq(static_cast<size_t>(T), 0),
      tok(static_cast<size_t>(T), 1), blocks(static_cast<size_t>(pages));
  for (int64_t t = 0; t < T; ++t)
    pos[size_t(t)] = int32_t(n - T + t);
  for (int64_t i = 0; i < pages; ++i)
    blocks[size_t(i)] = int32_t((i * 7) % pages); // scattered pages
  std::vector<int32_t> start{0}, len{int32_t(T)}, prefix{int32_t(n - T)};
  hyrt_step_v0 step{T,          1,           tok.data(),    pos.data(), seq.data(),
                    start.data(), len.data(), prefix.data(), blocks.data(), pages,
                    nullptr,    0,           nullptr};
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> qn(static_cast<size_t>(T * heads * kNope)), qp(static_cast<size_t>(T * heads * kRope)),
      kvb(static_cast<size_t>(heads * (kNope + kV) * kRank)), out(static_cast<size_t>(T * heads * kV));
  for (float &x : qn)
    x = d(rng);
  for (float &x : qp)
    x = d(rng);
  // kv_b as artifacts store it under --quant bf16 / w8a8: bf16 rows.
  std::vector<uint16_t> kvbHalf(kvb.size());
  for (size_t i = 0; i < kvb.size(); ++i) {
    kvb[i] = 0.05f * d(rng);
    uint32_t u;
    std::memcpy(&u, &kvb[i], 4);
    kvbHalf[i] = uint16_t(u >> 16);
  }
  auto call = [&] {
    hyrt_cpu_mla_attention(&kv, &step, 0, qn.data(), qp.data(), kvbHalf.data(), 1, heads, kNope,
                           kRope,
                           kV, kRank, 0.07f, out.data(), splits, plainForm, plainForm);
  };
  call();
  double best = 1e30, spent = 0;
  for (int i = 0; i < 50 && (i < 3 || spent < (quick ? 0.1 : 0.4)); ++i) {
    if (T == 1) // decode reads kv_b and the latents from memory, as in an artifact
      hyc::codegen::evict_caches(size_t(256) << 20);
    const auto t0 = Clock::now();
    call();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
    spent += s;
  }
  double attn = 0;
  for (int64_t t = 0; t < T; ++t)
    attn += double(pos[size_t(t)] + 1) * double(heads) * double(kRow + kRank);
  return {best * 1e3, attn, double(T) * double(heads) * kRank * (kNope + kV)};
}

} // namespace

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const int threads = int(std::thread::hardware_concurrency());
  const bool avx2 = std::getenv("HYC_BENCH_AVX2") != nullptr;
  if (avx2 ? !hyrt::cpu::hostHasAvx2Fma() : !hyc::codegen::executes_avx512_fma()) {
    std::printf("hyc_attention_bench: no %s here; the portable kernel is not measured\n",
                avx2 ? "AVX2 + FMA" : "AVX-512");
    return 0;
  }
  hyrt::cpu::portableOnly() = avx2; // no AVX-512 bodies: the AVX2 forms
  const hyc::codegen::HostPeaks peaks = hyc::codegen::measure_best_compute_peaks(threads, 3);
  const bool bf16 = !avx2 && peaks.bf16_gflops > peaks.fp32_gflops;
  const double peak = avx2 ? peaks.avx2_fp32_gflops : bf16 ? peaks.bf16_gflops : peaks.fp32_gflops;
  const char *peakName = avx2 ? "fp32 FMA (AVX2)" : bf16 ? "bf16 vdpbf16ps" : "fp32 FMA";
  std::printf("hyc_attention_bench: absorbed MLA, bf16 latent cache, %d threads, fp32 FMA peak "
              "%.0f GFLOP/s, bf16 peak %.0f; shares of the %s peak\n",
              threads, peaks.fp32_gflops, peaks.bf16_gflops, peakName);
  for (int64_t heads : {16, 128}) {
    const double bw = hyc::codegen::measure_read_gbps(threads, size_t(1) << 30, 3);
    std::printf("\n%lld heads: decode (kv_splits %d), stream %.1f GB/s\n",
                static_cast<long long>(heads), threads, bw);
    std::printf("  %8s %9s %10s %8s %10s %8s\n", "context", "ms", "GB/s", "of BW", "GFLOP/s",
                "of peak");
    for (int64_t n : {512, 1024, 2048, 4096, 8192, 16384}) {
      if (quick && n > 4096)
        continue;
      const Run r = run(heads, 1, n, threads, quick);
      const double bytes = double(n) * kRow * 2 + double(heads) * (kNope + kV) * kRank * 2;
      const double gflops = 2 * (r.attnMacs + r.foldMacs) / r.ms / 1e6;
      std::printf("  %8lld %9.3f %10.1f %7.0f%% %10.1f %7.0f%%\n", static_cast<long long>(n),
                  r.ms, bytes / r.ms / 1e6, 100 * bytes / r.ms / 1e6 / bw, gflops,
                  100 * gflops / peak);
    }
    // A prefill chunk from position 0 and later chunks of a long prompt in
    // each form (plain_form -1 forces the plain one), GFLOP/s counted as the
    // absorbed form's work for both: the ratio of the two times is what
    // hyc-cpu-select-lowering-strategy's plain-form weight stands for.
    const int64_t T = heads > 16 ? 128 : 512;
    for (int64_t n : {T, 2 * T, 4 * T, 8 * T}) {
      if (quick && n > 4 * T)
        continue;
      double ms[2];
      for (int64_t plainForm : {int64_t(0), int64_t(-1)}) {
        const Run p = run(heads, T, n, 1, quick, plainForm);
        const double gflops = 2 * (p.attnMacs + p.foldMacs) / p.ms / 1e6;
        ms[plainForm ? 1 : 0] = p.ms;
        if (plainForm)
          std::printf("  prefill chunk of %lld tokens ending at position %lld, plain form: %.1f "
                      "ms (the absorbed form's work at %.1f GFLOP/s)\n",
                      static_cast<long long>(T), static_cast<long long>(n - 1), p.ms, gflops);
        else
          std::printf("  prefill chunk of %lld tokens ending at position %lld, absorbed form: "
                      "%.1f ms (%.1f GFLOP/s = %.0f%% of the %s peak)\n",
                      static_cast<long long>(T), static_cast<long long>(n - 1), p.ms, gflops,
                      100 * gflops / peak, peakName);
      }
      std::printf("    absorbed / plain = %.2f\n", ms[0] / ms[1]);
    }
  }
}
