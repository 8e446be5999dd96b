// hyc_quant_bench: the weight schemes of `--quant` on a dense-1b-shaped
// layer (hidden 2048, ffn 8192, 32 query / 8 KV heads of 64: q, k, v, o,
// the fused [gate; up] with its SiLU·mul epilogue, down) through the GEMM
// drivers optimized artifacts call, with the best kernels this host runs.
//
// Decode (M = 1): GB/s of weight bytes (codes, scales and padding as
// stored) over a stack of layers larger than the last-level cache, so every
// step reads its weights from memory, against the streaming read of a
// huge-page buffer measured right before each measurement, in interleaved
// rounds over the schemes: medians of the rounds' paired ratios (this
// host's bandwidth swings minute to minute). Prefill (M = 128): tokens/s and the
// ratio of each scheme to per-channel W8A8 (the seed's FP8 reached 80-90%
// of INT8). Weights are random bytes in the packed layouts (speed does not
// depend on their values, except FP8's few subnormal codes: its codes are
// those of block-quantized Gaussian weights; bf16 exponents kept normal).
// Not a test: run build/bench/quant/hyc_quant_bench [--quick] [--only NAME]
// (bench/README.md).
#include "codegen/brgemm.h"
#include "codegen/cpu_isa.h"
#include "codegen/host_peaks.h"
#include "codegen/tiles.h"
#include "hyrt/cpu_kernels.h"
#include "hyrt/gemm_layout.h"

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

constexpr int64_t kHidden = 2048, kFfn = 8192, kKv = 512;

struct Scheme {
  const char *name;
  int32_t id;
  Isa isa;
  DataType a;
  DataType b;
  int64_t kernelK; ///< 0: the GEMM's K; else the per-group / block kernel
  bool accumulate;
  bool blockwise = false; ///< FP8: never the bf16 x f8 kernel (for comparison)
};

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Bytes the drivers read for one [N][K] weight: packed panels plus scales.
int64_t weightBytes(const Scheme &s, int64_t N, int64_t K) {
  const int64_t panels = (N + 31) / 32, groups = (K + 127) / 128;
  switch (s.id) {
  case HYRT_GEMM_W8A8:
    return panels * (roundUp(K, 4) * 32 + 128) + N * 4;
  case HYRT_GEMM_W8A8_G128:
    return panels * groups * (128 * 32 + 128) + N * groups * 4;
  case HYRT_GEMM_FP8:
  case HYRT_GEMM_FP8_F32:
    return panels * groups * 128 * 32 + (N + 127) / 128 * groups * 4;
  default:
    return panels * roundUp(K, 2) * 32 * 2;
  }
}

/// Scale-array floats for one [N][K] weight.
int64_t scaleFloats(const Scheme &s, int64_t N, int64_t K) {
  const int64_t groups = (K + 127) / 128;
  switch (s.id) {
  case HYRT_GEMM_W8A8:
    return N;
  case HYRT_GEMM_W8A8_G128:
    return N * groups;
  case HYRT_GEMM_FP8:
  case HYRT_GEMM_FP8_F32:
    return (N + 127) / 128 * groups;
  default:
    return 0;
  }
}

/// Eight e4m3 codes as block-quantized Gaussian weights have them (the
/// block's largest |w|, ~4 sigma, at 448, so subnormal and zero codes are
/// rare): each byte of `bits` picks one of 256 codes drawn once as the
/// nearest e4m3 value to 112 z, z standard normal.
uint64_t fp8Codes(uint64_t bits) {
  static const std::vector<uint8_t> table = [] {
    // Positive e4m3 magnitudes in code order (0x00..0x7E are increasing).
    std::vector<float> mags;
    for (int c = 0; c < 0x7F; ++c) {
      const int e = c >> 3, m = c & 7;
      mags.push_back(e == 0 ? std::ldexp(float(m), -9) : std::ldexp(8.0f + m, e - 10));
    }
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0, 1);
    std::vector<uint8_t> t(256);
    for (uint8_t &code : t) {
      const float v = std::min(448.0f, std::fabs(112.0f * nd(rng)));
      const int c = int(std::lower_bound(mags.begin(), mags.end(), v) - mags.begin());
      const int best = c > 0 && (c == 0x7F || v - mags[c - 1] < mags[c] - v) ? c - 1 : c;
      code = uint8_t(best | (rng() & 1 ? 0x80 : 0));
    }
    return t;
  }();
  uint64_t out = 0;
  for (int b = 0; b < 8; ++b)
    out |= uint64_t(table[(bits >> (8 * b)) & 0xFF]) << (8 * b);
  return out;
}

