// RUN: hyc-opt %s -split-input-file -verify-diagnostics

// expected-error@+1 {{fp8_e4m3 needs block = [n, k] (2 values), got 0}}
func.func private @f() attributes {a = #hyc.quant<fp8_e4m3>}

// -----

// expected-error@+1 {{fp8_e4m3 block sizes must be positive, got [0, 128]}}
func.func private @f() attributes {a = #hyc.quant<fp8_e4m3, block = [0, 128]>}

// -----

// expected-error@+1 {{quant group = 128 is only meaningful for w8a8 and the integer codes (q4, q8, q4k, ...), not bf16}}
func.func private @f() attributes {a = #hyc.quant<bf16, group = 128>}

// -----

// expected-error@+1 {{q4 needs group = 32 (one scale per 32 K-elements), got 128}}
func.func private @f() attributes {a = #hyc.quant<q4, group = 128>}

// -----

// Q6_K's sub-scales are per 16 elements.
// expected-error@+1 {{q6k needs group = 16 (one scale per 16 K-elements), got 32}}
func.func private @f() attributes {a = #hyc.quant<q6k, group = 32>}

// -----

// Integer codes hold their scales: a scale operand is refused.
func.func @codes_scale(%x: tensor<?x64xf32>, %w: tensor<16x64xi8>, %s: tensor<16xf32>) -> tensor<?x16xf32> {
  // expected-error@+1 {{scheme q8 takes no scale operand (its scales are in the weight)}}
  %y = hyc.quant.matmul %x, %w scale(%s) {quant = #hyc.quant<q8, group = 32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<16x64xi8>, tensor<16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// expected-error@+1 {{quant group must be positive, got -4}}
func.func private @f() attributes {a = #hyc.quant<w8a8, group = -4>}

// -----

// expected-error@+1 {{quant block is only meaningful for fp8_e4m3, not w8a8}}
func.func private @f() attributes {a = #hyc.quant<w8a8, block = [128, 128]>}

// -----

// expected-error@+1 {{rope scaling factor must be positive, got 0}}
func.func private @f() attributes {a = #hyc.rope_scaling<linear, factor = 0.0>}

// -----

// expected-error@+1 {{llama3 rope scaling needs original_max_position > 0, got 0}}
func.func private @f() attributes {a = #hyc.rope_scaling<llama3, factor = 8.0>}

// -----

// expected-error@+1 {{llama3 rope scaling needs high_freq_factor (1.000000e+00) > low_freq_factor (4.000000e+00)}}
func.func private @f() attributes {a = #hyc.rope_scaling<llama3, factor = 8.0, low_freq_factor = 4.0, high_freq_factor = 1.0, original_max_position = 8192>}

// -----

// expected-error@+1 {{yarn rope scaling needs beta_fast (1.000000e+00) > beta_slow (3.200000e+01)}}
func.func private @f() attributes {a = #hyc.rope_scaling<yarn, factor = 4.0, original_max_position = 4096, beta_fast = 1.0, beta_slow = 32.0>}

// -----

// expected-error@+1 {{moe top_k must be positive, got 0}}
func.func private @f() attributes {a = #hyc.moe_gating<softmax, top_k = 0>}

// -----

// expected-error@+1 {{moe n_group must be positive, got 0}}
func.func private @f() attributes {a = #hyc.moe_gating<softmax, top_k = 2, n_group = 0>}

// -----

// expected-error@+1 {{moe topk_group must be in [1, n_group = 4], got 5}}
func.func private @f() attributes {a = #hyc.moe_gating<softmax, top_k = 2, n_group = 4, topk_group = 5>}

// -----

// expected-error@+1 {{moe routed_scaling_factor must be positive, got -1}}
func.func private @f() attributes {a = #hyc.moe_gating<softmax, top_k = 2, routed_scaling_factor = -1.0>}

// -----

// expected-error@+1 {{kv_cache needs positive num_layers, num_kv_heads, k_head_dim and non-negative v_head_dim, got 0, 4, 16, 16}}
func.func private @f(!hyc.kv_cache<num_layers = 0, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>)

// -----

func.func @f() {
  // expected-error@+1 {{'hyc.param' op needs a non-empty tensor name}}
  %w = hyc.param #hyc.param<"m" : ""> -> tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{weights must have a static shape, got 'tensor<?xf32>'}}
  %w = hyc.param #hyc.param<"m" : "w"> -> tensor<?xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?xi32>) {
  // expected-error@+1 {{needs one upper bound per dynamic dim: 'tensor<?x?xi32>' has 2, got 1}}
  %y = hyc.assume_bounds %x [4] : tensor<?x?xi32>
  return
}

// -----

func.func @f(%x: tensor<?xi32>) {
  // expected-error@+1 {{upper bounds must be positive, got 0}}
  %y = hyc.assume_bounds %x [0] : tensor<?xi32>
  return
}

// -----

func.func @f(%t: tensor<512x64xf32>, %ids: tensor<?xi32>) {
  // expected-error@+1 {{result width = 32 does not match table width = 64}}
  %e = hyc.embedding %t[%ids] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x32xf32>
  return
}

// -----

func.func @f(%t: tensor<512x64xf32>, %ids: tensor<?x2xi32>) {
  // expected-error@+1 {{ids must have rank 1, got 'tensor<?x2xi32>'}}
  %e = hyc.embedding %t[%ids] : tensor<512x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%t: tensor<512x64xf32>, %ids: tensor<3xi32>) {
  // expected-error@+1 {{result rows = 4 does not match number of ids = 3}}
  %e = hyc.embedding %t[%ids] : tensor<512x64xf32>, tensor<3xi32> -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<32xf32>) {
  // expected-error@+1 {{weight size = 32 does not match input last dim = 64}}
  %y = hyc.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<32xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error@+1 {{epsilon must be positive, got 0}}
  %y = hyc.rms_norm %x, %w {epsilon = 0.0 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<64x2xf32>) {
  // expected-error@+1 {{weight must have rank 1, got 'tensor<64x2xf32>'}}
  %y = hyc.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64x2xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error@+1 {{result type 'tensor<?x32xf32>' must equal input type 'tensor<?x64xf32>'}}
  %y = hyc.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %r: tensor<?x64xf32>) {
  // expected-error@+1 {{residual_out is returned exactly when a residual operand is given}}
  %y = hyc.rms_norm %x, %w residual(%r) {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %r: tensor<?x32xf32>) {
  // expected-error@+1 {{residual type 'tensor<?x32xf32>' must equal input type 'tensor<?x64xf32>'}}
  %y, %s = hyc.rms_norm %x, %w residual(%r) {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x32xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>)
  return
}

// -----

func.func @f(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error@+1 {{rotary_dim must be positive and even, got 15}}
  %y = hyc.rope %x, %p {style = #hyc<rope_style normal>, rotary_dim = 15 : i64, theta = 1.0e4 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x4x16xf32>, tensor<?xi32> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error@+1 {{rotary_dim 32 exceeds head_dim 16}}
  %y = hyc.rope %x, %p {style = #hyc<rope_style normal>, rotary_dim = 32 : i64, theta = 1.0e4 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x4x16xf32>, tensor<?xi32> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error@+1 {{theta must be positive, got -1}}
  %y = hyc.rope %x, %p {style = #hyc<rope_style normal>, rotary_dim = 16 : i64, theta = -1.0 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x4x16xf32>, tensor<?xi32> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error@+1 {{input [tokens, heads, head_dim] must have rank 3, got 'tensor<?x64xf32>'}}
  %y = hyc.rope %x, %p {style = #hyc<rope_style normal>, rotary_dim = 16 : i64, theta = 1.0e4 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<3x4x16xf32>, %p: tensor<2xi32>) {
  // expected-error@+1 {{positions = 2 does not match input tokens = 3}}
  %y = hyc.rope %x, %p {style = #hyc<rope_style normal>, rotary_dim = 16 : i64, theta = 1.0e4 : f64, scaling = #hyc.rope_scaling<none>} : tensor<3x4x16xf32>, tensor<2xi32> -> tensor<3x4x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error@+1 {{result type 'tensor<?x4x8xf32>' must equal input type 'tensor<?x4x16xf32>'}}
  %y = hyc.rope %x, %p {style = #hyc<rope_style normal>, rotary_dim = 16 : i64, theta = 1.0e4 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x4x16xf32>, tensor<?xi32> -> tensor<?x4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>) {
  // expected-error@+1 {{activation quantization supports w8a8 only, got bf16}}
  %q, %s = hyc.quant.quantize %x {quant = #hyc.quant<bf16>} : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x1xf32>
  return
}

// -----

func.func @f(%x: tensor<?x96xf32>) {
  // expected-error@+1 {{group size 64 does not divide K = 96}}
  %q, %s = hyc.quant.quantize %x {quant = #hyc.quant<w8a8, group = 64>} : tensor<?x96xf32> -> tensor<?x96xi8>, tensor<?x1xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>) {
  // expected-error@+1 {{scale must be [?, 1], got 'tensor<?x2xf32>'}}
  %q, %s = hyc.quant.quantize %x {quant = #hyc.quant<w8a8>} : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>) {
  // expected-error@+1 {{quantized result shape of 'tensor<?x32xi8>' must equal the input shape of 'tensor<?x64xf32>'}}
  %q, %s = hyc.quant.quantize %x {quant = #hyc.quant<w8a8>} : tensor<?x64xf32> -> tensor<?x32xi8>, tensor<?x1xf32>
  return
}

// -----

func.func @f(%q: tensor<64x64xi8>, %s: tensor<64xf32>) {
  // expected-error@+1 {{needs a w8a8 or fp8_e4m3 scheme, got bf16}}
  %d = hyc.quant.dequantize %q, %s {quant = #hyc.quant<bf16>} : tensor<64x64xi8>, tensor<64xf32> -> tensor<64x64xf32>
  return
}

// -----

func.func @f(%q: tensor<64x64xi8>, %s: tensor<64xf32>) {
  // expected-error@+1 {{result shape of 'tensor<64x32xf32>' must equal the input shape of 'tensor<64x64xi8>'}}
  %d = hyc.quant.dequantize %q, %s {quant = #hyc.quant<w8a8>} : tensor<64x64xi8>, tensor<64xf32> -> tensor<64x32xf32>
  return
}

// -----

func.func @f(%q: tensor<64x64xi8>, %s: tensor<2x2xf32>) {
  // expected-error@+1 {{scheme fp8_e4m3 needs an f8E4M3FN weight, got 'i8'}}
  %d = hyc.quant.dequantize %q, %s {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>} : tensor<64x64xi8>, tensor<2x2xf32> -> tensor<64x64xf32>
  return
}

// -----

func.func @f(%q: tensor<256x256xf8E4M3FN>, %s: tensor<2x3xf32>) {
  // expected-error@+1 {{fp8_e4m3 block scale for a [256, 256] weight with block [128, 128] must be [2, 2], got 'tensor<2x3xf32>'}}
  %d = hyc.quant.dequantize %q, %s {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>} : tensor<256x256xf8E4M3FN>, tensor<2x3xf32> -> tensor<256x256xf32>
  return
}

// -----

func.func @f(%q: tensor<64x256xi8>, %s: tensor<64x4xf32>) {
  // expected-error@+1 {{w8a8 group-128 scale must be [64, 2], got 'tensor<64x4xf32>'}}
  %d = hyc.quant.dequantize %q, %s {quant = #hyc.quant<w8a8, group = 128>} : tensor<64x256xi8>, tensor<64x4xf32> -> tensor<64x256xf32>
  return
}

// -----

// A K that the group does not divide ends in a shorter group: K = 200 has
// two groups of 128.
func.func @f(%q: tensor<64x200xi8>, %s: tensor<64x1xf32>) {
  // expected-error@+1 {{w8a8 group-128 scale must be [64, 2], got 'tensor<64x1xf32>'}}
  %d = hyc.quant.dequantize %q, %s {quant = #hyc.quant<w8a8, group = 128>} : tensor<64x200xi8>, tensor<64x1xf32> -> tensor<64x200xf32>
  return
}

// -----

func.func @f(%q: tensor<64x64xi8>, %s: tensor<32xf32>) {
  // expected-error@+1 {{w8a8 per-channel scale must be [64] or [64, 1], got 'tensor<32xf32>'}}
  %d = hyc.quant.dequantize %q, %s {quant = #hyc.quant<w8a8>} : tensor<64x64xi8>, tensor<32xf32> -> tensor<64x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x32xf32>) {
  // expected-error@+1 {{input K = 64 does not match weight K = 32}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x32xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xbf16>) {
  // expected-error@+1 {{scheme f32 needs an f32 weight, got 'bf16'}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xbf16>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xi8>) {
  // expected-error@+1 {{scheme bf16 needs a bf16 (or f32, converted when packed) weight, got 'i8'}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xi8>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error@+1 {{scheme w8a8 needs an i8 weight, got 'f32'}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xi8>) {
  // expected-error@+1 {{w8a8 needs a weight scale operand}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xi8>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>, %s: tensor<128xf32>) {
  // expected-error@+1 {{scheme f32 takes no scale operand}}
  %y = hyc.quant.matmul %x, %w scale(%s) {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf8E4M3FN>) {
  // expected-error@+1 {{fp8_e4m3 needs a block scale operand}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xf8E4M3FN>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<127x64xf32>) {
  // expected-error@+1 {{silu_mul epilogue needs an even number of weight rows (gate | up), got 127}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue silu_mul>} : (tensor<?x64xf32>, tensor<127x64xf32>) -> tensor<?x63xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error@+1 {{result N = 128 does not match half the weight rows (silu_mul) = 64}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue silu_mul>} : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error@+1 {{result N = 64 does not match weight rows N = 128}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<64xf32>) {
  // expected-error@+1 {{bias must be [128], got 'tensor<64xf32>'}}
  %y = hyc.quant.matmul %x, %w bias(%b) {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<64xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error@+1 {{a residual operand is given exactly with the residual_add epilogue (epilogue is residual_add)}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue residual_add>} : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>, %r: tensor<?x64xf32>) {
  // expected-error@+1 {{residual type 'tensor<?x64xf32>' must equal result type 'tensor<?x128xf32>'}}
  %y = hyc.quant.matmul %x, %w residual(%r) {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue residual_add>} : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<?x64xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error@+1 {{result rows = 5 does not match input rows = 4}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<4x64xf32>, tensor<128x64xf32>) -> tensor<5x128xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<128x64x2xf32>) {
  // expected-error@+1 {{weight [N, K] must have rank 2, got 'tensor<128x64x2xf32>'}}
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64x2xf32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, %k: tensor<?x4x16xf32>) {
  // expected-error@+1 {{layer 2 is outside the cache's 2 layers}}
  %c1 = hyc.kv_cache.append %c, %k, %k {layer = 2 : i64} : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, tensor<?x4x16xf32>, tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, %k: tensor<?x2x16xf32>) {
  // expected-error@+1 {{key heads = 2 does not match cache num_kv_heads = 4}}
  %c1 = hyc.kv_cache.append %c, %k, %k {layer = 0 : i64} : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, tensor<?x2x16xf32>, tensor<?x2x16xf32>
  return
}

// -----

func.func @f(%c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, %k: tensor<?x4x8xf32>) {
  // expected-error@+1 {{key dim = 8 does not match cache k_head_dim = 16}}
  %c1 = hyc.kv_cache.append %c, %k, %k {layer = 0 : i64} : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
  return
}

// -----

func.func @f(%c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, %k: tensor<?x4x16xf32>) {
  // expected-error@+1 {{the cache has v_head_dim = 16 but no value was given}}
  %c1 = hyc.kv_cache.append %c, %k {layer = 0 : i64} : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>, %k: tensor<?x1x40xf32>) {
  // expected-error@+1 {{the cache has v_head_dim = 0 (latent cache) but a value operand was given}}
  %c1 = hyc.kv_cache.append %c, %k, %k {layer = 0 : i64} : !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>, tensor<?x1x40xf32>, tensor<?x1x40xf32>
  return
}

// -----

func.func @f(%c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x8xf32>) {
  // expected-error@+1 {{value dim = 8 does not match cache v_head_dim = 16}}
  %c1 = hyc.kv_cache.append %c, %k, %v {layer = 0 : i64} : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, tensor<?x4x16xf32>, tensor<?x4x8xf32>
  return
}

// -----

func.func @f(%c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, %k: tensor<3x4x16xf32>, %v: tensor<2x4x16xf32>) {
  // expected-error@+1 {{value tokens = 2 does not match key tokens = 3}}
  %c1 = hyc.kv_cache.append %c, %k, %v {layer = 0 : i64} : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, tensor<3x4x16xf32>, tensor<2x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x6x16xf32>, %k: tensor<?x4x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{query heads 6 are not a multiple of KV heads 4}}
  %o = hyc.attention %q, %k, %k, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x6x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x6x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x8xf32>, %k: tensor<?x4x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{query dim = 8 does not match key dim = 16}}
  %o = hyc.attention %q, %k, %k, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x8x8xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{key heads = 2 does not match cache num_kv_heads = 4}}
  %o = hyc.attention %q, %k, %k, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{scale must be positive, got -1}}
  %o = hyc.attention %q, %k, %k, %c {layer = 0 : i64, scale = -1.0 : f32} : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{layer 5 is outside the cache's 2 layers}}
  %o = hyc.attention %q, %k, %k, %c {layer = 5 : i64, scale = 0.25 : f32} : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{result heads = 4 does not match query heads = 8}}
  %o = hyc.attention %q, %k, %k, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%q: tensor<3x8x16xf32>, %k: tensor<2x4x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{key tokens = 2 does not match query tokens = 3}}
  %o = hyc.attention %q, %k, %k, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<3x8x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<3x8x16xf32>
  return
}

// -----

!c4 = !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>
func.func @f(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x4x16xf32>, %c: !c4) {
  // expected-error@+1 {{key heads = 2 does not match cache num_kv_heads = 4}}
  %o, %c1 = hyc.paged_attention.append %q, %k, %v, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x4x16xf32>, !c4 -> tensor<?x8x16xf32>
  return
}

// -----

!c4 = !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>
func.func @f(%q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x8xf32>, %c: !c4) {
  // expected-error@+1 {{value dim = 8 does not match cache v_head_dim = 16}}
  %o, %c1 = hyc.paged_attention.append %q, %k, %v, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x8xf32>, !c4 -> tensor<?x8x16xf32>
  return
}

// -----

!c4 = !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>
func.func @f(%q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %c: !c4) {
  // expected-error@+1 {{layer 2 is outside the cache's 2 layers}}
  %o, %c1 = hyc.paged_attention.append %q, %k, %v, %c {layer = 2 : i64, scale = 0.25 : f32} : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !c4 -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x6x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{query heads 6 are not a multiple of KV heads 4}}
  %o = hyc.paged_attention %q, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x6x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x6x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{kv_splits must be >= 1, got 0}}
  %o = hyc.paged_attention %q, %c {layer = 0 : i64, scale = 0.25 : f32, kv_splits = 0 : i64} : tensor<?x8x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x40xf32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>) {
  // expected-error@+1 {{needs a cache with values (v_head_dim > 0); use hyc.mla.attention for latent caches}}
  %o = hyc.paged_attention %q, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x8x40xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0> -> tensor<?x8x40xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x16xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{result dim = 8 does not match cache v_head_dim = 16}}
  %o = hyc.paged_attention %q, %c {layer = 0 : i64, scale = 0.25 : f32} : tensor<?x8x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x8x8xf32>
  return
}

// -----

func.func @f(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %w: tensor<128x32xf32>, %c: !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>) {
  // expected-error@+1 {{needs a latent cache (num_kv_heads = 1, v_head_dim = 0), got}}
  %o = hyc.mla.attention %qn, %qp, %w, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %w: tensor<128x24xf32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>) {
  // expected-error@+1 {{MLA ranks inconsistent: cache k_head_dim 40 must equal kv_lora_rank 24 + rope dim 8}}
  %o = hyc.mla.attention %qn, %qp, %w, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x24xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %w: tensor<96x32xf32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>) {
  // expected-error@+1 {{kv_b rows = 96 does not match heads * (nope + v_head_dim) = 128}}
  %o = hyc.mla.attention %qn, %qp, %w, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<96x32xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%qn: tensor<?x4x16xf32>, %qp: tensor<?x2x8xf32>, %w: tensor<128x32xf32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>) {
  // expected-error@+1 {{q_pe heads = 2 does not match q_nope heads = 4}}
  %o = hyc.mla.attention %qn, %qp, %w, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x2x8xf32>, tensor<128x32xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %w: tensor<128x32xf32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>) {
  // expected-error@+1 {{v_head_dim must be positive, got 0}}
  %o = hyc.mla.attention %qn, %qp, %w, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 0 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0> -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f(%l: tensor<?x8xf32>) {
  // expected-error@+1 {{top_k 9 exceeds num_experts 8}}
  %w, %i = hyc.moe.route %l {gating = #hyc.moe_gating<softmax, top_k = 9>} : tensor<?x8xf32> -> tensor<?x9xf32>, tensor<?x9xi32>
  return
}

// -----

func.func @f(%l: tensor<?x8xf32>) {
  // expected-error@+1 {{n_group 3 does not divide num_experts 8}}
  %w, %i = hyc.moe.route %l {gating = #hyc.moe_gating<softmax, top_k = 2, n_group = 3>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%l: tensor<?x8xf32>) {
  // expected-error@+1 {{top_k 4 exceeds the 2 experts in the kept topk_group 1 groups}}
  %w, %i = hyc.moe.route %l {gating = #hyc.moe_gating<sigmoid, top_k = 4, n_group = 4, topk_group = 1>} : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  return
}

// -----

func.func @f(%l: tensor<?x8xf32>) {
  // expected-error@+1 {{top2_sum group score needs >= 2 experts per group, got 1}}
  %w, %i = hyc.moe.route %l {gating = #hyc.moe_gating<sigmoid, top_k = 2, n_group = 8, topk_group = 2, group_score = top2_sum>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%l: tensor<?x8xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{correction bias must be [8], got 'tensor<4xf32>'}}
  %w, %i = hyc.moe.route %l bias(%b : tensor<4xf32>) {gating = #hyc.moe_gating<sigmoid, top_k = 2>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%l: tensor<?x8xf32>) {
  // expected-error@+1 {{output width = 3 does not match top_k = 2}}
  %w, %i = hyc.moe.route %l {gating = #hyc.moe_gating<softmax, top_k = 2>} : tensor<?x8xf32> -> tensor<?x3xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%l: tensor<?x?xf32>) {
  // expected-error@+1 {{number of experts must be static}}
  %w, %i = hyc.moe.route %l {gating = #hyc.moe_gating<softmax, top_k = 2>} : tensor<?x?xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error@+1 {{offsets size = 8 does not match num_experts + 1 = 9}}
  %px, %o, %r = hyc.moe.permute %x, %i {num_experts = 8 : i64} : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>, tensor<8xi32>, tensor<?xi32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error@+1 {{num_experts must be positive, got 0}}
  %px, %o, %r = hyc.moe.permute %x, %i {num_experts = 0 : i64} : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>, tensor<1xi32>, tensor<?xi32>
  return
}

// -----

func.func @f(%x: tensor<4x64xf32>, %i: tensor<4x2xi32>) {
  // expected-error@+1 {{result rows = 4 does not match tokens * top_k = 8}}
  %px, %o, %r = hyc.moe.permute %x, %i {num_experts = 8 : i64} : tensor<4x64xf32>, tensor<4x2xi32> -> tensor<4x64xf32>, tensor<9xi32>, tensor<4xi32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<8x64x32xf32>, %o: tensor<9xi32>) {
  // expected-error@+1 {{input K = 64 does not match weight K = 32}}
  %h = hyc.moe.grouped_matmul %x, %w, %o {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : tensor<?x64xf32>, tensor<8x64x32xf32>, tensor<9xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<8x64x64xf32>, %o: tensor<8xi32>) {
  // expected-error@+1 {{offsets size = 8 does not match experts + 1 = 9}}
  %h = hyc.moe.grouped_matmul %x, %w, %o {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<8xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<8x64x64xi8>, %o: tensor<9xi32>) {
  // expected-error@+1 {{scheme w8a8 needs a scale operand}}
  %h = hyc.moe.grouped_matmul %x, %w, %o {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : tensor<?x64xf32>, tensor<8x64x64xi8>, tensor<9xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<8x64x64xf32>, %o: tensor<9xi32>, %s: tensor<8x64xf32>) {
  // expected-error@+1 {{scheme f32 takes no scale operand}}
  %h = hyc.moe.grouped_matmul %x, %w, %o scale(%s : tensor<8x64xf32>) {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<9xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<8x64x64xf32>, %o: tensor<9xi32>) {
  // expected-error@+1 {{residual_add is not supported on expert GEMMs}}
  %h = hyc.moe.grouped_matmul %x, %w, %o {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue residual_add>} : tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<9xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %w: tensor<8x64x64xf32>, %o: tensor<9xi32>) {
  // expected-error@+1 {{result N = 64 does not match half the weight rows (silu_mul) = 32}}
  %h = hyc.moe.grouped_matmul %x, %w, %o {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue silu_mul>} : tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<9xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%y: tensor<?x64xf32>, %r: tensor<?xi32>, %w: tensor<?x2xf32>) {
  // expected-error@+1 {{result width = 32 does not match input width = 64}}
  %o = hyc.moe.unpermute %y, %r, %w : tensor<?x64xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @f(%y: tensor<8x64xf32>, %r: tensor<6xi32>, %w: tensor<4x2xf32>) {
  // expected-error@+1 {{rows size = 6 does not match input rows = 8}}
  %o = hyc.moe.unpermute %y, %r, %w : tensor<8x64xf32>, tensor<6xi32>, tensor<4x2xf32> -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%y: tensor<8x64xf32>, %r: tensor<8xi32>, %w: tensor<4x2xf32>) {
  // expected-error@+1 {{result rows = 3 does not match weights rows = 4}}
  %o = hyc.moe.unpermute %y, %r, %w : tensor<8x64xf32>, tensor<8xi32>, tensor<4x2xf32> -> tensor<3x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>) {
  // expected-error@+1 {{group_size must be >= 1, got 0}}
  %r = hyc.collective.all_reduce %x {kind = #hyc<reduce_kind sum>, group_size = 0 : i64} : tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>) {
  // expected-error@+1 {{result dim 1 = 64 does not match input dim * group_size = 128}}
  %r = hyc.collective.all_gather %x {dim = 1 : i64, group_size = 2 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>) {
  // expected-error@+1 {{dim 2 is outside rank 2}}
  %r = hyc.collective.all_gather %x {dim = 2 : i64, group_size = 2 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>) {
  // expected-error@+1 {{group_size must be >= 1, got 0}}
  %r = hyc.collective.all_gather %x {dim = 1 : i64, group_size = 0 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @f(%x: tensor<6x32xf32>) {
  // expected-error@+1 {{group_size 4 does not divide split dim 0 of size 6}}
  %r = hyc.collective.all_to_all %x {split_dim = 0 : i64, concat_dim = 1 : i64, group_size = 4 : i64} : tensor<6x32xf32> -> tensor<1x128xf32>
  return
}

// -----

func.func @f(%x: tensor<8x32xf32>) {
  // expected-error@+1 {{result dim 0 = 8 does not match exchanged input dim = 4}}
  %r = hyc.collective.all_to_all %x {split_dim = 0 : i64, concat_dim = 1 : i64, group_size = 2 : i64} : tensor<8x32xf32> -> tensor<8x32xf32>
  return
}

// -----

func.func @f(%x: tensor<8x32xf32>) {
  // expected-error@+1 {{split_dim 0 / concat_dim 3 outside rank 2}}
  %r = hyc.collective.all_to_all %x {split_dim = 0 : i64, concat_dim = 3 : i64, group_size = 2 : i64} : tensor<8x32xf32> -> tensor<4x64xf32>
  return
}

// -----

func.func @f(%y: tensor<?x8xf32>, %rows: tensor<?xi32>, %w: tensor<?x2xf32>, %a: tensor<?x4xf32>) {
  // expected-error@+1 {{addend type 'tensor<?x4xf32>' does not match the result type 'tensor<?x8xf32>'}}
  %u = hyc.moe.unpermute %y, %rows, %w add(%a : tensor<?x4xf32>) : tensor<?x8xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%y: tensor<?x8xf32>, %rows: tensor<?xi32>, %w: tensor<?x2xf32>, %a: tensor<?x8xf32>) {
  // expected-error@+1 {{takes at most 2 addends, got 3}}
  %u = hyc.moe.unpermute %y, %rows, %w add(%a, %a, %a : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) : tensor<?x8xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @observe_rank(%x: tensor<?x4x16xf32>) {
  // expected-error@+1 {{observes [tokens, channels] rows, got rank 3}}
  hyc.observe %x slot 0 feeds ["a.weight"] : tensor<?x4x16xf32>
  return
}

// -----

func.func @observe_slot(%x: tensor<?x16xf32>) {
  // expected-error@+1 {{slot must be non-negative, got -1}}
  hyc.observe %x slot -1 feeds ["a.weight"] : tensor<?x16xf32>
  return
}

// -----

func.func @observe_feeds(%x: tensor<?x16xf32>) {
  // expected-error@+1 {{feeds must name at least one weight}}
  hyc.observe %x slot 0 feeds [] : tensor<?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error@+1 {{expects counts of static size 2 * group_size = 4, got 'tensor<2xi32>'}}
  %r, %ri, %rw, %s, %n = hyc.moe.dispatch %x, %i, %w {experts_per_rank = 4 : i64, group_size = 2 : i64}
      : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
      -> tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x64xf32>, %i: tensor<?x2xi32>, %w: tensor<?x2xf32>) {
  // expected-error@+1 {{expected rows shaped like input, row_ids and sent like ids, and weights and row_weights like ids (f32)}}
  %r, %ri, %rw, %s, %n = hyc.moe.dispatch %x, %i, %w {experts_per_rank = 4 : i64, group_size = 2 : i64}
      : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
      -> tensor<?x32xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<4xi32>
  return
}

// -----

func.func @f(%i: tensor<?x2xi32>, %z: tensor<?x64xf32>, %s: tensor<?x2xi32>, %n: tensor<4xi32>) {
  // expected-error@+1 {{group_size must be positive, got 0}}
  %y = hyc.moe.undispatch %i, %z, %s, %n {group_size = 0 : i64}
      : tensor<?x2xi32>, tensor<?x64xf32>, tensor<?x2xi32>, tensor<4xi32> -> tensor<?x64xf32>
  return
}
