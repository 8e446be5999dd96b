// hyc_extend_attention_bench: one extend chunk of dense attention over a
// bf16 KV cache (hyrt_cpu_paged_attention), the kernel extend blocks take
// on this host against the fp32 row-blocked kernel, interleaved, as GFLOP/s
// against the fp32 FMA and bf16 dot-product peaks measured in the same run.
// dense-1b's heads (32 query heads, 8 KV heads, dims 64) by default; a
// 512-token chunk at the end of a 4096-token prompt (positions 3584..4095),
// the last chunk of `hyc bench --input 4096`. Threads: HYRT_NUM_THREADS
// (default: every CPU). Not a test.
//
//   hyc_extend_attention_bench [context] [chunk] [rounds]
#include "codegen/host_peaks.h"
#include "hyrt/cpu_kernels.h"
#include "runtime/cpu/host_isa.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kHeads = 32, kKvHeads = 8, kDim = 64, kPage = 16;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const int64_t context = argc > 1 ? std::max(64L, std::atol(argv[1])) : 4096;
  const int64_t chunk = argc > 2 ? std::clamp(std::atol(argv[2]), 1L, context) : 512;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const int64_t pages = (context + kPage - 1) / kPage;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> bits(0, 0x7f);
  std::vector<uint16_t> k(size_t(pages * kPage * kKvHeads * kDim)), v(k.size());
  for (auto *c : {&k, &v})
    for (uint16_t &x : *c)
      x = uint16_t((rng() & 1 ? 0xbc00 : 0x3c00) | bits(rng)); // bf16 in +-[0.0078, 0.0156)
  void *kp = k.data(), *vp = v.data();
  hyrt_kv_cache_v0 kv{1, pages, kPage, kKvHeads, kDim, kDim, &kp, &vp, HYRT_KV_BF16};
  std::vector<int32_t> blocks(static_cast<size_t>(pages));
  for (int64_t i = 0; i < pages; ++i)
    blocks[size_t(i)] = int32_t((i * 7919) % pages); // scattered pages
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
    macs += double(p + 1) * kHeads * 2 * kDim;
  const int threads = int(std::thread::hardware_concurrency());
  const hyc::codegen::HostPeaks peaks = hyc::codegen::measure_compute_peaks(threads);
  const bool bf16 = hyrt::cpu::hostHasAvx512Bf16();
  std::printf("extend chunk of %lld tokens at positions %lld..%lld, %lld heads / %lld KV heads x "
              "%lld, bf16 cache; peaks: fp32 FMA %.0f, bf16 dot %.0f GFLOP/s\n",
              (long long)chunk, (long long)(context - chunk), (long long)(context - 1),
              (long long)kHeads, (long long)kKvHeads, (long long)kDim, peaks.fp32_gflops,
              peaks.bf16_gflops);
  std::vector<double> f32, b16;
  auto timed = [&](bool fp32Only) {
    hyrt::cpu::fp32AttentionOnly() = fp32Only;
    const auto t0 = Clock::now();
    hyrt_cpu_paged_attention(&kv, &step, 0, q.data(), kHeads, 0.125f, out.data(), 1);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    hyrt::cpu::fp32AttentionOnly() = false;
    return 2 * macs / s * 1e-9;
  };
  timed(true), timed(false); // warm-up
  for (int r = 0; r < rounds; ++r) {
    f32.push_back(timed(true));
    if (bf16)
      b16.push_back(timed(false));
  }
  std::printf("fp32 row-blocked kernel: %.0f GFLOP/s (%.0f%% of the FMA peak)\n", median(f32),
              100 * median(f32) / peaks.fp32_gflops);
  if (bf16)
    std::printf("bf16 dot-product kernel: %.0f GFLOP/s (%.0f%% of the bf16 peak), %.2fx\n",
                median(b16), 100 * median(b16) / peaks.bf16_gflops, median(b16) / median(f32));
  else
    std::printf("bf16 dot-product kernel: skipped (no AVX-512 BF16 on this host)\n");
  return 0;
}