/// 64-byte aligned random bytes valid for the scheme.
struct Buffer {
  std::unique_ptr<uint8_t, decltype(&std::free)> p{nullptr, &std::free};
  Buffer(size_t n, const Scheme &s) {
    p.reset(static_cast<uint8_t *>(std::aligned_alloc(64, size_t(roundUp(int64_t(n), 64)))));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    uint64_t *w = reinterpret_cast<uint64_t *>(p.get());
    for (size_t i = 0; i < n / 8; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (s.id == HYRT_GEMM_BF16 || s.id == HYRT_GEMM_F32_BF16)
        w[i] = (x & 0x807f807f807f807full) | 0x3d803d803d803d80ull; // normal bf16
      else if (hyrt_gemm_is_fp8(s.id))
        w[i] = fp8Codes(x);
      else
        w[i] = x;
    }
  }
  const uint8_t *data() const { return p.get(); }
};

/// One [N][K] GEMM of the layer: its weights, scales and kernel.
struct Gemm {
  int64_t N, K;
  bool siluMul; // [gate; up]: N is one half
  std::unique_ptr<Buffer> w;
  std::vector<float> scale;
  std::unique_ptr<BrgemmKernel> kernel;
  /// FP8 on native bf16 with VBMI: the bf16 x f8 kernel the compiler
  /// selects for steps of at most its block rows (decode).
  std::unique_ptr<BrgemmKernel> fusedKernel;
};

struct Layer {
  std::vector<Gemm> gemms;
  int64_t bytes = 0;
};

Layer makeLayer(const Scheme &s) {
  Layer L;
  const struct {
    int64_t n, k;
    bool silu;
  } shapes[] = {{kHidden, kHidden, false}, {kKv, kHidden, false}, {kKv, kHidden, false},
                {kHidden, kHidden, false}, {kFfn, kHidden, true},  {kHidden, kFfn, false}};
  for (const auto &sh : shapes) {
    Gemm g{sh.n, sh.k, sh.silu, nullptr, {}, nullptr};
    const int64_t parts = sh.silu ? 2 : 1;
    const int64_t bytes = parts * weightBytes(s, sh.n, sh.k);
    g.w = std::make_unique<Buffer>(size_t(bytes), s);
    g.scale.assign(size_t(parts * std::max<int64_t>(1, scaleFloats(s, sh.n, sh.k))), 1e-3f);
    const int k = int(s.kernelK ? s.kernelK : sh.k);
    BrgemmGenResult gen =
        generate_brgemm(make_brgemm_desc(s.isa, s.a, s.b, DataType::f32, k, 32, s.accumulate));
    if (!gen) {
      std::fprintf(stderr, "%s: kernel generation failed: %s\n", s.name, gen.error.c_str());
      std::exit(1);
    }
    g.kernel = std::move(gen.kernel);
    if (s.id == HYRT_GEMM_FP8 && !s.blockwise) {
      BrgemmGenResult fused = generate_brgemm(make_brgemm_desc(
          Isa::avx512_bf16, DataType::bf16, DataType::f8, DataType::f32, int(roundUp(sh.k, 128))));
      if (!fused) {
        std::fprintf(stderr, "%s: kernel generation failed: %s\n", s.name, fused.error.c_str());
        std::exit(1);
      }
      g.fusedKernel = std::move(fused.kernel);
    }
    L.bytes += bytes;
    L.gemms.push_back(std::move(g));
  }
  return L;
}

