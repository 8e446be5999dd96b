// AVX2 + FMA + F16C generator for the grouped integer layouts (u4_grouped,
// u8_grouped; brgemm.h "Grouped integer kernels"), the floor under the
// AVX-512 VNNI kernel: the same int32 group sums, the same fold (one-level
// fp16 scales or two-level d * sc) and the same epilogue, so both give
// bit-identical results.
//
// 16 ymm registers: the panel is walked as two 16-column halves (as in
// x86/avx2.cpp), each over every group; a row keeps an int32 group sum and
// an fp32 total per 8-column vector (4 ymm per row and half), so m_max = 2.
// The first half streams B and prefetches it; the second reads it again
// from cache. One row (decode) instead walks the panel once, its four
// column vectors one after the other inside each quad (8 ymm of sums and
// totals): the second half's pass from L2 left the memory idle, and the
// one-row walk keeps every element's operations (the same int32 sums, the
// same fold and epilogue in the same order), so its bits.
//
// There is no vpdpbusd, so the dot products are built exactly:
// - u4: vpmaddubsw(codes, A) pair sums are at most 2 * 15 * 128 = 3840, far
//   from int16 saturation; vpmaddwd with ones widens quads to int32. In
//   groups of at most 32 (8 quads) the pair sums are added in int16 instead
//   (at most 8 * 3840 = 30720, exact) and widened once per group, at the
//   fold: two instructions per quad and vector instead of three.
// - u4 with the iq4nl code book: the looked-up values + 128 reach 241, where
//   vpmaddubsw would saturate, so the signed values (-127..113) are looked
//   up instead and multiplied as vpmaddubsw(|a|, sign(a) * value): factors
//   at most 128 and 127, pair sums at most 32512. The sum is then exactly
//   dot - 128 * a_sum of brgemm.h, so the fold subtracts nothing.
// - u8: vpmaddubsw could saturate (2 * 255 * 128 > 32767), so codes and A
//   are widened to int16 instead: even bytes (k = 4q, 4q+2) and odd bytes
//   (4q+1, 4q+3) of each quad in separate words, and two vpmaddwd give the
//   quad's exact int32 sum (products are at most 255 * 128).
#include "codegen/x86/brgemm_jit.h"

#include "codegen/pack.h"
#include "hyrt/support/iq4nl.h"

#include <cstring>
#include <numeric>

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

class Avx2GroupedJit final : public BrgemmJit {
public:
  Avx2GroupedJit(const BrgemmDesc &desc, const BrgemmTile &tile,
                 size_t max_size)
      : BrgemmJit(desc, tile, max_size), u4_(desc.b_type == DataType::u4),
        two_level_(desc.super_group > 0),
        codebook_(desc.codebook != Codebook::none),
        int16_sums_(u4_ && !codebook_ && desc.group <= 32), quad_bytes_(u4_ ? 64 : 128),
        groups_(desc.k / desc.group),
        unroll_(std::gcd(desc.group / 4, tile.k_unroll)) {}

protected:
  void emit_setup() override {
    // u4: byte mask 0x0F and int16 ones; u8: word mask 0x00FF.
    broadcast_const(Ymm(15), u4_ ? 0x00010001u : 0x00FF00FFu);
    if (u4_)
      broadcast_const(Ymm(14), 0x0F0F0F0Fu);
    if (codebook_)
      load_codebook();
  }

  void emit_rows(int m) override {
    m_ = m;
    one_row_ = m == 1;
    if (one_row_) {
      emit_half(0);
      one_row_ = false;
      return;
    }
    for (int half = 0; half < 2; ++half)
      emit_half(half);
  }

private:
  // Registers: per row i, int32 group sums ymm(2i + j) and fp32 totals
  // ymm(2m + 2i + j) for the half's column vectors j = 0, 1; ymm8.. hold
  // codes and A (scales, mins and a_sum in the fold); constants from ymm15
  // down (ymm13: the code book, which the fold leaves alone).
  Ymm acc_i(int i, int j) const { return Ymm(2 * i + j); }
  Ymm acc_f(int i, int j) const { return Ymm(2 * m_ + 2 * i + j); }
  Ymm scale(int j) const { return Ymm(8 + j); }
  Ymm min_reg(int j) const { return Ymm(10 + j); }
  Ymm sum_tmp() const { return Ymm(12); }
  Ymm codebook_values() const { return Ymm(13); }

