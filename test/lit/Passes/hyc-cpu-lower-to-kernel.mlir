// RUN: hyc-opt %s --hyc-cpu-lower-to-kernel -split-input-file -verify-diagnostics | FileCheck %s

// The input carries the plan of hyc-cpu-plan-memory and the schedule of
// hyc-cpu-select-lowering-strategy (written out here, so that only this pass
// runs). Tensors become buffers at their planned places (reshapes are views
// of the same place), dynamic sizes come from the step, each op one
// microkernel call; a brgemm schedule dispatches its block kernel and calls
// the driver with the config's row tile and threading threshold.

// CHECK-LABEL: func.func @extend() attributes {hyc.entry = "extend"
// CHECK: %[[T:.+]] = hyc_kernel.step_size "num_tokens"
// CHECK-DAG: %[[TABLE:.+]] = hyc_kernel.buffer "weight"[0] : memref<32x64xf32>
// CHECK-DAG: %[[IDS:.+]] = hyc_kernel.buffer "step_tokens"[0] (%[[T]]) : memref<?xi32>
// CHECK-DAG: %[[X:.+]] = hyc_kernel.buffer "arena"[0] (%[[T]]) : memref<?x64xf32>
// CHECK: hyc_kernel.ukernel "hyrt_ref_embedding"(%[[TABLE]], %{{.*}}, %{{.*}}, %[[IDS]], %[[T]], %[[X]])
// CHECK: %[[MIN:.+]] = arith.constant 3200000 : index
// CHECK: %[[K:.+]] = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32](i8, i8 -> f32) {b_layout = "vnni4", epilogue = #hyc<epilogue none>, isa = "avx512vnni", zero_init} -> i64
// CHECK-DAG: %[[SCRATCH:.+]] = hyc_kernel.buffer "scratch"[1792]
// CHECK-DAG: %[[W:.+]] = hyc_kernel.buffer "weight"[1] : memref<48x64xi8>
// CHECK-DAG: %[[S:.+]] = hyc_kernel.buffer "weight"[2] : memref<48xf32>
// CHECK-DAG: %[[Y:.+]] = hyc_kernel.buffer "arena"[1024] (%[[T]]) : memref<?x48xf32>
// CHECK-DAG: %[[M:.+]] = arith.constant 14 : index
// CHECK: hyc_kernel.ukernel "hyrt_cpu_gemm_w8a8"(%{{.*}}, %[[T]], %{{.*}}, %[[W]], %[[S]], %{{.*}}, %{{.*}}, %[[Y]], %[[SCRATCH]], %[[K]], %[[M]], %[[MIN]])
// The logits go to the step.
// CHECK: %[[L:.+]] = hyc_kernel.buffer "step_logits"[0] (%[[T]]) : memref<?x32xf32>
// CHECK: hyc_kernel.ukernel "hyrt_ref_matmul"({{.*}}, %[[L]])
// CHECK: return
// CHECK-NOT: hyc.
!c = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c) -> (tensor<?x32xf32>, !c) attributes {hyc.entry = "extend", hyc_cpu.scratch_offset = 1792 : i64} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8", hyc_cpu.weight_index = 1 : i64} -> tensor<48x64xi8>
  %s = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale", hyc_cpu.weight_index = 2 : i64} -> tensor<48xf32>
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>, hyc_cpu.arena_offsets = array<i64: 1024>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512vnni", types = "u8s8f32", layout = "s8_vnni4", tile = [14, 32, 64], threads = 2, parallel_min_macs = 3200000>} : (tensor<?x64xf32>, tensor<48x64xi8>, tensor<48xf32>) -> tensor<?x48xf32>
  %h = hyc.param #hyc.param<"f" : "head"> {hyc_cpu.weight_index = 3 : i64} -> tensor<32x48xf32>
  %l = hyc.quant.matmul %y, %h {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>, hyc_cpu.arena_offsets = array<i64: -2>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : (tensor<?x48xf32>, tensor<32x48xf32>) -> tensor<?x32xf32>
  return %l, %c : tensor<?x32xf32>, !c
}

// -----

// Decode attention with its KV write, on the paged kernel: the cache and
// the step are passed first (kv_step), the query heads from the shape, the
// schedule's KV splits last.

