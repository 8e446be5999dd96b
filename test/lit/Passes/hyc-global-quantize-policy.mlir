// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=bf16 -split-input-file | FileCheck %s --check-prefix=BF16
// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=w8a8 -split-input-file | FileCheck %s --check-prefix=W8A8
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8 keep-f32=down_proj" -split-input-file | FileCheck %s --check-prefix=KEEP
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8 keep-bf16=down_proj" -split-input-file | FileCheck %s --check-prefix=KEEPBF
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8 keep-f32=mlp.gate,lm_head,embed_tokens" -split-input-file | FileCheck %s --check-prefix=OLD
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8 lm-head=int8" -split-input-file | FileCheck %s --check-prefix=HEAD8
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8 keep-f32=kv_b_proj" -split-input-file | FileCheck %s --check-prefix=KVB
// RUN: not hyc-opt %s --hyc-global-quantize-policy="scheme=bf16 lm-head=int8" 2>&1 | FileCheck %s --check-prefix=HEADBAD
// HEADBAD: an int8 lm_head needs an integer scheme (its activations are quantized per token), got scheme 'bf16'
// RUN: not hyc-opt %s --hyc-global-quantize-policy=scheme=int4 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: scheme 'int4' is not supported (f32, bf16, w8a8, w8a8-g128, w8a8-g32, w4a8, fp8)
// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=f32 -split-input-file | FileCheck %s --check-prefix=F32
// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=w8a8-g128 -split-input-file | FileCheck %s --check-prefix=G128
// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=fp8 -split-input-file | FileCheck %s --check-prefix=FP8
// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=w4a8 -split-input-file | FileCheck %s --check-prefix=Q4
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8-g32 lm-head=int8" -split-input-file | FileCheck %s --check-prefix=Q8
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w4a8 keep-int8=down_proj" -split-input-file | FileCheck %s --check-prefix=Q4KEEP8
// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=w4a8 -split-input-file | FileCheck %s --check-prefix=Q4PART
// RUN: hyc-opt %s --hyc-global-quantize-policy=scheme=w8a8-g32 -split-input-file | FileCheck %s --check-prefix=Q8PART
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w4a8 lm-head=int8 stored-codes=model.layers.0.mlp.down_proj.weight=q6k,lm_head.weight=q4k" -split-input-file | FileCheck %s --check-prefix=STORED
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8 stored-codes=model.layers.0.mlp.down_proj.weight=q6k" -split-input-file | FileCheck %s --check-prefix=STOREDW8
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w4a8 stored-codes=model.layers.0.mlp.down_proj.weight=q4z128" -split-input-file | FileCheck %s --check-prefix=STOREDAWQ
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8-g32 stored-codes=lm_head.weight=q6k" -split-input-file | FileCheck %s --check-prefix=STOREDHEAD
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w8a8-g32 keep-bf16=lm_head stored-codes=lm_head.weight=q6k" -split-input-file | FileCheck %s --check-prefix=STOREDBF
// RUN: not hyc-opt %s --hyc-global-quantize-policy="scheme=w4a8 stored-codes=model.layers.0.mlp.down_proj.weight=q3k" 2>&1 | FileCheck %s --check-prefix=STOREDBAD
// A module with no hyc op (nothing loaded the dialect) runs, and is refused
// cleanly, without a crash; the refusal lists every integer-code format.
// RUN: echo 'func.func @plain() { return }' | hyc-opt --hyc-global-quantize-policy=scheme=w4a8 | FileCheck %s --check-prefix=NOHYC
// RUN: echo 'func.func @plain() { return }' | not hyc-opt --hyc-global-quantize-policy="scheme=w4a8 stored-codes=a=q3k" 2>&1 | FileCheck %s --check-prefix=NOHYCBAD
// NOHYC: func.func @plain()
// NOHYCBAD: stored-codes entry 'a=q3k' is not tensor=format with an integer-code format (q4, q8, q4k, q5k, q6k, iq4xs, iq4nl, q4z, q4_1, q5_1, q4z128)
// RUN: hyc-opt %s --hyc-global-quantize-policy="scheme=w4a8 stored-codes=model.layers.0.self_attn.q_proj.weight=q4k,model.layers.0.self_attn.o_proj.weight=q4k,model.layers.0.mlp.down_proj.weight=q4k,model.layers.1.mlp.down_proj.weight=q6k,model.layers.0.mlp.experts.*.up_proj.weight=iq4xs" -split-input-file | FileCheck %s --check-prefix=STOREDTP