  const Reg64 reg_a_sum = r13; // a_base[2]: unused with m_max <= 10
  const Reg64 reg_hdr = r14;   // a_base[3]: the super-block's d, dmin
  const Reg64 reg_inner = r9;  // m is dead after the dispatch
  const Reg64 reg_group = rax; // groups left in the super-block

  void broadcast_const(const Ymm &dst, uint32_t dword) {
    mov(eax, dword);
    vmovd(Xmm(dst.getIdx()), eax);
    vpbroadcastd(dst, Xmm(dst.getIdx()));
  }

  /// The signed code book values (kIq4nlValues) in both 128-bit lanes,
  /// from immediates: no data, so the code stays position independent.
  void load_codebook() {
    uint64_t half[2];
    std::memcpy(half, hyrt::kIq4nlValues, 16);
    const Xmm lane(codebook_values().getIdx());
    mov(rax, half[0]);
    vmovq(lane, rax);
    mov(rax, half[1]);
    vpinsrq(lane, lane, rax, 1);
    vinserti128(codebook_values(), codebook_values(), lane, 1);
  }

  void emit_prefetch(int half, int lines) {
    if (half == 0 && tile_.prefetch_b > 0)
      for (int line = 0; line < lines; ++line)
        prefetcht0(ptr[reg_bk + 64 * line + tile_.prefetch_b]);
  }

  void emit_half(int half) {
    if (one_row_)
      for (int j = 0; j < 4; ++j) {
        vpxor(sum1(j), sum1(j), sum1(j));
        vpxor(total1(j), total1(j), total1(j));
      }
    else
      for (int i = 0; i < m_; ++i)
        for (int j = 0; j < 2; ++j) {
          vpxor(acc_i(i, j), acc_i(i, j), acc_i(i, j));
          vpxor(acc_f(i, j), acc_f(i, j), acc_f(i, j));
        }
    load_a_bases(m_);
    mov(reg_bk, reg_b);
    mov(reg_a_sum, ptr[reg_post + offsetof(BrgemmPostArgs, a_sum)]);
    if (!two_level_) {
      emit_groups(half, groups_, reg_kloop);
    } else {
      // Super-blocks: reg_hdr keeps the block's d (and dmin) for the folds.
      Label block_loop;
      mov(reg_kloop, desc_.k / desc_.super_group);
      align(16);
      L(block_loop);
      emit_prefetch(half, desc_.asymmetric ? 2 : 1);
      mov(reg_hdr, reg_bk);
      add(reg_bk, desc_.asymmetric ? 128 : 64);
      emit_groups(half, desc_.super_group / desc_.group, reg_group);
      dec(reg_kloop);
      jnz(block_loop, T_NEAR);
    }
    emit_store(half);
  }

  /// `count` groups from reg_bk: their quads, then each one's fold.
  void emit_groups(int half, int64_t count, const Reg64 &counter) {
    const int64_t inner = desc_.group / 4 / unroll_;
    Label group_loop;
    mov(counter, count);
    align(16);
    L(group_loop);
    {
      Label quad_loop;
      if (inner > 1) {
        mov(reg_inner, inner);
        L(quad_loop);
      }
      for (int u = 0; u < unroll_; ++u)
        emit_quad(u, half);
      advance_a_bases(m_, unroll_ * 4);
      add(reg_bk, unroll_ * quad_bytes_);
      if (inner > 1) {
        dec(reg_inner);
        jnz(quad_loop, T_NEAR);
      }
    }
    emit_fold(half);
    // One-level: scales (and mins); two-level: sc and m.
    add(reg_bk, !two_level_ && desc_.asymmetric ? 128 : 64);
    add(reg_a_sum, sum_bytes());
    dec(counter);
    jnz(group_loop, T_NEAR);
  }

  void emit_quad(int u, int half) {
    const int64_t off = int64_t(u) * quad_bytes_;
    if (half == 0 && tile_.prefetch_b > 0)
      for (int line = 0; line < quad_bytes_ / 64; ++line)
        prefetcht0(ptr[reg_bk + off + 64 * line + tile_.prefetch_b]);
    if (one_row_)
      emit_quad_one_row(off, u);
    else if (u4_ && codebook_)
      emit_quad_codebook(off, u, half);
    else if (u4_)
      emit_quad_u4(off, u, half);
    else
      emit_quad_u8(off, u, half);
  }

