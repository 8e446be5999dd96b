// RUN: hyc-opt %s -split-input-file | hyc-opt -split-input-file | FileCheck %s
// RUN: hyc-opt %s -split-input-file -mlir-print-op-generic | hyc-opt -split-input-file | FileCheck %s

!cache = !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>

// CHECK-LABEL: func.func @dense_block
// CHECK: hyc.param #hyc.param<"model.safetensors" : "embed"> -> tensor<512x64xf32>
// CHECK: hyc.assume_bounds %{{.*}} [64] : tensor<?xi32>
// CHECK: hyc.embedding %{{.*}}[%{{.*}}] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
// CHECK: hyc.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
// CHECK: hyc.rms_norm %{{.*}}, %{{.*}} residual(%{{.*}}) {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK: hyc.quant.matmul %{{.*}}, %{{.*}} {epilogue = #hyc<epilogue none>, quant = #hyc.quant<f32>} : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
// CHECK: hyc.rope %{{.*}}, %{{.*}} {rotary_dim = 16 : i64, scaling = #hyc.rope_scaling<llama3, factor = 8.000000e+00, original_max_position = 8192>, style = #hyc<rope_style neox>, theta = 5.000000e+05 : f64}
// CHECK: hyc.kv_cache.append %{{.*}}, %{{.*}}, %{{.*}} {layer = 1 : i64} : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>, tensor<?x4x16xf32>, tensor<?x4x16xf32>
// CHECK: hyc.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {layer = 1 : i64, scale = 2.500000e-01 : f32}
// CHECK: hyc.paged_attention %{{.*}}, %{{.*}} {kv_splits = 4 : i64, layer = 1 : i64, scale = 2.500000e-01 : f32}
// CHECK: hyc.quant.matmul %{{.*}}, %{{.*}} bias(%{{.*}}) {epilogue = #hyc<epilogue silu_mul>, quant = #hyc.quant<bf16>}
// CHECK: hyc.quant.matmul %{{.*}}, %{{.*}} residual(%{{.*}}) {epilogue = #hyc<epilogue residual_add>, quant = #hyc.quant<bf16>}
// CHECK: hyc.silu_mul %{{.*}}, %{{.*}} : tensor<?x64xf32>
// CHECK: hyc.add %{{.*}}, %{{.*}} : tensor<?x64xf32>
func.func @dense_block(%ids0: tensor<?xi32>, %pos: tensor<?xi32>, %c0: !cache, %q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>) -> (tensor<?x64xf32>, !cache) {
  %table = hyc.param #hyc.param<"model.safetensors" : "embed"> -> tensor<512x64xf32>
  %ids = hyc.assume_bounds %ids0 [64] : tensor<?xi32>
  %x = hyc.embedding %table[%ids] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %nw = hyc.param #hyc.param<"model.safetensors" : "norm"> -> tensor<64xf32>
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %h2, %res = hyc.rms_norm %x, %nw residual(%h) {epsilon = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>)
  %wq = hyc.param #hyc.param<"model.safetensors" : "wq"> -> tensor<128x64xf32>
  %q2d = hyc.quant.matmul %h, %wq {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
  %qr = hyc.rope %q, %pos {style = #hyc<rope_style neox>, rotary_dim = 16 : i64, theta = 5.0e+05 : f64,
                           scaling = #hyc.rope_scaling<llama3, factor = 8.0, original_max_position = 8192>}
      : tensor<?x8x16xf32>, tensor<?xi32> -> tensor<?x8x16xf32>
  %c1 = hyc.kv_cache.append %c0, %k, %k {layer = 1 : i64} : !cache, tensor<?x4x16xf32>, tensor<?x4x16xf32>
  %o = hyc.attention %qr, %k, %k, %c1 {layer = 1 : i64, scale = 0.25 : f32}
      : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !cache -> tensor<?x8x16xf32>
  %o2 = hyc.paged_attention %qr, %c1 {layer = 1 : i64, scale = 0.25 : f32, kv_splits = 4 : i64}
      : tensor<?x8x16xf32>, !cache -> tensor<?x8x16xf32>
  %wgu = hyc.param #hyc.param<"model.safetensors" : "gate_up"> -> tensor<128x64xbf16>
  %b = hyc.param #hyc.param<"model.safetensors" : "bias"> -> tensor<128xf32>
  %act = hyc.quant.matmul %h, %wgu bias(%b) {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue silu_mul>} : (tensor<?x64xf32>, tensor<128x64xbf16>, tensor<128xf32>) -> tensor<?x64xf32>
  %wd = hyc.param #hyc.param<"model.safetensors" : "down"> -> tensor<64x64xbf16>
  %y = hyc.quant.matmul %act, %wd residual(%x) {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue residual_add>} : (tensor<?x64xf32>, tensor<64x64xbf16>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %s = hyc.silu_mul %y, %act : tensor<?x64xf32>
  %z = hyc.add %s, %h2 : tensor<?x64xf32>
  return %z, %c1 : tensor<?x64xf32>, !cache
}

// -----

!latent = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>

// CHECK-LABEL: func.func @mla_moe
// CHECK: hyc.kv_cache.append %{{.*}}, %{{.*}} {layer = 0 : i64} : !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>, tensor<?x1x40xf32>
// CHECK: hyc.mla.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {layer = 0 : i64, scale = 1.000000e-01 : f32, v_head_dim = 16 : i64}
// CHECK: hyc.moe.route %{{.*}} bias(%{{.*}} : tensor<8xf32>) {gating = #hyc.moe_gating<sigmoid, top_k = 2, n_group = 4, topk_group = 2, group_score = top2_sum, renormalize = true, routed_scaling_factor = 2.500000e+00>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
// CHECK: hyc.moe.route %{{.*}} {gating = #hyc.moe_gating<softmax, top_k = 2>}
// CHECK: hyc.moe.permute %{{.*}}, %{{.*}} {num_experts = 8 : i64} : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>, tensor<9xi32>, tensor<?xi32>
// CHECK: hyc.moe.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} {epilogue = #hyc<epilogue silu_mul>, quant = #hyc.quant<f32>} : tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<9xi32> -> tensor<?x32xf32>
// CHECK: hyc.moe.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} scale(%{{.*}} : tensor<8x64xf32>) {epilogue = #hyc<epilogue none>, quant = #hyc.quant<w8a8>}
// CHECK: hyc.moe.unpermute %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x64xf32>
func.func @mla_moe(%c0: !latent, %lat: tensor<?x1x40xf32>, %qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>,
                   %logits: tensor<?x8xf32>, %x: tensor<?x64xf32>, %w8: tensor<8x64x64xi8>) -> tensor<?x64xf32> {
  %c1 = hyc.kv_cache.append %c0, %lat {layer = 0 : i64} : !latent, tensor<?x1x40xf32>
  %kvb = hyc.param #hyc.param<"model.safetensors" : "kv_b"> -> tensor<128x32xf32>
  %o = hyc.mla.attention %qn, %qp, %kvb, %c1 {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64}
      : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !latent -> tensor<?x4x16xf32>
  %bias = hyc.param #hyc.param<"model.safetensors" : "e_score_correction_bias"> -> tensor<8xf32>
  %w, %ids = hyc.moe.route %logits bias(%bias : tensor<8xf32>) {gating = #hyc.moe_gating<sigmoid, top_k = 2, n_group = 4, topk_group = 2,
      group_score = top2_sum, renormalize = true, routed_scaling_factor = 2.5>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w2, %ids2 = hyc.moe.route %logits {gating = #hyc.moe_gating<softmax, top_k = 2>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %px, %off, %rows = hyc.moe.permute %x, %ids {num_experts = 8 : i64} : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>, tensor<9xi32>, tensor<?xi32>
  %wgu = hyc.param #hyc.param<"model.safetensors" : "experts.gate_up"> -> tensor<8x64x64xf32>
  %h = hyc.moe.grouped_matmul %px, %wgu, %off {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue silu_mul>}
      : tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<9xi32> -> tensor<?x32xf32>
  %s8 = hyc.param #hyc.param<"model.safetensors" : "experts.scale"> -> tensor<8x64xf32>
  %h8 = hyc.moe.grouped_matmul %px, %w8, %off scale(%s8 : tensor<8x64xf32>) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>}
      : tensor<?x64xf32>, tensor<8x64x64xi8>, tensor<9xi32> -> tensor<?x64xf32>
  %y = hyc.moe.unpermute %h8, %rows, %w : tensor<?x64xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func.func @quant_and_collectives
// CHECK: hyc.quant.quantize %{{.*}} {quant = #hyc.quant<w8a8, group = 32>} : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x2xf32>
// CHECK: hyc.quant.dequantize %{{.*}}, %{{.*}} {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>} : tensor<256x200xf8E4M3FN>, tensor<2x2xf32> -> tensor<256x200xf32>
// CHECK: hyc.quant.dequantize %{{.*}}, %{{.*}} {quant = #hyc.quant<w8a8>} : tensor<64x64xi8>, tensor<64xf32> -> tensor<64x64xf32>
// CHECK: hyc.quant.matmul %{{.*}}, %{{.*}} scale(%{{.*}}) {epilogue = #hyc<epilogue none>, quant = #hyc.quant<w8a8, group = 32>}
// CHECK: hyc.quant.matmul %{{.*}}, %{{.*}} scale(%{{.*}}) {epilogue = #hyc<epilogue none>, quant = #hyc.quant<fp8_e4m3, block = [128, 128]>}
// CHECK: hyc.collective.all_reduce %{{.*}} {group_size = 2 : i64, kind = #hyc<reduce_kind sum>} : tensor<?x64xf32>
// CHECK: hyc.collective.all_gather %{{.*}} {dim = 1 : i64, group_size = 2 : i64} : tensor<?x64xf32> -> tensor<?x128xf32>
// CHECK: hyc.collective.all_to_all %{{.*}} {concat_dim = 1 : i64, group_size = 2 : i64, split_dim = 0 : i64} : tensor<8x32xf32> -> tensor<4x64xf32>
func.func @quant_and_collectives(%x: tensor<?x64xf32>, %f8: tensor<256x200xf8E4M3FN>, %s: tensor<2x2xf32>,
                                 %w8: tensor<64x64xi8>, %ws: tensor<64xf32>, %wg: tensor<64x2xf32>, %a: tensor<8x32xf32>)
    -> (tensor<?x128xf32>, tensor<4x64xf32>) {
  %q, %qs = hyc.quant.quantize %x {quant = #hyc.quant<w8a8, group = 32>} : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x2xf32>
  %d = hyc.quant.dequantize %f8, %s {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>} : tensor<256x200xf8E4M3FN>, tensor<2x2xf32> -> tensor<256x200xf32>
  %d8 = hyc.quant.dequantize %w8, %ws {quant = #hyc.quant<w8a8>} : tensor<64x64xi8>, tensor<64xf32> -> tensor<64x64xf32>
  %m = hyc.quant.matmul %x, %w8 scale(%wg) {quant = #hyc.quant<w8a8, group = 32>, epilogue = #hyc<epilogue none>}
      : (tensor<?x64xf32>, tensor<64x64xi8>, tensor<64x2xf32>) -> tensor<?x64xf32>
  %f = hyc.quant.matmul %d, %f8 scale(%s) {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>, epilogue = #hyc<epilogue none>}
      : (tensor<256x200xf32>, tensor<256x200xf8E4M3FN>, tensor<2x2xf32>) -> tensor<256x256xf32>
  %r = hyc.collective.all_reduce %m {kind = #hyc<reduce_kind sum>, group_size = 2 : i64} : tensor<?x64xf32>
  %g = hyc.collective.all_gather %r {dim = 1 : i64, group_size = 2 : i64} : tensor<?x64xf32> -> tensor<?x128xf32>
  %t = hyc.collective.all_to_all %a {split_dim = 0 : i64, concat_dim = 1 : i64, group_size = 2 : i64} : tensor<8x32xf32> -> tensor<4x64xf32>
  return %g, %t : tensor<?x128xf32>, tensor<4x64xf32>
}

// -----

// CHECK-LABEL: func.func private @attrs
// CHECK-SAME: a = #hyc.rope_scaling<yarn, factor = 4.000000e+01, original_max_position = 4096, mscale = 7.070000e-01, mscale_all_dim = 7.070000e-01>
// CHECK-SAME: b = #hyc.rope_scaling<linear, factor = 2.000000e+00>
// CHECK-SAME: c = #hyc.rope_scaling<none>
// CHECK-SAME: d = #hyc.quant<w8a8>
func.func private @attrs() attributes {
  a = #hyc.rope_scaling<yarn, factor = 40.0, original_max_position = 4096, beta_fast = 32.0, beta_slow = 1.0, mscale = 0.707, mscale_all_dim = 0.707>,
  b = #hyc.rope_scaling<linear, factor = 2.0>,
  c = #hyc.rope_scaling<none>,
  d = #hyc.quant<w8a8>}

// -----

!cache = !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>

// CHECK-LABEL: func.func @fused_decode_attention
// CHECK: %{{.*}}, %[[C:.+]] = hyc.paged_attention.append %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {layer = 1 : i64, scale = 2.500000e-01 : f32} : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16> -> tensor<?x8x16xf32>
// CHECK: return %{{.*}}, %[[C]]
func.func @fused_decode_attention(%q: tensor<?x8x16xf32>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %c0: !cache) -> (tensor<?x8x16xf32>, !cache) {
  %o, %c1 = hyc.paged_attention.append %q, %k, %v, %c0 {layer = 1 : i64, scale = 0.25 : f32}
      : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, !cache -> tensor<?x8x16xf32>
  return %o, %c1 : tensor<?x8x16xf32>, !cache
}

// -----

// CHECK-LABEL: func.func @combine_with_addends
// CHECK: hyc.moe.unpermute %{{.*}}, %{{.*}}, %{{.*}} add(%{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<?x8xf32>) : tensor<?x8xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
func.func @combine_with_addends(%y: tensor<?x8xf32>, %rows: tensor<?xi32>, %w: tensor<?x2xf32>, %a: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %u = hyc.moe.unpermute %y, %rows, %w add(%a, %a : tensor<?x8xf32>, tensor<?x8xf32>) : tensor<?x8xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x8xf32>
  return %u : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @observe
// CHECK: hyc.observe %{{.*}} slot 3 feeds ["a.weight", "b.weight"] : tensor<?x64xf32>
func.func @observe(%x: tensor<?x64xf32>) {
  hyc.observe %x slot 3 feeds ["a.weight", "b.weight"] : tensor<?x64xf32>
  return
}

// -----

// Token-distributed expert parallel: dispatch to the experts' ranks and back.
// CHECK-LABEL: func.func @dispatch
// CHECK: hyc.moe.dispatch %{{.*}}, %{{.*}}, %{{.*}} {experts_per_rank = 4 : i64, group_size = 2 : i64} : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32> -> tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<4xi32>
// CHECK: hyc.moe.undispatch %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {group_size = 2 : i64} : tensor<?x2xi32>, tensor<?x64xf32>, tensor<?x2xi32>, tensor<4xi32> -> tensor<?x64xf32>
func.func @dispatch(%x: tensor<?x64xf32>, %ids: tensor<?x2xi32>, %w: tensor<?x2xf32>) -> tensor<?x64xf32> {
  %r, %ri, %rw, %sent, %n = hyc.moe.dispatch %x, %ids, %w {experts_per_rank = 4 : i64, group_size = 2 : i64}
      : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
      -> tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<4xi32>
  %y = hyc.moe.undispatch %ids, %r, %sent, %n {group_size = 2 : i64}
      : tensor<?x2xi32>, tensor<?x64xf32>, tensor<?x2xi32>, tensor<4xi32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