// Linear layers take the scheme; the sensitive ones (router, lm_head) stay
// bf16 under every scheme, unless keep-f32 names them.

// BF16-LABEL: func.func @mlp
// BF16: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x48xf32>
// BF16: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x8xf32>
// BF16: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x16xf32>

// W8A8-LABEL: func.func @mlp
// W8A8: %[[Q:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
// W8A8: %[[S:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
// W8A8: hyc.quant.matmul %{{.*}}, %[[Q]] scale(%[[S]]) {epilogue = #hyc<epilogue none>, quant = #hyc.quant<w8a8>}
// W8A8-NOT: "model.layers.0.mlp.down_proj.weight"> -> tensor<48x64xf32>
// W8A8: "model.layers.0.mlp.gate.weight"> -> tensor<8x48xf32>
// W8A8: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x8xf32>
// W8A8: "lm_head.weight"> -> tensor<16x8xf32>
// W8A8: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x16xf32>

// KEEP-LABEL: func.func @mlp
// KEEP: hyc.quant.matmul {{.*}}quant = #hyc.quant<f32>{{.*}} -> tensor<?x48xf32>
// KEEP: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x8xf32>
// KEEP: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x16xf32>

// KEEPBF-LABEL: func.func @mlp
// KEEPBF: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x48xf32>

// lm-head=int8: the head joins the W8A8 layers; the router stays bf16.
// HEAD8-LABEL: func.func @mlp
// HEAD8: "model.layers.0.mlp.gate.weight"> -> tensor<8x48xf32>
// HEAD8: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x8xf32>
// HEAD8: %[[HQ:.+]] = hyc.param #hyc.param<"f" : "lm_head.weight"> {hyc.quantize = "w8a8"} -> tensor<16x8xi8>
// HEAD8: hyc.quant.matmul %{{.*}}, %[[HQ]] scale(%{{.*}}) {{.*}}quant = #hyc.quant<w8a8>{{.*}} -> tensor<?x16xf32>

// OLD-LABEL: func.func @mlp
// OLD: hyc.quant.matmul {{.*}}quant = #hyc.quant<w8a8>{{.*}} -> tensor<?x48xf32>
// OLD: hyc.quant.matmul {{.*}}quant = #hyc.quant<f32>{{.*}} -> tensor<?x8xf32>
// OLD: hyc.quant.matmul {{.*}}quant = #hyc.quant<f32>{{.*}} -> tensor<?x16xf32>
func.func @mlp(%x: tensor<?x64xf32>) -> tensor<?x16xf32> {
  %w = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> -> tensor<48x64xf32>
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<48x64xf32>) -> tensor<?x48xf32>
  %g = hyc.param #hyc.param<"f" : "model.layers.0.mlp.gate.weight"> -> tensor<8x48xf32>
  %r = hyc.quant.matmul %y, %g {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x48xf32>, tensor<8x48xf32>) -> tensor<?x8xf32>
  %h = hyc.param #hyc.param<"f" : "lm_head.weight"> -> tensor<16x8xf32>
  %l = hyc.quant.matmul %r, %h {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %l : tensor<?x16xf32>
}

// -----

// Tied embeddings: the table the embedding reads is also the lm_head
// weight. The embedding keeps the fp32 table; the head GEMM reads its own
// copy of the tensor (derivation "copy"), in bf16.

// BF16-LABEL: func.func @tied
// BF16: %[[E:.+]] = hyc.param #hyc.param<"f" : "model.embed_tokens.weight"> -> tensor<32x8xf32>
// BF16: hyc.embedding %[[E]]
// BF16: %[[C:.+]] = hyc.param #hyc.param<"f" : "model.embed_tokens.weight"> {hyc.quantize = "copy"} -> tensor<32x8xf32>
// BF16: hyc.quant.matmul %{{.*}}, %[[C]] {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x32xf32>
// w8a8-g128: one scale per 128 K-elements and output channel (K = 64: one
// short group), derived as "w8a8g128"; the router and head stay bf16.
// Scheme fp8: e4m3 weights with one factor per 128 x 128 block (a partial block
// counts: 48 x 64 has one); router and head stay bf16.
// FP8-LABEL: func.func @mlp
// FP8: %[[Q:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "fp8"} -> tensor<48x64xf8E4M3FN>
// FP8: %[[S:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "fp8.scale"} -> tensor<1x1xf32>
// FP8: hyc.quant.matmul %{{.*}}, %[[Q]] scale(%[[S]]) {epilogue = #hyc<epilogue none>, quant = #hyc.quant<fp8_e4m3, block = [128, 128]>}
// FP8: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x8xf32>
// FP8: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x16xf32>

