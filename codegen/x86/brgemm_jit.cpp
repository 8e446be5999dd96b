// The shared brgemm skeleton: prologue, m range check, a PIC jump table of
// int32 offsets (so the bytes can be embedded anywhere), per-m bodies.
#include "codegen/x86/brgemm_jit.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

namespace {

int log2_size(DataType t) {
  switch (data_type_size(t)) {
  case 1:
    return 0;
  case 2:
    return 1;
  default:
    return 2;
  }
}

} // namespace

BrgemmJit::BrgemmJit(const BrgemmDesc &desc, const BrgemmTile &tile,
                     size_t max_size)
    : CodeGenerator(max_size, DontSetProtectRWE), desc_(desc), tile_(tile) {}

void BrgemmJit::store_c(const Xbyak::Address &dst, const Xbyak::Zmm &src) {
  if (desc_.stream_c)
    vmovntps(dst, src);
  else
    vmovups(dst, src);
}

void BrgemmJit::generate() {
  const Reg64 saved[] = {rbx, rbp, r12, r13, r14, r15};
  mov(reg_post, ptr[rsp + 8]); // 7th argument, before the pushes move rsp
  for (const Reg64 &r : saved)
    push(r);

  cmp(reg_m, 1);
  jl(done_, T_NEAR);
  cmp(reg_m, desc_.m_max);
  jg(done_, T_NEAR);

  if (int s = log2_size(desc_.a_type))
    shl(reg_lda, s);
  lea(reg_lda3, ptr[reg_lda + reg_lda * 2]);
  if (int s = log2_size(desc_.c_type))
    shl(reg_ldc, s);
  emit_setup();

  Label table;
  lea(reg_tmp, ptr[rip + table]);
  movsxd(reg_kloop, dword[reg_tmp + reg_m * 4 - 4]);
  add(reg_tmp, reg_kloop);
  jmp(reg_tmp);

  std::vector<size_t> bodies;
  for (int m = 1; m <= desc_.m_max; ++m) {
    align(16);
    bodies.push_back(getSize());
    emit_rows(m);
    jmp(done_, T_NEAR);
  }

  L(done_);
  if (desc_.stream_c) // non-temporal stores are weakly ordered
    sfence();
  vzeroupper();
  for (int i = 5; i >= 0; --i)
    pop(saved[i]);
  ret();

  // Data after the last instruction, so [0, text_size_) disassembles cleanly.
  text_size_ = getSize();
  align(4);
  L(table);
  const size_t table_offset = getSize();
  for (size_t body : bodies)
    dd(uint32_t(body - table_offset));
  emit_data();
  ready();
}

Address BrgemmJit::a_addr(int row, int disp, const AddressFrame &frame) const {
  const Reg64 &base = reg_a_base[row / kRowsPerBase];
  switch (row % kRowsPerBase) {
  case 0:
    return frame[base + disp];
  case 1:
    return frame[base + reg_lda + disp];
  case 2:
    return frame[base + reg_lda * 2 + disp];
  case 3:
    return frame[base + reg_lda3 + disp];
  default:
    return frame[base + reg_lda * 4 + disp];
  }
}

void BrgemmJit::load_a_bases(int m) {
  const int groups = (m + kRowsPerBase - 1) / kRowsPerBase;
  mov(reg_a_base[0], reg_a);
  for (int g = 1; g < groups; ++g) { // + 5*lda = + 4*lda + lda
    lea(reg_a_base[g], ptr[reg_a_base[g - 1] + reg_lda * 4]);
    add(reg_a_base[g], reg_lda);
  }
}

void BrgemmJit::advance_a_bases(int m, int bytes) {
  const int groups = (m + kRowsPerBase - 1) / kRowsPerBase;
  for (int g = 0; g < groups; ++g)
    add(reg_a_base[g], bytes);
}

BrgemmGenResult finish_kernel(const BrgemmDesc &desc,
                              std::unique_ptr<BrgemmJit> jit) {
  BrgemmGenResult r;
  if (!jit->setProtectModeRE(false)) {
    r.error = "mprotect(PROT_READ|PROT_EXEC) failed for " + brgemm_name(desc);
    return r;
  }
  const size_t text_size = jit->text_size();
  std::unique_ptr<CodeGenerator> code(std::move(jit));
  r.kernel = std::make_unique<BrgemmKernel>(
      desc, brgemm_name(desc), JitCode(std::move(code), text_size));
  return r;
}

} // namespace hyc::codegen::x86
