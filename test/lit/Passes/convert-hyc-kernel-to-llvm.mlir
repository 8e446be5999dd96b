// RUN: hyc-opt %s --convert-hyc-kernel-to-llvm -split-input-file -verify-diagnostics | FileCheck %s

// Buffers become addresses (arena + i64 offset, a weight-table slot, step
// fields at their abi.h offsets: tokens 16, logits 80, logit rows 96), step
// sizes loads (num_tokens 0, num_logit_rows 88), a dispatch the address of
// the generated kernel (listed in hyc.kernels), a ukernel a call with the
// cache and the step first when it asks for them. Each call is preceded by a
// profile mark naming its kind, the return by a mark of null, and the module
// exports hyc_profile_v0 (abi.h) returning the runtime's profile state.

// CHECK: module attributes {hyc.arena_bytes = 4096 : i64, hyc.kernels = [{isa = "avx512vnni", k = 64 : i64, m_max = 14 : i64, name = "hyc_brgemm_u8s8f32_14x32x64_avx512vnni", types = "u8s8f32"}]}
// CHECK-DAG: llvm.mlir.global external constant @hyc_abi_version(5 : i32)
// CHECK-DAG: llvm.mlir.global external constant @hyc_arena_bytes(4096 : i64)
// CHECK-DAG: llvm.func @hyrt_profile_state() -> !llvm.ptr
// CHECK: llvm.func @hyc_profile_v0() -> !llvm.ptr {
// CHECK-NEXT: %[[STATE:.+]] = llvm.call @hyrt_profile_state() : () -> !llvm.ptr
// CHECK-NEXT: llvm.return %[[STATE]] : !llvm.ptr
// CHECK-NOT: hyc_collectives_v0
// CHECK-DAG: llvm.mlir.global internal constant @hyc_const_{{[0-9]+}}(dense<[1.000000e+00, 5.000000e-01]> : tensor<2xf32>)
// CHECK-DAG: llvm.func @hyc_brgemm_u8s8f32_14x32x64_avx512vnni(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr)
// CHECK-DAG: llvm.mlir.global internal constant @hyc_kind_hyrt_ref_embedding("hyrt_ref_embedding\00")
// CHECK-DAG: llvm.func @hyrt_profile_mark(!llvm.ptr)
// CHECK: llvm.func @hyc_extend_v0(%[[STEP:.+]]: !llvm.ptr, %[[KV:.+]]: !llvm.ptr, %[[W:.+]]: !llvm.ptr, %[[ARENA:.+]]: !llvm.ptr) -> i32
// CHECK: %[[TA:.+]] = llvm.getelementptr %[[STEP]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[T:.+]] = llvm.load %[[TA]] : !llvm.ptr -> i64
// CHECK: %[[SLOT:.+]] = llvm.getelementptr %[[W]][3] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[WP:.+]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[IA:.+]] = llvm.getelementptr %[[STEP]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[IDS:.+]] = llvm.load %[[IA]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[OFF:.+]] = llvm.mlir.constant(300000000 : i64) : i64
// CHECK: %[[X:.+]] = llvm.getelementptr %[[ARENA]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: %[[KIND:.+]] = llvm.mlir.addressof @hyc_kind_hyrt_ref_embedding : !llvm.ptr
// CHECK-NEXT: llvm.call @hyrt_profile_mark(%[[KIND]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: llvm.call @hyrt_ref_embedding(%[[WP]], %{{.*}}, %{{.*}}, %[[IDS]], %[[T]], %[[X]])
// CHECK: %[[K:.+]] = llvm.mlir.addressof @hyc_brgemm_u8s8f32_14x32x64_avx512vnni : !llvm.ptr
// CHECK: %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @hyrt_profile_mark(
// CHECK-NEXT: llvm.call @hyrt_cpu_gemm_w8a8(%[[X]], %[[T]], {{.*}}, %[[NULL]], {{.*}}, %[[K]], %{{.*}}, %{{.*}})
// CHECK: %[[RA:.+]] = llvm.getelementptr %[[STEP]][88] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.load %[[RA]] : !llvm.ptr -> i64
// CHECK: llvm.getelementptr %[[STEP]][96]
// CHECK: %[[TABLE:.+]] = llvm.mlir.addressof @hyc_const_{{[0-9]+}}
// CHECK: llvm.call @hyrt_ref_paged_attention(%[[KV]], %[[STEP]], %{{.*}}, %[[TABLE]])
// CHECK: llvm.getelementptr %[[STEP]][80]
// CHECK: %[[END:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.call @hyrt_profile_mark(%[[END]]) : (!llvm.ptr) -> ()
// CHECK: %[[ZERO:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.return %[[ZERO]] : i32
// CHECK-NOT: func.func
module attributes {hyc.arena_bytes = 4096 : i64} {
  func.func @extend() attributes {hyc.entry = "extend"} {
    %t = hyc_kernel.step_size "num_tokens"
    %c32 = arith.constant 32 : index
    %table = hyc_kernel.buffer "weight"[3] : memref<32x64xf32>
    %ids = hyc_kernel.buffer "step_tokens"[0] (%t) : memref<?xi32>
    %x = hyc_kernel.buffer "arena"[300000000] (%t) : memref<?x64xf32>
    hyc_kernel.ukernel "hyrt_ref_embedding"(%table, %c32, %c32, %ids, %t, %x) : memref<32x64xf32>, index, index, memref<?xi32>, index, memref<?x64xf32>
    %k = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32] (i8, i8 -> f32) {b_layout = "vnni4", zero_init, epilogue = #hyc<epilogue none>, isa = "avx512vnni"} -> i64
    %k2 = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32] (i8, i8 -> f32) {b_layout = "vnni4", zero_init, epilogue = #hyc<epilogue none>, isa = "avx512vnni"} -> i64
    %null = hyc_kernel.buffer "null"[0] : memref<0xf32>
    %c14 = arith.constant 14 : index
    %i = arith.constant 2 : i32
    %f = arith.constant 0.5 : f32
    hyc_kernel.ukernel "hyrt_cpu_gemm_w8a8"(%x, %t, %i, %null, %f, %k, %c14, %c14) : memref<?x64xf32>, index, i32, memref<0xf32>, f32, i64, index, index
    %r = hyc_kernel.step_size "num_logit_rows"
    %r2 = arith.muli %r, %c32 : index
    %rows = hyc_kernel.buffer "step_logit_rows"[0] (%r2) : memref<?xi32>
    %freq = hyc_kernel.constant_table dense<[1.0, 0.5]> : tensor<2xf32> -> memref<2xf32>
    hyc_kernel.ukernel "hyrt_ref_paged_attention"(%rows, %freq) {kv_step} : memref<?xi32>, memref<2xf32>
    %l = hyc_kernel.buffer "step_logits"[0] (%r) : memref<?x32xf32>
    hyc_kernel.ukernel "hyrt_ref_silu_mul"(%l) : memref<?x32xf32>
    return
  }
}