// CHECK-LABEL: func.func @decode()
// CHECK-DAG: %[[K:.+]] = hyc_kernel.buffer "arena"[256] (%{{.*}}) : memref<?x2x8xf32>
// CHECK-DAG: %[[V:.+]] = hyc_kernel.buffer "arena"[256] (%{{.*}}) : memref<?x2x8xf32>
// CHECK-DAG: %[[Q:.+]] = hyc_kernel.buffer "arena"[0] (%{{.*}}) : memref<?x4x8xf32>
// CHECK-DAG: %[[H:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[O:.+]] = hyc_kernel.buffer "step_logits"[0] (%{{.*}}) : memref<?x4x8xf32>
// CHECK-DAG: %[[SPLITS:.+]] = arith.constant 3 : index
// CHECK: hyc_kernel.ukernel "hyrt_cpu_paged_attention_append"(%{{.*}}, %[[K]], %[[V]], %[[Q]], %[[H]], %{{.*}}, %[[O]], %[[SPLITS]]) {kv_step}
!c2 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>
func.func @decode(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c2) -> (tensor<?x4x8xf32>, !c2) attributes {hyc.entry = "decode", hyc_cpu.scratch_offset = 0 : i64} {
  %tok = hyc.assume_bounds %tok0 [2] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x32xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>} : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %e2 = hyc.param #hyc.param<"f" : "kv"> {hyc_cpu.weight_index = 1 : i64} -> tensor<32x16xf32>
  %y = hyc.embedding %e2[%tok] {hyc_cpu.arena_offsets = array<i64: 256>} : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %c0i = arith.constant 0 : index
  %n = tensor.dim %x, %c0i : tensor<?x32xf32>
  %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 4, 8] : tensor<?x32xf32> into tensor<?x4x8xf32>
  %kv = tensor.expand_shape %y [[0], [1, 2]] output_shape [%n, 2, 8] : tensor<?x16xf32> into tensor<?x2x8xf32>
  %o, %c1 = hyc.paged_attention.append %q, %kv, %kv, %c {layer = 0 : i64, scale = 0.35 : f32, hyc_cpu.arena_offsets = array<i64: -2, -1>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "paged_attention", threads = 2, kv_splits = 3>} : tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, !c2 -> tensor<?x4x8xf32>
  return %o, %c1 : tensor<?x4x8xf32>, !c2
}

// -----

// RMSNorm and SiLU-multiply scheduled on the vectorized row kernels: rows =
// the leading dims from the step, row length the last dim; the reference
// config keeps the reference kernels (one flat length for SiLU-multiply).

// CHECK-LABEL: func.func @elementwise()
// CHECK: %[[T:.+]] = hyc_kernel.step_size "num_tokens"
// CHECK: %[[R:.+]] = arith.muli %{{.*}}, %[[T]] : index
// CHECK: hyc_kernel.ukernel "hyrt_cpu_rms_norm"(%{{.*}}, %{{.*}}, %{{.*}}, %[[R]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: %[[R2:.+]] = arith.muli %{{.*}}, %[[T]] : index
// CHECK: hyc_kernel.ukernel "hyrt_cpu_silu_mul"(%{{.*}}, %{{.*}}, %[[R2]], %{{.*}}, %{{.*}}) : memref<?x16xf32>, memref<?x16xf32>, index, index, memref<?x16xf32>
// CHECK: hyc_kernel.ukernel "hyrt_ref_rms_norm"
// CHECK: hyc_kernel.ukernel "hyrt_ref_silu_mul"({{.*}}) : memref<?x16xf32>, memref<?x16xf32>, index, memref<?x16xf32>
func.func @elementwise(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x16xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) attributes {hyc.entry = "extend", hyc_cpu.scratch_offset = 0 : i64} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x16xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>} : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %nw = hyc.param #hyc.param<"f" : "norm"> {hyc_cpu.weight_index = 1 : i64} -> tensor<16xf32>
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32, hyc_cpu.arena_offsets = array<i64: 256>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "rms_norm", threads = 2>} : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %s = hyc.silu_mul %h, %x {hyc_cpu.arena_offsets = array<i64: 512>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "silu_mul", threads = 2>} : tensor<?x16xf32>
  %h2 = hyc.rms_norm %s, %nw {epsilon = 1.0e-05 : f32, hyc_cpu.arena_offsets = array<i64: 256>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %s2 = hyc.silu_mul %h2, %x {hyc_cpu.arena_offsets = array<i64: -2>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : tensor<?x16xf32>
  return %s2, %c : tensor<?x16xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}

// -----

// An all-reduce across the ranks of a tensor-parallel group: in place (the
// result is the input's buffer), one call with the element count from the
// step (tokens x 8) and the group size; the runtime's registered collective
// does the reduction (abi.h, hyrt_collectives_v0). A max has no kernel.
// CHECK-LABEL: func.func @extend
// CHECK: %[[T:.+]] = hyc_kernel.step_size "num_tokens"
// CHECK: %[[N:.+]] = arith.muli %[[T]], %c8{{.*}} : index
// CHECK: %[[X:.+]] = hyc_kernel.buffer "arena"[0] (%[[T]]) : memref<?x8xf32>
// CHECK: hyc_kernel.ukernel "hyrt_ref_all_reduce_sum"(%[[X]], %[[N]], %c2{{.*}})
// CHECK: hyc_kernel.buffer "step_logits"
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) attributes {hyc.entry = "extend", hyc_cpu.scratch_offset = 0 : i64} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x8xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>} : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %r = hyc.collective.all_reduce %x {kind = #hyc<reduce_kind sum>, group_size = 2 : i64} : tensor<?x8xf32>
  %y = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: -2>} : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %s = hyc.add %r, %y {hyc_cpu.arena_offsets = array<i64: -2>} : tensor<?x8xf32>
  return %s, %c : tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}