  /// This half's nibbles of the quad at off into ymm8 (j = 0), ymm9:
  /// half 0 takes the low nibbles, half 1 the high.
  void unpack_nibbles(int64_t off, int half) {
    const Ymm mask(14);
    for (int j = 0; j < 2; ++j) {
      const Ymm c(8 + j);
      if (half == 0) {
        vpand(c, mask, ptr[reg_bk + off + 32 * j]);
      } else {
        vmovdqu(c, ptr[reg_bk + off + 32 * j]);
        vpsrlw(c, c, 4);
        vpand(c, c, mask);
      }
    }
  }

  // Codes ymm8, ymm9; A ymm10, ymm11; products ymm12, ymm13; byte mask
  // ymm14, int16 ones ymm15.
  void emit_quad_u4(int64_t off, int u, int half) {
    unpack_nibbles(off, half);
    for (int i = 0; i < m_; ++i) {
      const Ymm a(10 + i % 2);
      vpbroadcastd(a, a_addr(i, u * 4));
      for (int j = 0; j < 2; ++j) {
        const Ymm t(12 + j);
        vpmaddubsw(t, Ymm(8 + j), a); // codes unsigned, A signed
        add_pair_sums(acc_i(i, j), t);
      }
    }
  }

  /// acc += the quad's pair sums t (u4 codes): int16 adds for the group's
  /// fold to widen (int16_sums_), else widened to int32 here.
  void add_pair_sums(const Ymm &acc, const Ymm &t) {
    if (int16_sums_) {
      vpaddw(acc, acc, t);
      return;
    }
    vpmaddwd(t, t, Ymm(15));
    vpaddd(acc, acc, t);
  }

  // Signed values ymm8, ymm9; A ymm10, |A| ymm11; products ymm12 (renamed
  // per use); code book ymm13, byte mask ymm14, int16 ones ymm15.
  void emit_quad_codebook(int64_t off, int u, int half) {
    const Ymm ones(15), a(10), a_abs(11), t(12);
    unpack_nibbles(off, half);
    for (int j = 0; j < 2; ++j)
      vpshufb(Ymm(8 + j), codebook_values(), Ymm(8 + j));
    for (int i = 0; i < m_; ++i) {
      vpbroadcastd(a, a_addr(i, u * 4));
      vpabsb(a_abs, a); // -128 -> 0x80, read as unsigned 128
      for (int j = 0; j < 2; ++j) {
        vpsignb(t, Ymm(8 + j), a); // value * sign(a): -127..127
        vpmaddubsw(t, a_abs, t);
        vpmaddwd(t, t, ones);
        vpaddd(acc_i(i, j), acc_i(i, j), t);
      }
    }
  }

  // Even-byte codes ymm8, ymm9; odd-byte codes ymm10, ymm11; A even and odd
  // words ymm12, ymm13; product ymm14; word mask 0x00FF ymm15.
  void emit_quad_u8(int64_t off, int u, int half) {
    const Ymm mask(15), t(14), a_even(12), a_odd(13);
    for (int j = 0; j < 2; ++j) {
      const Address src = ptr[reg_bk + off + 64 * half + 32 * j];
      const Ymm even(8 + j), odd(10 + j);
      vmovdqu(odd, src);
      vpand(even, mask, odd);
      vpsrlw(odd, odd, 8);
    }
    for (int i = 0; i < m_; ++i) {
      split_a_words(a_even, a_odd, i, u);
      for (int j = 0; j < 2; ++j) {
        vpmaddwd(t, Ymm(8 + j), a_even);
        vpaddd(acc_i(i, j), acc_i(i, j), t);
        vpmaddwd(t, Ymm(10 + j), a_odd);
        vpaddd(acc_i(i, j), acc_i(i, j), t);
      }
    }
  }

  /// Row i's A quad u as int16 words: even bytes (a[4q], a[4q+2]) and odd
  /// bytes (a[4q+1], a[4q+3]), sign-extended (the u8 codes' vpmaddwd).
  void split_a_words(const Ymm &a_even, const Ymm &a_odd, int i, int u) {
    vpbroadcastd(a_odd, a_addr(i, u * 4));
    vpsllw(a_even, a_odd, 8);
    vpsraw(a_even, a_even, 8);
    vpsraw(a_odd, a_odd, 8);
  }

