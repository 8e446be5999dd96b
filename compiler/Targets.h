//===- Targets.h - `--target`: the ISA variants an artifact carries -*- C++ -*-===//
//
// An artifact holds one compiled model per ISA variant; the loader runs the
// best one the host supports (runtime/artifact/variant_choice.cpp). `--target`
// names variants, CPU levels or CPU names; this file turns it into the list
// of variants to compile, lowest ISA first. No MLIR here.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_TARGETS_H
#define HYC_COMPILER_TARGETS_H

#include <string>
#include <vector>

namespace hyc::compiler {

/// One ISA variant: what the strategy pass compiles for.
struct IsaVariant {
  /// reference | avx2 | avx512 | avx512-bf16 | amx (HYC_ISA's spelling).
  std::string name;
  int level = 0; ///< order: reference 0, avx2 1, avx512 2, avx512-bf16 3, amx 4
  /// The strategy pass's `target` (reference | avx2 | avx512) and flags.
  std::string strategyTarget;
  bool nativeBf16 = false;
  bool amx = false;
};

/// The variant called `name` (reference, avx2, avx512, avx512-bf16, amx);
/// false when there is none.
bool isaVariantNamed(const std::string &name, IsaVariant &out);

/// The variants `--target` asks for, lowest first, each at most once:
///   reference                 the fp32 reference kernels (one variant)
///   portable (the default)    every variant that differs for `quant`:
///                             f32: avx2, avx512; bf16: avx2, avx512,
///                             avx512-bf16, amx; w8a8: avx2, avx512, amx
///   avx2 | avx512 | avx512-bf16 | amx   that variant
///   x86-64-v3, haswell, znver1..3 -> avx2; x86-64-v4, skylake-avx512,
///   icelake-server -> avx512; znver4, znver5, cooperlake -> avx512-bf16
///   (avx512 for f32 and w8a8); sapphirerapids, emeraldrapids,
///   graniterapids -> amx (avx512 for f32)
///   native                    the best variant the compiling host runs
/// and comma-separated lists of these. False with `error` naming what was
/// expected for an unknown name.
bool parseTargets(const std::string &target, const std::string &quant,
                  std::vector<IsaVariant> &out, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_TARGETS_H