// -----

func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) attributes {hyc.entry = "extend", hyc_cpu.scratch_offset = 0 : i64} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x8xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>} : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  // expected-error@+1 {{all_reduce across ranks supports sum, got max}}
  %r = hyc.collective.all_reduce %x {kind = #hyc<reduce_kind max>, group_size = 2 : i64} : tensor<?x8xf32>
  return %r, %c : tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}

// -----

// An int8 cache: the attention op carries hyc-global-fuse-dequant-into-
// attention's decision, so it lowers to the same paged kernel (which takes
// the element type and the scales from the cache view).

// CHECK-LABEL: func.func @decode_int8()
// CHECK: hyc_kernel.ukernel "hyrt_cpu_paged_attention_append"
!c8 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>
module attributes {hyc_cpu.kv_cache_dtype = "int8"} {
func.func @decode_int8(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c8) -> (tensor<?x4x8xf32>, !c8) attributes {hyc.entry = "decode", hyc_cpu.scratch_offset = 0 : i64} {
  %tok = hyc.assume_bounds %tok0 [2] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x32xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>} : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %e2 = hyc.param #hyc.param<"f" : "kv"> {hyc_cpu.weight_index = 1 : i64} -> tensor<32x16xf32>
  %y = hyc.embedding %e2[%tok] {hyc_cpu.arena_offsets = array<i64: 256>} : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %c0i = arith.constant 0 : index
  %n = tensor.dim %x, %c0i : tensor<?x32xf32>
  %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 4, 8] : tensor<?x32xf32> into tensor<?x4x8xf32>
  %kv = tensor.expand_shape %y [[0], [1, 2]] output_shape [%n, 2, 8] : tensor<?x16xf32> into tensor<?x2x8xf32>
  %o, %c1 = hyc.paged_attention.append %q, %kv, %kv, %c {layer = 0 : i64, scale = 0.35 : f32, hyc.kv_dequant = "int8", hyc_cpu.arena_offsets = array<i64: -2, -1>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "paged_attention", threads = 2, kv_splits = 3>} : tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, !c8 -> tensor<?x4x8xf32>
  return %o, %c1 : tensor<?x4x8xf32>, !c8
}
}

// -----

// The same op without the decision would hand int8 rows to a kernel that
// was never told to dequantize them: refused, naming what is missing.

!c8 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>
module attributes {hyc_cpu.kv_cache_dtype = "int8"} {
func.func @decode_int8_unmarked(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c8) -> (tensor<?x4x8xf32>, !c8) attributes {hyc.entry = "decode", hyc_cpu.scratch_offset = 0 : i64} {
  %tok = hyc.assume_bounds %tok0 [2] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x32xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>} : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %c0i = arith.constant 0 : index
  %n = tensor.dim %x, %c0i : tensor<?x32xf32>
  %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 4, 8] : tensor<?x32xf32> into tensor<?x4x8xf32>
  // expected-error@+1 {{'hyc.paged_attention' op reads an int8 KV cache (module hyc_cpu.kv_cache_dtype = "int8") but has no hyc.kv_dequant, expected hyc.kv_dequant = "int8" (hyc-global-fuse-dequant-into-attention with kv-cache=int8)}}
  %o = hyc.paged_attention %q, %c {layer = 0 : i64, scale = 0.35 : f32, hyc_cpu.arena_offsets = array<i64: -2>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "paged_attention", threads = 2, kv_splits = 1>} : tensor<?x4x8xf32>, !c8 -> tensor<?x4x8xf32>
  return %o, %c : tensor<?x4x8xf32>, !c8
}
}