// Integer codes: one i8 param (the codes; their fp16 scales per 32 are
// packed inside, so no scale operand), the sensitive layers bf16; an int8
// head under codes is per-channel W8A8 with its scales.
// Q4-LABEL: func.func @mlp
// Q4: %[[C:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "q4g32"} -> tensor<48x64xi8>
// Q4-NOT: hyc.quantize = "q4g32.scale"
// Q4: hyc.quant.matmul %{{.*}}, %[[C]] {epilogue = #hyc<epilogue none>, quant = #hyc.quant<q4, group = 32>}
// Q4: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x8xf32>
// Q4: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x16xf32>
// Q8-LABEL: func.func @mlp
// Q8: %[[C:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "q8g32"} -> tensor<48x64xi8>
// Q8: hyc.quant.matmul %{{.*}}, %[[C]] {epilogue = #hyc<epilogue none>, quant = #hyc.quant<q8, group = 32>}
// Q8: %[[HQ:.+]] = hyc.param #hyc.param<"f" : "lm_head.weight"> {hyc.quantize = "w8a8"} -> tensor<16x8xi8>
// Q8: hyc.quant.matmul %{{.*}}, %[[HQ]] scale(%{{.*}}) {{.*}}quant = #hyc.quant<w8a8>{{.*}} -> tensor<?x16xf32>

// stored-codes under codes: each named weight keeps the checkpoint's own
// format (an int8 head included); under a non-codes scheme they are
// ignored; an entry that names no integer-code format is refused.
// STORED-LABEL: func.func @mlp
// STORED: hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "q6k"} -> tensor<48x64xi8>
// STORED: quant = #hyc.quant<q6k, group = 16>
// STORED: hyc.param #hyc.param<"f" : "lm_head.weight"> {hyc.quantize = "q4k"} -> tensor<16x8xi8>
// STORED: quant = #hyc.quant<q4k, group = 32>
// AWQ / GPTQ int4 (the loader's q4z128): one group of 128 per super-block.
// STOREDAWQ-LABEL: func.func @mlp
// STOREDAWQ: hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "q4z128"} -> tensor<48x64xi8>
// STOREDAWQ: quant = #hyc.quant<q4z128, group = 128>
// STOREDW8-LABEL: func.func @mlp
// STOREDW8: {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
// A stored head stays as stored under a bf16 head default too, unless
// keep-bf16 names it.
// STOREDHEAD-LABEL: func.func @mlp
// STOREDHEAD: hyc.param #hyc.param<"f" : "lm_head.weight"> {hyc.quantize = "q6k"} -> tensor<16x8xi8>
// STOREDBF-LABEL: func.func @mlp
// STOREDBF-NOT: hyc.quantize = "q6k"
// STOREDBF: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x16xf32>
// STOREDBAD: stored-codes entry 'model.layers.0.mlp.down_proj.weight=q3k' is not tensor=format

// keep-int8 under codes: the named weight is per-channel W8A8 with scales.
// Q4KEEP8-LABEL: func.func @mlp
// Q4KEEP8: %[[Q:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
// Q4KEEP8: %[[S:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
// Q4KEEP8: hyc.quant.matmul %{{.*}}, %[[Q]] scale(%[[S]]) {epilogue = #hyc<epilogue none>, quant = #hyc.quant<w8a8>}

// G128-LABEL: func.func @mlp
// G128: %[[Q:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "w8a8g128"} -> tensor<48x64xi8>
// G128: %[[S:.+]] = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "w8a8g128.scale"} -> tensor<48x1xf32>
// G128: hyc.quant.matmul %{{.*}}, %[[Q]] scale(%[[S]]) {epilogue = #hyc<epilogue none>, quant = #hyc.quant<w8a8, group = 128>}
// G128: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x8xf32>

