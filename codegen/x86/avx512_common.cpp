// The AVX-512 brgemm body shared by the BF16, VNNI and FP32 generators (see
// avx512_common.h); each family supplies its dot instruction and epilogue.
#include "codegen/x86/avx512_common.h"
#include "codegen/x86/prefetch_b.h"

#include "codegen/pack.h"

namespace hyc::codegen::x86 {

using namespace Xbyak;

Avx512BrgemmJit::Avx512BrgemmJit(const BrgemmDesc &desc, const BrgemmTile &tile,
                                 size_t max_size)
    : BrgemmJit(desc, tile, max_size), nv_(desc.n_block / 16),
      panel_bytes_(packed_panel_bytes(desc.b_layout, desc.k)) {}

Zmm Avx512BrgemmJit::acc(int set, int row, int col) const {
  return Zmm((set * m_ + row) * nv_ + col);
}

Zmm Avx512BrgemmJit::b_reg(int col, int half) const {
  return Zmm(sets_ * m_ * nv_ + col * b_regs_per_col() + half);
}

Zmm Avx512BrgemmJit::a_reg(int i) const {
  return Zmm(sets_ * m_ * nv_ + nv_ * b_regs_per_col() + (i % kARegs));
}

void Avx512BrgemmJit::emit_load_b(int j, const Address &src) {
  vmovups(b_reg(j), src);
}

void Avx512BrgemmJit::emit_row(int set, int i, int disp, bool partial) {
  if (partial)
    emit_partial_a(a_reg(i), i, disp);
  else
    vpbroadcastd(a_reg(i), a_addr(i, disp));
  for (int j = 0; j < nv_; ++j)
    emit_dot(acc(set, i, j), a_reg(i), b_reg(j));
}

int64_t Avx512BrgemmJit::b_col_offset(int j) const {
  return (j / 2) * panel_bytes_ + (j % 2) * 64;
}

void Avx512BrgemmJit::emit_init(int m) {
  if (desc_.accumulate) {
    mov(reg_tmp, reg_c);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < nv_; ++j)
        vmovups(acc(0, i, j), ptr[reg_tmp + j * 64]);
      if (i + 1 < m)
        add(reg_tmp, reg_ldc);
    }
  } else {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < nv_; ++j)
        vpxord(acc(0, i, j), acc(0, i, j), acc(0, i, j));
  }
}

void Avx512BrgemmJit::emit_store(int m) {
  const Reg64 bias = rbx;
  if (desc_.epilogue == Epilogue::bias)
    mov(bias, ptr[reg_post + offsetof(BrgemmPostArgs, bias)]);
  mov(reg_tmp, reg_c);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < nv_; ++j) {
      if (desc_.epilogue == Epilogue::bias)
        vaddps(acc(0, i, j), acc(0, i, j), ptr[bias + j * 64]);
      store_c(ptr[reg_tmp + j * 64], acc(0, i, j));
    }
    if (i + 1 < m)
      add(reg_tmp, reg_ldc);
  }
}

void Avx512BrgemmJit::emit_step(int step, int set, bool prefetch, int64_t base) {
  const int64_t u = base + step;
  for (int j = 0; j < nv_; ++j)
    emit_load_b(j, ptr[reg_bk + b_col_offset(j) + u * 128]);
  if (prefetch && tile_.prefetch_b > 0)
    for (int p = 0; p < nv_ / 2; ++p)
      for (int line = 0; line < 2; ++line)
        emit_prefetch_b(*this,
                        ptr[reg_bk + p * panel_bytes_ + u * 128 + tile_.prefetch_b + line * 64],
                        tile_, m_);
  for (int i = 0; i < m_; ++i)
    emit_row(set, i, int(u * a_step_bytes()), /*partial=*/false);
}

void Avx512BrgemmJit::emit_k_loop(bool two) {
  const int unroll = tile_.k_unroll; // a multiple of every sets_ value
  const int64_t full_steps = desc_.k / k_unit();
  // One stream: the loop walks K in order. Two: each iteration takes step
  // u of K's first half and then step u of its second half, `span` steps
  // further on, so a panel is read as two interleaved streams; the steps
  // past both halves follow in order. Steps rotate over the accumulator
  // sets (kRotateSets).
  const int64_t span = two ? full_steps / 2 / unroll * unroll : full_steps / unroll * unroll;
  emit_span(span, kRotateSets, two ? span : 0, kRotateSets);
  // reg_bk is now at step `span`; what is left starts at `base` from it.
  emit_tail(two ? span : 0, full_steps - (two ? 2 * span : span), kRotateSets);
}

void Avx512BrgemmJit::jump_unless_two_streams(const Label &one) {
  test(reg_post, reg_post); // a null post: one stream
  jz(one, T_NEAR);
  cmp(qword[reg_post + offsetof(BrgemmPostArgs, k_streams)], 2);
  jne(one, T_NEAR);
}

bool Avx512BrgemmJit::splits_k() const {
  return tile_.k_streams == 2 && desc_.k >= kTwoStreamMinK;
}

bool Avx512BrgemmJit::fp32_halves() const {
  return splits_k() && !int_accumulators() && sets_ == 1;
}

