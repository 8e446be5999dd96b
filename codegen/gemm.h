// Driver GEMM over the brgemm microkernels: C[M][N] = A[M][K] . W[N][K]^T
// (+ bias), threads (OpenMP) over 32-column panels and row blocks. Used by
// tests and benchmarks now, and as the reference schedule for the compiler.
#pragma once

#include "codegen/brgemm.h"
#include "codegen/pack.h"

#include <memory>
#include <string>

namespace hyc::codegen {

/// What a driver GEMM computes; K and the types fix the kernel.
struct GemmDesc {
  Isa isa = Isa::avx512_bf16;
  DataType a_type = DataType::bf16;
  DataType b_type = DataType::bf16;
  DataType c_type = DataType::f32;
  int64_t k = 0;
  bool accumulate = false;            ///< C += A.W^T instead of C = A.W^T
  Epilogue epilogue = Epilogue::none; ///< bias[n] added after the product
  int threads = 0;                    ///< 0: OpenMP's default
};

/// A GEMM ready to run: its generated kernel (block rows = the tile table's
/// m_max, N block 32). Combinations: avx512_bf16 bf16 x bf16, avx512_vnni
/// u8 x s8 (-> f32 with scales, or exact s32), avx512_core f32 x f32 and
/// f32 x bf16, avx2 f32 x f32, f32 x bf16 and u8 x s8, amx bf16 x bf16 and
/// u8 x s8.
class Gemm {
public:
  /// Generates the kernel; null with *error set when desc is unsupported.
  static std::unique_ptr<Gemm> create(const GemmDesc &desc, std::string *error);

  /// Runs on m rows. a: [m][K] (lda elements; u8 = q + 128 for int8),
  /// w: packed with the matching pack_b_* for this K, c: [m][w.n] (ldc
  /// elements). bias / b_scale have w.n entries, a_scale m entries. Columns
  /// of a partial last panel go through a local buffer, so C needs no
  /// padding. Returns false with *error set (and computes nothing) when the
  /// operands do not match the descriptor. The caller makes sure the host
  /// can execute desc().isa (host_supports, or a probe where CPUID hides it).
  bool run(const void *a, int64_t lda, const PackedB &w, void *c, int64_t ldc,
           int64_t m, const float *bias = nullptr,
           const float *a_scale = nullptr, const float *b_scale = nullptr,
           std::string *error = nullptr) const;

  const BrgemmKernel &kernel() const { return *kernel_; }
  const GemmDesc &desc() const { return desc_; }

private:
  Gemm(const GemmDesc &desc, std::unique_ptr<BrgemmKernel> kernel);
  std::string check(const void *a, int64_t lda, const PackedB &w, const void *c,
                    int64_t ldc, int64_t m, const float *bias,
                    const float *a_scale, const float *b_scale) const;
  GemmDesc desc_;
  std::unique_ptr<BrgemmKernel> kernel_;
  std::unique_ptr<JitCode> tile_release_; // AMX: run by each thread at the end
};

} // namespace hyc::codegen
