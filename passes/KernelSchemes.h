//===- KernelSchemes.h - which generated kernel runs a GEMM -----*- C++ -*-===//
//
// The table from a quant.matmul / moe.grouped_matmul scheme (and the target's
// ISA family) to the block kernel the compiler generates, the packed weight
// layout it reads and the runtime driver that calls it
// (runtime/include/hyrt/cpu_kernels.h).
//
//===----------------------------------------------------------------------===//
#ifndef HYC_PASSES_KERNELSCHEMES_H
#define HYC_PASSES_KERNELSCHEMES_H

#include "codegen/brgemm.h"
#include "dialects/hyc/HycOps.h"

#include <cstdint>

namespace hyc {

/// How a scheme runs on generated kernels: the ISA and types of the block
/// kernel, the packed weight layout and the driver.
struct KernelScheme {
  codegen::Isa isa;
  codegen::DataType aType, bType;
  const char *typesName; ///< kernel-name spelling of (A, B, C)
  const char *isaName;
  const char *layout;    ///< weight layout in the artifact
  const char *driver;    ///< hyrt_cpu_gemm_* entry
  int32_t scratchId;     ///< HYRT_GEMM_* of hyrt/cpu_kernels.h
  int32_t macsPerCycle;  ///< peak multiply-adds per cycle and thread
  int32_t weightBits;    ///< bits per stored weight element
  /// K-elements per weight-scale group (W8A8 per-group, FP8 blocks): the
  /// block kernel is generated for K = groupK and the driver runs it once
  /// per group (accumulating into C for W8A8; into a block product that the
  /// driver scales into C for FP8); 0: one kernel over the GEMM's whole K.
  int32_t groupK = 0;
};

/// Which kernels a target has: native bf16 dot products (avx512-bf16), or
/// the AVX2 floor (fp32 FMA, bf16 widened to fp32, int8 through
/// vpmaddubsw). AMX kernels come on top of the AVX-512 schemes (the strategy
/// marks the GEMMs they take, see amxMinRows).
struct KernelTarget {
  bool nativeBf16 = false;
  bool avx2 = false;
};

/// The AMX kernel (ISA "amx", same types and layout) standing in for `ks`
/// on steps of many rows: bf16 x bf16 and u8 x s8 schemes whose K is whole
/// pairs / quads. Null when there is none.
const KernelScheme *amxSchemeFor(const KernelScheme &ks, int64_t k);

/// The bf16 x f8 kernel (codes widened in registers, block factors applied
/// by the kernel, whole K in one call) standing in for the blockwise FP8
/// scheme `ks` on decode-sized steps; null for every other scheme.
const KernelScheme *fp8FusedSchemeFor(const KernelScheme &ks);

/// The packed layout of an integer-code weight scheme (QuantAttr::isCodes):
/// "q4_g32", "q8_g32", or the stored format's name ("q4k", ..., "q4z128").
llvm::StringRef codesLayoutOf(QuantScheme scheme);

/// The HYRT_GEMM_* id of an integer-code layout name (codesLayoutOf), or
/// -1 for any other layout.
int32_t codesSchemeIdOfLayout(llvm::StringRef layout);

/// The kernel scheme of a weight scheme on a target; null when there is none.
const KernelScheme *kernelSchemeFor(QuantScheme scheme, KernelTarget target);

/// The kernel scheme of per-group-128 W8A8 weights on a target; null when
/// there is none.
const KernelScheme *groupedW8a8SchemeFor(KernelTarget target);

/// The kernel scheme with these kernel-name spellings and weight layout (as
/// recorded in a #hyc_cpu.lowering_config); null when there is none.
const KernelScheme *kernelSchemeNamed(llvm::StringRef isaName,
                                      llvm::StringRef typesName, llvm::StringRef layout);

/// The scheme of a (grouped) matmul that can run on a generated kernel: a
/// named weight, no epilogue other than silu_mul (without bias), no K
/// groups; null otherwise.
const KernelScheme *kernelSchemeOf(mlir::Operation *op, KernelTarget target);

/// The weight operand of a quant.matmul / moe.grouped_matmul, or null.
mlir::Value gemmWeight(mlir::Operation *op);

/// Whether the scheme's driver reads weight scales (W8A8 per channel or
/// group, FP8 block factors).
bool takesWeightScales(const KernelScheme &ks);

/// Whether the scheme's driver converts or quantizes its activations into
/// scratch (bf16 rows, u8 rows): those can be gathered from the token rows
/// through an MoE permute's row map (fused_producer = moe_permute).
bool convertsActivations(const KernelScheme &ks);

/// Whether the scheme's kernel can store C non-temporally (AVX-512 kernels
/// writing C = A.B over the whole K: not FP8 blocks, not W8A8 groups).
bool streamsC(const KernelScheme &ks);
/// Rows per block of a scheme's kernels (codegen's tile table); 0 if none.
int64_t kernelRows(const KernelScheme &ks);

/// Scratch bytes the scheme's driver needs for m rows of k.
int64_t driverScratch(const KernelScheme &ks, int64_t m, int64_t k);

} // namespace hyc

#endif // HYC_PASSES_KERNELSCHEMES_H
