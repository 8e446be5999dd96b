// hyc_kernel_bench: hyc's generated brgemm kernels (through the driver GEMM)
// against oneDNN 2.6 matmul on decode (M=1), small-batch (M=16) and prefill
// (M=1024) shapes with N = K = 4096 and moe-small's prefill shapes, in bf16, int8 (u8 x s8 -> f32 with
// scales) and fp32. Prints a summary of GFLOP/s, the ratio to oneDNN, the
// ratio to the host's measured peak and, for memory-bound shapes, the weight
// bytes streamed per second against the measured streaming bandwidth.
#include "codegen/host_peaks.h"

#include "codegen/cpu_isa.h"
#include "codegen/gemm.h"
#include "codegen/pack.h"

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

using namespace hyc::codegen;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// bf16: bf16 x bf16 (vdpbf16ps); int8: u8 x s8 -> f32; f32: f32 x f32;
// w16: f32 activations x bf16 weights on plain AVX-512 FMA (hyc's
// avx512core kernel), compared with oneDNN's bf16 x bf16.
enum class Kind { bf16, int8, f32, w16 };
const char *kind_name(Kind k) {
  switch (k) {
  case Kind::bf16:
    return "bf16";
  case Kind::int8:
    return "int8";
  case Kind::f32:
    return "f32";
  default:
    return "w16";
  }
}

struct Shape {
  const char *label;
  int64_t m, n, k;
};
constexpr Shape kShapes[] = {{"decode M=1", 1, 4096, 4096},
                             {"batch M=16", 16, 4096, 4096},
                             {"prefill M=1024", 1024, 4096, 4096},
                             // moe-small's 512-token prefill: one expert's
                             // down GEMM (~64 rows, K = 768), o_proj, qkv
                             {"expert M=64 K=768", 64, 2048, 768},
                             {"o_proj M=512", 512, 2048, 4096},
                             {"qkv M=512", 512, 5120, 2048}};

// Weight copies cycled through for memory-bound shapes, so weights stream
// from DRAM rather than the (large, shared) L3.
constexpr double kStreamBytes = 640e6;

/// Inputs and prepared operators for one (kind, shape); built on first use.
struct Fixture {
  Kind kind;
  Shape shape;
  int copies = 1;
  double weight_bytes = 0;  // per copy, as each library stores it
  std::vector<uint8_t> a;   // bf16 / u8 / f32 activations
  std::vector<float> a_f32; // w16: hyc's fp32 activations
  std::vector<float> a_scale, b_scale, c;
  // hyc
  std::unique_ptr<Gemm> gemm;
  std::vector<PackedB> w;
  // oneDNN
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::matmul prim;
  std::vector<dnnl::memory> dnnl_w;
  dnnl::memory a_mem, c_mem, scale_mem, zp_mem;
  std::string dnnl_impl;
};

PackedB clone(const PackedB &p) {
  PackedB q;
  q.layout = p.layout;
  q.n = p.n;
  q.k = p.k;
  q.n_panels = p.n_panels;
  q.panel_bytes = p.panel_bytes;
  q.data = AlignedBuffer(p.data.size());
  std::memcpy(q.data.data(), p.data.data(), p.data.size());
  return q;
}

