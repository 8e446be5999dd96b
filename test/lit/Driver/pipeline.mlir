// A hand-written hyc module compiles through the pipeline without a checkpoint.
// RUN: hyc compile %s --emit=llvm --target reference -o - | FileCheck %s
// CHECK: @hyc_arena_bytes = {{.*}}constant i64 256
// CHECK: define {{.*}}i32 @hyc_decode_v0(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}})
// CHECK: call void @hyrt_ref_embedding(
// CHECK: call void @hyrt_ref_silu_mul(

!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @decode(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !cache) -> (tensor<?x8xf32>, !cache) attributes {hyc.entry = "decode"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x8xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %y = hyc.silu_mul %x, %x : tensor<?x8xf32>
  %w = hyc.param #hyc.param<"f" : "w"> -> tensor<8x8xf32>
  %z = hyc.quant.matmul %y, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %z, %c : tensor<?x8xf32>, !cache
}
