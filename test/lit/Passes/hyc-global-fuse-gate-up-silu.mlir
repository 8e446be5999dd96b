// RUN: hyc-opt %s --hyc-global-fuse-gate-up-silu -split-input-file | FileCheck %s

// A SwiGLU MLP: one GEMM over the brace-named [gate; up] weight with the
// silu_mul epilogue; the separate weights and the silu_mul are gone.

// CHECK-LABEL: func.func @dense
// CHECK-NOT: "m.mlp.gate_proj.weight"
// CHECK: %[[W:.+]] = hyc.param #hyc.param<"f" : "m.mlp.{gate,up}_proj.weight"> -> tensor<96x32xf32>
// CHECK: %[[A:.+]] = hyc.quant.matmul %arg0, %[[W]] {epilogue = #hyc<epilogue silu_mul>, quant = #hyc.quant<f32>} : (tensor<?x32xf32>, tensor<96x32xf32>) -> tensor<?x48xf32>
// CHECK-NOT: hyc.silu_mul
// CHECK: hyc.quant.matmul %[[A]]
func.func @dense(%h: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %wg = hyc.param #hyc.param<"f" : "m.mlp.gate_proj.weight"> -> tensor<48x32xf32>
  %wu = hyc.param #hyc.param<"f" : "m.mlp.up_proj.weight"> -> tensor<48x32xf32>
  %wd = hyc.param #hyc.param<"f" : "m.mlp.down_proj.weight"> -> tensor<32x48xf32>
  %g = hyc.quant.matmul %h, %wg {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %u = hyc.quant.matmul %h, %wu {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %a = hyc.silu_mul %g, %u : tensor<?x48xf32>
  %d = hyc.quant.matmul %a, %wd {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x48xf32>, tensor<32x48xf32>) -> tensor<?x32xf32>
  return %d : tensor<?x32xf32>
}

// -----

// W8A8 (after the quantize policy): int8 weights and their scales are both
// concatenated, keeping their derivation.

// CHECK-LABEL: func.func @w8a8
// CHECK: %[[Q:.+]] = hyc.param #hyc.param<"f" : "m.{gate,up}_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<96x32xi8>
// CHECK: %[[S:.+]] = hyc.param #hyc.param<"f" : "m.{gate,up}_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<96xf32>
// CHECK: hyc.quant.matmul %arg0, %[[Q]] scale(%[[S]]) {epilogue = #hyc<epilogue silu_mul>, quant = #hyc.quant<w8a8>} : (tensor<?x32xf32>, tensor<96x32xi8>, tensor<96xf32>) -> tensor<?x48xf32>
func.func @w8a8(%h: tensor<?x32xf32>) -> tensor<?x48xf32> {
  %qg = hyc.param #hyc.param<"f" : "m.gate_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<48x32xi8>
  %sg = hyc.param #hyc.param<"f" : "m.gate_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
  %qu = hyc.param #hyc.param<"f" : "m.up_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<48x32xi8>
  %su = hyc.param #hyc.param<"f" : "m.up_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
  %g = hyc.quant.matmul %h, %qg scale(%sg) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xi8>, tensor<48xf32>) -> tensor<?x48xf32>
  %u = hyc.quant.matmul %h, %qu scale(%su) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xi8>, tensor<48xf32>) -> tensor<?x48xf32>
  %a = hyc.silu_mul %g, %u : tensor<?x48xf32>
  return %a : tensor<?x48xf32>
}

// -----

// MoE experts: the stacked [E, N, K] weights concatenate along N.

// CHECK-LABEL: func.func @experts
// CHECK: %[[W:.+]] = hyc.param #hyc.param<"f" : "l.experts.*.{gate,up}_proj.weight"> -> tensor<4x96x32xf32>
// CHECK: hyc.moe.grouped_matmul %arg0, %[[W]], %arg1 {epilogue = #hyc<epilogue silu_mul>, quant = #hyc.quant<bf16>} : tensor<?x32xf32>, tensor<4x96x32xf32>, tensor<5xi32> -> tensor<?x48xf32>
// CHECK-NOT: hyc.silu_mul
func.func @experts(%x: tensor<?x32xf32>, %off: tensor<5xi32>) -> tensor<?x48xf32> {
  %wg = hyc.param #hyc.param<"f" : "l.experts.*.gate_proj.weight"> -> tensor<4x48x32xf32>
  %wu = hyc.param #hyc.param<"f" : "l.experts.*.up_proj.weight"> -> tensor<4x48x32xf32>
  %g = hyc.moe.grouped_matmul %x, %wg, %off {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue none>} : tensor<?x32xf32>, tensor<4x48x32xf32>, tensor<5xi32> -> tensor<?x48xf32>
  %u = hyc.moe.grouped_matmul %x, %wu, %off {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue none>} : tensor<?x32xf32>, tensor<4x48x32xf32>, tensor<5xi32> -> tensor<?x48xf32>
  %a = hyc.silu_mul %g, %u : tensor<?x48xf32>
  return %a : tensor<?x48xf32>
}

// -----

// Must not fire: the gate result has another reader; the two GEMMs read
// different inputs; the quantization differs; a bias is present.

// CHECK-LABEL: func.func @no_fusion
// CHECK-NOT: epilogue silu_mul
// CHECK-COUNT-4: hyc.silu_mul
func.func @no_fusion(%h: tensor<?x32xf32>, %h2: tensor<?x32xf32>) -> (tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>) {
  %wg = hyc.param #hyc.param<"f" : "gate_proj.weight"> -> tensor<48x32xf32>
  %wu = hyc.param #hyc.param<"f" : "up_proj.weight"> -> tensor<48x32xf32>
  %b = hyc.param #hyc.param<"f" : "gate_proj.bias"> -> tensor<48xf32>
  %g1 = hyc.quant.matmul %h, %wg {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %u1 = hyc.quant.matmul %h, %wu {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %a1 = hyc.silu_mul %g1, %u1 : tensor<?x48xf32>
  %g2 = hyc.quant.matmul %h, %wg {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %u2 = hyc.quant.matmul %h2, %wu {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %a2 = hyc.silu_mul %g2, %u2 : tensor<?x48xf32>
  %g3 = hyc.quant.matmul %h, %wg {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %u3 = hyc.quant.matmul %h, %wu {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %a3 = hyc.silu_mul %g3, %u3 : tensor<?x48xf32>
  %g4 = hyc.quant.matmul %h, %wg bias(%b) {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>, tensor<48xf32>) -> tensor<?x48xf32>
  %u4 = hyc.quant.matmul %h, %wu {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
  %a4 = hyc.silu_mul %g4, %u4 : tensor<?x48xf32>
  return %a1, %g1, %a2, %a3, %a4 : tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>
}