// W8A8-LABEL: func.func @tied
// W8A8: {hyc.quantize = "copy"}
// W8A8: hyc.quant.matmul {{.*}}quant = #hyc.quant<bf16>{{.*}} -> tensor<?x32xf32>
// HEAD8-LABEL: func.func @tied
// HEAD8: %[[E:.+]] = hyc.param #hyc.param<"f" : "model.embed_tokens.weight"> -> tensor<32x8xf32>
// HEAD8: hyc.embedding %[[E]]
// HEAD8: %[[Q:.+]] = hyc.param #hyc.param<"f" : "model.embed_tokens.weight"> {hyc.quantize = "w8a8"} -> tensor<32x8xi8>
// HEAD8: hyc.quant.matmul %{{.*}}, %[[Q]] scale(%{{.*}}) {{.*}}quant = #hyc.quant<w8a8>{{.*}} -> tensor<?x32xf32>
// Kept fp32, the tied head still reads its own copy (packed for the f32
// kernels), not the embedding's table.
// OLD-LABEL: func.func @tied
// OLD: %[[E:.+]] = hyc.param #hyc.param<"f" : "model.embed_tokens.weight"> -> tensor<32x8xf32>
// OLD: hyc.embedding %[[E]]
// OLD: %[[C:.+]] = hyc.param #hyc.param<"f" : "model.embed_tokens.weight"> {hyc.quantize = "copy"} -> tensor<32x8xf32>
// OLD: hyc.quant.matmul %{{.*}}, %[[C]] {{.*}}quant = #hyc.quant<f32>{{.*}} -> tensor<?x32xf32>
// F32-LABEL: func.func @tied
// F32: {hyc.quantize = "copy"}
// F32: hyc.quant.matmul {{.*}}quant = #hyc.quant<f32>{{.*}} -> tensor<?x32xf32>
func.func @tied(%ids: tensor<?xi32>) -> tensor<?x32xf32> {
  %e = hyc.param #hyc.param<"f" : "model.embed_tokens.weight"> -> tensor<32x8xf32>
  %x = hyc.embedding %e[%ids] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %l = hyc.quant.matmul %x, %e {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<32x8xf32>) -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}

// -----

// MLA's kv_b is read in place by the attention (not a GEMM): under bf16 and
// w8a8 it is rounded to bf16 (derivation "bf16"), unless keep-f32 names it.

// BF16-LABEL: func.func @mla
// BF16: hyc.param #hyc.param<"f" : "model.layers.0.self_attn.kv_b_proj.weight"> {hyc.quantize = "bf16"} -> tensor<128x32xf32>
// W8A8-LABEL: func.func @mla
// W8A8: hyc.param #hyc.param<"f" : "model.layers.0.self_attn.kv_b_proj.weight"> {hyc.quantize = "bf16"} -> tensor<128x32xf32>
// OLD-LABEL: func.func @mla
// OLD: {hyc.quantize = "bf16"}
// KEEP-LABEL: func.func @mla
// KEEP: {hyc.quantize = "bf16"}
!mlac = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>
func.func @mla(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %c: !mlac) -> tensor<?x4x16xf32> {
  %kvb = hyc.param #hyc.param<"f" : "model.layers.0.self_attn.kv_b_proj.weight"> -> tensor<128x32xf32>
  %o = hyc.mla.attention %qn, %qp, %kvb, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !mlac -> tensor<?x4x16xf32>
  return %o : tensor<?x4x16xf32>
}

// -----

// KVB-LABEL: func.func @mla_keep
// KVB-NOT: hyc.quantize
!mlac2 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>
func.func @mla_keep(%qn: tensor<?x4x16xf32>, %qp: tensor<?x4x8xf32>, %c: !mlac2) -> tensor<?x4x16xf32> {
  %kvb = hyc.param #hyc.param<"f" : "model.layers.0.self_attn.kv_b_proj.weight"> -> tensor<128x32xf32>
  %o = hyc.mla.attention %qn, %qp, %kvb, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64} : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>, !mlac2 -> tensor<?x4x16xf32>
  return %o : tensor<?x4x16xf32>
}

// -----

