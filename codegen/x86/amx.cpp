// AMX brgemm generator: bf16 x bf16 -> f32 (tdpbf16ps) and u8 x s8 -> s32/f32
// (tdpbusd) on the same 32-column panels the AVX-512 kernels read. Up to 32
// rows as 2x2 tiles of 16x16 (C: tmm0-3, A: tmm4-5, B: tmm6-7); each m gets its
// own tile configuration (rows = m, m-16), embedded after the code. A K tail
// (K % 32 bf16, K % 64 int8) is one extra step under a second configuration;
// C tiles survive the reconfiguration through a stack scratch. The
// epilogue (bias, compensation, dequantization) runs on AVX-512 registers.
// Kernels load their own configuration when it is not the one in place
// (compared with sttilecfg), so a thread configures once per tile shape;
// release with generate_amx_tile_release() (the runtime's pool workers do
// tilerelease) when a thread is done.
#include "codegen/x86/amx_tile_config.h"
#include "codegen/x86/brgemm_jit.h"

#include "codegen/pack.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

// 32 rows x 32 int32/f32 columns, then 64 bytes for the current tile
// configuration (sttilecfg).
constexpr int kCfgProbe = 32 * 128;
constexpr int kScratchBytes = kCfgProbe + 64;

class AmxJit final : public BrgemmJit {
public:
  AmxJit(const BrgemmDesc &desc, const BrgemmTile &tile, size_t max_size)
      : BrgemmJit(desc, tile, max_size), int8_(desc.a_type == DataType::u8),
        k_step_(int8_ ? 64 : 32), unit_(int8_ ? 4 : 2),
        main_steps_(desc.k / k_step_), tail_k_(desc.k % k_step_) {
    configs_main_.resize(desc.m_max + 1);
    configs_tail_.resize(desc.m_max + 1);
  }

protected:
  void emit_rows(int m) override;
  void emit_data() override;

private:
  // C accumulates in tiles when C holds the raw sums (bf16 -> f32, u8s8 ->
  // s32); u8s8 -> f32 goes through the scratch for dequantization.
  bool c_in_tiles() const { return !(int8_ && desc_.c_type == DataType::f32); }
  TileConfig make_config(int m, int k_elems) const;
  void dot(const Tmm &c, const Tmm &a, const Tmm &b) {
    if (int8_)
      tdpbusd(c, a, b);
    else
      tdpbf16ps(c, a, b);
  }
  // Another m or the K tail changes the shape (amx_tile_config.h).
  void load_config(Label &cfg) { emit_load_tile_config(*this, cfg, kCfgProbe, reg_tmp); }
  void k_step(bool two);
  void emit_avx512_epilogue(int m);

  const bool int8_;
  const int k_step_; // K elements per full tile step
  const int unit_;   // K elements per A dword (pair / quad)
  const int64_t main_steps_;
  const int tail_k_;
  std::vector<Label> configs_main_, configs_tail_;

  const Reg64 reg_a_lo = rbx, reg_a_hi = r13, reg_saved_rsp = rbp,
              reg_b_stride = r14;
};

TileConfig AmxJit::make_config(int m, int k_elems) const {
  return tile_config_2x2(m, k_elems * (int8_ ? 1 : 2), k_elems / unit_);
}

void AmxJit::k_step(bool two) {
  tileloadd(tmm4, ptr[reg_a_lo + reg_lda]);
  tileloadd(tmm6, ptr[reg_bk + reg_b_stride]);
  tileloadd(tmm7, ptr[reg_bk + reg_b_stride + 64]);
  dot(tmm0, tmm4, tmm6);
  dot(tmm1, tmm4, tmm7);
  if (two) {
    tileloadd(tmm5, ptr[reg_a_hi + reg_lda]);
    dot(tmm2, tmm5, tmm6);
    dot(tmm3, tmm5, tmm7);
  }
}

