// AVX2 + FMA brgemm generators, the floor that lets every quantization run on
// x86-64-v3 hosts: f32 x f32, f32 x bf16 (VNNI2 panels) and u8 x s8 (VNNI4
// panels, -> f32 or s32). No instruction here is EVEX-encoded.
//
// 16 ymm registers hold too few accumulators for a whole 32-column panel, so
// every kernel walks the panel as two 16-column halves (two ymm of 8 columns
// each, m x 2 accumulators) and reads A once per half; m_max is what a half
// leaves room for next to its B vectors, A broadcasts and constants. One
// row (decode) walks the whole panel in one pass where its four column
// vectors fit: the two-pass walk reads the panel's second half back from L2
// while nothing streams from memory (dense-1b's avx2 decode read 76-81% of
// the probe with it). Each column's operations and their order are the
// same in both walks (same sets, same K steps), so a row alone gives the
// bits it gives inside a block.
//
// f32 x bf16 widens each ymm of k-pairs into its even half (dword << 16) and
// odd half (dword & 0xFFFF0000) and runs two FMAs per row and column vector,
// odd then even, as the AVX-512 f32 x bf16 kernel does.
//
// u8 x s8: AVX2 has no vpdpbusd, and vpmaddubsw (u8 x s8 -> s16 pair sums)
// saturates on the biased activations: 2 * 255 * 127 exceeds int16. So the
// kernel multiplies the signed q_a = u8 ^ 0x80 instead (the sign trick):
// vpmaddubsw(|q_a|, sign(q_a) * b) via vpabsb and vpsignb yields pair sums of
// q_a * b of at most 2 * 128 * 127 = 32512, which never saturate; vpmaddwd
// with int16 ones widens each quad to int32 and vpaddd accumulates. That is
// already the exact signed dot product the VNNI kernel obtains as acc - comp,
// so the comp row is not read, and the f32 epilogue repeats the VNNI kernel's
// operations in its order (convert, * b_scale, * a_scale, + C, + bias): the
// results are bit-identical. sign(q_a) * b must fit in int8, so B must lie in
// [-127, 127] (what the quantizers in codegen/pack.h produce); A may use the
// whole u8 range.
#include "codegen/x86/brgemm_jit.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

/// The two-halves walk shared by the AVX2 families. Register plan of a body
/// for m rows: accumulators ymm0.. (sets x m x 2), then the step's B
/// vectors, then scratch (A broadcasts, temporaries); constants count down
/// from ymm15 and stay loaded for the whole kernel.
class Avx2BrgemmJit : public BrgemmJit {
public:
  using BrgemmJit::BrgemmJit;

protected:
  // Family hooks.
  /// K elements per step: 1 (f32), 2 (bf16 pair), 4 (u8/s8 quad).
  virtual int k_unit() const = 0;
  /// Registers for one step's B vectors (all vecs_ column vectors of a pass).
  virtual int b_regs() const = 0;
  /// Registers for A broadcasts and temporaries.
  virtual int scratch_regs() const = 0;
  /// Constants kept in ymm15, ymm14, ... (loaded by emit_setup).
  virtual int const_regs() const { return 0; }
  /// Independent accumulator sets allowed (to cover FMA latency).
  virtual int max_sets() const { return 4; }
  /// True when accumulators hold int32 (and C is combined in emit_store).
  virtual bool int_accumulators() const { return false; }
  /// Loads column vector j (8 columns) of the current step from src; partial:
  /// the step is the last, incomplete unit of an odd / non-multiple-of-4 K.
  virtual void emit_load_b(int j, const Address &src, bool partial) = 0;
  /// Row i of one step: A's unit at byte disp (partial: only K % k_unit()
  /// elements exist) into acc(set, i, *).
  virtual void emit_row(int set, int i, int disp, bool partial) = 0;
  /// Stores the reduced set-0 accumulators of one pass (default: + bias,
  /// store fp32).
  virtual void emit_store(int m);

  void emit_rows(int m) override;

  Ymm acc(int set, int i, int j) const {
    return Ymm((set * m_ + i) * vecs_ + j);
  }
  Ymm b_reg(int r) const { return Ymm(sets_ * m_ * vecs_ + r); }
  Ymm scratch(int r) const { return Ymm(sets_ * m_ * vecs_ + b_regs() + r); }
  Ymm const_reg(int c) const { return Ymm(15 - c); }
  /// Byte offset of the pass's column vector j inside one 128-byte step.
  int col_offset(int j) const { return (first_ + j) * 32; }
  /// Bytes of one A row per step.
  int a_step_bytes() const { return k_unit() * data_type_size(desc_.a_type); }

