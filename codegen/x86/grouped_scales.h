// Internal: what the grouped integer generators for AVX-512 and AMX
// (x86/avx512_vnni_grouped.cpp, x86/amx_grouped.cpp) share: building a
// group's scales and mins in registers exactly as brgemm.h defines them, the
// IQ4_NL code book in a register, and the layout facts their folds read.
#pragma once

#include "codegen/brgemm.h"

#include <xbyak/xbyak.h>

namespace hyc::codegen::x86 {

/// The group's scales (and, asymmetric, mins) of the panel's two 16-column
/// vectors into scale[j] (and min[j]). `group` points at the group's fp16
/// scales (one-level; mins 64 bytes after) or its sc and m bytes
/// (two-level, where `header` points at the super-block's fp16 d and dmin;
/// float(d) * float(sc) is exact, so one vmulps is the defined value).
/// tmp[0..1] are clobbered.
void emit_group_scales(Xbyak::CodeGenerator &g, const BrgemmDesc &d,
                       const Xbyak::Reg64 &group, const Xbyak::Reg64 &header,
                       const Xbyak::Zmm scale[2], const Xbyak::Zmm min[2],
                       const Xbyak::Zmm tmp[2]);

/// Bytes per group in a row of post->a_sum: the sum, and with two-level
/// scales A's scale after it (brgemm.h).
inline int grouped_a_sum_bytes(const BrgemmDesc &d) { return d.super_group > 0 ? 8 : 4; }

/// log2 of the zero point symmetric codes carry: 8 for plain u4 codes,
/// 128 for u8 codes and code-book values, so zp * a_sum is one shift.
inline int grouped_zero_point_shift(const BrgemmDesc &d) {
  return d.b_type == DataType::u4 && d.codebook == Codebook::none ? 3 : 7;
}

/// hyrt::kIq4nlU8 in every 128-bit lane of `dst`, built from immediates
/// (the code stays position independent and data free); clobbers rax.
void emit_iq4nl_codebook(Xbyak::CodeGenerator &g, const Xbyak::Zmm &dst);

} // namespace hyc::codegen::x86
