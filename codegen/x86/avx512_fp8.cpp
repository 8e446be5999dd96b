// AVX-512 BF16 brgemm over FP8 weights: bf16 A x e4m3 B (f8_vnni2 panels,
// K in whole blocks of 128 with one fp32 factor each) -> fp32, for
// decode-sized M. The codes are widened to bf16 in registers as they arrive
// from memory, so the weights are read once, one byte each, and never
// stored widened (the K = 128 bf16 kernel path widens each block into L1 and
// reads it back).
//
// Widening, 64 codes (one K pair of a 32-column panel) per step, exact for
// every code: the bf16 high and low bytes of each code's magnitude come
// from two 128-entry byte tables (VBMI vpermi2b on the code's low 7 bits;
// subnormals and NaN are just table entries), the sign is or-ed into the
// high byte, and two two-source byte permutes interleave low and high bytes
// into the two 16-column bf16 pair vectors vdpbf16ps reads.
//
// Each 128-K block is summed into its own accumulators in step order, one
// vdpbf16ps per step and column vector (the order the K = 128 kernel uses),
// then C = f0 * S0, C = C + f_g * S_g with a separate multiply and add: the
// same roundings as the driver's blockwise path (runtime/cpu/gemm.cpp), so
// a row gets the same bits whichever path its step takes (batch invariance).
#include "codegen/x86/brgemm_jit.h"
#include "codegen/x86/prefetch_b.h"

#include <cmath>
#include <cstring>

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

constexpr int kBlockK = 128;
constexpr int kStepsPerBlock = kBlockK / 2; // K pairs
constexpr int kStepBytes = 64;              // one pair of 32 columns

/// bf16 bits of the e4m3fn magnitude m (0..127): 0x7F is NaN (quiet, as
/// the runtime's widening writes it); every other value is exact in bf16.
uint16_t bf16OfMagnitude(int m) {
  if (m == 0x7F)
    return 0x7FC0;
  const int e = m >> 3, mant = m & 7;
  const float v = e == 0 ? std::ldexp(float(mant), -9) : std::ldexp(float(8 + mant), e - 10);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return uint16_t(bits >> 16); // exact: at most 4 significant bits
}

class Avx512Fp8Jit final : public BrgemmJit {
public:
  using BrgemmJit::BrgemmJit;

protected:
  void emit_setup() override {
    vmovdqu8(tl0(), ptr[rip + tables_]);
    vmovdqu8(tl1(), ptr[rip + tables_ + 64]);
    vmovdqu8(th0(), ptr[rip + tables_ + 128]);
    vmovdqu8(th1(), ptr[rip + tables_ + 192]);
    vmovdqu8(idx0(), ptr[rip + tables_ + 256]);
    vmovdqu8(idx1(), ptr[rip + tables_ + 320]);
    mov(eax, 0x80808080u);
    vpbroadcastd(sign(), eax);
  }

  void emit_data() override {
    align(64);
    L(tables_);
    uint8_t lo[128], hi[128];
    for (int m = 0; m < 128; ++m) {
      lo[m] = uint8_t(bf16OfMagnitude(m) & 0xFF);
      hi[m] = uint8_t(bf16OfMagnitude(m) >> 8);
    }
    for (uint8_t v : lo)
      db(v);
    for (uint8_t v : hi)
      db(v);
    // Interleave: word i of the first / second vector = lo[i] | hi[i] << 8
    // for codes 0..31 / 32..63 (index 64 + i picks the second source).
    for (int half = 0; half < 2; ++half)
      for (int i = 0; i < 32; ++i) {
        db(uint8_t(32 * half + i));
        db(uint8_t(64 + 32 * half + i));
      }
  }

