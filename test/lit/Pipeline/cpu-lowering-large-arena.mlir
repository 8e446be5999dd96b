// RUN: hyc-opt %s --hyc-cpu-plan-memory --hyc-cpu-lower-to-kernel --convert-hyc-kernel-to-llvm | FileCheck %s
// Arenas past 256 MiB: buffer offsets are i64 values, not GEP's 29-bit
// embedded constants (which would silently wrap and alias buffers).

// 100000 tokens x 2048 floats = 819200000 bytes per activation.
// CHECK: hyc.arena_bytes = 1638400000 : i64
// CHECK: %[[OFF:.+]] = llvm.mlir.constant(819200000 : i64) : i64
// CHECK: llvm.getelementptr %{{.*}}[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @extend(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !cache) -> (tensor<?x16xf32>, !cache) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [100000] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x2048xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x2048xf32>, tensor<?xi32> -> tensor<?x2048xf32>
  %w = hyc.param #hyc.param<"f" : "w"> -> tensor<2048x2048xf32>
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x2048xf32>, tensor<2048x2048xf32>) -> tensor<?x2048xf32>
  %h = hyc.param #hyc.param<"f" : "head"> -> tensor<16x2048xf32>
  %l = hyc.quant.matmul %y, %h {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x2048xf32>, tensor<16x2048xf32>) -> tensor<?x16xf32>
  return %l, %c : tensor<?x16xf32>, !cache
}
