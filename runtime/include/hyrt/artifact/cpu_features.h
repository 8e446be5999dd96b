// hyrt/artifact/cpu_features.h - host CPU feature detection (CPUID + XGETBV) with the
// names Linux prints in /proc/cpuinfo, and the check an artifact's
// `cpu_features` list is held to before it is loaded.
#pragma once

#include "hyrt/status.h"

#include <string>
#include <vector>

namespace hyrt {

/// Feature names this runtime can detect, as in /proc/cpuinfo flags: sse2,
/// avx, avx2, fma, f16c, avx512f, avx512dq, avx512cd, avx512bw, avx512vl,
/// avx512_vnni, avx512_bf16, avx512_fp16, avx_vnni, amx_tile, amx_bf16,
/// amx_int8.
const std::vector<std::string> &known_cpu_features();

/// Features usable on this host, in known_cpu_features() order. A feature
/// counts only when the OS also enables its register state: AVX needs XCR0
/// bits 1-2, AVX-512 bits 5-7, AMX bits 17-18 plus a successful
/// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which this call
/// makes once per process (granting the permission AMX code then needs).
/// Detected once; later calls return the cached list.
const std::vector<std::string> &host_cpu_features();

/// Why AMX is absent although CPUID reports it (the OS does not enable its
/// state, or refused the tile-data permission); empty otherwise.
const std::string &host_amx_note();

/// True when `name` is in host_cpu_features().
bool host_has_cpu_feature(const std::string &name);

/// Ok when the host has every feature in `required`; otherwise an error
/// naming each missing (or unknown) feature, e.g. "this CPU lacks required
/// features: avx512_bf16, amx_tile (AMX state not granted by the kernel)".
Status check_cpu_features(const std::vector<std::string> &required);

} // namespace hyrt
