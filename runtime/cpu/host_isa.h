// What the host executes, asked once per process: the runtime kernels pick
// their AVX-512 bodies with these (portable bodies otherwise).
#ifndef HYRT_CPU_HOST_ISA_H
#define HYRT_CPU_HOST_ISA_H

namespace hyrt::cpu {

/// Set by tests to run the portable bodies on an AVX-512 host, so that both
/// kinds of body are checked on every machine (never set by artifacts).
inline bool &portableOnly() {
  static bool forced = false;
  return forced;
}

/// AVX-512F: the elementwise and GQA-group kernels' 16-lane bodies.
inline bool hostHasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has && !portableOnly();
}

/// AVX-512F + BW + VL: the row-blocked attention kernel (masked 16-bit
/// loads of bf16 cache rows).
inline bool hostHasAvx512BwVl() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has && !portableOnly();
}

} // namespace hyrt::cpu

#endif // HYRT_CPU_HOST_ISA_H
