// RUN: hyc-opt %s --hyc-global-observe-activations -split-input-file | FileCheck %s

// One observer per distinct GEMM input, right after it is produced, naming
// every weight that reads it (q/k/v share one); the output head's input is
// not observed (the head stays 16-bit). A second entry reuses the slots of
// the same feeds, so extend and decode fold into the same maxima.

// CHECK-LABEL: func.func @extend
// CHECK: %[[H:.+]] = hyc.rms_norm
// CHECK-NEXT: hyc.observe %[[H]] slot 0 feeds ["l0.q_proj.weight", "l0.k_proj.weight", "l0.v_proj.weight"] : tensor<?x8xf32>
// CHECK: %[[Q:.+]] = hyc.quant.matmul %[[H]]
// CHECK-NEXT: hyc.observe %[[Q]] slot 1 feeds ["l0.o_proj.weight"] : tensor<?x8xf32>
// CHECK-NOT: hyc.observe
// CHECK: return
// CHECK-LABEL: func.func @decode
// CHECK: hyc.observe %{{.*}} slot 0 feeds ["l0.q_proj.weight", "l0.k_proj.weight", "l0.v_proj.weight"]
// CHECK: hyc.observe %{{.*}} slot 1 feeds ["l0.o_proj.weight"]
// CHECK-LABEL: func.func @helper
// CHECK-NOT: hyc.observe
func.func @extend(%x: tensor<?x8xf32>) -> tensor<?x32xf32> attributes {hyc.entry = "extend"} {
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
  %wh = hyc.param #hyc.param<"f" : "lm_head.weight"> -> tensor<32x8xf32>
  %l = hyc.quant.matmul %o, %wh {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<32x8xf32>) -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}
func.func @decode(%x: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {hyc.entry = "decode"} {
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
  return %o : tensor<?x8xf32>
}
// Not an entry: nothing runs it on its own.
func.func @helper(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wq = hyc.param #hyc.param<"f" : "l0.q_proj.weight"> -> tensor<8x8xf32>
  %q = hyc.quant.matmul %x, %wq {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %q : tensor<?x8xf32>
}