// -----

// And the decision over a cache that is not int8 is a contradiction.

!cf = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>
module attributes {hyc_cpu.kv_cache_dtype = "bf16"} {
func.func @decode_bf16_marked(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !cf) -> (tensor<?x4x8xf32>, !cf) attributes {hyc.entry = "decode", hyc_cpu.scratch_offset = 0 : i64} {
  %tok = hyc.assume_bounds %tok0 [2] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x32xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>} : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %c0i = arith.constant 0 : index
  %n = tensor.dim %x, %c0i : tensor<?x32xf32>
  %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 4, 8] : tensor<?x32xf32> into tensor<?x4x8xf32>
  // expected-error@+1 {{'hyc.paged_attention' op has hyc.kv_dequant = "int8" but the module's KV cache is bf16, expected an int8 cache (hyc-cpu-select-lowering-strategy kv-cache=int8)}}
  %o = hyc.paged_attention %q, %c {layer = 0 : i64, scale = 0.35 : f32, hyc.kv_dequant = "int8", hyc_cpu.arena_offsets = array<i64: -2>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "paged_attention", threads = 2, kv_splits = 1>} : tensor<?x4x8xf32>, !cf -> tensor<?x4x8xf32>
  return %o, %c : tensor<?x4x8xf32>, !cf
}
}

// -----

// FP8 with a fused-rows threshold (hyc-cpu-select-lowering-strategy's
// hyc_cpu.fp8_fused_max_rows): steps of at most 4 rows call the driver with
// the bf16 x f8 kernel over the whole K padded to blocks (K = 200 -> 256),
// its 4-row blocks and scheme 7 (HYRT_GEMM_FP8_FUSED); larger ones keep the
// K = 128 bf16 kernel, 14-row blocks and scheme 5 (HYRT_GEMM_FP8).
// CHECK-LABEL: func.func @fp8
// CHECK: %[[T:.+]] = hyc_kernel.step_size "num_tokens"
// CHECK: %[[BLOCK:.+]] = hyc_kernel.brgemm.dispatch [14, 32, 128] ld [256, 32, 32](bf16, bf16 -> f32)
// CHECK: %[[FEW:.+]] = arith.cmpi sge, %c4{{.*}}, %[[T]] : index
// CHECK: %[[FUSED:.+]] = hyc_kernel.brgemm.dispatch [4, 32, 256] ld [256, 32, 32](bf16, f8E4M3FN -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>, isa = "avx512bf16", zero_init} -> i64
// CHECK: %[[KERNEL:.+]] = arith.select %[[FEW]], %[[FUSED]], %[[BLOCK]] : i64
// CHECK: %[[ROWS:.+]] = arith.select %[[FEW]], %c4{{.*}}, %c14 : index
// CHECK: %[[SCHEME:.+]] = arith.select %[[FEW]], %c7_i32, %c5_i32 : i32
// CHECK: hyc_kernel.ukernel "hyrt_cpu_gemm_fp8"(%[[SCHEME]], {{.*}}, %[[KERNEL]], %[[ROWS]], %{{.*}})
!c5 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @fp8(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c5) -> (tensor<?x128xf32>, !c5) attributes {hyc.entry = "decode", hyc_cpu.scratch_offset = 4096 : i64} {
  %tok = hyc.assume_bounds %tok0 [8] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x200xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : tensor<32x200xf32>, tensor<?xi32> -> tensor<?x200xf32>
  %q = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "fp8", hyc_cpu.weight_index = 1 : i64} -> tensor<128x200xf8E4M3FN>
  %s = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "fp8.scale", hyc_cpu.weight_index = 2 : i64} -> tensor<1x2xf32>
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>, epilogue = #hyc<epilogue none>, hyc_cpu.fp8_fused_max_rows = 4 : i64, hyc_cpu.arena_offsets = array<i64: -2>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512bf16", types = "bf16bf16f32", layout = "f8_vnni2", tile = [14, 32, 200], threads = 2, parallel_min_macs = 1600000>} : (tensor<?x200xf32>, tensor<128x200xf8E4M3FN>, tensor<1x2xf32>) -> tensor<?x128xf32>
  return %y, %c : tensor<?x128xf32>, !c5
}

