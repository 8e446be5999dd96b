// Register blocking per ISA family. AVX-512 keeps m_max x (N/16) accumulators
// in zmm registers next to N/16 B registers (and one or two A broadcasts for
// VNNI); AMX uses 2x2 tiles of 16x16; AVX2 works on two 16-column halves of a
// panel with m x 2 ymm accumulators (m = 6 for f32; 4 for bf16 and u8 x s8,
// whose B widening and sign trick need more registers, see x86/avx2.cpp).
// Grouped integer kernels keep an int32 group sum and an fp32 total per row
// and column vector: 4 zmm per row on AVX-512 (x86/avx512_vnni_grouped.cpp),
// 4 ymm per row and 16-column half on AVX2 (x86/avx2_grouped.cpp); AMX holds
// one group's sums in the 2x2 tiles and the totals in memory
// (x86/amx_grouped.cpp).
#include "codegen/tiles.h"

namespace hyc::codegen {

namespace {

using DT = DataType;

// Prefetch distances are in bytes of B (one K step of a panel is 128 bytes):
// 4 KiB (32 steps) ahead is early enough for DRAM streams in decode and stays
// well inside L1 when the panel comes from L2 in prefill.
//
// K streams (tiles.h): the VNNI and bf16 kernels' bodies of up to
// kTwoStreamMaxRows rows (decode) can read a panel's two K halves
// interleaved, as the host chooses per call. VNNI's int32 sums are exact,
// so a row's result is the same in every body; the bf16 kernel's fp32 sums
// are kept the same by summing the halves apart in every body.
constexpr BrgemmTile kTiles[] = {
    // isa              A        B        N   M   unroll prefetch K streams
    {Isa::avx512_bf16, DT::bf16, DT::bf16, 32, 14, 4, 4096, 2},
    {Isa::avx512_bf16, DT::bf16, DT::bf16, 64, 6, 4, 4096},
    // FP8 weights widened in registers (x86/avx512_fp8.cpp): C and block
    // accumulators for 4 rows next to seven constant tables; one K step of
    // e4m3 codes is 64 bytes, so 4 KiB ahead is 64 steps.
    {Isa::avx512_bf16, DT::bf16, DT::f8, 32, 4, 4, 4096},
    {Isa::avx512_vnni, DT::u8, DT::s8, 32, 14, 4, 4096, 2},
    {Isa::avx512_vnni, DT::u8, DT::s8, 64, 6, 4, 4096},
    {Isa::avx512_core, DT::f32, DT::f32, 32, 14, 4, 4096},
    {Isa::avx512_core, DT::f32, DT::f32, 64, 6, 4, 4096},
    // f32 x bf16 via FMA: B takes two registers per vector, plus a mask.
    {Isa::avx512_core, DT::f32, DT::bf16, 32, 12, 4, 4096},
    {Isa::avx512_core, DT::f32, DT::bf16, 64, 5, 4, 4096},
    {Isa::avx2, DT::f32, DT::f32, 32, 6, 4, 4096},
    {Isa::avx2, DT::f32, DT::bf16, 32, 4, 4, 4096},
    {Isa::avx2, DT::u8, DT::s8, 32, 4, 4, 4096},
    // Grouped s8 x u4 / u8: 6 rows x 4 zmm, then 4 code registers (reused
    // for scales and mins at each group's end), the nibble mask and two
    // temporaries. The unroll is in K quads, capped at group / 4.
    // Decode bodies leave the codes to the hardware prefetchers (tiles.h
    // prefetch_b_in_body).
    {Isa::avx512_vnni, DT::s8, DT::u4, 32, 6, 32, 4096, 1, BrgemmTile::Prefetch::prefill_only},
    {Isa::avx512_vnni, DT::s8, DT::u8, 32, 6, 32, 4096, 1, BrgemmTile::Prefetch::prefill_only},
    // AVX2: 2 rows x 4 ymm next to the codes widened for vpmaddubsw (u4)
    // or to int16 pairs for vpmaddwd (u8), A and constants.
    {Isa::avx2, DT::s8, DT::u4, 32, 2, 32, 4096},
    {Isa::avx2, DT::s8, DT::u8, 32, 2, 32, 4096},
    {Isa::amx, DT::bf16, DT::bf16, 32, 32, 1, 0},
    {Isa::amx, DT::u8, DT::s8, 32, 32, 1, 0},
    // Grouped s8 x u4 / u8 on tdpbsud (x86/amx_grouped.cpp): 2x2 C tiles
    // holding one group's sums at a time, folded on AVX-512.
    {Isa::amx, DT::s8, DT::u4, 32, 32, 1, 0},
    {Isa::amx, DT::s8, DT::u8, 32, 32, 1, 0},
};

} // namespace

const BrgemmTile *find_brgemm_tile(Isa isa, DataType a_type, DataType b_type,
                                   int n_block) {
  for (const BrgemmTile &t : kTiles)
    if (t.isa == isa && t.a_type == a_type && t.b_type == b_type &&
        t.n_block == n_block)
      return &t;
  return nullptr;
}

BLayout b_layout_for(DataType b_type) {
  switch (b_type) {
  case DataType::bf16:
    return BLayout::bf16_vnni2;
  case DataType::s8:
    return BLayout::s8_vnni4;
  case DataType::f8:
    return BLayout::f8_vnni2;
  case DataType::u8:
    return BLayout::u8_grouped;
  case DataType::u4:
    return BLayout::u4_grouped;
  default:
    return BLayout::f32_k1;
  }
}

BrgemmDesc make_brgemm_desc(Isa isa, DataType a_type, DataType b_type,
                            DataType c_type, int k, int n_block,
                            bool accumulate, Epilogue epilogue) {
  BrgemmDesc d;
  d.isa = isa;
  d.a_type = a_type;
  d.b_type = b_type;
  d.c_type = c_type;
  d.k = k;
  d.n_block = n_block;
  d.b_layout = b_layout_for(b_type);
  d.accumulate = accumulate;
  d.epilogue = epilogue;
  const BrgemmTile *t = find_brgemm_tile(isa, a_type, b_type, n_block);
  d.m_max = t ? t->m_max : 0;
  return d;
}

BrgemmDesc make_grouped_brgemm_desc(Isa isa, DataType b_type, int k, int group,
                                    bool asymmetric, bool accumulate,
                                    Epilogue epilogue) {
  BrgemmDesc d =
      make_brgemm_desc(isa, DataType::s8, b_type,
                       DataType::f32, k, 32, accumulate, epilogue);
  d.group = group;
  d.asymmetric = asymmetric;
  return d;
}

BrgemmDesc make_grouped_brgemm_desc(Isa isa, const GroupedFormat &format,
                                    int k, bool accumulate,
                                    Epilogue epilogue) {
  BrgemmDesc d = make_grouped_brgemm_desc(
      isa, format.bits == 4 ? DataType::u4 : DataType::u8, k,
      int(format.group), format.asymmetric, accumulate, epilogue);
  d.super_group = int(format.super_group);
  d.codebook = format.codebook;
  return d;
}

} // namespace hyc::codegen
