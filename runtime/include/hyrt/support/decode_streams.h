// How many weight streams per thread a decode GEMV reads, decided per host.
//
// The W8A8 and bf16 kernels' bodies of few rows come in two forms
// (codegen/tiles.h k_streams; both generated, chosen per call by
// BrgemmPostArgs::k_streams): one stream per panel, or the panel's two K
// halves interleaved.
// Which reads DRAM faster depends on the core, not the ISA: on AMD Zen 5
// (family 26) two streams read 1.09-1.15x faster than one; on AMD Zen 4
// (family 25) 0.79-0.96x as fast, and at the top of its bandwidth phases
// 0.79x (bench/kernels/README.md "Weight streams per host"). The results
// are the same bits either way (int32 sums; the bf16 kernel sums K's halves
// apart in every body).
//
// Header-only: the artifact's kernels (hyrt_cpu, linked into the artifact)
// and the loader's self-test and `hyc bench` (hyrt, in the host process)
// must take the same decision from the same inputs.
#ifndef HYRT_SUPPORT_DECODE_STREAMS_H
#define HYRT_SUPPORT_DECODE_STREAMS_H

#include <cpuid.h>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hyrt {

struct DecodeStreams {
  int streams = 1;  ///< 1 or 2
  std::string why;  ///< what decided it, for `hyc bench` and `hyc run`
};

/// The rule, from its inputs: `env` is HYRT_DECODE_STREAMS (null when
/// unset), `amd` and `family` the CPU's vendor and display family. Two
/// streams only where they were measured faster; hosts never measured keep
/// one stream (the kernels' form before two existed).
inline DecodeStreams chooseDecodeStreams(const char *env, bool amd, int family) {
  DecodeStreams d;
  std::string ignored;
  if (env && (std::strcmp(env, "1") == 0 || std::strcmp(env, "2") == 0)) {
    d.streams = env[0] - '0';
    d.why = std::string("HYRT_DECODE_STREAMS=") + env;
    return d;
  }
  if (env)
    ignored = std::string("; HYRT_DECODE_STREAMS=\"") + std::string(env).substr(0, 16) +
              "\" ignored: expected 1 or 2";
  if (amd && family >= 26) {
    d.streams = 2;
    d.why = "AMD family " + std::to_string(family) +
            " (Zen 5 and later): two read faster there";
  } else {
    d.streams = 1;
    d.why = amd && family == 25 ? "AMD family 25 (Zen 4): one reads faster there"
                                : "not measured faster with two on this CPU";
  }
  d.why += ignored;
  return d;
}

/// CPUID's vendor and display family (base family, plus the extended
/// family when the base is 15).
inline void cpuVendorFamily(bool *amd, int *family) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  *amd = false;
  *family = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d))
    return;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  *amd = std::strcmp(vendor, "AuthenticAMD") == 0;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return;
  const int base = int((a >> 8) & 0xf);
  *family = base == 0xf ? base + int((a >> 20) & 0xff) : base;
}

/// This process's decision, taken once.
inline const DecodeStreams &decodeStreams() {
  static const DecodeStreams d = [] {
    bool amd = false;
    int family = 0;
    cpuVendorFamily(&amd, &family);
    return chooseDecodeStreams(std::getenv("HYRT_DECODE_STREAMS"), amd, family);
  }();
  return d;
}

/// What `hyc bench` and `hyc run --verbose` print after "decode GEMVs" for
/// a variant with these CPU features: the host's choice where the variant's
/// kernels have both forms (AVX-512), one stream for the avx2 kernels.
template <typename Features> std::string decodeGemvLine(const Features &cpuFeatures) {
  bool avx512 = false;
  for (const auto &f : cpuFeatures)
    avx512 |= f == "avx512f";
  if (!avx512)
    return "1 weight stream per thread (the avx2 kernels have no two-stream form)";
  const DecodeStreams &d = decodeStreams();
  return "(W8A8, bf16): " + std::to_string(d.streams) + " weight stream" +
         (d.streams == 1 ? "" : "s") + " per thread (" + d.why + ")";
}

} // namespace hyrt

#endif // HYRT_SUPPORT_DECODE_STREAMS_H
