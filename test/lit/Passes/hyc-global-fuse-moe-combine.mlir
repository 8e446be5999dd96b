// RUN: hyc-opt %s --hyc-global-fuse-moe-combine -split-input-file | FileCheck %s

// The shared experts' output and then the residual are added inside the
// combine: two adds absorbed, in order.

// CHECK-LABEL: func.func @combine
// CHECK-SAME: (%[[Y:.+]]: tensor<?x8xf32>, %[[ROWS:.+]]: tensor<?xi32>, %[[W:.+]]: tensor<?x2xf32>, %[[SH:.+]]: tensor<?x8xf32>, %[[X:.+]]: tensor<?x8xf32>)
// CHECK: %[[OUT:.+]] = hyc.moe.unpermute %[[Y]], %[[ROWS]], %[[W]] add(%[[SH]], %[[X]] : tensor<?x8xf32>, tensor<?x8xf32>)
// CHECK-NOT: hyc.add
// CHECK: return %[[OUT]]
func.func @combine(%y: tensor<?x8xf32>, %rows: tensor<?xi32>, %w: tensor<?x2xf32>, %shared: tensor<?x8xf32>, %x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %u = hyc.moe.unpermute %y, %rows, %w : tensor<?x8xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
  %s = hyc.add %u, %shared : tensor<?x8xf32>
  %r = hyc.add %x, %s : tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// The shared experts are computed after the routed ones: the fused combine
// takes the add's place, after them.

// CHECK-LABEL: func.func @shared_after
// CHECK: %[[SH:.+]] = hyc.silu_mul
// CHECK: hyc.moe.unpermute %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} add(%[[SH]] : tensor<?x8xf32>)
// CHECK-NOT: hyc.add
func.func @shared_after(%y: tensor<?x8xf32>, %rows: tensor<?xi32>, %w: tensor<?x2xf32>, %x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %u = hyc.moe.unpermute %y, %rows, %w : tensor<?x8xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
  %sh = hyc.silu_mul %x, %x : tensor<?x8xf32>
  %b = hyc.add %u, %sh : tensor<?x8xf32>
  return %b : tensor<?x8xf32>
}

// -----

// Must not fire: the combine has another reader.

// CHECK-LABEL: func.func @no_fusion
// CHECK: %[[U:.+]] = hyc.moe.unpermute %{{[^ ]+}}, %{{[^ ]+}}, %{{[^ ]+}} :
// CHECK: hyc.add %[[U]]
func.func @no_fusion(%y: tensor<?x8xf32>, %rows: tensor<?xi32>, %w: tensor<?x2xf32>, %x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %u = hyc.moe.unpermute %y, %rows, %w : tensor<?x8xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
  %a = hyc.add %u, %x : tensor<?x8xf32>
  return %a, %u : tensor<?x8xf32>, tensor<?x8xf32>
}
