// RUN: hyc-opt %s -split-input-file -verify-diagnostics

func.func @f() {
  // expected-error@+1 {{shape must be [m, n, k], got 2 values}}
  %h = hyc_kernel.brgemm.dispatch [32, 32] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{leading dims must be [lda, ldb, ldc], got 2 values}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{shape values must be positive, got 0}}
  %h = hyc_kernel.brgemm.dispatch [0, 32, 64] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{lda 32 is smaller than k 64}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [32, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{ldc 16 is smaller than n 32}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 16] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{no kernel for ('bf16', 'i8' -> 'f32')}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (bf16, i8 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{b_layout must be row, vnni2, vnni4 or an integer-code layout (q4_g32, q8_g32, q4k, q5k, q6k, iq4xs, iq4nl, q4z, q4_1, q5_1, q4z128), got "tiles"}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "tiles", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{vnni2 layout needs bf16 or f8E4M3FN B, got 'f32'}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (f32, f32 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{f8E4M3FN B comes in whole blocks of 128 along k, got 200}}
  %h = hyc_kernel.brgemm.dispatch [4, 32, 200] ld [200, 32, 32] (bf16, f8E4M3FN -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{vnni4 layout needs i8 B, got 'bf16'}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni4", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{vnni2 layout needs even k, got 63}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 63] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{vnni4 layout needs k divisible by 4, got 66}}
  %h = hyc_kernel.brgemm.dispatch [32, 32, 66] ld [66, 32, 32] (i8, i8 -> i32) {b_layout = "vnni4", epilogue = #hyc<epilogue none>} -> i64
  return
}

// -----

func.func @f(%a: memref<?x64xf32>, %b: memref<2x32x32x2xbf16>, %c: memref<?x32xf32>, %n: index) {
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  // expected-error@+1 {{operand element types ('f32', 'bf16', 'f32') do not match the dispatched kernel ('bf16', 'bf16', 'f32')}}
  hyc_kernel.brgemm %h, %a, %b, %c, %n : memref<?x64xf32>, memref<2x32x32x2xbf16>, memref<?x32xf32>
  return
}

// -----

func.func @f(%a: memref<?x64xbf16>, %b: memref<2x32x32x2xbf16>, %c: memref<?x16xf32>, %n: index) {
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  // expected-error@+1 {{C has 16 columns, the kernel writes n = 32}}
  hyc_kernel.brgemm %h, %a, %b, %c, %n : memref<?x64xbf16>, memref<2x32x32x2xbf16>, memref<?x16xf32>
  return
}

// -----

func.func @f(%a: memref<?x64xbf16>, %b: memref<2x32x32x2xbf16>, %c: memref<64x32xf32>, %n: index) {
  %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32] (bf16, bf16 -> f32) {b_layout = "vnni2", epilogue = #hyc<epilogue none>} -> i64
  // expected-error@+1 {{C has 64 rows, more than the dispatched m = 32}}
  hyc_kernel.brgemm %h, %a, %b, %c, %n : memref<?x64xbf16>, memref<2x32x32x2xbf16>, memref<64x32xf32>
  return
}

// -----

func.func @f(%s: memref<64xbf16>, %d: memref<2x32x32x2xbf16>) {
  // expected-error@+1 {{source must be [N, K], got 'memref<64xbf16>'}}
  hyc_kernel.pack %s into %d {inner_tiles = array<i64: 32, 2>} : memref<64xbf16> -> memref<2x32x32x2xbf16>
  return
}

// -----

func.func @f(%s: memref<64x64xbf16>, %d: memref<2x32x32x2xbf16>) {
  // expected-error@+1 {{inner_tiles must be two positive values [bn, v]}}
  hyc_kernel.pack %s into %d {inner_tiles = array<i64: 32>} : memref<64x64xbf16> -> memref<2x32x32x2xbf16>
  return
}

// -----

func.func @f(%s: memref<64x64xf32>, %d: memref<2x32x32x2xbf16>) {
  // expected-error@+1 {{element types differ: 'f32' vs 'bf16'}}
  hyc_kernel.pack %s into %d {inner_tiles = array<i64: 32, 2>} : memref<64x64xf32> -> memref<2x32x32x2xbf16>
  return
}

// -----

func.func @f(%s: memref<64x64xbf16>, %d: memref<2x32x64xbf16>) {
  // expected-error@+1 {{dest must be [N/bn, K/v, bn, v], got 'memref<2x32x64xbf16>'}}
  hyc_kernel.pack %s into %d {inner_tiles = array<i64: 32, 2>} : memref<64x64xbf16> -> memref<2x32x64xbf16>
  return
}

// -----

func.func @f(%s: memref<64x64xbf16>, %d: memref<2x16x32x2xbf16>) {
  // expected-error@+1 {{dest dim 1 is 16, expected 32 for a [64, 64] source with tiles [32, 2]}}
  hyc_kernel.pack %s into %d {inner_tiles = array<i64: 32, 2>} : memref<64x64xbf16> -> memref<2x16x32x2xbf16>
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{num_heads 6 is not a positive multiple of num_kv_heads 4}}
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 6 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64, v_head_dim = 64 : i64, page_size = 16 : i64, kv_splits = 1 : i64, kv_type = f32} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{head dims must be positive, got 0 and 64}}
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 0 : i64, v_head_dim = 64 : i64, page_size = 16 : i64, kv_splits = 1 : i64, kv_type = f32} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{page_size must be positive, got 0}}
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, v_head_dim = 64 : i64, page_size = 0 : i64, kv_splits = 1 : i64, kv_type = f32} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{kv_splits must be >= 1, got 0}}
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, v_head_dim = 64 : i64, page_size = 16 : i64, kv_splits = 0 : i64, kv_type = f32} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{kv_type must be f32, bf16 or i8, got 'f16'}}
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, v_head_dim = 64 : i64, page_size = 16 : i64, kv_splits = 1 : i64, kv_type = f16} -> i64
  return
}

