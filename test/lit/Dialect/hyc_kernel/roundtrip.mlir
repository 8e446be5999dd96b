// RUN: hyc-opt %s -split-input-file | hyc-opt -split-input-file | FileCheck %s
// RUN: hyc-opt %s -split-input-file -mlir-print-op-generic | hyc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @gemm
// CHECK: %[[H:.+]] = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32](bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>, zero_init} -> i64
// CHECK: hyc_kernel.tile_config %[[H]]
// CHECK: hyc_kernel.brgemm %[[H]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?x64xbf16>, memref<2x32x32x2xbf16>, memref<?x32xf32>
// CHECK: hyc_kernel.tile_release
// CHECK: hyc_kernel.pack %{{.*}} into %{{.*}} {inner_tiles = array<i64: 32, 2>} : memref<64x64xbf16> -> memref<2x32x32x2xbf16>
// CHECK: hyc_kernel.brgemm.dispatch [16, 32, 128] ld [128, 32, 32](i8, i8 -> i32) {b_layout = "vnni4", epilogue = #hyc<epilogue silu_mul>} -> i64
func.func @gemm(%a: memref<?x64xbf16>, %b: memref<2x32x32x2xbf16>, %c: memref<?x32xf32>, %nb: index, %w: memref<64x64xbf16>) {
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", zero_init, epilogue = #hyc<epilogue none>} -> i64
  hyc_kernel.tile_config %h
  hyc_kernel.brgemm %h, %a, %b, %c, %nb : memref<?x64xbf16>, memref<2x32x32x2xbf16>, memref<?x32xf32>
  hyc_kernel.tile_release
  hyc_kernel.pack %w into %b {inner_tiles = array<i64: 32, 2>} : memref<64x64xbf16> -> memref<2x32x32x2xbf16>
  %h8 = hyc_kernel.brgemm.dispatch [16, 32, 128] ld [128, 32, 32] (i8, i8 -> i32) {b_layout = "vnni4", epilogue = #hyc<epilogue silu_mul>} -> i64
  return
}

// -----

!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 64, v_head_dim = 64>

// CHECK-LABEL: func.func @decode
// CHECK: %[[H:.+]] = hyc_kernel.paged_attention.dispatch {head_dim = 64 : i64, kv_splits = 4 : i64, kv_type = bf16, num_heads = 8 : i64, num_kv_heads = 2 : i64, page_size = 16 : i64, v_head_dim = 64 : i64} -> i64
// CHECK: hyc_kernel.paged_attention %[[H]], %{{.*}}, %{{.*}}, %{{.*}} {layer = 0 : i64, scale = 1.250000e-01 : f32} : memref<?x8x64xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 64, v_head_dim = 64>, memref<?x8x64xf32>
func.func @decode(%q: memref<?x8x64xf32>, %c: !cache, %o: memref<?x8x64xf32>) {
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64,
      v_head_dim = 64 : i64, page_size = 16 : i64, kv_splits = 4 : i64, kv_type = bf16} -> i64
  hyc_kernel.paged_attention %h, %q, %c, %o {layer = 0 : i64, scale = 0.125 : f32} : memref<?x8x64xf32>, !cache, memref<?x8x64xf32>
  return
}