void Avx512BrgemmJit::emit_span(int64_t steps, int set, int64_t second, int set_b) {
  const int unroll = tile_.k_unroll;
  if (steps <= 0)
    return;
  Label loop;
  mov(reg_kloop, steps / unroll);
  align(16);
  L(loop);
  for (int u = 0; u < unroll; ++u) {
    emit_step(u, set == kRotateSets ? u % sets_ : set, /*prefetch=*/true);
    if (second > 0)
      emit_step(u, set_b == kRotateSets ? u % sets_ : set_b, /*prefetch=*/true, second);
  }
  advance_a_bases(m_, unroll * a_step_bytes());
  add(reg_bk, unroll * 128);
  dec(reg_kloop);
  jnz(loop, T_NEAR);
}

void Avx512BrgemmJit::emit_tail(int64_t base, int64_t left, int set) {
  const int partial = desc_.k % k_unit();
  for (int64_t r = 0; r < left; ++r)
    emit_step(int(r), set == kRotateSets ? int(r % sets_) : set, /*prefetch=*/false, base);
  if (partial) {
    for (int j = 0; j < nv_; ++j)
      emit_load_b(j, ptr[reg_bk + b_col_offset(j) + (base + left) * 128]);
    for (int i = 0; i < m_; ++i)
      emit_row(set == kRotateSets ? int(left % sets_) : set, i,
               int((base + left) * a_step_bytes()), /*partial=*/true);
  }
}

void Avx512BrgemmJit::emit_fp32_halves(int m) {
  // Every body sums K as (first half) + (second half, then the steps past
  // both halves and the partial step): half A in the accumulators emit_init
  // set up (C when accumulating), half B from zero, each walked in K order,
  // then one add. fp32 addition is commutative bit for bit, so a row gets
  // the same bits from the two-stream walk of the few-row bodies (halves
  // interleaved step by step, a second accumulator set for half B), their
  // one-stream walk (the halves one after the other, the same two sets) and
  // the bodies of more rows (the halves one after the other, half A spilled
  // to the stack meanwhile: their registers hold one set). The cost in
  // those: one spill, one reload and one add per accumulator per call.
  const int unroll = tile_.k_unroll;
  const int64_t full = desc_.k / k_unit();
  const int64_t span = full / 2 / unroll * unroll;
  const int64_t left = full - 2 * span;
  if (m <= kTwoStreamMaxRows) {
    sets_ = 2; // registers for half B's set (emit_step's B and A move up)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < nv_; ++j)
        vpxord(acc(1, i, j), acc(1, i, j), acc(1, i, j));
    Label one, joined;
    jump_unless_two_streams(one);
    emit_span(span, 0, span, 1); // reg_bk ends at step span
    emit_tail(span, left, 1);
    jmp(joined, T_NEAR);
    L(one);
    emit_span(span, 0);
    emit_span(span, 1); // reg_bk ends at step 2 * span
    emit_tail(0, left, 1);
    L(joined);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < nv_; ++j)
        vaddps(acc(0, i, j), acc(0, i, j), acc(1, i, j));
    sets_ = 1;
    return;
  }
  const int bytes = m * nv_ * 64;
  emit_span(span, 0);
  sub(rsp, bytes);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < nv_; ++j) {
      vmovups(ptr[rsp + (i * nv_ + j) * 64], acc(0, i, j));
      vpxord(acc(0, i, j), acc(0, i, j), acc(0, i, j));
    }
  emit_span(span, 0);
  emit_tail(0, left, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < nv_; ++j)
      vaddps(acc(0, i, j), acc(0, i, j), ptr[rsp + (i * nv_ + j) * 64]);
  add(rsp, bytes);
}

void Avx512BrgemmJit::emit_rows(int m) {
  m_ = m;
  // Independent accumulator sets hide FMA latency when few rows share a
  // block, but they change the order of a row's sum. The count is chosen
  // for the full block (m_max) and used for every m, so a row sums the same
  // way whichever block it lands in: logits do not depend on the batch
  // (test/e2e/batch_invariance_test.cpp). With the table's blocks this is 1
  // set; decode (m = 1) is bound by reading B, not by FMA latency.
  sets_ = 1;
  const int rows = desc_.m_max > 0 ? desc_.m_max : m;
  const int fixed = nv_ * b_regs_per_col() + kARegs + const_regs();
  while (sets_ < 4 && sets_ * rows * nv_ < 8 &&
         2 * sets_ * rows * nv_ + fixed <= 32)
    sets_ *= 2;

  emit_init(m);
  for (int s = 1; s < sets_; ++s)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < nv_; ++j)
        vpxord(acc(s, i, j), acc(s, i, j), acc(s, i, j));

  load_a_bases(m);
  mov(reg_bk, reg_b);
  if (fp32_halves()) {
    emit_fp32_halves(m);
    emit_store(m);
    return;
  }
  // Two streams (tiles.h k_streams, bodies of few rows of an
  // int32-accumulating kernel) when the caller asks for them
  // (BrgemmPostArgs::k_streams = 2, the host's choice): both loops are
  // emitted and the body branches once on the field. Integer sums are
  // exact, so both give the same result.
  const bool two = splits_k() && int_accumulators() && m <= kTwoStreamMaxRows;
  if (!two) {
    emit_k_loop(/*two=*/false);
  } else {
    Label one, joined;
    jump_unless_two_streams(one);
    emit_k_loop(/*two=*/true);
    jmp(joined, T_NEAR);
    L(one);
    emit_k_loop(/*two=*/false);
    L(joined);
  }

  for (int s = 1; s < sets_; ++s)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < nv_; ++j) {
        if (int_accumulators())
          vpaddd(acc(0, i, j), acc(0, i, j), acc(s, i, j));
        else
          vaddps(acc(0, i, j), acc(0, i, j), acc(s, i, j));
      }
  emit_store(m);
}

} // namespace hyc::codegen::x86
