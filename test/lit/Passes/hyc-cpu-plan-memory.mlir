// RUN: hyc-opt %s --hyc-cpu-plan-memory -split-input-file -verify-diagnostics | FileCheck %s
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy=target=avx512 --hyc-cpu-plan-memory -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=KERNELS

!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 4, v_head_dim = 4>

// One attention block at 4 tokens: every [4, 8] f32 activation is 128
// bytes (64-byte aligned). Liveness reuse: h (128) dies after the v
// projection, q2 (0) after its rope, k2 (256) after its rope; results are
// placed before operands are freed, so qr cannot take q2's buffer.
// The peak is x/h, q2, k2 and v2: 4 x 128 = 512. The logits go to the step
// (-2); reshapes and bound assertions are aliases without a buffer.

// CHECK: module attributes {hyc.arena_bytes = 512 : i64
// CHECK-SAME: hyc.weight_layouts = ["f32", "f32", "f32", "f32", "f32", "f32"]
// CHECK-SAME: hyc.weights = ["embed", "norm", "wq", "wk", "wv", "wo"]
// CHECK-LABEL: func.func @extend
// CHECK-SAME: hyc_cpu.scratch_offset = 0
// CHECK: hyc.param {{.*}}"embed"> {hyc_cpu.weight_index = 0 : i64}
// CHECK: hyc.embedding {{.*}}hyc_cpu.arena_offsets = array<i64: 0>
// CHECK: hyc.rms_norm {{.*}}hyc_cpu.arena_offsets = array<i64: 128>
// CHECK: hyc.param {{.*}}"wq"> {hyc_cpu.weight_index = 2 : i64}
// CHECK: hyc.quant.matmul {{.*}}hyc_cpu.arena_offsets = array<i64: 0>
// CHECK: hyc.quant.matmul {{.*}}hyc_cpu.arena_offsets = array<i64: 256>
// CHECK: hyc.quant.matmul {{.*}}hyc_cpu.arena_offsets = array<i64: 384>
// CHECK-NOT: tensor.expand_shape {{.*}}arena_offsets
// CHECK: hyc.rope {{.*}}hyc_cpu.arena_offsets = array<i64: 128>
// CHECK: hyc.rope {{.*}}hyc_cpu.arena_offsets = array<i64: 0>
// CHECK: hyc.attention {{.*}}hyc_cpu.arena_offsets = array<i64: 256>
// CHECK: hyc.quant.matmul {{.*}}hyc_cpu.arena_offsets = array<i64: -2>
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

// Weights take the layout of the kernel their GEMMs were scheduled on; a
// weight also read as a table stays row-major. The W8A8 driver's scratch
// (4 rows: 64 bytes of scales + 4 x 64 u8 = 320) sits above every buffer:
// x [4, 64] f32 (1024) and y [4, 48] (768) live together, so at 1792.

// KERNELS: module attributes {hyc.arena_bytes = 2112 : i64
// KERNELS-SAME: hyc.weight_layouts = ["f32", "s8_vnni4", "f32", "f32_k1"]
// KERNELS-SAME: hyc.weights = ["embed", "up#w8a8", "up#w8a8.scale", "head"]
// KERNELS-NEXT: func.func @extend
// KERNELS-SAME: hyc_cpu.scratch_offset = 1792
// CHECK-LABEL: func.func @extend
// CHECK-SAME: hyc_cpu.scratch_offset = 0
!c = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c) -> (tensor<?x32xf32>, !c) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
  %s = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<48x64xi8>, tensor<48xf32>) -> tensor<?x48xf32>
  %h = hyc.param #hyc.param<"f" : "head"> -> tensor<64x48xf32>
  %l = hyc.quant.matmul %y, %h {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x48xf32>, tensor<64x48xf32>) -> tensor<?x64xf32>
  %t = hyc.quant.matmul %l, %e {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %t, %c : tensor<?x32xf32>, !c
}

// -----

// A quantization folded into its producer's kernel (fused_producer) runs
// while the producer still reads its inputs: the norm's input x (0) stays
// live, so the quantized rows (4 x 64 i8 = 256) and scales do not reuse its
// buffer, as they could if the norm ran first.

// CHECK-LABEL: func.func @extend
// CHECK: hyc.embedding {{.*}}arena_offsets = array<i64: 0>
// CHECK: hyc.rms_norm {{.*}}arena_offsets = array<i64: 1024>
// CHECK: hyc.quant.quantize {{.*}}arena_offsets = array<i64: 2048, 2304>
!c = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c) -> (tensor<?x48xf32>, !c) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %nw = hyc.param #hyc.param<"f" : "norm"> -> tensor<64xf32>
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %q, %s = hyc.quant.quantize %h {quant = #hyc.quant<w8a8>, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "reference", fused_producer = "rms_norm">} : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x1xf32>
  %w = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
  %ws = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
  %y = hyc.quant.matmul %q, %w scale(%ws) input_scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xi8>, tensor<48x64xi8>, tensor<48xf32>, tensor<?x1xf32>) -> tensor<?x48xf32>
  return %y, %c : tensor<?x48xf32>, !c
}

// -----

!c = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c) -> (tensor<32x64xf32>, !c) attributes {hyc.entry = "extend"} {
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x64xf32>
  // expected-error@+1 {{the returned logits must be computed in the step}}
  return %e, %c : tensor<32x64xf32>, !c
}

// -----

// Bounds past any host (--max-batch-tokens 2^62): the arena arithmetic is
// checked and refused, never wrapped into a small arena.
!c = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c) -> (tensor<?x16xf32>, !c) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4611686018427387904] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x8xf32>
  // expected-error@+1 {{at its bound shape [4611686018427387904, 8] needs more than the largest arena of 274877906944 bytes (256 GiB)}}
  %x = hyc.embedding %e[%tok] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %wo = hyc.param #hyc.param<"f" : "wo"> -> tensor<16x8xf32>
  %logits = hyc.quant.matmul %x, %wo {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits, %c : tensor<?x16xf32>, !c
}

// -----

// Each buffer fits, together they do not: 2^29 tokens x 64 floats is 128
// GiB, for x and again for the norm's output, both live at once.
!c = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
// expected-error@+1 {{the activation arena (274877906944 bytes of buffers + 0 of kernel scratch) exceeds the largest arena of 274877906944 bytes (256 GiB)}}
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c) -> (tensor<?x16xf32>, !c) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [536870912] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %nw = hyc.param #hyc.param<"f" : "norm"> -> tensor<64xf32>
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %wo = hyc.param #hyc.param<"f" : "wo"> -> tensor<16x64xf32>
  %logits = hyc.quant.matmul %h, %wo {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  return %logits, %c : tensor<?x16xf32>, !c
}
