// What the host executes, asked once per process: the runtime kernels pick
// their AVX-512 bodies with these (portable bodies otherwise).
#ifndef HYRT_CPU_HOST_ISA_H
#define HYRT_CPU_HOST_ISA_H

#include <cstring>

/// Defined by an artifact's library: the ISA variant it was compiled for
/// ("avx2", "avx512", ...; passes/ConvertHycKernelToLLVM.cpp). Absent (null)
/// in programs that link the kernels without a model, such as unit tests.
extern "C" __attribute__((weak)) const char hyc_variant[];

namespace hyrt::cpu {

/// False in an avx2 variant's library: it runs the portable bodies even on
/// an AVX-512 host, so that HYC_ISA=avx2 measures and tests what an AVX2
/// machine runs.
inline bool variantAllowsAvx512() {
  static const bool allows =
      hyc_variant == nullptr || std::strcmp(hyc_variant, "avx2") != 0;
  return allows;
}

/// Set by tests to run the portable bodies on an AVX-512 host, so that both
/// kinds of body are checked on every machine (never set by artifacts).
inline bool &portableOnly() {
  static bool forced = false;
  return forced;
}

/// Set by tests to run the per-token portable attention bodies where the
/// AVX2 row-blocked kernel would (attention/attention_group.h
/// rowsAvx2Apply), so that both stay checked on AVX2 hosts (never set by
/// artifacts).
inline bool &perTokenAttentionOnly() {
  static bool forced = false;
  return forced;
}

/// AVX2 + FMA: the portable attention body's key pass (attention_keys_avx2.cpp),
/// on every host that has them, portable mode included.
inline bool hostHasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

/// Whether attention's AVX2 + FMA forms may run (the row-blocked kernel,
/// MLA's absorbed blocks): the host has AVX2 + FMA and no test pins the
/// per-token bodies. Where AVX-512 runs, its forms are taken first.
inline bool avx2AttentionAllowed() { return hostHasAvx2Fma() && !perTokenAttentionOnly(); }

/// AVX-512F: the elementwise and GQA-group kernels' 16-lane bodies.
inline bool hostHasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has && variantAllowsAvx512() && !portableOnly();
}

/// AVX-512F + BW + VL: the row-blocked attention kernel (masked 16-bit
/// loads of bf16 cache rows).
inline bool hostHasAvx512BwVl() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has && variantAllowsAvx512() && !portableOnly();
}

/// Set by tests and benchmarks to keep the extend blocks of a bf16 cache on
/// the fp32 row-blocked kernel (never set by artifacts), so that it stays
/// checked on hosts that would take the bf16 dot-product kernel
/// (attention/attention_group.h bf16DotsApply).
inline bool &fp32AttentionOnly() {
  static bool forced = false;
  return forced;
}

/// AVX-512 BF16 (with F, BW, VL, DQ): the flash attention over bf16 dot
/// products of extend blocks (attention_bf16_avx512.cpp).
inline bool hostHasAvx512Bf16() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bf16");
  return has && variantAllowsAvx512() && !portableOnly();
}

/// AVX-512 VNNI (with F, BW, VL, DQ): the flash attention over int8 dot
/// products of an int8 cache's extend blocks (attention_int8_avx512.cpp).
inline bool hostHasAvx512Vnni() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vnni");
  return has && variantAllowsAvx512() && !portableOnly();
}

/// Set by tests to keep an int8 cache's extend blocks off the int8
/// dot-product kernel (never set by artifacts), so that the kernels it
/// replaces there stay checked on hosts that have it.
inline bool &int8AttentionDotsOff() {
  static bool off = false;
  return off;
}

} // namespace hyrt::cpu

#endif // HYRT_CPU_HOST_ISA_H