  static constexpr int kVecs = 2; ///< ymm column vectors per 16-column half
  int m_ = 0;                     ///< rows of the body being emitted
  int sets_ = 1;                  ///< independent accumulator sets
  int vecs_ = kVecs;              ///< column vectors of the pass being emitted
  int first_ = 0;                 ///< the pass's first column vector

private:
  void emit_pass(int m);
  void emit_step(int u, int set, bool partial);
};

void Avx2BrgemmJit::emit_rows(int m) {
  m_ = m;
  // Sets chosen for the full block and used for every m (batch invariance,
  // see Avx512BrgemmJit::emit_rows).
  sets_ = 1;
  vecs_ = kVecs;
  const int rows = desc_.m_max > 0 ? desc_.m_max : m;
  const int fixed = b_regs() + scratch_regs() + const_regs();
  while (sets_ < max_sets() && sets_ * rows * kVecs < 8 &&
         2 * sets_ * rows * kVecs + fixed <= 16)
    sets_ *= 2;
  // One row: the whole panel in one pass when its four column vectors (and
  // their B registers and scratch) fit beside the constants.
  vecs_ = 2 * kVecs;
  const bool onePass = m == 1 && sets_ * vecs_ + b_regs() + scratch_regs() + const_regs() <= 16;
  if (onePass) {
    first_ = 0;
    emit_pass(m);
    return;
  }
  vecs_ = kVecs;
  for (int half = 0; half < 2; ++half) {
    first_ = half * kVecs;
    emit_pass(m);
  }
}

void Avx2BrgemmJit::emit_step(int u, int set, bool partial) {
  // The first pass streams the panel: fetch both 64-byte lines of the K
  // row `prefetch_b` bytes ahead (a second half then reads them from
  // cache). Without it, decode (m = 1) read weights at under half the
  // streaming bandwidth.
  if (first_ == 0 && tile_.prefetch_b > 0 && !partial) {
    prefetcht0(ptr[reg_bk + u * 128 + tile_.prefetch_b]);
    prefetcht0(ptr[reg_bk + u * 128 + 64 + tile_.prefetch_b]);
  }
  for (int j = 0; j < vecs_; ++j)
    emit_load_b(j, ptr[reg_bk + col_offset(j) + u * 128], partial);
  for (int i = 0; i < m_; ++i)
    emit_row(set, i, u * a_step_bytes(), partial);
}

void Avx2BrgemmJit::emit_pass(int m) {
  if (desc_.accumulate && !int_accumulators()) {
    mov(reg_tmp, reg_c);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < vecs_; ++j)
        vmovups(acc(0, i, j), ptr[reg_tmp + col_offset(j)]);
      if (i + 1 < m)
        add(reg_tmp, reg_ldc);
    }
  } else {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < vecs_; ++j)
        vpxor(acc(0, i, j), acc(0, i, j), acc(0, i, j));
  }
  for (int s = 1; s < sets_; ++s)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < vecs_; ++j)
        vpxor(acc(s, i, j), acc(s, i, j), acc(s, i, j));

  load_a_bases(m);
  mov(reg_bk, reg_b);
  const int unroll = tile_.k_unroll; // a multiple of every sets_ value
  const int64_t full_steps = desc_.k / k_unit();
  const int partial = desc_.k % k_unit();
  const int64_t iters = full_steps / unroll;
  const int rem = int(full_steps % unroll);
  if (iters > 0) {
    Label loop;
    mov(reg_kloop, iters);
    align(16);
    L(loop);
    for (int u = 0; u < unroll; ++u)
      emit_step(u, u % sets_, /*partial=*/false);
    advance_a_bases(m, unroll * a_step_bytes());
    add(reg_bk, unroll * 128);
    dec(reg_kloop);
    jnz(loop, T_NEAR);
  }
  for (int u = 0; u < rem; ++u)
    emit_step(u, u % sets_, /*partial=*/false);
  if (partial)
    emit_step(rem, rem % sets_, /*partial=*/true);

  for (int s = 1; s < sets_; ++s)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < vecs_; ++j) {
        if (int_accumulators())
          vpaddd(acc(0, i, j), acc(0, i, j), acc(s, i, j));
        else
          vaddps(acc(0, i, j), acc(0, i, j), acc(s, i, j));
      }
  emit_store(m);
}