// -----

// A stream_c dispatch is a kernel of its own (suffix _nt), listed with the
// flag for the generator; the plain one beside it stays.
// CHECK-LABEL: module attributes {hyc.arena_bytes = 64 : i64, hyc.kernels = [{isa = "avx512vnni", k = 64 : i64, m_max = 14 : i64, name = "hyc_brgemm_u8s8f32_14x32x64_avx512vnni", types = "u8s8f32"}, {isa = "avx512vnni", k = 64 : i64, m_max = 14 : i64, name = "hyc_brgemm_u8s8f32_14x32x64_avx512vnni_nt", stream_c, types = "u8s8f32"}]}
// CHECK: llvm.mlir.addressof @hyc_brgemm_u8s8f32_14x32x64_avx512vnni : !llvm.ptr
// CHECK: llvm.mlir.addressof @hyc_brgemm_u8s8f32_14x32x64_avx512vnni_nt : !llvm.ptr
module attributes {hyc.arena_bytes = 64 : i64} {
  func.func @extend() attributes {hyc.entry = "extend"} {
    %t = hyc_kernel.step_size "num_tokens"
    %x = hyc_kernel.buffer "arena"[0] (%t) : memref<?x64xf32>
    %k = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32] (i8, i8 -> f32) {b_layout = "vnni4", zero_init, epilogue = #hyc<epilogue none>, isa = "avx512vnni"} -> i64
    %nt = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32] (i8, i8 -> f32) {b_layout = "vnni4", zero_init, epilogue = #hyc<epilogue none>, isa = "avx512vnni", stream_c} -> i64
    %c14 = arith.constant 14 : index
    hyc_kernel.ukernel "hyrt_cpu_gemm_w8a8"(%x, %t, %k, %nt, %c14) : memref<?x64xf32>, index, i64, i64, index
    return
  }
}

// -----

