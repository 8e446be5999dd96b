// hyc_moe_bench: one MoE layer's routed experts on the kernels optimized
// artifacts run (runtime/cpu: threaded routing, permute, grouped [gate; up]
// GEMM with the SiLU·mul epilogue over (expert, panel block) items, grouped
// down GEMM, weighted combine with the shared experts added), against a
// per-expert loop of the same GEMM drivers (what artifacts did before) and
// against the host's limits measured in the same run: the streaming read
// bandwidth (decode-sized steps: GB/s over the bytes of the experts the
// step activates, against the better of the probes taken before and after
// the row; a row faster than both is reported as an error, not a share)
// and the ISA peak (GOP/s of the experts' GEMMs).
//
// Weights are random bytes in the packed layouts (speed does not depend on
// their values; bf16 bytes are kept to small normal numbers); caches are
// flushed before every timed call. Best of 5+ calls. Not a test:
// run build/bench/moe/hyc_moe_bench [--quick] [--tokens T] [--layer TEXT]
// [--stream-down]
// (README.md).
#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"
#include "codegen/host_peaks.h"
#include "codegen/tiles.h"
#include "hyrt/cpu_kernels.h"
#include "hyrt/gemm_layout.h"
#include "hyrt/reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace hyc::codegen;
using Clock = std::chrono::steady_clock;

struct Layer {
  const char *name;
  int64_t hidden, experts, topK, ffn, shared; // shared experts (ffn each)
};

// Qwen3-MoE-like and DeepSeek-like layers (the shapes; DeepSeek-V3's
// 256 x 7168 x 2048 experts would not fit this 24 GiB host in bf16, so the
// 7168-wide layer has 64 experts).
const Layer kLayers[] = {
    {"qwen3moe h2048 e64 top8 ffn768", 2048, 64, 8, 768, 0},
    {"qwen3moe h2048 e128 top8 ffn768", 2048, 128, 8, 768, 0},
    {"deepseek h2048 e64 top6 ffn1408 +2sh", 2048, 64, 6, 1408, 2},
    {"deepseek h2048 e256 top8 ffn1408 +1sh", 2048, 256, 8, 1408, 1},
    {"deepseek h7168 e64 top8 ffn2048 +1sh", 7168, 64, 8, 2048, 1},
};
const int64_t kTokens[] = {1, 4, 16, 128, 512, 1024};