void Avx2BrgemmJit::emit_store(int m) {
  const Reg64 bias = rbx; // A bases are dead here; the next half reloads them
  if (desc_.epilogue == Epilogue::bias)
    mov(bias, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
  mov(reg_tmp, reg_c);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < vecs_; ++j) {
      const int off = col_offset(j);
      if (desc_.epilogue == Epilogue::bias)
        vaddps(acc(0, i, j), acc(0, i, j), ptr[bias + off]);
      vmovups(ptr[reg_tmp + off], acc(0, i, j));
    }
    if (i + 1 < m)
      add(reg_tmp, reg_ldc);
  }
}

/// f32 x f32: B in two ymm per step, A broadcast with vbroadcastss into two
/// alternating registers; m <= 6 (12 accumulators).
class Avx2Fp32Jit final : public Avx2BrgemmJit {
public:
  using Avx2BrgemmJit::Avx2BrgemmJit;

protected:
  int k_unit() const override { return 1; }
  int b_regs() const override { return vecs_; }
  int scratch_regs() const override { return 2; }

  void emit_load_b(int j, const Address &src, bool) override {
    vmovups(b_reg(j), src);
  }

  void emit_row(int set, int i, int disp, bool) override {
    const Ymm a = scratch(i & 1);
    vbroadcastss(a, a_addr(i, disp));
    for (int j = 0; j < vecs_; ++j)
      vfmadd231ps(acc(set, i, j), b_reg(j), a);
  }
};

/// f32 x bf16 pairs: each column vector widens into even and odd fp32
/// vectors (four B registers), the high-half mask stays in ymm15, two A
/// broadcasts per row; m <= 4 (8 accumulators + 7 = 15 registers).
class Avx2Bf16Jit final : public Avx2BrgemmJit {
public:
  using Avx2BrgemmJit::Avx2BrgemmJit;

protected:
  int k_unit() const override { return 2; }
  int b_regs() const override { return 2 * vecs_; } // even, odd per vector
  int scratch_regs() const override { return 2; }   // A even, A odd
  int const_regs() const override { return 1; }     // 0xFFFF0000

  void emit_setup() override {
    mov(eax, 0xFFFF0000u);
    vmovd(Xmm(mask().getIdx()), eax);
    vpbroadcastd(mask(), Xmm(mask().getIdx()));
  }

  // VEX vpslld takes no memory source: load the pairs into the odd
  // register, shift a copy up, then clear the odd register's low halves.
  void emit_load_b(int j, const Address &src, bool partial) override {
    vmovdqu(odd(j), src);
    vpslld(even(j), odd(j), 16);
    if (!partial) // an odd K's last pair has no second element (B is 0)
      vpand(odd(j), odd(j), mask());
  }

  void emit_row(int set, int i, int disp, bool partial) override {
    const Ymm a_even = scratch(0), a_odd = scratch(1);
    vbroadcastss(a_even, a_addr(i, disp));
    if (!partial) // A has K elements per row: never read A[K]
      vbroadcastss(a_odd, a_addr(i, disp + 4));
    for (int j = 0; j < vecs_; ++j) {
      if (!partial)
        vfmadd231ps(acc(set, i, j), odd(j), a_odd);
      vfmadd231ps(acc(set, i, j), even(j), a_even);
    }
  }

private:
  Ymm even(int j) const { return b_reg(2 * j); }
  Ymm odd(int j) const { return b_reg(2 * j + 1); }
  Ymm mask() const { return const_reg(0); }
};

/// u8 x s8 quads with the sign trick (see the top of the file): B in two
/// ymm, scratch q_a, |q_a| and one temporary per column vector, constants
/// int16 ones and bytes 0x80; m <= 4 (8 accumulators + 8 = 16 registers).
/// The sum chain is one vpaddd per step, so one accumulator set suffices.
class Avx2U8S8Jit final : public Avx2BrgemmJit {
public:
  using Avx2BrgemmJit::Avx2BrgemmJit;

protected:
  int k_unit() const override { return 4; }
  int b_regs() const override { return vecs_; }
  int scratch_regs() const override { return 2 + vecs_; }
  int const_regs() const override { return 2; }
  int max_sets() const override { return 1; }
  bool int_accumulators() const override { return true; }

  void emit_setup() override {
    broadcast_const(ones(), 0x00010001u);
    broadcast_const(bias_bytes(), 0x80808080u);
  }

  void emit_load_b(int j, const Address &src, bool) override {
    vmovdqu(b_reg(j), src);
  }