std::unique_ptr<Fixture> build(Kind kind, const Shape &s) {
  auto f = std::make_unique<Fixture>();
  f->kind = kind;
  f->shape = s;
  const int64_t M = s.m, N = s.n, K = s.k;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> af(M * K), wf(N * K);
  for (float &v : af)
    v = u(rng);
  for (float &v : wf)
    v = u(rng);
  f->c.assign(M * N, 0.f);
  f->b_scale.assign(N, 1.f);
  f->a_scale.assign(M, 1.f);

  GemmDesc gd;
  gd.k = K;
  PackedB w0;
  dt a_dt = dt::f32, w_dt = dt::f32;
  std::vector<uint16_t> w16;
  std::vector<int8_t> w8;
  const void *w_user = wf.data();
  if (kind == Kind::bf16 || kind == Kind::w16) {
    gd.isa = kind == Kind::bf16 ? Isa::avx512_bf16 : Isa::avx512_core;
    gd.a_type = kind == Kind::bf16 ? DataType::bf16 : DataType::f32;
    gd.b_type = DataType::bf16;
    f->a.resize(M * K * 2);
    for (int64_t i = 0; i < M * K; ++i) {
      const uint16_t h = f32_to_bf16(af[i]);
      std::memcpy(&f->a[i * 2], &h, 2);
    }
    w16.resize(N * K);
    for (int64_t i = 0; i < N * K; ++i)
      w16[i] = f32_to_bf16(wf[i]);
    w0 = pack_b_bf16(w16.data(), N, K, K);
    a_dt = w_dt = dt::bf16;
    w_user = w16.data();
    if (kind == Kind::w16) { // hyc reads fp32 A; oneDNN keeps the bf16 copy
      f->a_f32 = af;
      for (int64_t i = 0; i < M * K; ++i) // the same values as the bf16 A
        f->a_f32[i] = bf16_to_f32(f32_to_bf16(af[i]));
    }
  } else if (kind == Kind::int8) {
    gd.isa = Isa::avx512_vnni;
    gd.a_type = DataType::u8;
    gd.b_type = DataType::s8;
    f->a.resize(M * K);
    quantize_u8_per_token(af.data(), M, K, K, f->a.data(), K,
                          f->a_scale.data());
    w8.resize(N * K);
    quantize_s8_per_channel(wf.data(), N, K, K, w8.data(), f->b_scale.data());
    w0 = pack_b_s8(w8.data(), N, K, K);
    a_dt = dt::u8;
    w_dt = dt::s8;
    w_user = w8.data();
  } else {
    gd.isa = Isa::avx512_core;
    gd.a_type = gd.b_type = DataType::f32;
    f->a.resize(M * K * 4);
    std::memcpy(f->a.data(), af.data(), f->a.size());
    w0 = pack_b_f32(wf.data(), N, K, K);
  }
  std::string err;
  f->gemm = Gemm::create(gd, &err);
  if (!f->gemm) {
    std::fprintf(stderr, "hyc: %s\n", err.c_str());
    std::abort();
  }
  f->weight_bytes = double(w0.data.size());
  f->copies = M <= 64 ? int(std::ceil(kStreamBytes / f->weight_bytes)) : 1;
  f->w.push_back(std::move(w0));
  for (int i = 1; i < f->copies; ++i)
    f->w.push_back(clone(f->w[0]));

  // oneDNN: W is [N][K] row-major = logical {K, N} in format ba.
  dnnl::memory::desc a_md({M, K}, a_dt, tag::ab), w_md({K, N}, w_dt, tag::any),
      c_md({M, N}, dt::f32, tag::ab), w_user_md({K, N}, w_dt, tag::ba);
  dnnl::primitive_attr attr;
  if (kind == Kind::int8) {
    attr.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, w_md, c_md), attr,
                                  f->eng);
  f->dnnl_impl = pd.impl_info_str();
  f->prim = dnnl::matmul(pd);
  dnnl::memory w_user_mem(w_user_md, f->eng, const_cast<void *>(w_user));
  dnnl::memory w_mem(pd.weights_desc(), f->eng);
  dnnl::reorder(w_user_mem, w_mem).execute(f->strm, w_user_mem, w_mem);
  f->strm.wait();
  const size_t dnnl_bytes = pd.weights_desc().get_size();
  f->dnnl_w.push_back(w_mem);
  for (int i = 1; i < f->copies; ++i) {
    dnnl::memory m(pd.weights_desc(), f->eng);
    std::memcpy(m.get_data_handle(), w_mem.get_data_handle(), dnnl_bytes);
    f->dnnl_w.push_back(m);
  }
  f->a_mem = dnnl::memory(pd.src_desc(), f->eng, f->a.data());
  f->c_mem = dnnl::memory(pd.dst_desc(), f->eng, f->c.data());
  if (kind == Kind::int8) {
    f->scale_mem =
        dnnl::memory({{N}, dt::f32, tag::a}, f->eng, f->b_scale.data());
    f->zp_mem = dnnl::memory({{1}, dt::s32, tag::a}, f->eng);
    *static_cast<int32_t *>(f->zp_mem.get_data_handle()) = 128;
  }
  return f;
}

