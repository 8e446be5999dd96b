// Internal: the skeleton every x86 brgemm generator shares — System V ABI
// registers, prologue/epilogue, and the position-independent jump table that
// sends each m in 1..m_max to code generated for exactly that many rows.
#pragma once

#include "codegen/brgemm.h"
#include "codegen/tiles.h"

#include <xbyak/xbyak.h>

#include <string>
#include <vector>

namespace hyc::codegen::x86 {

/// Base of the generators. A family overrides emit_rows(m); generate() lays
/// out: prologue, range check on m, jump table, one body per m, epilogue.
class BrgemmJit : public Xbyak::CodeGenerator {
public:
  BrgemmJit(const BrgemmDesc &desc, const BrgemmTile &tile, size_t max_size);
  virtual ~BrgemmJit() = default;

  /// Emits the whole kernel (throws Xbyak::Error on overflow of max_size).
  void generate();
  /// Bytes of instructions; the jump table and other data follow.
  size_t text_size() const { return text_size_; }

protected:
  /// Emits the code for exactly m rows; falls through to the shared epilogue.
  virtual void emit_rows(int m) = 0;
  /// Hook run once after the prologue, before dispatch (e.g. constants).
  virtual void emit_setup() {}
  /// Hook for constant data placed after the code (e.g. AMX tile configs).
  virtual void emit_data() {}

  /// A[row][disp bytes] for rows addressed off a_base registers (see
  /// load_a_bases); valid inside emit_rows.
  Xbyak::Address
  a_addr(int row, int disp,
         const Xbyak::AddressFrame &frame = Xbyak::util::ptr) const;
  /// a_base[g] = a + 5*g*lda for the groups the first m rows need.
  void load_a_bases(int m);
  /// a_base[g] += bytes for the groups the first m rows need.
  void advance_a_bases(int m, int bytes);
  /// Stores one finished vector of C: vmovntps for BrgemmDesc::stream_c
  /// (the epilogue then ends with an sfence), else vmovups.
  void store_c(const Xbyak::Address &dst, const Xbyak::Zmm &src);

  const BrgemmDesc desc_;
  const BrgemmTile tile_;

  // Arguments (System V): a, lda, b, c, ldc, m; post is the 7th (stack).
  const Xbyak::Reg64 reg_a = rdi;
  const Xbyak::Reg64 reg_lda = rsi; // converted to bytes in the prologue
  const Xbyak::Reg64 reg_b = rdx;
  const Xbyak::Reg64 reg_c = rcx;
  const Xbyak::Reg64 reg_ldc = r8; // converted to bytes in the prologue
  const Xbyak::Reg64 reg_m = r9;
  const Xbyak::Reg64 reg_post = r10;
  const Xbyak::Reg64 reg_lda3 = r11; // 3 * lda bytes
  // Free for the bodies (callee-saved ones are saved by the prologue).
  const Xbyak::Reg64 reg_kloop = r12;
  const Xbyak::Reg64 reg_bk = r15; // running B pointer
  const Xbyak::Reg64 reg_tmp = rax;
  const Xbyak::Reg64 reg_a_base[4] = {rbx, rbp, r13, r14};
  static constexpr int kRowsPerBase = 5;

private:
  Xbyak::Label done_;
  size_t text_size_ = 0;
};

/// Wraps a finished generator into a kernel object (sets pages R+X).
BrgemmGenResult finish_kernel(const BrgemmDesc &desc,
                              std::unique_ptr<BrgemmJit> jit);

/// Runs make(max_size) and generate(), growing max_size on overflow; turns
/// Xbyak errors into a message.
template <class Make>
BrgemmGenResult build_kernel(const BrgemmDesc &desc, Make make) {
  size_t max_size = 64 * 1024;
  for (int attempt = 0; attempt < 6; ++attempt, max_size *= 4) {
    try {
      std::unique_ptr<BrgemmJit> jit = make(max_size);
      jit->generate();
      return finish_kernel(desc, std::move(jit));
    } catch (const Xbyak::Error &e) {
      if (int(e) != Xbyak::ERR_CODE_IS_TOO_BIG) {
        BrgemmGenResult r;
        r.error = "xbyak error while generating " + brgemm_name(desc) + ": " +
                  e.what();
        return r;
      }
    }
  }
  BrgemmGenResult r;
  r.error = "generated code for " + brgemm_name(desc) + " exceeds " +
            std::to_string(max_size) + " bytes";
  return r;
}

// Family entry points (one file each).
BrgemmGenResult generate_avx512_bf16(const BrgemmDesc &desc,
                                     const BrgemmTile &tile);
BrgemmGenResult generate_avx512_fp8(const BrgemmDesc &desc,
                                    const BrgemmTile &tile);
BrgemmGenResult generate_avx512_vnni(const BrgemmDesc &desc,
                                     const BrgemmTile &tile);
BrgemmGenResult generate_avx512_vnni_grouped(const BrgemmDesc &desc,
                                             const BrgemmTile &tile);
BrgemmGenResult generate_avx2_grouped(const BrgemmDesc &desc,
                                      const BrgemmTile &tile);
BrgemmGenResult generate_avx512_fp32(const BrgemmDesc &desc,
                                     const BrgemmTile &tile);
BrgemmGenResult generate_avx512_core_bf16(const BrgemmDesc &desc,
                                          const BrgemmTile &tile);
BrgemmGenResult generate_avx2_fp32(const BrgemmDesc &desc,
                                   const BrgemmTile &tile);
BrgemmGenResult generate_avx2_bf16(const BrgemmDesc &desc,
                                   const BrgemmTile &tile);
BrgemmGenResult generate_avx2_u8s8(const BrgemmDesc &desc,
                                   const BrgemmTile &tile);
BrgemmGenResult generate_amx(const BrgemmDesc &desc, const BrgemmTile &tile);
BrgemmGenResult generate_amx_grouped(const BrgemmDesc &desc,
                                     const BrgemmTile &tile);
JitCode generate_amx_release_code();

} // namespace hyc::codegen::x86