/// One layer step of M rows: every GEMM, activations x (M x 8192 floats
/// covers every K), out likewise.
void runLayer(const Scheme &s, const Layer &L, int64_t M, const float *x, float *out,
              uint8_t *scratch) {
  const int64_t minMacs = int64_t(1) << 16;
  for (const Gemm &g : L.gemms) {
    const bool fused = g.fusedKernel && M <= g.fusedKernel->desc().m_max;
    const BrgemmKernel &kernel = fused ? *g.fusedKernel : *g.kernel;
    const int32_t id = fused ? int32_t(HYRT_GEMM_FP8_FUSED) : s.id;
    const auto fn = reinterpret_cast<hyrt_brgemm_fn>(kernel.fn());
    const int64_t mMax = kernel.desc().m_max;
    const float *scale = g.scale.data();
    if (g.siluMul) {
      hyrt_cpu_gemm_silu_mul(id, x, M, g.K, g.w->data(),
                             scaleFloats(s, g.N, g.K) ? scale : nullptr, g.N, out, scratch,
                             fn, mMax, minMacs);
      continue;
    }
    switch (s.id) {
    case HYRT_GEMM_W8A8:
      hyrt_cpu_gemm_w8a8(x, M, g.K, g.w->data(), scale, g.N, nullptr, out, scratch, fn, mMax,
                         minMacs);
      break;
    case HYRT_GEMM_W8A8_G128:
      hyrt_cpu_gemm_w8a8_g128(x, M, g.K, g.w->data(), scale, g.N, nullptr, out, scratch, fn,
                              mMax, minMacs);
      break;
    case HYRT_GEMM_FP8:
    case HYRT_GEMM_FP8_F32:
      hyrt_cpu_gemm_fp8(id, x, M, g.K, g.w->data(), scale, g.N, nullptr, out, scratch, fn,
                        mMax, minMacs);
      break;
    case HYRT_GEMM_BF16:
      hyrt_cpu_gemm_bf16(x, M, g.K, g.w->data(), g.N, nullptr, out, scratch, fn, mMax,
                         minMacs);
      break;
    default:
      hyrt_cpu_gemm_f32_bf16(x, M, g.K, g.w->data(), g.N, nullptr, out, scratch, fn, mMax,
                             minMacs);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  std::string only; // --only NAME: one scheme (for profiling)
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick")
      quick = true;
    else if (std::string(argv[i]) == "--only" && i + 1 < argc)
      only = argv[++i];
  }
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  const bool vnni = host_supports(Isa::avx512_vnni), nativeBf16 = host_supports(Isa::avx512_bf16);
  const Isa fma = host_supports(Isa::avx512_core) ? Isa::avx512_core : Isa::avx2;
  const Isa int8 = vnni ? Isa::avx512_vnni : Isa::avx2;
  // The bf16 x f8 kernel widens with VBMI byte permutes.
  const bool fusedFp8 = nativeBf16 && __builtin_cpu_supports("avx512vbmi");
  std::vector<Scheme> schemes = {
      {"w8a8", HYRT_GEMM_W8A8, int8, DataType::u8, DataType::s8, 0, false},
      {"w8a8-g128", HYRT_GEMM_W8A8_G128, int8, DataType::u8, DataType::s8, 128, true},
      nativeBf16 ? Scheme{"fp8", HYRT_GEMM_FP8, Isa::avx512_bf16, DataType::bf16,
                          DataType::bf16, 128, false, /*blockwise=*/!fusedFp8}
                 : Scheme{"fp8", HYRT_GEMM_FP8_F32, fma, DataType::f32, DataType::bf16, 128,
                          false},
      nativeBf16 ? Scheme{"bf16", HYRT_GEMM_BF16, Isa::avx512_bf16, DataType::bf16,
                          DataType::bf16, 0, false}
                 : Scheme{"bf16", HYRT_GEMM_F32_BF16, fma, DataType::f32, DataType::bf16, 0,
                          false},
  };
  // Where the bf16 x f8 kernel runs fp8 decode, the blockwise path (codes
  // widened per 128-K block into L1, K = 128 kernel per block) beside it.
  if (fusedFp8)
    schemes.push_back({"fp8-block", HYRT_GEMM_FP8, Isa::avx512_bf16, DataType::bf16,
                       DataType::bf16, 128, false, /*blockwise=*/true});
  // Layers enough to exceed any last-level cache of this machine class
  // (~0.35 GB of int8 weights; 0.7 GB of bf16).
  const int layers = quick ? 4 : 6;
  const int64_t prefillM = 128;
  std::vector<float> x(size_t(prefillM * kFfn)), out(size_t(prefillM * kFfn));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1);
  for (float &v : x)
    v = nd(rng);
  std::vector<uint8_t> scratch(size_t(hyrt_gemm_scratch_bytes_for(HYRT_GEMM_W8A8_G128,
                                                                  prefillM, kFfn) +
                                      hyrt_gemm_scratch_bytes_for(HYRT_GEMM_BF16, prefillM,
                                                                  kFfn) +
                                      (1 << 20)));
  std::printf("dense-1b layer (hidden %lld, ffn %lld), %d layers, %d threads; "
              "kernels: int8 %s, fp8/bf16 %s (fp8 decode: %s)\n",
              (long long)kHidden, (long long)kFfn, layers, threads, isa_name(int8),
              nativeBf16 ? "avx512bf16" : isa_name(fma),
              fusedFp8 ? "bf16 x f8, codes widened in registers"
                       : "blockwise, codes widened per 128-K block");
  // Every scheme's stack is built first; decode is then measured in
  // interleaved rounds, each scheme's steps right after a streaming read of
  // its own, and each round gives one paired ratio. The medians over the
  // rounds are what the table shows: this host's bandwidth swings by up to
  // 2x minute to minute, and a ratio of two numbers taken minutes apart
  // (one scheme's run against one stream read) was anywhere in 42-138%.
  struct Run {
    const Scheme *s;
    std::vector<Layer> stack;
    std::vector<double> stepS, stream, ratio;
  };
  std::vector<Run> runs;
  for (const Scheme &s : schemes) {
    if (!only.empty() && only != s.name)
      continue;
    Run r{&s, {}, {}, {}, {}};
    for (int l = 0; l < layers; ++l)
      r.stack.push_back(makeLayer(s));
    runLayer(s, r.stack[0], 1, x.data(), out.data(), scratch.data()); // warm up
    runs.push_back(std::move(r));
  }
  StreamReader reader(threads, size_t(1) << 30);
  const int rounds = getenv("HYC_BENCH_ROUNDS") ? atoi(getenv("HYC_BENCH_ROUNDS"))
                                                : (quick ? 5 : 11);
  const int reps = getenv("HYC_BENCH_REPS") ? atoi(getenv("HYC_BENCH_REPS")) : 3;
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < runs.size(); ++i) {
      Run &r = runs[(i + size_t(round)) % runs.size()]; // rotate who goes first
      const double stream = reader.read_gbps(2);
      double best = 1e30;
      for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = Clock::now();
        for (const Layer &L : r.stack)
          runLayer(*r.s, L, 1, x.data(), out.data(), scratch.data());
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
      }
      const double gbs = double(r.stack[0].bytes) * layers / best / 1e9;
      r.stepS.push_back(best);
      r.stream.push_back(stream);
      r.ratio.push_back(gbs / stream);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  std::printf("decode: median of %d interleaved rounds (each: a stream read, then the "
              "best of %d steps); ratio = that round's pair\n",
              rounds, reps);
  std::printf("%-10s %9s %11s %9s %8s %10s %13s %9s %12s\n", "scheme", "MB/layer",
              "decode ms", "GB/s", "stream", "of stream", "(min - max)", "tok/s",
              "prefill x w8");
  double w8Prefill = 0;
  for (Run &r : runs) {
    const Scheme &s = *r.s;
    const double step = median(r.stepS);
    const double gbs = double(r.stack[0].bytes) * layers / step / 1e9;
    // Prefill: one layer, 128 rows (compute-bound).
    runLayer(s, r.stack[0], prefillM, x.data(), out.data(), scratch.data());
    double bestP = 1e30;
    for (int i = 0; i < (quick ? 3 : 7); ++i) {
      const auto t0 = Clock::now();
      runLayer(s, r.stack[0], prefillM, x.data(), out.data(), scratch.data());
      bestP = std::min(bestP, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    const double tokS = double(prefillM) / bestP;
    if (s.id == HYRT_GEMM_W8A8 || w8Prefill == 0)
      w8Prefill = tokS;
    const auto [lo, hi] = std::minmax_element(r.ratio.begin(), r.ratio.end());
    std::printf("%-10s %9.1f %11.2f %9.1f %8.1f %9.0f%% %5.0f - %4.0f%% %9.0f %11.0f%%\n",
                s.name, r.stack[0].bytes / 1e6, step * 1e3 / layers, gbs, median(r.stream),
                100 * median(r.ratio), 100 * *lo, 100 * *hi, tokS, 100 * tokS / w8Prefill);
  }
  return 0;
}
