// The register-blocking table of every brgemm generator, in one place: block
// rows, columns, K unroll and B prefetch distance per (ISA, types, N block).
#pragma once

#include "codegen/brgemm.h"

namespace hyc::codegen {

/// One row of the table.
struct BrgemmTile {
  Isa isa;
  DataType a_type;
  DataType b_type;
  int n_block;    ///< columns per kernel call
  int m_max;      ///< largest block rows the registers allow
  int k_unroll;   ///< K steps (pairs / quads / singles) per loop iteration
  int prefetch_b; ///< bytes ahead of the current B line to prefetch (0: none)
  /// K streams per panel in the bodies of few rows (m <= kTwoStreamMaxRows,
  /// from K = kTwoStreamMinK): 2 generates a second loop that walks the two
  /// halves of K step by step, taken when the call asks for it
  /// (BrgemmPostArgs::k_streams, the host's choice), so a decode GEMV keeps
  /// two weight streams per thread in flight; from DRAM that reads
  /// 1.04-1.19x faster than one stream on AMD Zen 5 and 0.79-0.96x as fast
  /// on Zen 4 (bench/kernels/README.md "Two K streams", "Weight streams per
  /// host"). int32 sums (AVX-512 VNNI) are exact, so the order does not
  /// matter; fp32 sums (bf16) would make a row's result depend on its
  /// body, so with 2 every body of an fp32 kernel sums the halves apart and
  /// adds them (x86/avx512_common.cpp emit_fp32_halves): the same bits in
  /// every body, one stream or two.
  int k_streams = 1;
  /// Where the B prefetches bring a line: by the body's rows
  /// (prefetch_b_into_l2), always into L1 / L2 (benches compare those), or
  /// prefill_only: into L1 in blocks of more than kTwoStreamMaxRows rows and
  /// not at all in decode bodies (prefetch_b_in_body).
  enum class Prefetch { by_rows, l1, l2, prefill_only } prefetch_to = Prefetch::by_rows;
};

/// K from which k_streams = 2 splits a panel: halves of at least 8 KiB of
/// int8 codes, past the 4 KiB prefetch distance (K = 128 blocks of the
/// per-group path keep one stream).
inline constexpr int kTwoStreamMinK = 512;

/// Rows up to which a body takes two K streams: decode steps and small
/// batches, bound by reading the weights. Blocks of more rows reuse the
/// panel from L2, where the split measured 2-9% slower.
inline constexpr int kTwoStreamMaxRows = 4;

/// Whether a body of m rows prefetches B into L2 only (prefetcht1) instead
/// of into L1 (prefetcht0). Decode bodies (m <= kTwoStreamMaxRows) stream
/// the weights from DRAM, and a prefetcht0 holds one of the core's few L1
/// miss buffers until its line arrives: on AMD Zen 4 the W8A8 decode GEMV
/// read 87-88% of the bracketing streaming reads in the host's fast
/// bandwidth phases with prefetcht0 and 93% with prefetcht1 (slow phases
/// 95-96% and 100%; bench/kernels/README.md "Prefetch into L2"). Blocks of
/// more rows reuse a panel from L2 and want it in L1.
inline bool prefetch_b_into_l2(const BrgemmTile &t, int m) {
  return t.prefetch_to == BrgemmTile::Prefetch::by_rows ? m <= kTwoStreamMaxRows
                                                       : t.prefetch_to == BrgemmTile::Prefetch::l2;
}

/// Whether a body of m rows prefetches B at all. The grouped kernels'
/// decode bodies do not: on AMD Zen 4 the u4 ones' software prefetches (one
/// per 64 bytes of codes, twice the W8A8 kernel's rate per instruction)
/// held the GEMV at 63-65% of the bracketing streaming reads in fast
/// bandwidth phases and 89-93% in slow ones, and the hardware prefetchers
/// alone read 81-92% and 95-98% (bench/kernels/README.md "No software
/// prefetch in u4 decode"); the u8 ones' Q6_K (groups of 16) read 85-97%
/// with them and 97-100% without (same README, seventeenth session).
inline bool prefetch_b_in_body(const BrgemmTile &t, int m) {
  return t.prefetch_b > 0 &&
         !(t.prefetch_to == BrgemmTile::Prefetch::prefill_only && m <= kTwoStreamMaxRows);
}

/// The table entry for (isa, a_type, b_type, n_block), or nullptr when no
/// generator exists for that combination.
const BrgemmTile *find_brgemm_tile(Isa isa, DataType a_type, DataType b_type,
                                   int n_block);

/// The B layout a B element type implies.
BLayout b_layout_for(DataType b_type);

/// A descriptor with the table's block rows and the layout B's type implies.
/// m_max = 0 in the result means the combination has no generator.
BrgemmDesc make_brgemm_desc(Isa isa, DataType a_type, DataType b_type,
                            DataType c_type, int k, int n_block = 32,
                            bool accumulate = false,
                            Epilogue epilogue = Epilogue::none);

/// A grouped-layout descriptor (s8 A, u4 or u8 codes, f32 C) for `isa`
/// with the table's block rows. m_max = 0 in the result means no generator
/// exists for it.
BrgemmDesc make_grouped_brgemm_desc(Isa isa, DataType b_type, int k, int group,
                                    bool asymmetric, bool accumulate = false,
                                    Epilogue epilogue = Epilogue::none);

/// The same for any grouped format (two-level scales, code books): the B
/// type is u4 or u8 after format.bits; the format is not checked here
/// (validate_brgemm does).
BrgemmDesc make_grouped_brgemm_desc(Isa isa, const GroupedFormat &format, int k,
                                    bool accumulate = false,
                                    Epilogue epilogue = Epilogue::none);

} // namespace hyc::codegen
