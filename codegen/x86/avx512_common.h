// Internal: the AVX-512 brgemm body shared by the BF16, VNNI and FP32
// families. Accumulators m x (N/16) zmm (times a few independent sets when m
// is small, to hide FMA latency), B loaded once per K step, A broadcast once
// per row and step; K loop unrolled, remainder steps and a partial last step
// (K not a multiple of the pair/quad) emitted straight-line.
#pragma once

#include "codegen/x86/brgemm_jit.h"

namespace hyc::codegen::x86 {

class Avx512BrgemmJit : public BrgemmJit {
public:
  Avx512BrgemmJit(const BrgemmDesc &desc, const BrgemmTile &tile,
                  size_t max_size);

protected:
  // Family hooks.
  /// K elements per step: 1 (f32), 2 (bf16 pair), 4 (u8/s8 quad).
  virtual int k_unit() const = 0;
  /// acc += A-broadcast . B (the family's dot instruction).
  virtual void emit_dot(const Xbyak::Zmm &acc, const Xbyak::Zmm &a_bcast,
                        const Xbyak::Zmm &b) = 0;
  /// Broadcasts the last, partial unit of row `row` (K % k_unit() elements
  /// at disp) into `dst` without reading past them.
  virtual void emit_partial_a(const Xbyak::Zmm &dst, int row, int disp) = 0;
  /// True when accumulators hold int32.
  virtual bool int_accumulators() const { return false; }
  /// zmm registers per 16-column B vector (2 when B is widened in two
  /// halves), and constants kept in zmm31, zmm30, ... for the whole kernel.
  virtual int b_regs_per_col() const { return 1; }
  virtual int const_regs() const { return 0; }
  /// Loads B's column vector j of the current step (default: one vmovups).
  virtual void emit_load_b(int j, const Xbyak::Address &src);
  /// One row of a step: broadcast A (or its partial last unit) and
  /// accumulate into acc(set, row, *) (default: emit_partial_a or
  /// vpbroadcastd, then emit_dot per column vector).
  virtual void emit_row(int set, int row, int disp, bool partial);
  /// Initializes set-0 accumulators (default: zero, or C when accumulating).
  virtual void emit_init(int m);
  /// Stores the reduced accumulators (default: + bias, store fp32).
  virtual void emit_store(int m);

  void emit_rows(int m) override;

  // Register plan for the current body.
  Xbyak::Zmm acc(int set, int row, int col) const;
  Xbyak::Zmm b_reg(int col, int half = 0) const;
  Xbyak::Zmm a_reg(int i) const;
  Xbyak::Zmm const_reg(int c) const { return Xbyak::Zmm(31 - c); }
  /// Bytes of one A row per K step.
  int a_step_bytes() const { return k_unit() * data_type_size(desc_.a_type); }
  /// Offset of column vector j (16 lanes) from the start of the block's B.
  int64_t b_col_offset(int j) const;

  int nv_ = 2;   ///< zmm columns: n_block / 16
  int m_ = 0;    ///< rows of the body being emitted
  int sets_ = 1; ///< independent accumulator sets
  int64_t panel_bytes_ = 0;
  static constexpr int kARegs = 2;

private:
  /// K step `base + step` from reg_bk (B) and the A bases: B loads, their
  /// prefetch, and every row's broadcast and dot products.
  void emit_step(int step, int set, bool prefetch, int64_t base = 0);
  /// The K loop of the current body (m_ rows) from reg_bk and the A bases
  /// at the block's origin: one stream in K order, or (`two`) K's two
  /// halves interleaved.
  void emit_k_loop(bool two);
  /// Jumps to `one` unless the call asks for two K streams
  /// (BrgemmPostArgs::k_streams = 2 behind a non-null post).
  void jump_unless_two_streams(const Xbyak::Label &one);
  /// The tile splits K into two streams (tiles.h k_streams = 2) and K is
  /// long enough for it (kTwoStreamMinK).
  bool splits_k() const;
  /// fp32 accumulators whose tile splits K (tiles.h k_streams = 2): every
  /// body sums K's two halves apart and adds them (emit_fp32_halves).
  bool fp32_halves() const;
  /// The m-row body's K sum as two halves (see fp32_halves).
  void emit_fp32_halves(int m);
  /// `set` value for emit_span / emit_tail: step u goes to set u % sets_.
  static constexpr int kRotateSets = -1;
  /// A loop over `steps` K steps (a multiple of the unroll) from reg_bk into
  /// accumulator set `set`, advancing reg_bk and the A bases; with
  /// `second` > 0 each step also takes the step `second` steps further on
  /// into set `set_b` (two interleaved streams).
  void emit_span(int64_t steps, int set, int64_t second = 0, int set_b = 0);
  /// `left` straight-line steps from `base` steps past reg_bk, then K's
  /// partial step, into set `set`.
  void emit_tail(int64_t base, int64_t left, int set);
};

} // namespace hyc::codegen::x86