// -----

func.func @f(%q: memref<?x8x64xf32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 4, k_head_dim = 64, v_head_dim = 64>, %o: memref<?x8x64xf32>) {
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, v_head_dim = 64 : i64, page_size = 16 : i64, kv_splits = 1 : i64, kv_type = f32} -> i64
  // expected-error@+1 {{dispatched kernel (kv_heads 2, head_dim 64) does not match the cache}}
  hyc_kernel.paged_attention %h, %q, %c, %o {layer = 0 : i64, scale = 0.125 : f32} : memref<?x8x64xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 4, k_head_dim = 64, v_head_dim = 64>, memref<?x8x64xf32>
  return
}

// -----

func.func @f(%q: memref<?x8x64xf32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 4, k_head_dim = 64, v_head_dim = 64>, %o: memref<?x8x64xf32>) {
  %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64, v_head_dim = 64 : i64, page_size = 16 : i64, kv_splits = 1 : i64, kv_type = f32} -> i64
  // expected-error@+1 {{layer 1 is outside the cache's 1 layers}}
  hyc_kernel.paged_attention %h, %q, %c, %o {layer = 1 : i64, scale = 0.125 : f32} : memref<?x8x64xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 4, k_head_dim = 64, v_head_dim = 64>, memref<?x8x64xf32>
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{stream_c (non-temporal C stores) needs f32 C with zero_init, no epilogue and an avx512 isa other than for f8 B, got C 'f32' accumulating, isa "avx512vnni"}}
  %h = hyc_kernel.brgemm.dispatch [14, 32, 64] ld [64, 32, 32] (i8, i8 -> f32) {b_layout = "vnni4", epilogue = #hyc<epilogue none>, isa = "avx512vnni", stream_c} -> i64
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{stream_c (non-temporal C stores) needs f32 C with zero_init, no epilogue and an avx512 isa other than for f8 B, got C 'f32', isa "avx2"}}
  %h = hyc_kernel.brgemm.dispatch [4, 32, 64] ld [64, 32, 32] (i8, i8 -> f32) {b_layout = "vnni4", epilogue = #hyc<epilogue none>, isa = "avx2", stream_c, zero_init} -> i64
  return
}
