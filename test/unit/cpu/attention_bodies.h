// Which attention bodies a test runs on this host: the native ones (the
// host's widest), the AVX2 + FMA forms (no AVX-512 bodies), or the
// per-token portable bodies (neither), so that every form is checked on
// every host that can run it.
#ifndef HYC_TEST_UNIT_CPU_ATTENTION_BODIES_H
#define HYC_TEST_UNIT_CPU_ATTENTION_BODIES_H

#include "runtime/cpu/host_isa.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace hyc::test {

enum class Bodies { Native, Avx2, PerToken };

inline const char *bodiesName(Bodies b) {
  return b == Bodies::Native ? "native" : b == Bodies::Avx2 ? "avx2" : "portable";
}

/// gtest's name for a parameter (found by argument-dependent lookup).
inline void PrintTo(Bodies b, std::ostream *os) { *os << bodiesName(b); }

/// Pins the runtime to `b`'s bodies until unpinBodies().
inline void pinBodies(Bodies b) {
  hyrt::cpu::portableOnly() = b != Bodies::Native;
  hyrt::cpu::perTokenAttentionOnly() = b == Bodies::PerToken;
}

inline void unpinBodies() {
  hyrt::cpu::portableOnly() = false;
  hyrt::cpu::perTokenAttentionOnly() = false;
}

/// Why `b` cannot run here ("" when it can): the AVX2 forms need AVX2 + FMA.
inline std::string bodiesMissing(Bodies b) {
  return b == Bodies::Avx2 && !hyrt::cpu::hostHasAvx2Fma()
             ? "no AVX2 + FMA on this host: the AVX2 attention forms cannot run"
             : "";
}

inline auto allBodies() {
  return ::testing::Values(Bodies::Native, Bodies::Avx2, Bodies::PerToken);
}

} // namespace hyc::test

#endif // HYC_TEST_UNIT_CPU_ATTENTION_BODIES_H
