// AVX-512 FP32 brgemm generator: f32 x f32 -> f32, vfmadd231ps on [K][32]
// panels. (The AVX2 + FMA floor lives in avx2.cpp.)
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
