// RUN: hyc-opt %s --hyc-global-fuse-activation-quant -split-input-file | FileCheck %s

// q, k and v projections of one normed input: quantized once, right after
// the producer, and every GEMM reads the int8 values and per-token scales.

// CHECK-LABEL: func.func @qkv
// CHECK: %[[H:.+]] = hyc.rms_norm
// CHECK-NEXT: %[[Q:.+]], %[[S:.+]] = hyc.quant.quantize %[[H]] {quant = #hyc.quant<w8a8>} : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x1xf32>
// CHECK-COUNT-3: hyc.quant.matmul %[[Q]], %{{.*}} scale(%{{.*}}) input_scale(%[[S]])
func.func @qkv(%x: tensor<?x64xf32>, %nw: tensor<64xf32>, %wq: tensor<64x64xi8>, %sq: tensor<64xf32>, %wk: tensor<32x64xi8>, %sk: tensor<32xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %q = hyc.quant.matmul %h, %wq scale(%sq) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<64x64xi8>, tensor<64xf32>) -> tensor<?x64xf32>
  %k = hyc.quant.matmul %h, %wk scale(%sk) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  %v = hyc.quant.matmul %h, %wk scale(%sk) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  return %q, %k, %v : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}

// -----

// One reader is enough when the producer is a SiLU-multiply (or an RMSNorm):
// its kernel can write the int8 rows directly.

// CHECK-LABEL: func.func @silu_producer
// CHECK: %[[A:.+]] = hyc.silu_mul
// CHECK-NEXT: %[[Q:.+]], %[[S:.+]] = hyc.quant.quantize %[[A]]
// CHECK: hyc.quant.matmul %[[Q]], %{{.*}} scale(%{{.*}}) input_scale(%[[S]])
func.func @silu_producer(%g: tensor<?x64xf32>, %w: tensor<32x64xi8>, %s: tensor<32xf32>) -> tensor<?x32xf32> {
  %a = hyc.silu_mul %g, %g : tensor<?x64xf32>
  %d = hyc.quant.matmul %a, %w scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  return %d : tensor<?x32xf32>
}

// -----

// Must not fire: one reader of a value from another producer (nothing to
// share or fold); a reader that is not a W8A8 GEMM (the f32 router); K not
// a multiple of 4.

// CHECK-LABEL: func.func @no_fusion
// CHECK-NOT: hyc.quant.quantize
// CHECK-NOT: input_scale
func.func @no_fusion(%x: tensor<?x64xf32>, %y: tensor<?x6xf32>, %w: tensor<32x64xi8>, %s: tensor<32xf32>, %r: tensor<8x64xf32>, %w6: tensor<32x6xi8>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x8xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %h = hyc.add %x, %x : tensor<?x64xf32>
  %a = hyc.quant.matmul %h, %w scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  %h2 = hyc.silu_mul %x, %x : tensor<?x64xf32>
  %b = hyc.quant.matmul %h2, %w scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  %c = hyc.quant.matmul %h2, %r {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<8x64xf32>) -> tensor<?x8xf32>
  %y2 = hyc.silu_mul %y, %y : tensor<?x6xf32>
  %d = hyc.quant.matmul %y2, %w6 scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x6xf32>, tensor<32x6xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  %e = hyc.quant.matmul %y2, %w6 scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x6xf32>, tensor<32x6xi8>, tensor<32xf32>) -> tensor<?x32xf32>
  return %a, %b, %c, %d, %e : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x8xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}