/// The fixture of the running benchmark; the previous one is dropped when
/// the (kind, shape) changes, which keeps at most one set of copies alive.
/// The whole shape decides: two shapes of one M (o_proj and qkv) once
/// shared a fixture, and the second ran the first's GEMM under its own
/// FLOP count (an efficiency over 100%).
Fixture &fixture(Kind kind, const Shape &s) {
  static std::unique_ptr<Fixture> current;
  if (!current || current->kind != kind || current->shape.m != s.m ||
      current->shape.n != s.n || current->shape.k != s.k) {
    current.reset();
    current = build(kind, s);
  }
  return *current;
}

void run_hyc(benchmark::State &state, Kind kind, Shape s) {
  Fixture &f = fixture(kind, s);
  int64_t it = 0;
  for (auto _ : state) {
    const PackedB &w = f.w[it++ % f.copies];
    const void *a = f.a_f32.empty() ? static_cast<const void *>(f.a.data())
                                    : f.a_f32.data();
    f.gemm->run(a, s.k, w, f.c.data(), s.n, s.m, nullptr, f.a_scale.data(),
                f.b_scale.data());
  }
  state.SetLabel(f.gemm->kernel().name());
}

void run_onednn(benchmark::State &state, Kind kind, Shape s) {
  Fixture &f = fixture(kind, s);
  int64_t it = 0;
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, f.a_mem},
                                             {DNNL_ARG_DST, f.c_mem}};
  if (kind == Kind::int8) {
    args[DNNL_ARG_ATTR_OUTPUT_SCALES] = f.scale_mem;
    args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = f.zp_mem;
  }
  for (auto _ : state) {
    args[DNNL_ARG_WEIGHTS] = f.dnnl_w[it++ % f.copies];
    f.prim.execute(f.strm, args);
    f.strm.wait();
  }
  state.SetLabel(f.dnnl_impl);
}

/// Collects the best seconds per iteration by benchmark name (without the
/// "/real_time" suffix) over rounds and repetitions, for the summary.
class Collector : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run> &runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run &r : runs) {
      if (r.iterations == 0 || r.error_occurred ||
          r.run_type != Run::RT_Iteration)
        continue;
      const double t = r.real_accumulated_time / r.iterations;
      auto [it, fresh] = seconds.emplace(r.run_name.function_name, t);
      if (!fresh)
        it->second = std::min(it->second, t);
    }
  }
  std::map<std::string, double> seconds;
};

double now_seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Busy CPU seconds of the whole machine (steal included) and of this
/// process, to tell how much of the run's CPU went elsewhere.
struct CpuUse {
  double machine = 0, self = 0;
};
CpuUse cpu_use() {
  CpuUse u;
  const double tick = double(sysconf(_SC_CLK_TCK));
  if (FILE *f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[8] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
      u.machine = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tick;
    std::fclose(f);
  }
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  u.self = r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec +
           r.ru_stime.tv_usec * 1e-6;
  return u;
}