// -----

// Non-temporal C stores from hyc_cpu.stream_c_min_rows rows (written by
// hyc-cpu-select-lowering-strategy): the same kernel dispatched with
// stream_c, taken when the step has at least 32 rows.
// CHECK-LABEL: func.func @stream_c
// CHECK: %[[T:.+]] = hyc_kernel.step_size "num_tokens"
// CHECK: %[[PLAIN:.+]] = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32](i8, i8 -> f32) {b_layout = "vnni4", epilogue = #hyc<epilogue none>, isa = "avx512vnni", zero_init} -> i64
// CHECK: %[[MANY:.+]] = arith.cmpi sge, %[[T]], %c32{{.*}} : index
// CHECK: %[[NT:.+]] = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32](i8, i8 -> f32) {b_layout = "vnni4", epilogue = #hyc<epilogue none>, isa = "avx512vnni", stream_c, zero_init} -> i64
// CHECK: %[[KERNEL:.+]] = arith.select %[[MANY]], %[[NT]], %[[PLAIN]] : i64
// CHECK: hyc_kernel.ukernel "hyrt_cpu_gemm_w8a8"({{.*}}, %[[KERNEL]], %{{.*}}, %{{.*}})
!c6 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @stream_c(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c6) -> (tensor<?x32xf32>, !c6) attributes {hyc.entry = "extend", hyc_cpu.scratch_offset = 65536 : i64} {
  %tok = hyc.assume_bounds %tok0 [64] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8", hyc_cpu.weight_index = 1 : i64} -> tensor<64x64xi8>
  %s = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale", hyc_cpu.weight_index = 2 : i64} -> tensor<64xf32>
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>, hyc_cpu.stream_c_min_rows = 32 : i64, hyc_cpu.arena_offsets = array<i64: 16384>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512vnni", types = "u8s8f32", layout = "s8_vnni4", tile = [14, 32, 64], threads = 2, parallel_min_macs = 3200000>} : (tensor<?x64xf32>, tensor<64x64xi8>, tensor<64xf32>) -> tensor<?x64xf32>
  %h = hyc.param #hyc.param<"f" : "head"> {hyc_cpu.weight_index = 3 : i64} -> tensor<32x64xf32>
  %l = hyc.quant.matmul %y, %h {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>, hyc_cpu.arena_offsets = array<i64: -2>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %l, %c : tensor<?x32xf32>, !c6
}

// -----

// The stores need 64-byte aligned rows: a plan that placed C elsewhere is
// refused rather than run into a fault.
!c7 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @stream_c_misaligned(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c7) -> (tensor<?x32xf32>, !c7) attributes {hyc.entry = "extend", hyc_cpu.scratch_offset = 65536 : i64} {
  %tok = hyc.assume_bounds %tok0 [64] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> {hyc_cpu.weight_index = 0 : i64} -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] {hyc_cpu.arena_offsets = array<i64: 0>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8", hyc_cpu.weight_index = 1 : i64} -> tensor<64x64xi8>
  %s = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale", hyc_cpu.weight_index = 2 : i64} -> tensor<64xf32>
  // expected-error@+1 {{hyc_cpu.stream_c_min_rows needs an AVX-512 kernel writing C itself into an arena buffer of 64-byte aligned rows; got avx512vnni u8s8f32, N = 64, arena offset 16400}}
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>, hyc_cpu.stream_c_min_rows = 32 : i64, hyc_cpu.arena_offsets = array<i64: 16400>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512vnni", types = "u8s8f32", layout = "s8_vnni4", tile = [14, 32, 64], threads = 2, parallel_min_macs = 3200000>} : (tensor<?x64xf32>, tensor<64x64xi8>, tensor<64xf32>) -> tensor<?x64xf32>
  %h = hyc.param #hyc.param<"f" : "head"> {hyc_cpu.weight_index = 3 : i64} -> tensor<32x64xf32>
  %l = hyc.quant.matmul %y, %h {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>, hyc_cpu.arena_offsets = array<i64: -2>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference">} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %l, %c : tensor<?x32xf32>, !c7
}