// A module that all-reduces across ranks also exports hyc_collectives_v0
// (abi.h), where the runtime registers the group's all-reduce; one that
// does not (above) has no such export.
// CHECK-LABEL: module attributes {hyc.arena_bytes = 64 : i64
// CHECK: llvm.func @hyc_collectives_v0() -> !llvm.ptr {
// CHECK-NEXT: %[[C:.+]] = llvm.call @hyrt_collectives_state() : () -> !llvm.ptr
// CHECK-NEXT: llvm.return %[[C]] : !llvm.ptr
// CHECK: llvm.call @hyrt_ref_all_reduce_sum(
module attributes {hyc.arena_bytes = 64 : i64} {
  func.func @decode() attributes {hyc.entry = "decode"} {
    %t = hyc_kernel.step_size "num_tokens"
    %x = hyc_kernel.buffer "arena"[0] (%t) : memref<?x8xf32>
    %c2 = arith.constant 2 : index
    hyc_kernel.ukernel "hyrt_ref_all_reduce_sum"(%x, %t, %c2) : memref<?x8xf32>, index, index
    return
  }
}

// -----

// The tensor-level entry must be lowered to kernel level first.
module attributes {hyc.arena_bytes = 0 : i64} {
  // expected-error@+1 {{a kernel-level entry takes and returns nothing (run hyc-cpu-lower-to-kernel first)}}
  func.func @extend(%t: tensor<?xi32>) attributes {hyc.entry = "extend"} {
    return
  }
}

// -----

// expected-error@+1 {{no memory plan (hyc.arena_bytes): run hyc-cpu-plan-memory and hyc-cpu-lower-to-kernel first}}
module {
  func.func @extend() attributes {hyc.entry = "extend"} {
    return
  }
}

// -----

// With the model's compiled bounds (hyc.step_bounds, set at import), each
// entry first calls hyrt_check_step_v0 with a constant table of them (abi.h
// hyrt_step_bounds_v0: decode's token bound is max_seqs, the KV dtype the
// strategy's, the last field says decode) and returns its code when nonzero.

// CHECK-DAG: llvm.func @hyrt_check_step_v0(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.mlir.global internal constant @hyc_step_bounds_extend(dense<[16, 2, 64, 512, 5, 4, 8, 8, 1, 0]> : tensor<10xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @hyc_step_bounds_decode(dense<[2, 2, 64, 512, 5, 4, 8, 8, 1, 1]> : tensor<10xi64>)
// CHECK: llvm.func @hyc_extend_v0(
// CHECK-SAME: %[[STEP:[^:]+]]: !llvm.ptr, %[[KV:[^:]+]]: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) -> i32
// CHECK-NEXT: %[[B:.+]] = llvm.mlir.addressof @hyc_step_bounds_extend : !llvm.ptr
// CHECK-NEXT: %[[RC:.+]] = llvm.call @hyrt_check_step_v0(%[[STEP]], %[[KV]], %[[B]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT: %[[ZERO:.+]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: %[[BAD:.+]] = llvm.icmp "ne" %[[RC]], %[[ZERO]] : i32
// CHECK-NEXT: llvm.cond_br %[[BAD]], ^[[REFUSE:.+]], ^[[BODY:.+]]
// CHECK-NEXT: ^[[REFUSE]]:
// CHECK-NEXT: llvm.return %[[RC]] : i32
// CHECK-NEXT: ^[[BODY]]:
// CHECK: llvm.call @hyrt_profile_mark(
// CHECK: llvm.return
// CHECK: llvm.func @hyc_decode_v0(
// CHECK-NEXT: llvm.mlir.addressof @hyc_step_bounds_decode
module attributes {hyc.arena_bytes = 0 : i64, hyc_cpu.kv_cache_dtype = "bf16",
                   hyc.step_bounds = {max_batch_tokens = 16 : i64, max_seqs = 2 : i64,
                                      max_seq_len = 64 : i64, vocab_size = 512 : i64,
                                      kv_num_layers = 5 : i64, kv_num_kv_heads = 4 : i64,
                                      k_head_dim = 8 : i64, v_head_dim = 8 : i64}} {
  func.func @extend() attributes {hyc.entry = "extend"} {
    return
  }
  func.func @decode() attributes {hyc.entry = "decode"} {
    return
  }
}

// -----

// expected-error@+1 {{hyc.step_bounds lacks an integer 'vocab_size'}}
module attributes {hyc.arena_bytes = 0 : i64,
                   hyc.step_bounds = {max_batch_tokens = 16 : i64, max_seqs = 2 : i64,
                                      max_seq_len = 64 : i64,
                                      kv_num_layers = 5 : i64, kv_num_kv_heads = 4 : i64,
                                      k_head_dim = 8 : i64, v_head_dim = 8 : i64}} {
  func.func @extend() attributes {hyc.entry = "extend"} {
    return
  }
}
