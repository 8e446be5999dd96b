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
  /// from K = kTwoStreamMinK): 2 walks the two halves of K step by step, so
  /// a decode GEMV keeps two weight streams per thread in flight; from DRAM
  /// that reads 1.04-1.19x faster than one stream on AMD Zen 5
  /// (bench/kernels/README.md "Two K streams"). Only kernels whose sums are
  /// exact (int32: AVX-512 VNNI) take it: with fp32 sums the order would
  /// differ between bodies and a row's result would depend on the batch, and
  /// making every body two-stream costs prefill 2-9%.
  int k_streams = 1;
};

/// K from which k_streams = 2 splits a panel: halves of at least 8 KiB of
/// int8 codes, past the 4 KiB prefetch distance (K = 128 blocks of the
/// per-group path keep one stream).
inline constexpr int kTwoStreamMinK = 512;

/// Rows up to which a body takes two K streams: decode steps and small
/// batches, bound by reading the weights. Blocks of more rows reuse the
/// panel from L2, where the split measured 2-9% slower.
inline constexpr int kTwoStreamMaxRows = 4;

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