void AmxJit::emit_rows(int m) {
  const bool two = m > 16;
  // 64-byte aligned scratch below the saved stack pointer.
  mov(reg_saved_rsp, rsp);
  sub(rsp, kScratchBytes);
  and_(rsp, -64);
  mov(reg_b_stride, 128);

  load_config(main_steps_ > 0 ? configs_main_[m] : configs_tail_[m]);
  const bool load_c = desc_.accumulate && c_in_tiles();
  if (load_c) {
    tileloadd(tmm0, ptr[reg_c + reg_ldc]);
    tileloadd(tmm1, ptr[reg_c + reg_ldc + 64]);
    if (two) {
      mov(reg_tmp, reg_ldc);
      shl(reg_tmp, 4);
      add(reg_tmp, reg_c);
      tileloadd(tmm2, ptr[reg_tmp + reg_ldc]);
      tileloadd(tmm3, ptr[reg_tmp + reg_ldc + 64]);
    }
  } else {
    tilezero(tmm0);
    tilezero(tmm1);
    if (two) {
      tilezero(tmm2);
      tilezero(tmm3);
    }
  }

  mov(reg_a_lo, reg_a);
  if (two) {
    mov(reg_a_hi, reg_lda);
    shl(reg_a_hi, 4);
    add(reg_a_hi, reg_a);
  }
  mov(reg_bk, reg_b);
  const int a_step_bytes = k_step_ * (int8_ ? 1 : 2);
  const int b_step_bytes = (k_step_ / unit_) * 128;
  if (main_steps_ > 0) {
    Label loop;
    mov(reg_kloop, main_steps_);
    L(loop);
    k_step(two);
    add(reg_a_lo, a_step_bytes);
    if (two)
      add(reg_a_hi, a_step_bytes);
    add(reg_bk, b_step_bytes);
    dec(reg_kloop);
    jnz(loop, T_NEAR);
  }
  if (tail_k_ > 0) {
    if (main_steps_ > 0) { // reconfiguring clears the tiles: park C
      tilestored(ptr[rsp + reg_b_stride], tmm0);
      tilestored(ptr[rsp + reg_b_stride + 64], tmm1);
      if (two) {
        tilestored(ptr[rsp + reg_b_stride + 16 * 128], tmm2);
        tilestored(ptr[rsp + reg_b_stride + 16 * 128 + 64], tmm3);
      }
      load_config(configs_tail_[m]);
      tileloadd(tmm0, ptr[rsp + reg_b_stride]);
      tileloadd(tmm1, ptr[rsp + reg_b_stride + 64]);
      if (two) {
        tileloadd(tmm2, ptr[rsp + reg_b_stride + 16 * 128]);
        tileloadd(tmm3, ptr[rsp + reg_b_stride + 16 * 128 + 64]);
      }
    }
    k_step(two);
  }

  if (c_in_tiles()) {
    tilestored(ptr[reg_c + reg_ldc], tmm0);
    tilestored(ptr[reg_c + reg_ldc + 64], tmm1);
    if (two) {
      mov(reg_tmp, reg_ldc);
      shl(reg_tmp, 4);
      add(reg_tmp, reg_c);
      tilestored(ptr[reg_tmp + reg_ldc], tmm2);
      tilestored(ptr[reg_tmp + reg_ldc + 64], tmm3);
    }
  } else {
    tilestored(ptr[rsp + reg_b_stride], tmm0);
    tilestored(ptr[rsp + reg_b_stride + 64], tmm1);
    if (two) {
      tilestored(ptr[rsp + reg_b_stride + 16 * 128], tmm2);
      tilestored(ptr[rsp + reg_b_stride + 16 * 128 + 64], tmm3);
    }
  }
  emit_avx512_epilogue(m);
  mov(rsp, reg_saved_rsp);
}

void AmxJit::emit_avx512_epilogue(int m) {
  const bool bias = desc_.epilogue == Epilogue::bias;
  const bool to_f32 = desc_.c_type == DataType::f32;
  if (!int8_ && !bias)
    return;
  const Reg64 c_row = reg_tmp, bias_ptr = rbx, a_scale = r12, b_scale = r13;
  if (bias)
    mov(bias_ptr, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
  if (int8_ && to_f32) {
    mov(a_scale, ptr[reg_post + offsetof(BrgemmPostArgs, a_scale)]);
    mov(b_scale, ptr[reg_post + offsetof(BrgemmPostArgs, b_scale)]);
  }
  const int64_t comp = packed_comp_offset(desc_.k);
  mov(c_row, reg_c);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < 2; ++j) {
      const Zmm z(j);
      if (!int8_) {
        vmovups(z, ptr[c_row + j * 64]);
        vaddps(z, z, ptr[bias_ptr + j * 64]);
        vmovups(ptr[c_row + j * 64], z);
        continue;
      }
      if (!to_f32) {
        vmovdqu32(z, ptr[c_row + j * 64]);
        vpsubd(z, z, ptr[reg_b + comp + j * 64]);
        vmovdqu32(ptr[c_row + j * 64], z);
        continue;
      }
      vmovdqu32(z, ptr[rsp + i * 128 + j * 64]);
      vpsubd(z, z, ptr[reg_b + comp + j * 64]);
      vcvtdq2ps(z, z);
      vmulps(z, z, ptr[b_scale + j * 64]);
      vmulps(z, z, ptr_b[a_scale + i * 4]);
      if (desc_.accumulate)
        vaddps(z, z, ptr[c_row + j * 64]);
      if (bias)
        vaddps(z, z, ptr[bias_ptr + j * 64]);
      vmovups(ptr[c_row + j * 64], z);
    }
    if (i + 1 < m)
      add(c_row, reg_ldc);
  }
}

void AmxJit::emit_data() {
  for (int m = 1; m <= desc_.m_max; ++m) {
    for (bool tail : {false, true}) {
      if (tail ? tail_k_ == 0 : main_steps_ == 0)
        continue;
      align(64);
      L(tail ? configs_tail_[m] : configs_main_[m]);
      const TileConfig cfg = make_config(m, tail ? tail_k_ : k_step_);
      for (uint8_t b : cfg.bytes)
        db(b);
    }
  }
}

class ReleaseJit final : public CodeGenerator {
public:
  ReleaseJit() : CodeGenerator(64, DontSetProtectRWE) {
    tilerelease();
    ret();
    ready();
    setProtectModeRE();
  }
};

} // namespace

BrgemmGenResult generate_amx(const BrgemmDesc &desc, const BrgemmTile &tile) {
  return build_kernel(desc, [&](size_t max_size) {
    return std::make_unique<AmxJit>(desc, tile, max_size);
  });
}

JitCode generate_amx_release_code() {
  auto gen = std::make_unique<ReleaseJit>();
  const size_t size = gen->getSize();
  return JitCode(std::move(gen), size);
}

} // namespace hyc::codegen::x86
