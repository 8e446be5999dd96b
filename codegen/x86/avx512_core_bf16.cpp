// Weight-only BF16 on AVX-512 without the BF16 extension (or where
// vdpbf16ps is slower than FMA): f32 A x bf16 VNNI2 panels -> f32 with
// vfmadd231ps. Each B vector of k-pairs is widened once per step into its
// even half (dword << 16) and odd half (dword & 0xFFFF0000); every row
// broadcasts its two fp32 A values and runs two FMAs per column vector, odd
// then even as vdpbf16ps orders them. Products of a bf16 weight and an fp32
// activation are not exact in fp32, so results round like an fp32 GEMM over
// bf16-rounded weights.
#include "codegen/x86/avx512_common.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

class Avx512CoreBf16Jit final : public Avx512BrgemmJit {
public:
  using Avx512BrgemmJit::Avx512BrgemmJit;

protected:
  int k_unit() const override { return 2; }
  int b_regs_per_col() const override { return 2; } // even, odd
  int const_regs() const override { return 1; }     // high-half mask

  void emit_setup() override {
    mov(eax, 0xFFFF0000u);
    vpbroadcastd(mask(), eax);
  }

  void emit_load_b(int j, const Address &src) override {
    vpslld(b_reg(j, 0), src, 16);
    vpandd(b_reg(j, 1), mask(), src);
  }

  void emit_row(int set, int i, int disp, bool partial) override {
    const Zmm a_even = a_reg(0), a_odd = a_reg(1);
    vbroadcastss(a_even, a_addr(i, disp));
    if (!partial) // an odd K's last pair has no second element (B is 0)
      vbroadcastss(a_odd, a_addr(i, disp + 4));
    for (int j = 0; j < nv_; ++j) {
      if (!partial)
        vfmadd231ps(acc(set, i, j), b_reg(j, 1), a_odd);
      vfmadd231ps(acc(set, i, j), b_reg(j, 0), a_even);
    }
  }

  // Unused: emit_row above covers both the full and the partial step.
  void emit_dot(const Zmm &, const Zmm &, const Zmm &) override {}
  void emit_partial_a(const Zmm &, int, int) override {}

private:
  Zmm mask() const { return const_reg(0); }
};

} // namespace

BrgemmGenResult generate_avx512_core_bf16(const BrgemmDesc &desc,
                                          const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx512CoreBf16Jit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
