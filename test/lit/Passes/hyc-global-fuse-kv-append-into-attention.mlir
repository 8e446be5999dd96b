// RUN: hyc-opt %s --hyc-global-fuse-kv-append-into-attention -split-input-file | FileCheck %s

!c = !hyc.kv_cache<num_layers = 2, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>

// Two decode layers: each append + attention pair becomes one op, and the
// next layer's op (and the returned cache) read the fused op's cache.

// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[Q:.+]]: tensor<?x4x8xf32>, %[[K:.+]]: tensor<?x2x8xf32>, %[[V:.+]]: tensor<?x2x8xf32>, %[[C0:.+]]: !hyc.kv_cache
// CHECK-NOT: hyc.kv_cache.append
// CHECK: %[[O0:.+]], %[[C1:.+]] = hyc.paged_attention.append %[[Q]], %[[K]], %[[V]], %[[C0]] {layer = 0 : i64, scale = 3.500000e-01 : f32}
// CHECK: %[[O1:.+]], %[[C2:.+]] = hyc.paged_attention.append %[[O0]], %[[K]], %[[V]], %[[C1]] {layer = 1 : i64, scale = 3.500000e-01 : f32}
// CHECK-NOT: hyc.paged_attention %
// CHECK: return %[[O1]], %[[C2]]
func.func @decode(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>, %c0: !c) -> (tensor<?x4x8xf32>, !c) {
  %c1 = hyc.kv_cache.append %c0, %k, %v {layer = 0 : i64} : !c, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  %o0 = hyc.paged_attention %q, %c1 {layer = 0 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, !c -> tensor<?x4x8xf32>
  %c2 = hyc.kv_cache.append %c1, %k, %v {layer = 1 : i64} : !c, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  %o1 = hyc.paged_attention %o0, %c2 {layer = 1 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, !c -> tensor<?x4x8xf32>
  return %o1, %c2 : tensor<?x4x8xf32>, !c
}

// -----

!c = !hyc.kv_cache<num_layers = 2, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>

// Must not fire: the attention reads another layer than the append wrote,
// and an append whose cache is read before the attention (by another
// attention) keeps its place.

// CHECK-LABEL: func.func @mismatch
// CHECK: hyc.kv_cache.append {{.*}}layer = 0
// CHECK: hyc.paged_attention {{.*}}layer = 1
// CHECK: hyc.kv_cache.append {{.*}}layer = 1
// CHECK: hyc.paged_attention {{.*}}layer = 0
// CHECK: hyc.paged_attention {{.*}}layer = 1
// CHECK-NOT: hyc.paged_attention.append
func.func @mismatch(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>, %c0: !c) -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>) {
  %c1 = hyc.kv_cache.append %c0, %k, %v {layer = 0 : i64} : !c, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  %o0 = hyc.paged_attention %q, %c1 {layer = 1 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, !c -> tensor<?x4x8xf32>
  %c2 = hyc.kv_cache.append %c1, %k, %v {layer = 1 : i64} : !c, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  %o1 = hyc.paged_attention %q, %c2 {layer = 0 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, !c -> tensor<?x4x8xf32>
  %o2 = hyc.paged_attention %q, %c2 {layer = 1 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, !c -> tensor<?x4x8xf32>
  return %o0, %o1, %o2 : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
}

// -----

!m = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>

// Must not fire: MLA's latent append (no values) feeds mla.attention.

// CHECK-LABEL: func.func @mla
// CHECK: hyc.kv_cache.append
// CHECK: hyc.mla.attention
func.func @mla(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %kvb: tensor<128x32xf32>, %lat: tensor<?x1x40xf32>, %c0: !m) -> tensor<?x4x16xf32> {
  %c1 = hyc.kv_cache.append %c0, %lat {layer = 0 : i64} : !m, tensor<?x1x40xf32>
  %o = hyc.mla.attention %qn, %qp, %kvb, %c1 {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !m -> tensor<?x4x16xf32>
  return %o : tensor<?x4x16xf32>
}
