// AVX-512 VNNI generator for the grouped integer layouts (u4_grouped,
// u8_grouped; brgemm.h "Grouped integer kernels"): s8 activations x
// unsigned weight codes with one scale (and min) per group of K, either
// fp16 (one-level) or a super-block's fp16 factor times the group's 8-bit
// sub-scale (two-level), and u4 codes optionally looked up in a code book.
//
// vpdpbusd multiplies unsigned bytes by signed ones, so the codes are its
// register operand and A its m32bcst memory operand: no bias on A and no
// compensation row. Each row keeps an int32 group sum and an fp32 total per
// 16-column vector (4 zmm per row); at a group's end the int32 sums are
// folded into the totals in the order brgemm.h defines, with the codes'
// registers reused for the group's scales and mins. The fp32 totals are one
// set whatever m is, so the fold order never depends on the batch; the
// int32 group sums are exact, so blocks of up to 4 rows split them over two
// sets (even and odd quads, added at the fold) to halve the vpdpbusd chain
// that otherwise bounds decode. u4 codes are unpacked with one and (columns
// 0..15) and one shift + and (columns 16..31) per K quad; a code book is
// one vpshufb more per register (the 16 values fit one 128-bit lane).
//
// Two-level scales cost a few instructions per group and 16 columns,
// whatever m is: the group's scale is built at its fold from the
// super-block's d (reread from L1, so no register stays pinned) and the
// group's sub-scale bytes, exactly as brgemm.h defines it. Their kernels
// take A's scale per group too: one more vmulps per row and vector at the
// fold (its scale an embedded broadcast), none at the store.
#include "codegen/x86/brgemm_jit.h"
#include "codegen/x86/grouped_scales.h"
#include "codegen/x86/prefetch_b.h"

#include "codegen/pack.h"

#include <numeric>

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

class Avx512VnniGroupedJit final : public BrgemmJit {
public:
  Avx512VnniGroupedJit(const BrgemmDesc &desc, const BrgemmTile &tile,
                       size_t max_size)
      : BrgemmJit(desc, tile, max_size), u4_(desc.b_type == DataType::u4),
        two_level_(desc.super_group > 0),
        codebook_(desc.codebook != Codebook::none), quad_bytes_(u4_ ? 64 : 128),
        groups_(desc.k / desc.group),
        // Quads per unrolled step: the table's unroll, capped so it divides
        // the group's quads (group / 4 is a multiple of 4).
        unroll_(std::gcd(desc.group / 4, tile.k_unroll)) {}

protected:
  void emit_setup() override {
    if (!u4_)
      return;
    mov(eax, 0x0F0F0F0Fu);
    vpbroadcastd(nibble_mask(), eax);
    if (codebook_)
      emit_iq4nl_codebook(*this, codebook_values());
  }

  void emit_rows(int m) override {
    m_ = m;
    int_sets_ = 6 * m <= 24 ? 2 : 1; // below the code registers
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < 2; ++j) {
        for (int s = 0; s < int_sets_; ++s)
          vpxord(acc_i(i, j, s), acc_i(i, j, s), acc_i(i, j, s));
        vpxord(acc_f(i, j), acc_f(i, j), acc_f(i, j));
      }
    load_a_bases(m);
    mov(reg_bk, reg_b);
    mov(reg_a_sum, ptr[reg_post + offsetof(BrgemmPostArgs, a_sum)]);
    if (!two_level_) {
      emit_groups(groups_, reg_kloop);
    } else {
      // Super-blocks: reg_hdr keeps the block's d (and dmin) for the folds.
      Label block_loop;
      mov(reg_kloop, desc_.k / desc_.super_group);
      align(16);
      L(block_loop);
      emit_prefetch(desc_.asymmetric ? 2 : 1);
      mov(reg_hdr, reg_bk);
      add(reg_bk, desc_.asymmetric ? 128 : 64);
      emit_groups(desc_.super_group / desc_.group, reg_group);
      dec(reg_kloop);
      jnz(block_loop, T_NEAR);
    }
    emit_store();
  }

