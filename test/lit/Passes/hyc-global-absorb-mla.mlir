// RUN: hyc-opt %s --hyc-global-absorb-mla -split-input-file | FileCheck %s
// RUN: hyc-opt %s --hyc-global-absorb-mla --hyc-cpu-select-lowering-strategy="target=avx512 threads=2" -split-input-file | FileCheck %s --check-prefix=STRATEGY
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 threads=2" -split-input-file | FileCheck %s --check-prefix=PLAIN

// MLA over the latent cache in both entries is marked absorbed; the CPU
// strategy then runs it on the absorbed kernel, splitting a decode token's
// positions over the threads (one KV head) and reading a bf16 cache, and
// lets an extend step take the plain form where it costs less, weighing
// the expansion's multiply-adds by tile / 100: 70 where the host runs it on
// bf16 dot products, 300 on fp32 kernels (decode: 0, never). Without
// the pass the op stays on the plain reference kernel and the cache fp32.

// CHECK-LABEL: func.func @extend
// CHECK: hyc.mla.attention {{.*}}hyc.mla_form = "absorbed"
// CHECK-LABEL: func.func @decode
// CHECK: hyc.mla.attention {{.*}}hyc.mla_form = "absorbed"
// STRATEGY: module attributes {hyc_cpu.kv_cache_dtype = "bf16"}
// STRATEGY-LABEL: func.func @extend
// STRATEGY: hyc.mla.attention {{.*}}#hyc_cpu.lowering_config<kernel = "mla_absorbed", tile = [70, 300], threads = 2>
// STRATEGY-LABEL: func.func @decode
// STRATEGY: hyc.mla.attention {{.*}}#hyc_cpu.lowering_config<kernel = "mla_absorbed", tile = [0, 0], threads = 2, kv_splits = 2>
// PLAIN: module attributes {hyc_cpu.kv_cache_dtype = "f32"}
// PLAIN: hyc.mla.attention {{.*}}<kernel = "reference">
// PLAIN-NOT: mla_absorbed
!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>
func.func @extend(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %kvb: tensor<128x32xf32>, %c: !cache) -> tensor<?x4x16xf32> attributes {hyc.entry = "extend"} {
  %o = hyc.mla.attention %qn, %qp, %kvb, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !cache -> tensor<?x4x16xf32>
  return %o : tensor<?x4x16xf32>
}
func.func @decode(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %kvb: tensor<128x32xf32>, %c: !cache) -> tensor<?x4x16xf32> attributes {hyc.entry = "decode"} {
  %o = hyc.mla.attention %qn, %qp, %kvb, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !cache -> tensor<?x4x16xf32>
  return %o : tensor<?x4x16xf32>
}

// -----

// A kv_b the kernel cannot read in place (bf16 here) keeps the plain form.

// CHECK-LABEL: func.func @bf16_kv_b
// CHECK-NOT: hyc.mla_form
!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>
func.func @bf16_kv_b(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %kvb: tensor<128x32xbf16>, %c: !cache) -> tensor<?x4x16xf32> attributes {hyc.entry = "decode"} {
  %o = hyc.mla.attention %qn, %qp, %kvb, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xbf16>, !cache -> tensor<?x4x16xf32>
  return %o : tensor<?x4x16xf32>
}
