// RUN: hyc-opt %s --hyc-cpu-check-no-reference-kernels -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not hyc-opt %s --hyc-cpu-check-no-reference-kernels -split-input-file 2>&1 | FileCheck %s --check-prefix=ERR

// Kernel-level IR whose calls are all optimized kernels passes unchanged.

// CHECK-LABEL: func.func @decode
// CHECK: hyc_kernel.ukernel "hyrt_cpu_embedding"
// CHECK: hyc_kernel.ukernel "hyrt_cpu_gemm_f32"
module attributes {hyc.variant = "avx512"} {
  func.func @decode() attributes {hyc.entry = "decode"} {
    %c64 = arith.constant 64 : index
    hyc_kernel.ukernel "hyrt_cpu_embedding"(%c64) : index loc("hyc.embedding model.embed_tokens.weight in @decode")
    hyc_kernel.ukernel "hyrt_cpu_gemm_f32"(%c64) : index
    return
  }
}

// -----

// The tensor- and expert-parallel exchanges of an optimized variant have
// kernels of their own, and pass like any other.

// CHECK-LABEL: func.func @extend
// CHECK: hyc_kernel.ukernel "hyrt_cpu_all_reduce_sum"
// CHECK: hyc_kernel.ukernel "hyrt_cpu_moe_dispatch"
// CHECK: hyc_kernel.ukernel "hyrt_cpu_moe_undispatch"
// CHECK: hyc_kernel.ukernel "hyrt_cpu_all_gather_cols"
module attributes {hyc.variant = "avx512"} {
  func.func @extend() attributes {hyc.entry = "extend"} {
    %c2 = arith.constant 2 : index
    hyc_kernel.ukernel "hyrt_cpu_all_reduce_sum"(%c2) : index
    hyc_kernel.ukernel "hyrt_cpu_moe_dispatch"(%c2) : index
    hyc_kernel.ukernel "hyrt_cpu_moe_undispatch"(%c2) : index
    hyc_kernel.ukernel "hyrt_cpu_all_gather_cols"(%c2) : index
    return
  }
}

// -----

// Their reference entry points in an optimized variant are refused like
// any reference kernel (nothing is accepted by name).

// ERR: error: 1 call of a reference kernel in variant avx512 (scalar loops, not a fast path):
// ERR-NEXT: hyrt_ref_all_reduce_sum for hyc.all_reduce in @decode
// expected-error@+1 {{1 call of a reference kernel in variant avx512}}
module attributes {hyc.variant = "avx512"} {
  func.func @decode() attributes {hyc.entry = "decode"} {
    %c2 = arith.constant 2 : index
    hyc_kernel.ukernel "hyrt_ref_all_reduce_sum"(%c2) : index loc("hyc.all_reduce in @decode")
    return
  }
}

// -----

// The reference variant is all reference kernels: nothing to refuse.

// CHECK-LABEL: func.func @extend
// CHECK: hyc_kernel.ukernel "hyrt_ref_matmul"
module attributes {hyc.variant = "reference"} {
  func.func @extend() attributes {hyc.entry = "extend"} {
    %c64 = arith.constant 64 : index
    hyc_kernel.ukernel "hyrt_ref_matmul"(%c64) : index
    return
  }
}

// -----

// An optimized variant with reference calls fails, listing every call with
// the op its location names (hyc-cpu-lower-to-kernel writes the op kind,
// its weight or layer and the entry there), and says how to accept them.

// ERR: error: 3 calls of a reference kernel in variant avx2 (scalar loops, not a fast path):
// ERR-NEXT: hyrt_ref_matmul for hyc.quant.matmul model.embed_tokens.weight in @decode
// ERR-NEXT: hyrt_ref_kv_cache_append for hyc.kv_cache.append layer 1 in @extend
// ERR-NEXT: hyrt_ref_copy_columns for {{.*}}unnamed.mlir
// ERR-NEXT: give the op a kernel, or compile with --allow-reference (debugging only)
// expected-error@+1 {{3 calls of a reference kernel in variant avx2}}
module attributes {hyc.variant = "avx2"} {
  func.func @decode() attributes {hyc.entry = "decode"} {
    %c64 = arith.constant 64 : index
    hyc_kernel.ukernel "hyrt_cpu_embedding"(%c64) : index
    hyc_kernel.ukernel "hyrt_ref_matmul"(%c64) : index loc("hyc.quant.matmul model.embed_tokens.weight in @decode")
    return
  }
  func.func @extend() attributes {hyc.entry = "extend"} {
    %c0 = arith.constant 0 : index
    hyc_kernel.ukernel "hyrt_ref_kv_cache_append"(%c0) {kv_step} : index loc("hyc.kv_cache.append layer 1 in @extend")
    hyc_kernel.ukernel "hyrt_ref_copy_columns"(%c0) : index loc("unnamed.mlir":3:4)
    return
  }
}

// -----

// One call: the count is singular, and a module without hyc.variant (IR
// from hyc-opt) is checked too.

// ERR: error: 1 call of a reference kernel in variant (unnamed) (scalar loops, not a fast path):
// ERR-NEXT: hyrt_ref_gather_rows for hyc.logit_rows of hyc.rms_norm in @extend
// expected-error@+1 {{1 call of a reference kernel in variant (unnamed)}}
module {
  func.func @extend() attributes {hyc.entry = "extend"} {
    %c0 = arith.constant 0 : index
    hyc_kernel.ukernel "hyrt_ref_gather_rows"(%c0) : index loc("hyc.logit_rows of hyc.rms_norm in @extend")
    return
  }
}