private:
  // Registers: per row i, int32 group sums zmm(2i + j) and fp32 totals
  // zmm(2m + 2i + j) for column vectors j = 0, 1, a second int32 set at
  // zmm(4m + 2i + j); then two K quads of codes (zmm24..27, reused for
  // scales and mins in the fold), the nibble mask, two temporaries and the
  // code book's values in every 128-bit lane.
  Zmm acc_i(int i, int j, int set = 0) const {
    return Zmm(set ? 4 * m_ + 2 * i + j : 2 * i + j);
  }
  Zmm acc_f(int i, int j) const { return Zmm(2 * m_ + 2 * i + j); }
  Zmm code(int slot, int j) const { return Zmm(24 + 2 * slot + j); }
  Zmm scale(int j) const { return Zmm(24 + j); }
  Zmm min_reg(int j) const { return Zmm(26 + j); }
  Zmm nibble_mask() const { return Zmm(28); }
  Zmm tmp(int i) const { return Zmm(29 + i % 2); }
  Zmm codebook_values() const { return Zmm(31); }

  const Reg64 reg_a_sum = r13; // a_base[2]: unused with m_max <= 10
  const Reg64 reg_hdr = r14;   // a_base[3]: the super-block's d, dmin
  const Reg64 reg_inner = r9;  // m is dead after the dispatch
  const Reg64 reg_group = rax; // groups left in the super-block

  /// Prefetches `lines` 64-byte lines at reg_bk, tile_.prefetch_b ahead (not
  /// in decode bodies: tiles.h prefetch_b_in_body).
  void emit_prefetch(int lines) {
    if (prefetch_b_in_body(tile_, m_))
      for (int line = 0; line < lines; ++line)
        emit_prefetch_b(*this, ptr[reg_bk + 64 * line + tile_.prefetch_b], tile_, m_);
  }

  /// `count` groups from reg_bk: their quads, then each one's fold.
  void emit_groups(int64_t count, const Reg64 &counter) {
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
        emit_quad(u, u % 2);
      advance_a_bases(m_, unroll_ * 4);
      add(reg_bk, unroll_ * quad_bytes_);
      if (inner > 1) {
        dec(reg_inner);
        jnz(quad_loop, T_NEAR);
      }
    }
    emit_fold();
    // One-level: scales (and mins); two-level: sc and m.
    add(reg_bk, !two_level_ && desc_.asymmetric ? 128 : 64);
    add(reg_a_sum, grouped_a_sum_bytes(desc_));
    dec(counter);
    jnz(group_loop, T_NEAR);
  }

  void emit_quad(int u, int slot) {
    const int64_t off = int64_t(u) * quad_bytes_;
    if (prefetch_b_in_body(tile_, m_))
      for (int line = 0; line < quad_bytes_ / 64; ++line)
        emit_prefetch_b(*this, ptr[reg_bk + off + 64 * line + tile_.prefetch_b], tile_, m_);
    if (u4_) {
      vpsrlw(code(slot, 1), ptr[reg_bk + off], 4);
      vpandd(code(slot, 1), code(slot, 1), nibble_mask());
      vpandd(code(slot, 0), nibble_mask(), ptr[reg_bk + off]);
      if (codebook_)
        for (int j = 0; j < 2; ++j)
          vpshufb(code(slot, j), codebook_values(), code(slot, j));
    } else {
      vmovdqu8(code(slot, 0), ptr[reg_bk + off]);
      vmovdqu8(code(slot, 1), ptr[reg_bk + off + 64]);
    }
    for (int i = 0; i < m_; ++i)
      for (int j = 0; j < 2; ++j)
        vpdpbusd(acc_i(i, j, u % int_sets_), code(slot, j),
                 a_addr(i, u * 4, ptr_b), EvexEncoding);
  }

  /// The group's scales (and mins) into scale(j) (and min_reg(j)). reg_bk
  /// points at the group's fp16 scales (one-level) or sc and m (two-level).
  void load_scales() {
    const Zmm scales[2] = {scale(0), scale(1)}, mins[2] = {min_reg(0), min_reg(1)},
              tmps[2] = {tmp(0), tmp(1)};
    emit_group_scales(*this, desc_, reg_bk, reg_hdr, scales, mins, tmps);
  }


  /// reg_a_sum points at a_sum[0][g].
  void emit_fold() {
    // The lines the quads' prefetches skip.
    emit_prefetch(!two_level_ && desc_.asymmetric ? 2 : 1);
    load_scales();
    const int zp_shift = grouped_zero_point_shift(desc_);
    for (int i = 0; i < m_; ++i) {
      const int64_t row = int64_t(i) * groups_ * grouped_a_sum_bytes(desc_);
      const Address sum = ptr_b[reg_a_sum + row];
      const Address a_scale = ptr_b[reg_a_sum + row + 4]; // two-level only
      const Zmm t = tmp(i);
      if (desc_.asymmetric) {
        vcvtdq2ps(t, sum);
        if (two_level_)
          vmulps(t, t, a_scale);
      } else {
        vpslld(t, sum, zp_shift); // zp * a_sum, exact in int32
      }
      for (int j = 0; j < 2; ++j) {
        const Zmm a = acc_i(i, j), f = acc_f(i, j);
        if (int_sets_ > 1) { // exact: the order of int32 sums is free
          vpaddd(a, a, acc_i(i, j, 1));
          vpxord(acc_i(i, j, 1), acc_i(i, j, 1), acc_i(i, j, 1));
        }
        if (!desc_.asymmetric)
          vpsubd(a, a, t);
        vcvtdq2ps(a, a);
        if (two_level_)
          vmulps(a, a, a_scale);
        vfmadd231ps(f, a, scale(j));
        if (desc_.asymmetric)
          vfnmadd231ps(f, min_reg(j), t); // f - min * a_sum, one rounding
        vpxord(a, a, a);
      }
    }
  }

  void emit_store() {
    const Reg64 c_row = reg_tmp, bias = rbx, a_scale = rbp; // A bases dead
    mov(a_scale, ptr[reg_post + offsetof(BrgemmPostArgs, a_scale)]);
    if (desc_.epilogue == Epilogue::bias)
      mov(bias, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
    mov(c_row, reg_c);
    for (int i = 0; i < m_; ++i) {
      for (int j = 0; j < 2; ++j) {
        const Zmm f = acc_f(i, j);
        if (!two_level_) // two-level: A's scales went in at the folds
          vmulps(f, f, ptr_b[a_scale + i * 4]);
        if (desc_.accumulate)
          vaddps(f, f, ptr[c_row + j * 64]);
        if (desc_.epilogue == Epilogue::bias)
          vaddps(f, f, ptr[bias + j * 64]);
        store_c(ptr[c_row + j * 64], f);
      }
      if (i + 1 < m_)
        add(c_row, reg_ldc);
    }
  }

  const bool u4_;
  const bool two_level_;
  const bool codebook_;
  const int quad_bytes_;
  const int64_t groups_;
  const int unroll_;
  int m_ = 0;
  int int_sets_ = 1;
};

} // namespace

BrgemmGenResult generate_avx512_vnni_grouped(const BrgemmDesc &desc,
                                             const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx512VnniGroupedJit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
