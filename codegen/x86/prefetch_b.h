// The B prefetch every AVX-512 brgemm generator emits: prefetcht1 (into L2)
// for decode bodies, prefetcht0 (into L1) for the others (tiles.h
// prefetch_b_into_l2).
#pragma once

#include "codegen/tiles.h"

#include <xbyak/xbyak.h>

namespace hyc::codegen::x86 {

inline void emit_prefetch_b(Xbyak::CodeGenerator &g, const Xbyak::Address &at,
                            const BrgemmTile &tile, int m) {
  if (prefetch_b_into_l2(tile, m))
    g.prefetcht1(at);
  else
    g.prefetcht0(at);
}

} // namespace hyc::codegen::x86