std::string bench_name(const char *lib, Kind k, const Shape &s) {
  return std::string(lib) + "/" + kind_name(k) + "/M" + std::to_string(s.m) +
         "xN" + std::to_string(s.n) + "xK" + std::to_string(s.k);
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 3;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--rounds=", 9) == 0) {
      rounds = std::max(1, std::atoi(argv[i] + 9));
      for (int j = i; j + 1 < argc; ++j)
        argv[j] = argv[j + 1];
      --argc;
      break;
    }
  benchmark::Initialize(&argc, argv);
  const int threads = omp_get_max_threads();
  const CpuUse use0 = cpu_use();
  const double wall0 = now_seconds();
  std::printf("measuring host peaks on %d threads...\n", threads);
  const hyc::codegen::HostPeaks peaks = hyc::codegen::measure_peaks(threads);
  std::printf("host peaks: fp32 FMA %.0f GFLOP/s, bf16 dot %.0f GFLOP/s, "
              "int8 dot %.0f GOP/s, streaming read (THP) %.1f GB/s\n",
              peaks.fp32_gflops, peaks.bf16_gflops, peaks.int8_gops,
              peaks.read_gbps);
  if (!host_supports(Isa::avx512_bf16) && peaks.bf16_gflops > 0)
    std::printf("note: CPUID hides AVX512_BF16 but vdpbf16ps executes; "
                "oneDNN sees no BF16 and emulates it\n");

  std::vector<Kind> kinds;
  if (peaks.bf16_gflops > 0)
    kinds.push_back(Kind::bf16);
  if (peaks.int8_gops > 0)
    kinds.push_back(Kind::int8);
  kinds.push_back(Kind::f32);
  kinds.push_back(Kind::w16);
  // hyc and oneDNN alternate `rounds` times per shape (the summary keeps
  // each one's best round), so both see the same machine state even where
  // neighbours steal CPU time.
  for (Kind k : kinds)
    for (const Shape &s : kShapes)
      for (int round = 0; round < rounds; ++round)
        for (const char *lib : {"hyc", "onednn"})
          benchmark::RegisterBenchmark(
              bench_name(lib, k, s).c_str(),
              std::string(lib) == "hyc" ? run_hyc : run_onednn, k, s)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);

  Collector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\nhost peaks (%d threads): fp32 FMA %.0f GFLOP/s, bf16 dot %.0f "
              "GFLOP/s, int8 dot %.0f GOP/s, streaming read %.1f GB/s\n",
              threads, peaks.fp32_gflops, peaks.bf16_gflops, peaks.int8_gops,
              peaks.read_gbps);
  const CpuUse use1 = cpu_use();
  const double wall = now_seconds() - wall0;
  const double others = (use1.machine - use0.machine) - (use1.self - use0.self);
  std::printf("CPU taken by other processes or the hypervisor during the run: "
              "%.0f%% of %d cores%s\n",
              100 * others / (wall * threads), threads,
              others > 0.05 * wall * threads
                  ? " -- figures are unreliable, rerun"
                  : "");
  std::printf("%-5s %-15s %9s %9s %8s %8s %8s %9s %8s\n", "type", "shape",
              "hyc", "oneDNN", "hyc/dnn", "hyc/pk", "dnn/pk", "hyc GB/s",
              "GB/s/bw");
  for (Kind k : kinds)
    for (const Shape &s : kShapes) {
      auto h = reporter.seconds.find(bench_name("hyc", k, s));
      auto d = reporter.seconds.find(bench_name("onednn", k, s));
      if (h == reporter.seconds.end() || d == reporter.seconds.end())
        continue;
      const double ops = 2.0 * s.m * s.n * s.k * 1e-9;
      const double peak = k == Kind::bf16   ? peaks.bf16_gflops
                          : k == Kind::int8 ? peaks.int8_gops
                                            : peaks.fp32_gflops;
      const double elem = k == Kind::int8 ? 1 : k == Kind::f32 ? 4 : 2;
      const double gh = ops / h->second, gd = ops / d->second;
      const double wbytes = double(s.n) * s.k * elem;
      std::printf("%-5s %-15s %9.1f %9.1f %8.2f %8.2f %8.2f", kind_name(k),
                  s.label, gh, gd, gh / gd, gh / peak, gd / peak);
      if (s.m <= 64)
        std::printf(" %9.1f %8.2f", wbytes / h->second * 1e-9,
                    wbytes / h->second * 1e-9 / peaks.read_gbps);
      std::printf("\n");
    }
  std::printf("(GFLOP/s or GOP/s; pk = measured peak of the instruction the "
              "kernel uses (w16: fp32 FMA); GB/s = weight bytes per second, "
              "bw = measured streaming read; w16 oneDNN = its bf16 x bf16)\n");
  benchmark::Shutdown();
  return 0;
}