// Expert stacks [E, N, K] take the scheme per expert: FP8 factors
// [E, ceil(N/128), ceil(K/128)], W8A8 scales [E, N].
// FP8-LABEL: func.func @experts
// FP8: {hyc.quantize = "fp8"} -> tensor<4x200x300xf8E4M3FN>
// FP8: {hyc.quantize = "fp8.scale"} -> tensor<4x2x3xf32>
// FP8: hyc.moe.grouped_matmul {{.*}}quant = #hyc.quant<fp8_e4m3, block = [128, 128]>
// W8A8-LABEL: func.func @experts
// KVB-LABEL: func.func @experts
// W8A8: {hyc.quantize = "w8a8.scale"} -> tensor<4x200xf32>
func.func @experts(%x: tensor<?x300xf32>, %off: tensor<5xi32>) -> tensor<?x200xf32> {
  %w = hyc.param #hyc.param<"f" : "model.layers.0.mlp.experts.*.down_proj.weight"> -> tensor<4x200x300xf32>
  %y = hyc.moe.grouped_matmul %x, %w, %off {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : tensor<?x300xf32>, tensor<4x200x300xf32>, tensor<5xi32> -> tensor<?x200xf32>
  return %y : tensor<?x200xf32>
}

// -----

// 4-bit codes need whole groups of 32 along K: a K = 40 matrix keeps 8
// bits (per-channel int8), its K = 64 neighbour takes the codes; 8-bit
// codes take both (a padded group costs them nothing).
// Q4PART-LABEL: func.func @partial
// Q4PART: hyc.param #hyc.param<"f" : "model.layers.0.mlp.up_proj.weight"> {hyc.quantize = "q4g32"} -> tensor<40x64xi8>
// Q4PART: hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<64x40xi8>
// Q4PART: quant = #hyc.quant<w8a8>
// Q8PART-LABEL: func.func @partial
// Q8PART: {hyc.quantize = "q8g32"} -> tensor<40x64xi8>
// Q8PART: {hyc.quantize = "q8g32"} -> tensor<64x40xi8>
func.func @partial(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %u = hyc.param #hyc.param<"f" : "model.layers.0.mlp.up_proj.weight"> -> tensor<40x64xf32>
  %y = hyc.quant.matmul %x, %u {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<40x64xf32>) -> tensor<?x40xf32>
  %d = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> -> tensor<64x40xf32>
  %z = hyc.quant.matmul %y, %d {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x40xf32>, tensor<64x40xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// A tensor-parallel rank's parts (hyc-global-shard's hyc.shard = [dim,
// part, parts]) of stored codes: rows keep the format (q_proj); columns
// keep it in whole super-blocks of 256 (o_proj: K 256 of 512); Q4_K cut at
// a half super-block is q4z (down: K 128); any other cut becomes 8-bit
// codes of groups of 32 (Q6_K at K 128). An expert-parallel rank's stack
// ("experts.*+2.") finds its format under the stack's name.
// STOREDTP-LABEL: func.func @tp
// STOREDTP: "model.layers.0.self_attn.q_proj.weight"> {hyc.quantize = "q4k"} -> tensor<64x256xi8>
// STOREDTP: "model.layers.0.self_attn.o_proj.weight"> {hyc.quantize = "q4k"} -> tensor<64x256xi8>
// STOREDTP: "model.layers.0.mlp.down_proj.weight"> {hyc.quantize = "q4z"} -> tensor<64x128xi8>
// STOREDTP: quant = #hyc.quant<q4z, group = 32>
// STOREDTP: "model.layers.1.mlp.down_proj.weight"> {hyc.quantize = "q8g32"} -> tensor<64x128xi8>
// STOREDTP: quant = #hyc.quant<q8, group = 32>
// STOREDTP: "model.layers.0.mlp.experts.*+2.up_proj.weight"> {hyc.quantize = "iq4xs"} -> tensor<2x64x256xi8>
func.func @tp(%x: tensor<?x256xf32>, %x2: tensor<?x128xf32>, %off: tensor<3xi32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %q = hyc.param #hyc.param<"f" : "model.layers.0.self_attn.q_proj.weight"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<64x256xf32>
  %a = hyc.quant.matmul %x, %q {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x256xf32>, tensor<64x256xf32>) -> tensor<?x64xf32>
  %o = hyc.param #hyc.param<"f" : "model.layers.0.self_attn.o_proj.weight"> {hyc.shard = array<i64: 1, 1, 2>} -> tensor<64x256xf32>
  %b = hyc.quant.matmul %x, %o {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x256xf32>, tensor<64x256xf32>) -> tensor<?x64xf32>
  %d = hyc.param #hyc.param<"f" : "model.layers.0.mlp.down_proj.weight"> {hyc.shard = array<i64: 1, 1, 2>} -> tensor<64x128xf32>
  %c = hyc.quant.matmul %x2, %d {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x128xf32>, tensor<64x128xf32>) -> tensor<?x64xf32>
  %d1 = hyc.param #hyc.param<"f" : "model.layers.1.mlp.down_proj.weight"> {hyc.shard = array<i64: 1, 1, 2>} -> tensor<64x128xf32>
  %e = hyc.quant.matmul %x2, %d1 {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x128xf32>, tensor<64x128xf32>) -> tensor<?x64xf32>
  %u = hyc.param #hyc.param<"f" : "model.layers.0.mlp.experts.*+2.up_proj.weight"> {hyc.shard = array<i64: 0, 1, 2>} -> tensor<2x64x256xf32>
  %f = hyc.moe.grouped_matmul %x, %u, %off {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : tensor<?x256xf32>, tensor<2x64x256xf32>, tensor<3xi32> -> tensor<?x64xf32>
  return %a, %b, %c, %e, %f : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}
