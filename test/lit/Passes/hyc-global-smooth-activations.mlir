// RUN: hyc-opt %s --hyc-global-smooth-activations -split-input-file | FileCheck %s
// RUN: hyc-opt %s --hyc-global-smooth-activations=alpha=0.75 -split-input-file | FileCheck %s --check-prefix=ALPHA
// RUN: not hyc-opt %s --hyc-global-smooth-activations=alpha=1.5 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: hyc-global-smooth-activations: alpha must be in [0, 1], got 1.5

// A decoder layer: the input norm feeds q/k/v, the post-attention norm
// gate/up. Both are groups; o_proj and down_proj read no norm, and the final
// norm feeds the output head, which stays 16-bit: no group.

// CHECK-LABEL: module
// CHECK-SAME: hyc.smooth_groups = [{alpha = 5.000000e-01 : f64, gemms = ["l0.q_proj.weight", "l0.k_proj.weight", "l0.v_proj.weight"], norm = "l0.input_layernorm.weight"}, {alpha = 5.000000e-01 : f64, gemms = ["l0.gate_proj.weight", "l0.up_proj.weight"], norm = "l0.post_attention_layernorm.weight"}]
// ALPHA-LABEL: module
// ALPHA-SAME: alpha = 7.500000e-01 : f64
// CHECK-NOT: o_proj
// CHECK: func.func @layer
module {
func.func @layer(%x: tensor<?x8xf32>) -> tensor<?x32xf32> {
  %n1 = hyc.param #hyc.param<"f" : "l0.input_layernorm.weight"> -> tensor<8xf32>
  %h = hyc.rms_norm %x, %n1 {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wq = hyc.param #hyc.param<"f" : "l0.q_proj.weight"> -> tensor<8x8xf32>
  %wk = hyc.param #hyc.param<"f" : "l0.k_proj.weight"> -> tensor<4x8xf32>
  %wv = hyc.param #hyc.param<"f" : "l0.v_proj.weight"> -> tensor<4x8xf32>
  %q = hyc.quant.matmul %h, %wq {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %k = hyc.quant.matmul %h, %wk {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %v = hyc.quant.matmul %h, %wv {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %wo = hyc.param #hyc.param<"f" : "l0.o_proj.weight"> -> tensor<8x8xf32>
  %o = hyc.quant.matmul %q, %wo {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %r = hyc.add %x, %o : tensor<?x8xf32>
  %n2 = hyc.param #hyc.param<"f" : "l0.post_attention_layernorm.weight"> -> tensor<8xf32>
  %m = hyc.rms_norm %r, %n2 {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wg = hyc.param #hyc.param<"f" : "l0.gate_proj.weight"> -> tensor<16x8xf32>
  %wu = hyc.param #hyc.param<"f" : "l0.up_proj.weight"> -> tensor<16x8xf32>
  %g = hyc.quant.matmul %m, %wg {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %u = hyc.quant.matmul %m, %wu {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %s = hyc.silu_mul %g, %u : tensor<?x16xf32>
  %wd = hyc.param #hyc.param<"f" : "l0.down_proj.weight"> -> tensor<8x16xf32>
  %d = hyc.quant.matmul %s, %wd {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %nf = hyc.param #hyc.param<"f" : "model.norm.weight"> -> tensor<8xf32>
  %f = hyc.rms_norm %d, %nf {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wh = hyc.param #hyc.param<"f" : "lm_head.weight"> -> tensor<32x8xf32>
  %l = hyc.quant.matmul %f, %wh {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<32x8xf32>) -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
}

// -----

// Not exact, so not chosen: a norm result that is also read by something
// other than a GEMM (dividing it would change that reader); a norm weight
// read by a second norm whose result is not the group's input; a GEMM weight
// read again on another input (multiplying its columns would change that
// product); an already quantized GEMM (its int8 weight is what it is).

// CHECK-LABEL: module
// CHECK-SAME: hyc.smooth_groups = []
module {
func.func @unsafe(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %n1 = hyc.param #hyc.param<"f" : "a.norm.weight"> -> tensor<8xf32>
  %h1 = hyc.rms_norm %x, %n1 {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %w1 = hyc.param #hyc.param<"f" : "a.proj.weight"> -> tensor<8x8xf32>
  %a = hyc.quant.matmul %h1, %w1 {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %a2 = hyc.add %a, %h1 : tensor<?x8xf32>

  %n2 = hyc.param #hyc.param<"f" : "b.norm.weight"> -> tensor<8xf32>
  %h2 = hyc.rms_norm %x, %n2 {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %w2 = hyc.param #hyc.param<"f" : "b.proj.weight"> -> tensor<8x8xf32>
  %b = hyc.quant.matmul %h2, %w2 {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %h2b = hyc.rms_norm %y, %n2 {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %b2 = hyc.add %b, %h2b : tensor<?x8xf32>

  %n3 = hyc.param #hyc.param<"f" : "c.norm.weight"> -> tensor<8xf32>
  %h3 = hyc.rms_norm %x, %n3 {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %w3 = hyc.param #hyc.param<"f" : "c.proj.weight"> -> tensor<8x8xf32>
  %c = hyc.quant.matmul %h3, %w3 {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %c2 = hyc.quant.matmul %y, %w3 {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>

  %n4 = hyc.param #hyc.param<"f" : "d.norm.weight"> -> tensor<8xf32>
  %h4 = hyc.rms_norm %x, %n4 {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %w4 = hyc.param #hyc.param<"f" : "d.proj.weight"> {hyc.quantize = "w8a8"} -> tensor<8x8xi8>
  %s4 = hyc.param #hyc.param<"f" : "d.proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<8xf32>
  %d = hyc.quant.matmul %h4, %w4 scale(%s4) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xi8>, tensor<8xf32>) -> tensor<?x8xf32>
  return %a2, %b2, %c2, %d : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
}
