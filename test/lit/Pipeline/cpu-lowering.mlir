// RUN: hyc-opt %s --hyc-cpu-plan-memory --hyc-cpu-lower-to-kernel --convert-hyc-kernel-to-llvm -split-input-file -verify-diagnostics | FileCheck %s
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy=target=avx512 --hyc-cpu-plan-memory --hyc-cpu-lower-to-kernel --convert-hyc-kernel-to-llvm -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=KERNELS

!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 4, v_head_dim = 4>

// One decoder step: the plan reuses the arena, weights come from the table in
// first-use order, logits go straight to step->logits.

// CHECK: module attributes
// The peak is h, q, k and v live together (4 x 4 tokens x 8 floats): buffers
// of dead values are reused.
// CHECK-SAME: hyc.arena_bytes = [[ARENA:512]] : i64
// CHECK-SAME: hyc.weights = ["embed", "norm", "wq", "wk", "wv", "wo"]
// CHECK-DAG: llvm.mlir.global external constant @hyc_abi_version(5 : i32)
// CHECK-DAG: llvm.mlir.global external constant @hyc_arena_bytes([[ARENA]] : i64)
// CHECK-DAG: llvm.mlir.global internal constant @hyc_const_{{[0-9]+}}(dense<[1.000000e+00, 0.00999999977]> : tensor<2xf32>)
// CHECK: llvm.func @hyc_extend_v0(%[[STEP:.+]]: !llvm.ptr, %[[KV:.+]]: !llvm.ptr, %[[W:.+]]: !llvm.ptr, %[[ARENA_PTR:.+]]: !llvm.ptr) -> i32
// CHECK: %[[T_ADDR:.+]] = llvm.getelementptr %[[STEP]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[T:.+]] = llvm.load %[[T_ADDR]] : !llvm.ptr -> i64
// CHECK: llvm.call @hyrt_ref_embedding
// CHECK: llvm.call @hyrt_ref_rms_norm
// CHECK: llvm.call @hyrt_ref_matmul
// CHECK: llvm.call @hyrt_ref_rope
// With the avx512 strategy the norm runs on the vectorized row kernel and
// both RoPEs take the kernel that computes each
// token's cos/sin once for all heads (decided by the strategy pass).
// KERNELS: llvm.call @hyrt_cpu_rms_norm(
// KERNELS-COUNT-2: llvm.call @hyrt_cpu_rope(
// KERNELS-NOT: @hyrt_ref_rope(
// CHECK: llvm.call @hyrt_ref_kv_cache_append(%[[KV]], %[[STEP]]
// CHECK: llvm.call @hyrt_ref_attention(%[[KV]], %[[STEP]]
// CHECK: %[[LOGITS_ADDR:.+]] = llvm.getelementptr %[[STEP]][80] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[LOGITS:.+]] = llvm.load %[[LOGITS_ADDR]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call @hyrt_ref_matmul({{.*}}, %[[LOGITS]])
// CHECK: llvm.return
// CHECK-NOT: func.func
func.func @extend(%tok: tensor<?xi32>, %pos0: tensor<?xi32>, %c0: !cache) -> (tensor<?x16xf32>, !cache) attributes {hyc.entry = "extend"} {
  %ids = hyc.assume_bounds %tok [4] : tensor<?xi32>
  %pos = hyc.assume_bounds %pos0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x8xf32>
  %x = hyc.embedding %e[%ids] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %nw = hyc.param #hyc.param<"f" : "norm"> -> tensor<8xf32>
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wq = hyc.param #hyc.param<"f" : "wq"> -> tensor<8x8xf32>
  %q2 = hyc.quant.matmul %h, %wq {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wk = hyc.param #hyc.param<"f" : "wk"> -> tensor<8x8xf32>
  %k2 = hyc.quant.matmul %h, %wk {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wv = hyc.param #hyc.param<"f" : "wv"> -> tensor<8x8xf32>
  %v2 = hyc.quant.matmul %h, %wv {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %c0i = arith.constant 0 : index
  %n = tensor.dim %q2, %c0i : tensor<?x8xf32>
  %q = tensor.expand_shape %q2 [[0], [1, 2]] output_shape [%n, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  %k = tensor.expand_shape %k2 [[0], [1, 2]] output_shape [%n, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  %v = tensor.expand_shape %v2 [[0], [1, 2]] output_shape [%n, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  %qr = hyc.rope %q, %pos {style = #hyc<rope_style neox>, rotary_dim = 4 : i64, theta = 1.0e+04 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x2x4xf32>, tensor<?xi32> -> tensor<?x2x4xf32>
  %kr = hyc.rope %k, %pos {style = #hyc<rope_style neox>, rotary_dim = 4 : i64, theta = 1.0e+04 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x2x4xf32>, tensor<?xi32> -> tensor<?x2x4xf32>
  %c1 = hyc.kv_cache.append %c0, %kr, %v {layer = 0 : i64} : !cache, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  %o = hyc.attention %qr, %kr, %v, %c1 {layer = 0 : i64, scale = 0.5 : f32} : tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, !cache -> tensor<?x2x4xf32>
  %o2 = tensor.collapse_shape %o [[0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
  %wo = hyc.param #hyc.param<"f" : "wo"> -> tensor<16x8xf32>
  %logits = hyc.quant.matmul %o2, %wo {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits, %c1 : tensor<?x16xf32>, !cache
}

// -----

// expected-error@+1 {{entry argument <block argument> of type 'tensor<?xi32>' at index: 0 has a dynamic dim without hyc.assume_bounds}}
func.func @extend(%tok: tensor<?xi32>, %pos: tensor<?xi32>, %c0: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) attributes {hyc.entry = "extend"} {
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x8xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %w = hyc.param #hyc.param<"f" : "w"> -> tensor<8x8xf32>
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %y, %c0 : tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}

// -----

// Per-channel W8A8 on the reference: row-major int8 weights ("i8") and
// their scales, one call that quantizes the activations per token.
// CHECK: hyc.weight_layouts = ["f32", "i8", "f32"]
// CHECK: llvm.call @hyrt_ref_matmul_w8a8(
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c0: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x8xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %w = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "w8a8"} -> tensor<8x8xi8>
  %s = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "w8a8.scale"} -> tensor<8xf32>
  %y = hyc.quant.matmul %x, %w scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xi8>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y, %c0 : tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}

// -----

// W8A8 with K groups of 128 on the reference: row-major int8 weights,
// scales [N, groups], each group summed exactly.
// CHECK: llvm.call @hyrt_ref_matmul_w8a8_grouped(
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c0: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x256xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
  %w = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "w8a8"} -> tensor<8x256xi8>
  %s = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "w8a8.scale"} -> tensor<8x2xf32>
  %y = hyc.quant.matmul %x, %w scale(%s) {quant = #hyc.quant<w8a8, group = 128>, epilogue = #hyc<epilogue none>} : (tensor<?x256xf32>, tensor<8x256xi8>, tensor<8x2xf32>) -> tensor<?x8xf32>
  return %y, %c0 : tensor<?x8xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}
