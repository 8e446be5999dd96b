// AVX-512 VNNI brgemm generator: u8 (q + 128) x s8 -> int32 with vpdpbusd on
// VNNI4 (k-quad) panels. The epilogue subtracts the panel's compensation
// (128 * column sums) and either stores the exact int32 dot product or
// dequantizes: C = a_scale[m] * b_scale[n] * (acc - comp[n]) (+ bias).
#include "codegen/x86/avx512_common.h"

#include "codegen/pack.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

class Avx512VnniJit final : public Avx512BrgemmJit {
public:
  using Avx512BrgemmJit::Avx512BrgemmJit;

protected:
  int k_unit() const override { return 4; }
  bool int_accumulators() const override { return true; }

  void emit_dot(const Zmm &acc, const Zmm &a, const Zmm &b) override {
    vpdpbusd(acc, a, b, EvexEncoding); // u8 operand first, s8 second
  }

  // The last 1-3 bytes of the row, assembled in a GPR so nothing past the
  // row is read; the missing bytes meet zero padding in B.
  void emit_partial_a(const Zmm &dst, int row, int disp) override {
    const int bytes = desc_.k % 4;
    if (bytes == 1) {
      movzx(eax, a_addr(row, disp, byte));
    } else {
      movzx(eax, a_addr(row, disp, word));
      if (bytes == 3) {
        movzx(r9d, a_addr(row, disp + 2, byte));
        shl(r9d, 16);
        or_(eax, r9d);
      }
    }
    vpbroadcastd(dst, eax);
  }

  void emit_init(int m) override { // C is combined in the epilogue
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < nv_; ++j)
        vpxord(acc(0, i, j), acc(0, i, j), acc(0, i, j));
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
    const int64_t comp = packed_comp_offset(desc_.k);
    mov(c_row, reg_c);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < nv_; ++j) {
        const Zmm z = acc(0, i, j);
        vpsubd(z, z, ptr[reg_b + b_col_offset(j) + comp]);
        if (!to_f32) {
          if (desc_.accumulate)
            vpaddd(z, z, ptr[c_row + j * 64]);
          vmovdqu32(ptr[c_row + j * 64], z);
          continue;
        }
        vcvtdq2ps(z, z);
        vmulps(z, z, ptr[b_scale + j * 64]);
        vmulps(z, z, ptr_b[a_scale + i * 4]);
        if (desc_.accumulate)
          vaddps(z, z, ptr[c_row + j * 64]);
        if (desc_.epilogue == Epilogue::bias)
          vaddps(z, z, ptr[bias + j * 64]);
        store_c(ptr[c_row + j * 64], z);
      }
      if (i + 1 < m)
        add(c_row, reg_ldc);
    }
  }
};

} // namespace

BrgemmGenResult generate_avx512_vnni(const BrgemmDesc &desc,
                                     const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx512VnniJit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
