// RUN: hyc-opt %s --hyc-global-fuse-dequant-into-attention="kv-cache=int8" -split-input-file | FileCheck %s
// RUN: hyc-opt %s --hyc-global-fuse-dequant-into-attention="kv-cache=bf16" -split-input-file | FileCheck %s --check-prefix=BF16
// RUN: hyc-opt %s --hyc-global-fuse-dequant-into-attention -split-input-file | FileCheck %s --check-prefix=BF16

// With an int8 cache every op that attends over it (extend, decode, decode
// with its fused append) reads int8 rows + per-row scales: each is marked.
// Appends only write (they quantize), so they stay unmarked. Any other
// cache type (bf16 here, or the default auto) leaves the module as it was.

!c = !hyc.kv_cache<num_layers = 2, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>

// CHECK-LABEL: func.func @extend
// CHECK: hyc.kv_cache.append
// CHECK-NOT: hyc.kv_dequant
// CHECK-SAME: {layer = 0 : i64}
// CHECK: hyc.attention {{.*}}hyc.kv_dequant = "int8"
// CHECK-LABEL: func.func @decode
// CHECK: hyc.paged_attention {{.*}}hyc.kv_dequant = "int8"
// CHECK: hyc.paged_attention.append {{.*}}hyc.kv_dequant = "int8"
// BF16-NOT: hyc.kv_dequant
func.func @extend(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>, %c0: !c) -> (tensor<?x4x8xf32>, !c) {
  %c1 = hyc.kv_cache.append %c0, %k, %v {layer = 0 : i64} : !c, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  %o = hyc.attention %q, %k, %v, %c1 {layer = 0 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, !c -> tensor<?x4x8xf32>
  return %o, %c1 : tensor<?x4x8xf32>, !c
}
func.func @decode(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>, %c0: !c) -> (tensor<?x4x8xf32>, !c) {
  %o0 = hyc.paged_attention %q, %c0 {layer = 0 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, !c -> tensor<?x4x8xf32>
  %o1, %c1 = hyc.paged_attention.append %o0, %k, %v, %c0 {layer = 1 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, !c -> tensor<?x4x8xf32>
  return %o1, %c1 : tensor<?x4x8xf32>, !c
}

// -----

// MLA's latent cache (one "head" of kv_lora_rank + rope elements per
// position, one scale per row) is read by the latent attention: marked too,
// next to the absorb pass's decision when it ran.

!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>
// CHECK-LABEL: func.func @mla
// CHECK: hyc.mla.attention {{.*}}hyc.kv_dequant = "int8"
// BF16-LABEL: func.func @mla
// BF16-NOT: hyc.kv_dequant
func.func @mla(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %kvb: tensor<128x32xf32>, %c: !cache) -> tensor<?x4x16xf32> {
  %o = hyc.mla.attention %qn, %qp, %kvb, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64, hyc.mla_form = "absorbed"} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !cache -> tensor<?x4x16xf32>
  return %o : tensor<?x4x16xf32>
}
