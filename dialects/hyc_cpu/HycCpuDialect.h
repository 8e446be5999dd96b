//===- HycCpuDialect.h - hyc_cpu dialect and attributes ---------*- C++ -*-===//
#ifndef HYC_DIALECTS_HYC_CPU_HYCCPUDIALECT_H
#define HYC_DIALECTS_HYC_CPU_HYCCPUDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/hyc_cpu/HycCpuDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/hyc_cpu/HycCpuAttrs.h.inc"

namespace hyc::cpu {
/// Name of the discardable attribute that carries an op's LoweringConfigAttr.
inline constexpr const char *kLoweringConfigName = "hyc_cpu.lowering_config";
/// Module attribute: the KV cache's element type ("f32" | "bf16"), decided
/// by hyc-cpu-select-lowering-strategy, written to the artifact's manifest.
inline constexpr const char *kKvCacheDtypeName = "hyc_cpu.kv_cache_dtype";
/// On a brgemm GEMM of the amx variant: steps of at least this many rows run
/// the AMX tile kernel, smaller ones the AVX-512 kernel of the schedule
/// (written by hyc-cpu-select-lowering-strategy, read by
/// hyc-cpu-lower-to-kernel).
inline constexpr const char *kAmxMinRowsName = "hyc_cpu.amx_min_rows";
/// On an FP8 brgemm GEMM of a native-bf16 target: steps of at most this many
/// rows run the bf16 x f8 kernel, which widens the codes in registers
/// (decode reads each weight byte once), larger ones the blockwise path
/// (codes widened once per panel, reused by every row block). Written by
/// hyc-cpu-select-lowering-strategy, read by hyc-cpu-lower-to-kernel.
inline constexpr const char *kFp8FusedMaxRowsName = "hyc_cpu.fp8_fused_max_rows";
/// On a brgemm GEMM whose output can outgrow the caches at the compile
/// bounds: steps of at least this many rows run a kernel that stores C
/// non-temporally (codegen BrgemmDesc::stream_c), smaller ones the plain
/// kernel. Written by hyc-cpu-select-lowering-strategy (streamStoreMinBytes
/// over the row's bytes), read by hyc-cpu-lower-to-kernel.
inline constexpr const char *kStreamCMinRowsName = "hyc_cpu.stream_c_min_rows";
} // namespace hyc::cpu

#endif // HYC_DIALECTS_HYC_CPU_HYCCPUDIALECT_H
