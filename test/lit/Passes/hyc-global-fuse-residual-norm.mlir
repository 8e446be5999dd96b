// RUN: hyc-opt %s --hyc-global-fuse-residual-norm -split-input-file | FileCheck %s

// The residual stream of a pre-norm block: the add feeding the next norm is
// folded into it, and the later reader of the sum (the next residual add)
// reads the norm's second result.

// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:.+]]: tensor<?x8xf32>, %[[A:.+]]: tensor<?x8xf32>, %[[M:.+]]: tensor<?x8xf32>)
// CHECK: %[[W:.+]] = hyc.param
// CHECK-NOT: hyc.add %[[X]]
// CHECK: %[[Y:.+]], %[[S:.+]] = hyc.rms_norm %[[X]], %[[W]] residual(%[[A]]) {epsilon = 9.99999974E-6 : f32}
// CHECK: %[[OUT:.+]] = hyc.add %[[S]], %[[M]]
// CHECK: return %[[Y]], %[[OUT]]
func.func @block(%x: tensor<?x8xf32>, %attn: tensor<?x8xf32>, %mlp: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = hyc.param #hyc.param<"f" : "post_attention_layernorm.weight"> -> tensor<8xf32>
  %s = hyc.add %x, %attn : tensor<?x8xf32>
  %y = hyc.rms_norm %s, %w {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %out = hyc.add %s, %mlp : tensor<?x8xf32>
  return %y, %out : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Must not fire: the sum is read before the norm (its reader could not see
// a value the norm defines later).

// CHECK-LABEL: func.func @read_before_norm
// CHECK: %[[S:.+]] = hyc.add
// CHECK: hyc.add %[[S]]
// CHECK: hyc.rms_norm %[[S]]
// CHECK-NOT: residual(
func.func @read_before_norm(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = hyc.param #hyc.param<"f" : "norm.weight"> -> tensor<8xf32>
  %s = hyc.add %x, %a : tensor<?x8xf32>
  %t = hyc.add %s, %a : tensor<?x8xf32>
  %y = hyc.rms_norm %s, %w {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y, %t : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Must not fire: the norm already adds a residual, and a norm whose input
// is not an add (Qwen3's q/k norms read a projection) is left alone.

// CHECK-LABEL: func.func @already_fused
// CHECK: hyc.add
// CHECK: hyc.rms_norm %{{.*}}, %{{.*}} residual(
// CHECK: hyc.rms_norm %arg0, %{{.*}} {epsilon
func.func @already_fused(%x: tensor<?x8xf32>, %a: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = hyc.param #hyc.param<"f" : "norm.weight"> -> tensor<8xf32>
  %s = hyc.add %x, %a : tensor<?x8xf32>
  %y, %r = hyc.rms_norm %s, %w residual(%a) {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  %z = hyc.rms_norm %x, %w {epsilon = 1.0e-05 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y, %r, %z : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
