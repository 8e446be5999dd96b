// AMX generator for the grouped integer layouts (u4_grouped, u8_grouped;
// brgemm.h "Grouped integer kernels"): s8 activations x unsigned weight
// codes on tdpbsud (signed A bytes times unsigned B bytes, the same exact
// products vpdpbusd forms with the codes first), for the amx variant's
// many-row steps. Up to 32 rows as 2x2 C tiles of 16x16 int32 (tmm0-3), A in
// tmm4-5, B in tmm6-7, one configuration per m.
//
// A group's scales must be applied to its own int32 sums, so the tiles hold
// one group at a time: each group starts from tilezero, runs its K in steps
// of 64, 32 or 16 (the largest dividing the group), and its sums leave
// through a tile store into a stack scratch, from where AVX-512 folds them
// into fp32 totals exactly as the VNNI grouped kernel does (same int32 sum,
// same operations in the same order), so both kernels give the same bits and
// a row's result does not depend on which kernel its step took. The totals
// (32 rows x 32 columns) live in a second scratch: 64 vectors do not fit in
// registers.
//
// B tiles: u8 codes are stored as the tiles want them (a K quad is 64 bytes
// for columns 0..15, then 64 for columns 16..31), so two tile loads with a
// 128-byte stride read them in place. u4 quads hold columns 0..15 in the low
// nibbles and 16..31 in the high ones; each quad is unpacked (and, or shift
// and and; a code book is one vpshufb more) into a 2 KB scratch the tiles
// then load, once per step for all 32 rows.
//
// The fold's cost (about four vector operations per row, column vector and
// group) is what bounds these kernels at small groups; it is paid once per
// group whatever K step the tiles take.
#include "codegen/x86/amx_tile_config.h"
#include "codegen/x86/brgemm_jit.h"
#include "codegen/x86/grouped_scales.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

// Stack scratch, 64-byte aligned: fp32 totals [32][32], the group's int32
// sums [32][32] as the tiles store them, unpacked u4 codes (16 quads x
// 128 bytes), then 64 bytes for the current tile configuration.
constexpr int kTotals = 0;
constexpr int kSums = kTotals + 32 * 128;
constexpr int kCodes = kSums + 32 * 128;
constexpr int kCfgProbe = kCodes + 16 * 128;
constexpr int kScratchBytes = kCfgProbe + 64;

/// K elements per tile step: the largest of 64, 32, 16 dividing the group
/// (validate_grouped_format makes groups multiples of 16).
int k_step_of(int group) {
  return group % 64 == 0 ? 64 : group % 32 == 0 ? 32 : 16;
}

class AmxGroupedJit final : public BrgemmJit {
public:
  AmxGroupedJit(const BrgemmDesc &desc, const BrgemmTile &tile,
                size_t max_size)
      : BrgemmJit(desc, tile, max_size), u4_(desc.b_type == DataType::u4),
        two_level_(desc.super_group > 0),
        codebook_(desc.codebook != Codebook::none),
        quad_bytes_(u4_ ? 64 : 128), k_step_(k_step_of(desc.group)),
        groups_(desc.k / desc.group) {
    configs_.resize(desc.m_max + 1);
  }

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
    two_ = m > 16;
    mov(reg_saved_rsp, rsp);
    sub(rsp, kScratchBytes);
    and_(rsp, -64);
    mov(reg_stride, 128);
    load_config(configs_[m]);

    vpxord(zero(), zero(), zero());
    for (int i = 0; i < m; ++i) // unrolled: m stores, once per call
      for (int j = 0; j < 2; ++j)
        vmovaps(ptr[rsp + kTotals + i * 128 + j * 64], zero());

    if (two_) {
      mov(reg_a_hi, reg_lda);
      shl(reg_a_hi, 4);
      add(reg_a_hi, reg_a);
    }
    mov(reg_bk, reg_b);
    mov(reg_a_sum, ptr[reg_post + offsetof(BrgemmPostArgs, a_sum)]);
    if (!two_level_) {
      emit_groups(groups_);
    } else {
      // Super-blocks: reg_hdr keeps the block's d (and dmin) for the folds.
      Label block_loop;
      mov(reg_kloop, desc_.k / desc_.super_group);
      L(block_loop);
      mov(reg_hdr, reg_bk);
      add(reg_bk, desc_.asymmetric ? 128 : 64);
      emit_groups(desc_.super_group / desc_.group);
      dec(reg_kloop);
      jnz(block_loop, T_NEAR);
    }
    emit_store();
    mov(rsp, reg_saved_rsp);
  }

  void emit_data() override {
    for (int m = 1; m <= desc_.m_max; ++m) {
      align(64);
      L(configs_[m]);
      // k_step_ bytes of s8 A a row, k_step_ / 4 quads of B.
      const TileConfig cfg = tile_config_2x2(m, k_step_, k_step_ / 4);
      for (uint8_t b : cfg.bytes)
        db(b);
    }
  }

