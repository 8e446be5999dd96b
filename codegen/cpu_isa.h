// ISA detection for the microkernel generators: which instruction families the
// host can execute (CPUID + XCR0, and Linux's AMX tile-data permission).
// Deliberately small and independent of runtime/ (codegen must not link it).
#pragma once

#include <string>

namespace hyc::codegen {

/// An instruction-set family a generator targets. Each one implies the ones a
/// kernel for it also uses (all AVX-512 families imply F+BW+VL+DQ).
enum class Isa {
  avx2,        ///< AVX2 + FMA + F16C (the floor)
  avx512_core, ///< AVX-512 F/BW/VL/DQ
  avx512_vnni, ///< avx512_core + VNNI (vpdpbusd)
  avx512_bf16, ///< avx512_core + BF16 (vdpbf16ps)
  amx,         ///< AMX tile + BF16 + INT8 (tdpbf16ps, tdpbusd), OS-enabled
};

/// The spelling used in kernel names: "avx2", "avx512core", "avx512vnni",
/// "avx512bf16", "amx".
const char *isa_name(Isa isa);

/// What the host CPU and OS allow, as seen by CPUID, XGETBV and arch_prctl.
struct HostIsa {
  bool avx2 = false;        ///< AVX2, FMA and F16C, with YMM state enabled
  bool avx512_core = false; ///< F, BW, VL, DQ with ZMM/opmask state enabled
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amx_tile = false; ///< CPUID AMX-TILE, XCR0 tile state, and permission
  bool amx_bf16 = false;
  bool amx_int8 = false;
  /// Why AMX is unavailable although CPUID reports it (empty otherwise).
  std::string amx_note;
};

/// Detected once per process (the AMX permission request happens then).
const HostIsa &host_isa();

/// True when every instruction a kernel for `isa` emits can run on this host.
bool host_supports(Isa isa);

} // namespace hyc::codegen