  void emit_row(int set, int i, int disp, bool partial) override {
    const Ymm a_q = scratch(0), a_abs = scratch(1);
    if (partial)
      emit_partial_a(a_q, i, disp);
    else
      vpbroadcastd(a_q, a_addr(i, disp));
    vpxor(a_q, a_q, bias_bytes()); // u8 = q + 128 -> s8 q
    vpabsb(a_abs, a_q);            // |q| <= 128, read as u8 by vpmaddubsw
    for (int j = 0; j < vecs_; ++j) {
      const Ymm t = scratch(2 + j);
      vpsignb(t, b_reg(j), a_q); // sign(q_a) * b (0 where q_a = 0)
      vpmaddubsw(t, a_abs, t);   // pair sums, |.| <= 32512
      vpmaddwd(t, t, ones());    // quad sums in int32
      vpaddd(acc(set, i, j), acc(set, i, j), t);
    }
  }

  void emit_store(int m) override {
    const bool to_f32 = desc_.c_type == DataType::f32;
    const Reg64 c_row = reg_tmp, bias = rbx, a_scale = rbp, b_scale = r13;
    if (to_f32) {
      mov(a_scale, ptr[reg_post + offsetof(BrgemmPostArgs, a_scale)]);
      mov(b_scale, ptr[reg_post + offsetof(BrgemmPostArgs, b_scale)]);
      if (desc_.epilogue == Epilogue::bias)
        mov(bias, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
    }
    const Ymm a_s = scratch(0);
    mov(c_row, reg_c);
    for (int i = 0; i < m; ++i) {
      if (to_f32)
        vbroadcastss(a_s, ptr[a_scale + i * 4]);
      for (int j = 0; j < vecs_; ++j) {
        const Ymm z = acc(0, i, j);
        const int off = col_offset(j);
        if (!to_f32) {
          if (desc_.accumulate)
            vpaddd(z, z, ptr[c_row + off]);
          vmovdqu(ptr[c_row + off], z);
          continue;
        }
        // The VNNI kernel's sequence, so both round identically.
        vcvtdq2ps(z, z);
        vmulps(z, z, ptr[b_scale + off]);
        vmulps(z, z, a_s);
        if (desc_.accumulate)
          vaddps(z, z, ptr[c_row + off]);
        if (desc_.epilogue == Epilogue::bias)
          vaddps(z, z, ptr[bias + off]);
        vmovups(ptr[c_row + off], z);
      }
      if (i + 1 < m)
        add(c_row, reg_ldc);
    }
  }

private:
  Ymm ones() const { return const_reg(0); }       ///< int16 1 in every word
  Ymm bias_bytes() const { return const_reg(1); } ///< 0x80 in every byte

  void broadcast_const(const Ymm &dst, uint32_t dword) {
    mov(eax, dword);
    vmovd(Xmm(dst.getIdx()), eax);
    vpbroadcastd(dst, Xmm(dst.getIdx()));
  }

  // The last 1-3 bytes of the row, assembled in eax so nothing past the row
  // is read; the missing bytes become 0x80 (q = 0), so they contribute
  // nothing whatever B's padding holds.
  void emit_partial_a(const Ymm &dst, int row, int disp) {
    switch (desc_.k % 4) {
    case 1:
      movzx(eax, a_addr(row, disp, byte));
      or_(eax, 0x80808000u);
      break;
    case 2:
      movzx(eax, a_addr(row, disp, word));
      or_(eax, 0x80800000u);
      break;
    default:
      movzx(eax, a_addr(row, disp + 2, byte));
      shl(eax, 16);
      mov(ax, a_addr(row, disp, word));
      or_(eax, 0x80000000u);
      break;
    }
    vmovd(Xmm(dst.getIdx()), eax);
    vpbroadcastd(dst, Xmm(dst.getIdx()));
  }
};

template <class Jit>
BrgemmGenResult build(const BrgemmDesc &desc, const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Jit>(desc, tile, max_size);
  });
}

} // namespace

BrgemmGenResult generate_avx2_fp32(const BrgemmDesc &desc,
                                   const BrgemmTile &tile) {
  return build<Avx2Fp32Jit>(desc, tile);
}

BrgemmGenResult generate_avx2_bf16(const BrgemmDesc &desc,
                                   const BrgemmTile &tile) {
  return build<Avx2Bf16Jit>(desc, tile);
}

BrgemmGenResult generate_avx2_u8s8(const BrgemmDesc &desc,
                                   const BrgemmTile &tile) {
  return build<Avx2U8S8Jit>(desc, tile);
}

} // namespace hyc::codegen::x86