private:
  // Vector registers: the fold's two sums, the row's zero-point term, the
  // group's scales and mins, a zero, unpack temporaries, the nibble mask and
  // the code book's values in every 128-bit lane.
  Zmm sum_reg(int j) const { return Zmm(16 + j); }
  Zmm row_term() const { return Zmm(18); }
  Zmm zero() const { return Zmm(19); }
  Zmm scale(int j) const { return Zmm(24 + j); }
  Zmm min_reg(int j) const { return Zmm(26 + j); }
  Zmm tmp(int j) const { return Zmm(28 + j); }
  Zmm nibble_mask() const { return Zmm(30); }
  Zmm codebook_values() const { return Zmm(31); }

  // reg_a walks the first 16 rows' A; reg_m is dead after the dispatch and
  // reg_lda3 unused (tile loads take the stride from reg_lda).
  const Reg64 reg_a_hi = rbx;      // A of rows 16..31
  const Reg64 reg_saved_rsp = rbp;
  const Reg64 reg_a_sum = r13;
  const Reg64 reg_stride = r14;    // 128: B rows, scratch rows
  const Reg64 reg_hdr = r9;        // the super-block's d, dmin
  const Reg64 reg_group = r11;     // groups left

  // m changes the shape (amx_tile_config.h).
  void load_config(Label &cfg) { emit_load_tile_config(*this, cfg, kCfgProbe, reg_tmp); }

  /// `count` groups from reg_bk: each one's tile steps, then its fold.
  void emit_groups(int64_t count) {
    Label group_loop;
    mov(reg_group, count);
    L(group_loop);
    tilezero(tmm0);
    tilezero(tmm1);
    if (two_) {
      tilezero(tmm2);
      tilezero(tmm3);
    }
    for (int s = 0; s < desc_.group / k_step_; ++s)
      emit_step(s);
    add(reg_a, desc_.group);
    if (two_)
      add(reg_a_hi, desc_.group);
    add(reg_bk, desc_.group / 4 * quad_bytes_);
    tilestored(ptr[rsp + reg_stride + kSums], tmm0);
    tilestored(ptr[rsp + reg_stride + kSums + 64], tmm1);
    if (two_) {
      tilestored(ptr[rsp + reg_stride + kSums + 16 * 128], tmm2);
      tilestored(ptr[rsp + reg_stride + kSums + 16 * 128 + 64], tmm3);
    }
    emit_fold();
    // One-level: scales (and mins); two-level: sc and m.
    add(reg_bk, !two_level_ && desc_.asymmetric ? 128 : 64);
    add(reg_a_sum, grouped_a_sum_bytes(desc_));
    dec(reg_group);
    jnz(group_loop, T_NEAR);
  }

  /// Tile step s of the group at reg_bk / reg_a: k_step_ K elements.
  void emit_step(int s) {
    const int quads = k_step_ / 4;
    const int64_t b_off = int64_t(s) * quads * quad_bytes_;
    if (u4_) {
      for (int q = 0; q < quads; ++q) {
        const Address src = ptr[reg_bk + b_off + q * 64];
        vpandd(tmp(0), nibble_mask(), src);
        vpsrlw(tmp(1), src, 4);
        vpandd(tmp(1), tmp(1), nibble_mask());
        for (int j = 0; j < 2; ++j) {
          if (codebook_)
            vpshufb(tmp(j), codebook_values(), tmp(j));
          vmovdqa32(ptr[rsp + kCodes + q * 128 + j * 64], tmp(j));
        }
      }
      tileloadd(tmm6, ptr[rsp + reg_stride + kCodes]);
      tileloadd(tmm7, ptr[rsp + reg_stride + kCodes + 64]);
    } else {
      tileloadd(tmm6, ptr[reg_bk + reg_stride + b_off]);
      tileloadd(tmm7, ptr[reg_bk + reg_stride + b_off + 64]);
    }
    tileloadd(tmm4, ptr[reg_a + reg_lda + s * k_step_]);
    tdpbsud(tmm0, tmm4, tmm6);
    tdpbsud(tmm1, tmm4, tmm7);
    if (two_) {
      tileloadd(tmm5, ptr[reg_a_hi + reg_lda + s * k_step_]);
      tdpbsud(tmm2, tmm5, tmm6);
      tdpbsud(tmm3, tmm5, tmm7);
    }
  }

  /// The group's scales (and mins) into scale(j) (and min_reg(j)), as the
  /// VNNI grouped kernel builds them (grouped_scales.h).
  void load_scales() {
    const Zmm scales[2] = {scale(0), scale(1)}, mins[2] = {min_reg(0), min_reg(1)},
              tmps[2] = {tmp(0), tmp(1)};
    emit_group_scales(*this, desc_, reg_bk, reg_hdr, scales, mins, tmps);
  }


  /// Folds the stored int32 sums into the totals, brgemm.h's order:
  ///   symmetric:  total = fma(float(sum - zp * a_sum) [* as_g], scale, total)
  ///   asymmetric: total = fma(float(sum) [* as_g], scale, total)
  ///               total = total - min * (float(a_sum) [* as_g])
  /// reg_a_sum points at a_sum[0][g].
  void emit_fold() {
    load_scales();
    const int zp_shift = grouped_zero_point_shift(desc_);
    // A loop over the rows (one body per m is enough code): rax is the
    // row's offset in the scratches, rdx its sums (reg_b is dead here).
    const Reg64 off = reg_tmp, row_sum = reg_b;
    xor_(off, off);
    mov(row_sum, reg_a_sum);
    Label row_loop;
    L(row_loop);
    const Address sum = ptr_b[row_sum];
    const Address a_scale = ptr_b[row_sum + 4]; // two-level only
    const Zmm t = row_term();
    if (desc_.asymmetric) {
      vcvtdq2ps(t, sum);
      if (two_level_)
        vmulps(t, t, a_scale);
    } else {
      vpslld(t, sum, zp_shift); // zp * a_sum, exact in int32
    }
    for (int j = 0; j < 2; ++j) {
      const Zmm a = sum_reg(j);
      const Address total = ptr[rsp + off + kTotals + j * 64];
      vmovdqa32(a, ptr[rsp + off + kSums + j * 64]);
      if (!desc_.asymmetric)
        vpsubd(a, a, t);
      vcvtdq2ps(a, a);
      if (two_level_)
        vmulps(a, a, a_scale);
      vfmadd213ps(a, scale(j), total); // a * scale + total, one rounding
      if (desc_.asymmetric)
        vfnmadd231ps(a, min_reg(j), t); // total - min * a_sum, one rounding
      vmovaps(total, a);
    }
    add(row_sum, groups_ * grouped_a_sum_bytes(desc_));
    add(off, 128);
    cmp(off, m_ * 128);
    jne(row_loop, T_NEAR);
  }

  void emit_store() {
    // The loops are done: reg_b, reg_group and reg_kloop are free.
    const Reg64 off = reg_tmp, c_row = reg_b, bias = reg_group,
                a_scale = reg_kloop;
    mov(a_scale, ptr[reg_post + offsetof(BrgemmPostArgs, a_scale)]);
    if (desc_.epilogue == Epilogue::bias)
      mov(bias, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
    mov(c_row, reg_c);
    xor_(off, off);
    Label row_loop;
    L(row_loop);
    for (int j = 0; j < 2; ++j) {
      const Zmm f = sum_reg(j);
      vmovaps(f, ptr[rsp + off + kTotals + j * 64]);
      if (!two_level_) // two-level: A's scales went in at the folds
        vmulps(f, f, ptr_b[a_scale]);
      if (desc_.accumulate)
        vaddps(f, f, ptr[c_row + j * 64]);
      if (desc_.epilogue == Epilogue::bias)
        vaddps(f, f, ptr[bias + j * 64]);
      vmovups(ptr[c_row + j * 64], f);
    }
    add(a_scale, 4);
    add(c_row, reg_ldc);
    add(off, 128);
    cmp(off, m_ * 128);
    jne(row_loop, T_NEAR);
  }

  const bool u4_;
  const bool two_level_;
  const bool codebook_;
  const int quad_bytes_;
  const int k_step_;
  const int64_t groups_;
  int m_ = 0;
  bool two_ = false;
  std::vector<Label> configs_;
};

} // namespace

BrgemmGenResult generate_amx_grouped(const BrgemmDesc &desc,
                                     const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<AmxGroupedJit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