  void emit_rows(int m) override {
    const Reg64 factors = r13, steps = r14; // free: m <= 5 uses one A base
    mov(factors, ptr[reg_post + offsetof(BrgemmPostArgs, b_scale)]);
    load_a_bases(m);
    mov(reg_bk, reg_b);
    mov(reg_kloop, desc_.k / kBlockK);
    // The first block writes C's accumulators, the others add to them.
    for (int first = 1; first >= 0; --first) {
      Label blockLoop;
      if (!first)
        L(blockLoop);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < 2; ++j)
          vpxord(block(i, j), block(i, j), block(i, j));
      Label stepLoop;
      mov(steps, kStepsPerBlock / tile_.k_unroll);
      align(16);
      L(stepLoop);
      for (int u = 0; u < tile_.k_unroll; ++u)
        emit_step(m, u);
      advance_a_bases(m, tile_.k_unroll * 4);
      add(reg_bk, tile_.k_unroll * kStepBytes);
      dec(steps);
      jnz(stepLoop, T_NEAR);
      vbroadcastss(factor(), ptr[factors]);
      add(factors, 4);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < 2; ++j) {
          if (first) {
            vmulps(total(i, j), block(i, j), factor());
          } else {
            vmulps(product(), block(i, j), factor());
            vaddps(total(i, j), total(i, j), product());
          }
        }
      dec(reg_kloop);
      if (!first)
        jnz(blockLoop, T_NEAR);
      else
        jz(done_rows_[m], T_NEAR);
    }
    L(done_rows_[m]);
    mov(reg_tmp, reg_c);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < 2; ++j)
        vmovups(ptr[reg_tmp + j * 64], total(i, j));
      if (i + 1 < m)
        add(reg_tmp, reg_ldc);
    }
  }

private:
  void emit_step(int m, int u) {
    const int disp = u * kStepBytes;
    vmovdqu8(lo(), ptr[reg_bk + disp]);
    if (tile_.prefetch_b > 0)
      emit_prefetch_b(*this, ptr[reg_bk + disp + tile_.prefetch_b], tile_, m);
    vmovdqa64(hi(), lo());
    vpermi2b(lo(), tl0(), tl1());
    vpermi2b(hi(), th0(), th1());
    vpternlogd(hi(), sign(), ptr[reg_bk + disp], 0xF8); // hi | (sign & code)
    vmovdqa64(b0(), idx0());
    vpermi2b(b0(), lo(), hi());
    vmovdqa64(b1(), idx1());
    vpermi2b(b1(), lo(), hi());
    for (int i = 0; i < m; ++i) {
      const Zmm a = Zmm(18 + i % 2);
      vpbroadcastd(a, a_addr(i, u * 4));
      vdpbf16ps(block(i, 0), b0(), a);
      vdpbf16ps(block(i, 1), b1(), a);
    }
  }

  // Register plan (m <= 4): C accumulators zmm0-7, block sums zmm8-15, the
  // widened B pair zmm16-17, A broadcasts zmm18-19, codes zmm20-21, factor
  // and product zmm22-23, constants zmm25-31.
  static Zmm total(int i, int j) { return Zmm(2 * i + j); }
  static Zmm block(int i, int j) { return Zmm(8 + 2 * i + j); }
  static Zmm b0() { return Zmm(16); }
  static Zmm b1() { return Zmm(17); }
  static Zmm lo() { return Zmm(20); }
  static Zmm hi() { return Zmm(21); }
  static Zmm factor() { return Zmm(22); }
  static Zmm product() { return Zmm(23); }
  static Zmm sign() { return Zmm(25); }
  static Zmm tl0() { return Zmm(26); }
  static Zmm tl1() { return Zmm(27); }
  static Zmm th0() { return Zmm(28); }
  static Zmm th1() { return Zmm(29); }
  static Zmm idx0() { return Zmm(30); }
  static Zmm idx1() { return Zmm(31); }

  Label tables_;
  Label done_rows_[5];
};

} // namespace

BrgemmGenResult generate_avx512_fp8(const BrgemmDesc &desc, const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx512Fp8Jit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