struct Scheme {
  const char *name;
  int32_t id;
  Isa isa;
  DataType a, b;
  int64_t weightBytes; // per element
};

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Bytes of one packed [N][K] matrix (the drivers' layout: 32-column
/// panels; W8A8 panels carry 32 int32 compensation terms).
int64_t packedBytes(const Scheme &s, int64_t N, int64_t K) {
  const int64_t panels = (N + 31) / 32;
  if (s.id == HYRT_GEMM_W8A8)
    return panels * (roundUp(K, 4) * 32 + 128);
  return panels * roundUp(K, 2) * 32 * 2;
}

/// 64-byte aligned buffer of random bytes (bf16: small normal values).
struct Buffer {
  std::unique_ptr<uint8_t, decltype(&std::free)> p{nullptr, &std::free};
  size_t bytes = 0;
  Buffer(size_t n, bool bf16) : bytes(n) {
    p.reset(static_cast<uint8_t *>(std::aligned_alloc(64, roundUp(int64_t(n), 64))));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    uint64_t *w = reinterpret_cast<uint64_t *>(p.get());
    for (size_t i = 0; i < n / 8; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      // bf16: keep each 16-bit value's exponent at 2^-4..2^-1 (normal).
      w[i] = bf16 ? (x & 0x807f807f807f807full) | 0x3d803d803d803d80ull : x;
    }
  }
  uint8_t *data() { return p.get(); }
};

std::unique_ptr<BrgemmKernel> kernelFor(const Scheme &s, int64_t k, bool streamC = false) {
  BrgemmDesc desc = make_brgemm_desc(s.isa, s.a, s.b, DataType::f32, int(k));
  desc.stream_c = streamC;
  BrgemmGenResult gen = generate_brgemm(desc);
  if (!gen) {
    std::fprintf(stderr, "kernel generation failed: %s\n", gen.error.c_str());
    std::exit(1);
  }
  return std::move(gen.kernel);
}


template <typename F> double bestSeconds(F &&f, double budget) {
  f(); // warm-up
  double best = 1e30, spent = 0;
  for (int i = 0; i < 20 && (i < 5 || spent < budget); ++i) {
    hyc::codegen::evict_caches();
    const auto t0 = Clock::now();
    f();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
    spent += s;
  }
  return best;
}

/// onlyTokens: that token count's row alone (0: every row).
/// streamDown: the down GEMM stores its output non-temporally
/// (BrgemmDesc::stream_c), as artifacts do for outputs past the caches.
void runLayer(const Layer &L, const Scheme &s, int threads, const HostPeaks &peaks,
              bool quick, int64_t onlyTokens, bool streamDown) {
  const int64_t E = L.experts, H = L.hidden, F = L.ffn, k = L.topK;
  const int64_t upBytes = 2 * packedBytes(s, F, H), downBytes = packedBytes(s, H, F);
  const bool bf16 = s.id == HYRT_GEMM_BF16;
  Buffer gateUp(static_cast<size_t>(E * upBytes), bf16), down(static_cast<size_t>(E * downBytes), bf16);
  Buffer sharedUp(static_cast<size_t>(std::max<int64_t>(1, L.shared) * 2 * packedBytes(s, F, H)), bf16),
      sharedDown(static_cast<size_t>(std::max<int64_t>(1, L.shared) * packedBytes(s, H, F)), bf16);
  std::vector<float> upScale(static_cast<size_t>(E * 2 * F), 1e-3f), downScale(static_cast<size_t>(E * H), 1e-3f),
      shScale(static_cast<size_t>(2 * F * std::max<int64_t>(1, L.shared)), 1e-3f),
      shDownScale(static_cast<size_t>(H * std::max<int64_t>(1, L.shared)), 1e-3f);
  auto kUp = kernelFor(s, H), kDown = kernelFor(s, F, streamDown);
  const auto upFn = reinterpret_cast<hyrt_brgemm_fn>(kUp->fn());
  const auto downFn = reinterpret_cast<hyrt_brgemm_fn>(kDown->fn());
  const int64_t mUp = kUp->desc().m_max, mDown = kDown->desc().m_max;
  auto kShared = kernelFor(s, std::max<int64_t>(1, L.shared) * F);
  const auto sharedDownFn = reinterpret_cast<hyrt_brgemm_fn>(kShared->fn());
  const int64_t mShared = kShared->desc().m_max;
  const bool w8 = s.id == HYRT_GEMM_W8A8;
  std::printf("\n%s, %s experts (%.0f MB), stream %.1f GB/s, peak %.0f G%s/s\n", L.name, s.name,
              (gateUp.bytes + down.bytes) / 1e6, peaks.read_gbps,
              w8 ? peaks.int8_gops : peaks.bf16_gflops, w8 ? "OP" : "FLOP");
  std::printf("  %6s %10s %10s %9s %9s %8s %8s %10s %16s %16s\n", "tokens", "fused ms",
              "loop ms", "vs loop", "GB/s", "of BW", "G*OP/s", "of peak", "gate/up of peak",
              "down of peak");
  std::vector<int64_t> counts(std::begin(kTokens), std::end(kTokens));
  if (onlyTokens) // any count, in the list or not
    counts.assign(1, onlyTokens);
  double probe = peaks.read_gbps; // the last streaming read probe
  int phaseErrors = 0;
  for (int64_t T : counts) {
    if (quick && T > 128)
      continue;
    const int64_t pairs = T * k;
    std::mt19937 rng{uint32_t(T)};
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> x(static_cast<size_t>(T * H)), logits(static_cast<size_t>(T * E)), w(static_cast<size_t>(pairs)),
        px(static_cast<size_t>(pairs * H)), h(static_cast<size_t>(pairs * F)),
        yRows(static_cast<size_t>(pairs * H + 16)), out(static_cast<size_t>(T * H)),
        sh(static_cast<size_t>(T * 2 * F)), shOut(static_cast<size_t>(T * H));
    for (float &v : x)
      v = nd(rng);
    for (float &v : logits)
      v = nd(rng);
    // The down GEMM's output 64-byte aligned, as the arena's buffers are
    // (non-temporal stores need it).
    float *const yData =
        yRows.data() + (64 - reinterpret_cast<uintptr_t>(yRows.data()) % 64) % 64 / 4;
    std::vector<int32_t> ids(static_cast<size_t>(pairs)), offsets(static_cast<size_t>(E + 1)), rows(static_cast<size_t>(pairs));
    std::vector<uint8_t> scratch(static_cast<size_t>(std::max(
        {hyrt_gemm_scratch_bytes_for(s.id, pairs, H), hyrt_gemm_scratch_bytes_for(s.id, pairs, F),
         hyrt_gemm_scratch_bytes_for(s.id, T, H),
         hyrt_gemm_scratch_bytes_for(s.id, T, std::max<int64_t>(1, L.shared) * F)})));
    const int64_t minMacs = int64_t(1) << 16;
    auto shared = [&] {
      if (!L.shared)
        return;
      // The shared experts: one [gate; up] GEMM of width shared * F, then
      // the down GEMM, added in the combine.
      hyrt_cpu_gemm_silu_mul(s.id, x.data(), T, H, sharedUp.data(), w8 ? shScale.data() : nullptr,
                             L.shared * F, sh.data(), scratch.data(), upFn, mUp, minMacs);
      if (w8)
        hyrt_cpu_gemm_w8a8(sh.data(), T, L.shared * F, sharedDown.data(), shDownScale.data(), H,
                           nullptr, shOut.data(), scratch.data(), sharedDownFn, mShared, minMacs);
      else
        hyrt_cpu_gemm_bf16(sh.data(), T, L.shared * F, sharedDown.data(), H, nullptr,
                           shOut.data(), scratch.data(), sharedDownFn, mShared, minMacs);
    };
    auto fused = [&] {
      hyrt_cpu_moe_route(logits.data(), nullptr, T, E, k, 0, 1, 1, 0, 1, 1.0f, w.data(),
                         ids.data());
      hyrt_cpu_moe_permute(x.data(), ids.data(), T, H, k, E, 0, px.data(), offsets.data(),
                           rows.data());
      hyrt_cpu_grouped_gemm_silu_mul(s.id, px.data(), pairs, H, offsets.data(), E, gateUp.data(),
                                     w8 ? upScale.data() : nullptr, F, h.data(), scratch.data(),
                                     upFn, mUp, minMacs);
      hyrt_cpu_grouped_gemm(s.id, h.data(), pairs, F, offsets.data(), E, down.data(),
                            w8 ? downScale.data() : nullptr, H, yData, scratch.data(), downFn,
                            mDown, minMacs);
      shared();
      hyrt_cpu_moe_unpermute_add(yData, rows.data(), w.data(), T, k, H,
                                 L.shared ? shOut.data() : nullptr, nullptr, out.data());
    };
    auto loop = [&] {
      // Before: the reference routing/permute/combine and one driver call
      // (one fork/join) per expert.
      hyrt_ref_moe_route(logits.data(), nullptr, T, E, k, 0, 1, 1, 0, 1, 1.0f, w.data(),
                         ids.data());
      hyrt_ref_moe_permute(x.data(), ids.data(), T, H, k, E, 0, px.data(), offsets.data(),
                           rows.data());
      for (int64_t e = 0; e < E; ++e) {
        const int64_t b = offsets[size_t(e)], n = offsets[size_t(e + 1)] - b;
        if (n <= 0)
          continue;
        hyrt_cpu_gemm_silu_mul(s.id, px.data() + b * H, n, H, gateUp.data() + e * upBytes,
                               w8 ? upScale.data() + e * 2 * F : nullptr, F, h.data() + b * F,
                               scratch.data(), upFn, mUp, minMacs);
        if (w8)
          hyrt_cpu_gemm_w8a8(h.data() + b * F, n, F, down.data() + e * downBytes,
                             downScale.data() + e * H, H, nullptr, yData + b * H,
                             scratch.data(), downFn, mDown, minMacs);
        else
          hyrt_cpu_gemm_bf16(h.data() + b * F, n, F, down.data() + e * downBytes, H, nullptr,
                             yData + b * H, scratch.data(), downFn, mDown, minMacs);
      }
      shared();
      hyrt_ref_moe_unpermute_add(yData, rows.data(), w.data(), T, k, H,
                                 L.shared ? shOut.data() : nullptr, nullptr, out.data());
    };
    const double budget = quick ? 0.2 : 0.6;
    const double tf = bestSeconds(fused, budget), tl = bestSeconds(loop, budget);
    // The two grouped GEMMs alone (the routing and permute of the last
    // fused call stand): each one's share of the peak.
    const double tUp = bestSeconds(
        [&] {
          hyrt_cpu_grouped_gemm_silu_mul(s.id, px.data(), pairs, H, offsets.data(), E,
                                         gateUp.data(), w8 ? upScale.data() : nullptr, F,
                                         h.data(), scratch.data(), upFn, mUp, minMacs);
        },
        budget);
    const double tDown = bestSeconds(
        [&] {
          hyrt_cpu_grouped_gemm(s.id, h.data(), pairs, F, offsets.data(), E, down.data(),
                                w8 ? downScale.data() : nullptr, H, yData, scratch.data(),
                                downFn, mDown, minMacs);
        },
        budget);
    int64_t active = 0;
    for (int64_t e = 0; e < E; ++e)
      active += offsets[size_t(e + 1)] > offsets[size_t(e)];
    const double bytes = double(active) * double(upBytes + downBytes) +
                         double(L.shared) * double(upBytes + downBytes);
    const double ops = 2.0 * double(pairs) * 3.0 * double(H) * double(F) +
                       2.0 * double(T) * 3.0 * double(L.shared * F) * double(H);
    const double gbs = bytes / tf / 1e9, gops = ops / tf / 1e9;
    const double peak = w8 ? peaks.int8_gops : peaks.bf16_gflops;
    const double upOps = 2.0 * double(pairs) * 2.0 * double(H) * double(F),
                 downOps = 2.0 * double(pairs) * double(H) * double(F);
    // The yardstick: the better of the probes before and after this row
    // (this host's streaming read switches between phases within seconds).
    // A step that still outruns both was timed in a faster phase than
    // either probe saw: a measurement error, printed as such.
    const double after = measure_read_gbps(threads, size_t(1) << 30, 3);
    const double yard = std::max(probe, after);
    probe = after;
    char ofBw[16];
    if (gbs > yard) {
      std::snprintf(ofBw, sizeof ofBw, "err");
      ++phaseErrors;
    } else {
      std::snprintf(ofBw, sizeof ofBw, "%.0f%%", 100 * gbs / yard);
    }
    std::printf("  %6lld %10.3f %10.3f %8.2fx %9.1f %8s %8.1f %9.0f%% %15.0f%% %15.0f%%\n",
                static_cast<long long>(T), tf * 1e3, tl * 1e3, tl / tf, gbs, ofBw, gops,
                100 * gops / peak, 100 * upOps / tUp / 1e9 / peak,
                100 * downOps / tDown / 1e9 / peak);
  }
  if (phaseErrors)
    std::printf("  (err: %d row(s) read faster than the streaming probes before and after "
                "them, so the host's bandwidth changed phase in between; rerun)\n",
                phaseErrors);
  (void)threads;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  int64_t onlyTokens = 0; // --tokens T: that row alone
  std::string onlyLayer;  // --layer TEXT: layers whose name contains it
  bool streamDown = false; // --stream-down: non-temporal down GEMM stores
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--tokens" && i + 1 < argc)
      onlyTokens = std::atoll(argv[++i]);
    else if (a == "--layer" && i + 1 < argc)
      onlyLayer = argv[++i];
    else if (a == "--stream-down")
      streamDown = true;
    else {
      std::printf("usage: hyc_moe_bench [--quick] [--tokens T] [--layer TEXT] "
                  "[--stream-down]\n");
      return 2;
    }
  }
  const int threads = int(std::thread::hardware_concurrency());
  std::vector<Scheme> schemes;
  if (host_supports(Isa::avx512_vnni) && executes_vnni())
    schemes.push_back({"w8a8", HYRT_GEMM_W8A8, Isa::avx512_vnni, DataType::u8, DataType::s8, 1});
  if (host_supports(Isa::avx512_bf16) && executes_bf16())
    schemes.push_back({"bf16", HYRT_GEMM_BF16, Isa::avx512_bf16, DataType::bf16, DataType::bf16, 2});
  if (schemes.empty()) {
    std::printf("hyc_moe_bench: this host runs neither AVX-512 VNNI nor AVX512_BF16; "
                "nothing to measure\n");
    return 0;
  }
  std::printf("hyc_moe_bench: %d threads; 'vs loop' = per-expert driver loop time / fused "
              "time;\nGB/s over the bytes of the experts a step activates (decode-sized "
              "steps), G*OP/s of the experts' GEMMs (prefill-sized steps)\n",
              threads);
  for (const Layer &L : kLayers)
    for (const Scheme &s : schemes) {
      if ((quick && (L.hidden > 2048 || L.experts > 64)) ||
          std::string(L.name).find(onlyLayer) == std::string::npos)
        continue;
      HostPeaks peaks = measure_best_compute_peaks(threads, 2);
      peaks.read_gbps = measure_read_gbps(threads, size_t(1) << 30, 3);
      runLayer(L, s, threads, peaks, quick, onlyTokens, streamDown);
    }
}