  /// The group's scales (and mins) of columns col .. col + 7 into s (and
  /// mn). reg_bk points at the group's fp16 scales (one-level) or sc and m
  /// (two-level); `factor` is scratch for the super-block's d (and dmin).
  void load_scale_vector(int col, const Ymm &s, const Ymm &mn, const Ymm &factor) {
    if (!two_level_) {
      vcvtph2ps(s, ptr[reg_bk + 2 * col]);
      if (desc_.asymmetric)
        vcvtph2ps(mn, ptr[reg_bk + 64 + 2 * col]);
      return;
    }
    // float(d) * float(sc): exact, so one vmulps is the defined value.
    vcvtph2ps(factor, ptr[reg_hdr + 2 * col]);
    vpmovsxbd(s, ptr[reg_bk + col]);
    vcvtdq2ps(s, s);
    vmulps(s, s, factor);
    if (desc_.asymmetric) {
      vcvtph2ps(factor, ptr[reg_hdr + 64 + 2 * col]);
      vpmovzxbd(mn, ptr[reg_bk + 32 + col]);
      vcvtdq2ps(mn, mn);
      vmulps(mn, mn, factor);
    }
  }

  /// The half's group scales (and mins) into scale(j) (and min_reg(j));
  /// sum_tmp() is free until the rows' fold.
  void load_scales(int half) {
    for (int j = 0; j < 2; ++j)
      load_scale_vector(16 * half + 8 * j, scale(j), min_reg(j), sum_tmp());
  }

  /// Code book sums already are dot - 128 * a_sum (emit_quad_codebook); the
  /// other symmetric formats subtract zp * a_sum at the fold.
  bool subtracts_zero_point() const { return !desc_.asymmetric && !codebook_; }

  /// Row `row`'s (byte offset in a_sum) group terms: A's group scale into
  /// act (two-level), and into t the term the fold needs: zp * a_sum in
  /// int32 (symmetric), a_sum in fp32 times act (asymmetric).
  void load_row_sum(int64_t row, const Ymm &t, const Ymm &act) {
    if (two_level_)
      vbroadcastss(act, ptr[reg_a_sum + row + 4]);
    const bool subtract = subtracts_zero_point();
    if (desc_.asymmetric || subtract)
      vpbroadcastd(t, ptr[reg_a_sum + row]);
    if (desc_.asymmetric) {
      vcvtdq2ps(t, t);
      if (two_level_)
        vmulps(t, t, act);
    } else if (subtract) {
      vpslld(t, t, u4_ ? 3 : 7); // zp * a_sum, exact in int32
    }
  }

  /// total f += the group sum a folded with scale s (and min mn, A's
  /// group terms t and act from load_row_sum); a is cleared for the next
  /// group.
  void fold_vector(const Ymm &a, const Ymm &f, const Ymm &s, const Ymm &mn, const Ymm &t,
                   const Ymm &act) {
    if (int16_sums_)
      vpmaddwd(a, a, Ymm(15)); // the group's int16 pair sums to int32
    if (subtracts_zero_point())
      vpsubd(a, a, t);
    vcvtdq2ps(a, a);
    if (two_level_)
      vmulps(a, a, act);
    vfmadd231ps(f, a, s);
    if (desc_.asymmetric)
      vfnmadd231ps(f, mn, t);
    vpxor(a, a, a);
  }

  /// reg_a_sum points at a_sum[0][g].
  /// Bytes per group in a row of post->a_sum: the sum, and with two-level
  /// scales A's scale after it.
  int sum_bytes() const { return two_level_ ? 8 : 4; }

  /// A's group scale (two-level): a register the fold leaves free, the
  /// mins' second one when symmetric, the code book's when asymmetric
  /// (asymmetric formats have no code book).
  Ymm act_scale() const { return desc_.asymmetric ? codebook_values() : min_reg(0); }

  void emit_fold(int half) {
    // The lines the quads' prefetches skip.
    emit_prefetch(half, !two_level_ && desc_.asymmetric ? 2 : 1);
    if (one_row_) {
      emit_fold_one_row();
      return;
    }
    load_scales(half);
    for (int i = 0; i < m_; ++i) {
      load_row_sum(int64_t(i) * groups_ * sum_bytes(), sum_tmp(), act_scale());
      for (int j = 0; j < 2; ++j)
        fold_vector(acc_i(i, j), acc_f(i, j), scale(j), min_reg(j), sum_tmp(), act_scale());
    }
  }

