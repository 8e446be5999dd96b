// Host CPU feature detection via CPUID and XGETBV (see hyrt/artifact/cpu_features.h).
#include "hyrt/artifact/cpu_features.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace hyrt {

namespace {

struct Detection {
  std::vector<std::string> features;
  std::string amx_note; // why AMX is absent although the CPU reports it
};

#if defined(__x86_64__) || defined(__i386__)
struct Regs {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d))
    r = Regs();
  return r;
}

uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool bit(uint32_t reg, int n) { return (reg >> n) & 1u; }

/// Asks Linux for permission to use AMX tile data (it is off by default for
/// every process since 5.16). Zen 4 and older kernels answer EINVAL or
/// EOPNOTSUPP.
bool request_amx_permission() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

Detection detect() {
  Detection det;
  std::vector<std::string> &f = det.features;
  const uint32_t max_leaf = __get_cpuid_max(0, nullptr);
  const Regs l1 = cpuid(1, 0);
  const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs();
  const Regs l7s1 = (max_leaf >= 7 && l7.a >= 1) ? cpuid(7, 1) : Regs();
  const bool osxsave = bit(l1.c, 27);
  const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;       // SSE + AVX state
  const bool os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0; // opmask, ZMM
  const bool os_amx = (xcr0 & (3ull << 17)) == (3ull << 17);

  if (bit(l1.d, 26))
    f.push_back("sse2");
  if (os_avx) {
    if (bit(l1.c, 28))
      f.push_back("avx");
    if (bit(l7.b, 5))
      f.push_back("avx2");
    if (bit(l1.c, 12))
      f.push_back("fma");
    if (bit(l1.c, 29))
      f.push_back("f16c");
  }
  if (os_avx512) {
    const std::pair<bool, const char *> avx512[] = {
        {bit(l7.b, 16), "avx512f"},     {bit(l7.b, 17), "avx512dq"},
        {bit(l7.b, 28), "avx512cd"},    {bit(l7.b, 30), "avx512bw"},
        {bit(l7.b, 31), "avx512vl"},    {bit(l7.c, 11), "avx512_vnni"},
        {bit(l7s1.a, 5), "avx512_bf16"}, {bit(l7.d, 23), "avx512_fp16"},
        {bit(l7.c, 1), "avx512vbmi"},
    };
    for (const auto &[has, name] : avx512)
      if (has)
        f.push_back(name);
  }
  if (os_avx && bit(l7s1.a, 4))
    f.push_back("avx_vnni");
  if (bit(l7.d, 24)) {
    if (!os_amx)
      det.amx_note = "AMX state not enabled in XCR0 by the OS";
    else if (!request_amx_permission())
      det.amx_note = "arch_prctl(ARCH_REQ_XCOMP_PERM) refused AMX tile data";
    else {
      f.push_back("amx_tile");
      if (bit(l7.d, 22))
        f.push_back("amx_bf16");
      if (bit(l7.d, 25))
        f.push_back("amx_int8");
    }
  }
  return det;
}
#else
Detection detect() { return Detection(); }
#endif

const Detection &detection() {
  static const Detection det = detect();
  return det;
}

} // namespace

const std::vector<std::string> &known_cpu_features() {
  static const std::vector<std::string> names = {
      "sse2",        "avx",         "avx2",        "fma",
      "f16c",        "avx512f",     "avx512dq",    "avx512cd",
      "avx512bw",    "avx512vl",    "avx512_vnni", "avx512_bf16",
      "avx512_fp16", "avx_vnni",    "amx_tile",    "amx_bf16",
      "amx_int8",    "avx512vbmi"};
  return names;
}

const std::vector<std::string> &host_cpu_features() {
  return detection().features;
}

const std::string &host_amx_note() { return detection().amx_note; }

bool host_has_cpu_feature(const std::string &name) {
  const std::vector<std::string> &f = host_cpu_features();
  return std::find(f.begin(), f.end(), name) != f.end();
}

Status check_cpu_features(const std::vector<std::string> &required) {
  const std::vector<std::string> &known = known_cpu_features();
  std::string missing;
  for (const std::string &name : required) {
    if (host_has_cpu_feature(name))
      continue;
    if (!missing.empty())
      missing += ", ";
    missing += name;
    if (std::find(known.begin(), known.end(), name) == known.end())
      missing += " (unknown to this runtime)";
    else if (name.rfind("amx_", 0) == 0 && !detection().amx_note.empty())
      missing += " (" + detection().amx_note + ")";
  }
  if (missing.empty())
    return Status::Ok();
  std::string have;
  for (const std::string &name : host_cpu_features())
    have += (have.empty() ? "" : " ") + name;
  return Status::Error("this CPU lacks required features: " + missing +
                       " (host has: " + have + ")");
}

} // namespace hyrt
