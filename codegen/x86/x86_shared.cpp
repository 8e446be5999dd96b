// Emitters shared by several x86 generators (amx_tile_config.h,
// grouped_scales.h).
#include "codegen/x86/amx_tile_config.h"
#include "codegen/x86/grouped_scales.h"

#include "hyrt/support/iq4nl.h"

#include <cstring>

namespace hyc::codegen::x86 {

using namespace Xbyak;

TileConfig tile_config_2x2(int m, int a_colsb, int b_rows) {
  const int r0 = m < 16 ? m : 16, r1 = m - r0;
  TileConfig cfg;
  cfg.set(0, r0, 64);
  cfg.set(1, r0, 64);
  cfg.set(4, r0, a_colsb);
  if (r1 > 0) {
    cfg.set(2, r1, 64);
    cfg.set(3, r1, 64);
    cfg.set(5, r1, a_colsb);
  }
  cfg.set(6, b_rows, 64);
  cfg.set(7, b_rows, 64);
  return cfg;
}

void emit_load_tile_config(CodeGenerator &g, Label &cfg, int probe, const Reg64 &tmp) {
  Label loaded;
  g.sttilecfg(g.ptr[g.rsp + probe]);
  g.lea(tmp, g.ptr[g.rip + cfg]);
  g.vmovdqu32(g.zmm0, g.ptr[g.rsp + probe]);
  g.vpcmpd(g.k1, g.zmm0, g.ptr[tmp], 4); // lanes not equal
  g.kortestw(g.k1, g.k1);
  g.jz(loaded, CodeGenerator::T_NEAR);
  g.ldtilecfg(g.ptr[tmp]);
  g.L(loaded);
}

void emit_group_scales(CodeGenerator &g, const BrgemmDesc &d, const Reg64 &group,
                       const Reg64 &header, const Zmm scale[2], const Zmm min[2],
                       const Zmm tmp[2]) {
  const bool two_level = d.super_group > 0;
  for (int j = 0; j < 2; ++j) {
    if (!two_level) {
      g.vcvtph2ps(scale[j], g.ptr[group + 32 * j]);
      if (d.asymmetric)
        g.vcvtph2ps(min[j], g.ptr[group + 64 + 32 * j]);
      continue;
    }
    const Zmm &factor = tmp[j];
    g.vcvtph2ps(factor, g.ptr[header + 32 * j]);
    g.vpmovsxbd(scale[j], g.ptr[group + 16 * j]);
    g.vcvtdq2ps(scale[j], scale[j]);
    g.vmulps(scale[j], scale[j], factor);
    if (d.asymmetric) {
      g.vcvtph2ps(factor, g.ptr[header + 64 + 32 * j]);
      g.vpmovzxbd(min[j], g.ptr[group + 32 + 16 * j]);
      g.vcvtdq2ps(min[j], min[j]);
      g.vmulps(min[j], min[j], factor);
    }
  }
}

void emit_iq4nl_codebook(CodeGenerator &g, const Zmm &dst) {
  uint64_t half[2];
  std::memcpy(half, hyrt::kIq4nlU8, 16);
  const Xmm lane(dst.getIdx());
  g.mov(g.rax, half[0]);
  g.vmovq(lane, g.rax);
  g.mov(g.rax, half[1]);
  g.vpinsrq(lane, lane, g.rax, 1);
  g.vshufi32x4(dst, dst, dst, 0);
}

} // namespace hyc::codegen::x86
