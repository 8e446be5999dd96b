// AVX-512 FP32 brgemm generator (f32 x f32 -> f32, vfmadd231ps on [K][32]
// panels) and the AVX2 + FMA floor, which walks a 32-column panel as two
// 16-column halves with 6 x 2 ymm accumulators.
#include "codegen/x86/avx512_common.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

class Avx512Fp32Jit final : public Avx512BrgemmJit {
public:
  using Avx512BrgemmJit::Avx512BrgemmJit;

protected:
  int k_unit() const override { return 1; }

  void emit_dot(const Zmm &acc, const Zmm &a, const Zmm &b) override {
    vfmadd231ps(acc, b, a);
  }

  void emit_partial_a(const Zmm &, int, int) override {} // K unit is 1
};

} // namespace

BrgemmGenResult generate_avx512_fp32(const BrgemmDesc &desc,
                                     const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx512Fp32Jit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

/// AVX2 + FMA floor: 16 ymm registers, so a 32-column panel is walked as two
/// 16-column halves, each with m x 2 accumulators (m <= 6), B in two ymm and
/// A broadcast with vbroadcastss.
class Avx2Fp32Jit final : public BrgemmJit {
public:
  using BrgemmJit::BrgemmJit;

protected:
  void emit_rows(int m) override {
    for (int half = 0; half < 2; ++half)
      emit_half(m, half);
  }

private:
  static constexpr int kCols = 2; // ymm per half
  Ymm acc(int set, int i, int j) const {
    return Ymm((set * m_ + i) * kCols + j);
  }
  Ymm b_reg(int j) const { return Ymm(sets_ * m_ * kCols + j); }
  Ymm a_reg(int i) const { return Ymm(sets_ * m_ * kCols + kCols + (i & 1)); }

  void emit_step(int u, int set, int half) {
    for (int j = 0; j < kCols; ++j)
      vmovups(b_reg(j), ptr[reg_bk + half * 64 + j * 32 + u * 128]);
    for (int i = 0; i < m_; ++i) {
      vbroadcastss(a_reg(i), a_addr(i, u * 4));
      for (int j = 0; j < kCols; ++j)
        vfmadd231ps(acc(set, i, j), b_reg(j), a_reg(i));
    }
  }

  void emit_half(int m, int half) {
    m_ = m;
    sets_ = 1;
    while (sets_ < 4 && sets_ * m * kCols < 8 &&
           2 * sets_ * m * kCols + kCols + 2 <= 16)
      sets_ *= 2;
    mov(reg_tmp, reg_c);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < kCols; ++j) {
        if (desc_.accumulate)
          vmovups(acc(0, i, j), ptr[reg_tmp + half * 64 + j * 32]);
        else
          vxorps(acc(0, i, j), acc(0, i, j), acc(0, i, j));
      }
      if (i + 1 < m)
        add(reg_tmp, reg_ldc);
    }
    for (int s = 1; s < sets_; ++s)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < kCols; ++j)
          vxorps(acc(s, i, j), acc(s, i, j), acc(s, i, j));

    load_a_bases(m);
    mov(reg_bk, reg_b);
    const int unroll = tile_.k_unroll;
    const int64_t iters = desc_.k / unroll;
    const int rem = desc_.k % unroll;
    if (iters > 0) {
      Label loop;
      mov(reg_kloop, iters);
      align(16);
      L(loop);
      for (int u = 0; u < unroll; ++u)
        emit_step(u, u % sets_, half);
      advance_a_bases(m, unroll * 4);
      add(reg_bk, unroll * 128);
      dec(reg_kloop);
      jnz(loop, T_NEAR);
    }
    for (int u = 0; u < rem; ++u)
      emit_step(u, u % sets_, half);
    for (int s = 1; s < sets_; ++s)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < kCols; ++j)
          vaddps(acc(0, i, j), acc(0, i, j), acc(s, i, j));

    const Reg64 bias = rbx;
    if (desc_.epilogue == Epilogue::bias)
      mov(bias, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
    mov(reg_tmp, reg_c);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < kCols; ++j) {
        if (desc_.epilogue == Epilogue::bias)
          vaddps(acc(0, i, j), acc(0, i, j), ptr[bias + half * 64 + j * 32]);
        vmovups(ptr[reg_tmp + half * 64 + j * 32], acc(0, i, j));
      }
      if (i + 1 < m)
        add(reg_tmp, reg_ldc);
    }
  }

  int m_ = 0;
  int sets_ = 1;
};

} // namespace

BrgemmGenResult generate_avx2_fp32(const BrgemmDesc &desc,
                                   const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx2Fp32Jit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
