// AVX-512 BF16 brgemm generator: bf16 x bf16 -> fp32 with vdpbf16ps on VNNI2
// (k-pair) panels. A's pair for each row is broadcast as one dword; an odd K
// ends with a single-element broadcast (the padded B half is zero).
#include "codegen/x86/avx512_common.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

class Avx512Bf16Jit final : public Avx512BrgemmJit {
public:
  using Avx512BrgemmJit::Avx512BrgemmJit;

protected:
  int k_unit() const override { return 2; }

  void emit_dot(const Zmm &acc, const Zmm &a, const Zmm &b) override {
    vdpbf16ps(acc, b, a);
  }

  // vpbroadcastw duplicates A[K-1] into both halves of each dword; its
  // partner in B is zero padding, so only the even product counts. Reading a
  // single element keeps the kernel inside A's row.
  void emit_partial_a(const Zmm &dst, int row, int disp) override {
    vpbroadcastw(dst, a_addr(row, disp, word));
  }
};

} // namespace

BrgemmGenResult generate_avx512_bf16(const BrgemmDesc &desc,
                                     const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<Avx512Bf16Jit>(desc, tile, max_size);
  });
}

} // namespace hyc::codegen::x86
