// Host ISA detection for the generators: CPUID leaves 1/7, XCR0 and, for AMX,
// the ARCH_REQ_XCOMP_PERM request Linux requires before tile data may be used.
#include "codegen/cpu_isa.h"

#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <cerrno>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace hyc::codegen {

const char *isa_name(Isa isa) {
  switch (isa) {
  case Isa::avx2:
    return "avx2";
  case Isa::avx512_core:
    return "avx512core";
  case Isa::avx512_vnni:
    return "avx512vnni";
  case Isa::avx512_bf16:
    return "avx512bf16";
  case Isa::amx:
    return "amx";
  }
  return "unknown";
}

namespace {

#if defined(__x86_64__)
struct Leaf {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

Leaf cpuid(uint32_t leaf, uint32_t sub) {
  Leaf r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d))
    return Leaf();
  return r;
}

bool bit(uint32_t v, int n) { return (v >> n) & 1u; }

HostIsa detect() {
  HostIsa h;
  const uint32_t max_leaf = __get_cpuid_max(0, nullptr);
  const Leaf l1 = cpuid(1, 0);
  const Leaf l7 = max_leaf >= 7 ? cpuid(7, 0) : Leaf();
  const Leaf l7s1 = (max_leaf >= 7 && l7.a >= 1) ? cpuid(7, 1) : Leaf();
  uint64_t xcr0 = 0;
  if (bit(l1.c, 27)) { // OSXSAVE: XGETBV is usable
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t(hi) << 32) | lo;
  }
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = ymm_state && (xcr0 & 0xE0) == 0xE0;
  const bool tile_state = (xcr0 & (3ull << 17)) == (3ull << 17);

  // F16C (leaf 1 ECX bit 29) too: the grouped kernels widen fp16 scales with
  // vcvtph2ps. Every AVX2 CPU has it, so no host loses the floor.
  h.avx2 = ymm_state && bit(l7.b, 5) && bit(l1.c, 12) && bit(l1.c, 29);
  h.avx512_core = zmm_state && bit(l7.b, 16) && bit(l7.b, 17) &&
                  bit(l7.b, 30) && bit(l7.b, 31);
  h.avx512_vnni = h.avx512_core && bit(l7.c, 11);
  h.avx512_bf16 = h.avx512_core && bit(l7s1.a, 5);
  if (bit(l7.d, 24)) {
    if (!tile_state) {
      h.amx_note = "the OS has not enabled AMX tile state in XCR0";
    } else {
#if defined(__linux__)
      constexpr long kArchReqXcompPerm = 0x1023;
      constexpr long kXfeatureTileData = 18;
      if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) != 0)
        h.amx_note = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM) refused: ") +
                     std::strerror(errno);
      else
        h.amx_tile = true;
#else
      h.amx_tile = true;
#endif
    }
  }
  h.amx_bf16 = h.amx_tile && bit(l7.d, 22);
  h.amx_int8 = h.amx_tile && bit(l7.d, 25);
  return h;
}
#else
HostIsa detect() { return HostIsa(); }
#endif

} // namespace

const HostIsa &host_isa() {
  static const HostIsa isa = detect();
  return isa;
}

bool host_supports(Isa isa) {
  const HostIsa &h = host_isa();
  switch (isa) {
  case Isa::avx2:
    return h.avx2;
  case Isa::avx512_core:
    return h.avx512_core;
  case Isa::avx512_vnni:
    return h.avx512_vnni;
  case Isa::avx512_bf16:
    return h.avx512_bf16;
  case Isa::amx:
    return h.amx_bf16 && h.amx_int8;
  }
  return false;
}

} // namespace hyc::codegen