  void emit_store(int half) {
    const Reg64 c_row = reg_tmp, bias = rbx, a_scale = rbp; // A bases dead
    mov(a_scale, ptr[reg_post + offsetof(BrgemmPostArgs, a_scale)]);
    if (desc_.epilogue == Epilogue::bias)
      mov(bias, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
    const Ymm s = sum_tmp();
    mov(c_row, reg_c);
    const int vecs = one_row_ ? 4 : 2;
    for (int i = 0; i < m_; ++i) {
      if (!two_level_) // two-level: A's scales went in at the folds
        vbroadcastss(s, ptr[a_scale + i * 4]);
      for (int j = 0; j < vecs; ++j) {
        const int off = 64 * half + 32 * j;
        const Ymm f = one_row_ ? total1(j) : acc_f(i, j);
        if (!two_level_)
          vmulps(f, f, s);
        if (desc_.accumulate)
          vaddps(f, f, ptr[c_row + off]);
        if (desc_.epilogue == Epilogue::bias)
          vaddps(f, f, ptr[bias + off]);
        vmovups(ptr[c_row + off], f);
      }
      if (i + 1 < m_)
        add(c_row, reg_ldc);
    }
  }

  // One row (emit_rows with m = 1): sums ymm0-3 and totals ymm4-7 for the
  // panel's four column vectors; per quad, column vector by column vector,
  // codes in ymm8 (u8: even bytes ymm8, odd ymm9), A in ymm10 (u8: even
  // words ymm10, odd ymm11; code book: |A| ymm11), products in ymm12; the
  // constants as above (ymm13 code book, ymm14 mask, ymm15 ones or the
  // word mask). The fold: scale ymm8, min ymm9, the fp16 factor ymm10, A's
  // group scale ymm11, A's group sum ymm12.
  Ymm sum1(int j) const { return Ymm(j); }
  Ymm total1(int j) const { return Ymm(4 + j); }

  /// Column vector j's codes of the quad at off, as unpack_nibbles gives
  /// them: vectors 0 and 1 are the low nibbles of the quad's two 32-byte
  /// rows, vectors 2 and 3 the high ones (the two-half walk's second half).
  void unpack_vector(const Ymm &c, int64_t off, int j) {
    const Ymm mask(14);
    if (j < 2) {
      vpand(c, mask, ptr[reg_bk + off + 32 * j]);
      return;
    }
    vmovdqu(c, ptr[reg_bk + off + 32 * (j - 2)]);
    vpsrlw(c, c, 4);
    vpand(c, c, mask);
  }

  void emit_quad_one_row(int64_t off, int u) {
    const Ymm c(8), a(10), t(12);
    if (!u4_) { // as emit_quad_u8
      const Ymm odd(9), a_odd(11), mask(15);
      split_a_words(a, a_odd, 0, u);
      for (int j = 0; j < 4; ++j) {
        vmovdqu(odd, ptr[reg_bk + off + 32 * j]);
        vpand(c, mask, odd);
        vpsrlw(odd, odd, 8);
        vpmaddwd(t, c, a);
        vpaddd(sum1(j), sum1(j), t);
        vpmaddwd(t, odd, a_odd);
        vpaddd(sum1(j), sum1(j), t);
      }
      return;
    }
    const Ymm ones(15), a_abs(11);
    vpbroadcastd(a, a_addr(0, u * 4));
    if (codebook_)
      vpabsb(a_abs, a);
    for (int j = 0; j < 4; ++j) {
      unpack_vector(c, off, j);
      if (codebook_) { // as emit_quad_codebook
        vpshufb(c, codebook_values(), c);
        vpsignb(t, c, a);
        vpmaddubsw(t, a_abs, t);
        vpmaddwd(t, t, ones);
        vpaddd(sum1(j), sum1(j), t);
      } else { // as emit_quad_u4
        vpmaddubsw(t, c, a);
        add_pair_sums(sum1(j), t);
      }
    }
  }

  /// emit_fold for one row: each column vector's scales (load_scales'
  /// values) loaded just before its fold.
  void emit_fold_one_row() {
    const Ymm scale1(8), min1(9), factor(10), act(11), t(12);
    load_row_sum(0, t, act);
    for (int j = 0; j < 4; ++j) {
      load_scale_vector(8 * j, scale1, min1, factor);
      fold_vector(sum1(j), total1(j), scale1, min1, t, act);
    }
  }

  const bool u4_;
  const bool two_level_;
  const bool codebook_;
  const bool int16_sums_; ///< u4 pair sums kept in int16 until the fold
  const int quad_bytes_;
  const int64_t groups_;
  const int unroll_;
  int m_ = 0;
  bool one_row_ = false; ///< emitting the one-row body
};

} // namespace

BrgemmGenResult generate_avx2_grouped(const BrgemmDesc &desc,
                                      const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx2GroupedJit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
