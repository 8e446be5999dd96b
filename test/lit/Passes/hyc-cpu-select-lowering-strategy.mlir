// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 threads=2" -split-input-file | FileCheck %s
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 threads=1" -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 native-bf16=true" -split-input-file | FileCheck %s --check-prefix=NATIVE
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy=target=reference -split-input-file | FileCheck %s --check-prefix=REF
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 threads=8" -split-input-file | FileCheck %s --check-prefix=EIGHT
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 kv-cache=f32" -split-input-file | FileCheck %s --check-prefix=KVF32
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 kv-cache=bf16" -split-input-file 2>&1 | FileCheck %s --check-prefix=KVBF16
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 kv-cache=int8" -split-input-file 2>&1 | FileCheck %s --check-prefix=KVINT8
// RUN: not hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 kv-cache=int4" -split-input-file 2>&1 | FileCheck %s --check-prefix=KVINT4
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 stream-min-bytes=8192" -split-input-file | FileCheck %s --check-prefix=STREAM
// RUN: hyc-opt %s --hyc-cpu-select-lowering-strategy="target=avx512 native-bf16=true amx=true stream-min-bytes=8192" -split-input-file | FileCheck %s --check-prefix=AMXSTREAM
// RUN: not hyc-opt %s --hyc-cpu-select-lowering-strategy=target=sve -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: target 'sve' is not supported (reference, avx2, avx512)

// GEMMs. Thread split from the cost model (CpuCostModel.cpp): with 2 threads
// a fork/join of 10 us pays off above 20 us of single-thread work; these
// weights stream in far less, so the threshold is in multiply-adds at half
// the kernel's peak (2.5 GHz): w8a8 128 MAC/cycle -> 160 MAC/ns -> 3.2e6;
// f32 x bf16 FMA 32 MAC/cycle -> 40 MAC/ns -> 8e5. A GEMM with one 32-column
// panel has nothing to split. The tied embedding is also read as a table, so
// its GEMM cannot use a packed layout and stays on the reference (hyc
// compile gives such a head its own copy first, hyc-global-quantize-policy,
// and hyc-cpu-check-no-reference-kernels refuses what stays). The embedding
// gathers rows on the threaded copy kernel.

// CHECK-LABEL: func.func @gemms
// CHECK: hyc.embedding {{.*}}hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "copy", threads = 2>
// CHECK: hyc.quant.matmul {{.*}}hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512vnni", types = "u8s8f32", layout = "s8_vnni4", tile = [14, 32, 64], threads = 2, parallel_min_macs = 3200000>
// CHECK: hyc.quant.matmul {{.*}}#hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512core", types = "f32f32f32", layout = "f32_k1", tile = [14, 32, 48], parallel_min_macs = 9223372036854775807>
// CHECK: hyc.quant.matmul {{.*}}#hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512core", types = "f32bf16f32", layout = "bf16_vnni2", tile = [12, 32, 8], threads = 2, parallel_min_macs = 800000>
// CHECK: hyc.quant.matmul {{.*}}#hyc_cpu.lowering_config<kernel = "reference">

// ONE-LABEL: func.func @gemms
// ONE-NOT: threads = 2
// ONE: parallel_min_macs = 9223372036854775807

// NATIVE-LABEL: func.func @gemms
// NATIVE: types = "bf16bf16f32", layout = "bf16_vnni2", tile = [14, 32, 8], threads = 2, parallel_min_macs = 1600000>

// REF-LABEL: func.func @gemms
// REF-NOT: brgemm
// REF-COUNT-5: #hyc_cpu.lowering_config<kernel = "reference">
!cache = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @gemms(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !cache) -> (tensor<?x32xf32>, !cache) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %q = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
  %s = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<48x64xi8>, tensor<48xf32>) -> tensor<?x48xf32>
  %g = hyc.param #hyc.param<"f" : "gate"> -> tensor<8x48xf32>
  %r = hyc.quant.matmul %y, %g {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x48xf32>, tensor<8x48xf32>) -> tensor<?x8xf32>
  %h = hyc.param #hyc.param<"f" : "head"> -> tensor<64x8xf32>
  %l = hyc.quant.matmul %r, %h {quant = #hyc.quant<bf16>, epilogue = #hyc<epilogue none>} : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  %t = hyc.quant.matmul %l, %e {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %t, %c : tensor<?x32xf32>, !cache
}

// -----

// Attention: decode attention and extend attention that reads its own
// append run on the threaded paged kernel (threads capped by the heads);
// extend attention over keys that were not appended to the cache it reads
// stays on the reference kernel.

// The cache stays fp32 here under auto: the reference attention would widen
// a bf16 cache on every call. Asked for, bf16 it is (every kernel reads it).
// CHECK: module attributes {hyc_cpu.kv_cache_dtype = "f32"}
// CHECK-NEXT: func.func @attention
// KVBF16-NOT: kv_cache_dtype = "f32"
// KVBF16: module attributes {hyc_cpu.kv_cache_dtype = "bf16"}
// KVBF16-NOT: kv_cache_dtype = "f32"
// KVBF16: hyc.attention {{.*}}<kernel = "reference">
// KVBF16-NOT: kv_cache_dtype = "f32"
// int8 likewise: every kernel, reference ones included, reads it.
// KVINT8: module attributes {hyc_cpu.kv_cache_dtype = "int8"}
// KVINT4: kv-cache must be auto, f32, bf16 or int8, got 'int4'
// CHECK: hyc.kv_cache.append {{.*}}<kernel = "kv_append", threads = 2>
// CHECK: hyc.attention {{.*}}<kernel = "paged_attention", threads = 2>
// CHECK: hyc.attention {{.*}}<kernel = "reference">
// CHECK: hyc.paged_attention {{.*}}<kernel = "paged_attention", threads = 2>
// REF-LABEL: func.func @attention
// REF-NOT: paged_attention"
// REF-NOT: kv_append
!c2 = !hyc.kv_cache<num_layers = 2, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>
func.func @attention(%tok: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c2, %q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>) attributes {hyc.entry = "extend"} {
  %c1 = hyc.kv_cache.append %c, %k, %v {layer = 0 : i64} : !c2, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  %o = hyc.attention %q, %k, %v, %c1 {layer = 0 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, !c2 -> tensor<?x4x8xf32>
  %o2 = hyc.attention %q, %k, %v, %c {layer = 1 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, !c2 -> tensor<?x4x8xf32>
  %o3 = hyc.paged_attention %q, %c1 {layer = 0 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, !c2 -> tensor<?x4x8xf32>
  return %o, %o2, %o3 : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
}

// -----

// Activation quantization: stored as the W8A8 kernels read it (u8) or as
// the reference reads it (i8); a norm read only by it computes it in the
// same kernel.

// CHECK-LABEL: func.func @quantize
// CHECK: hyc.quant.quantize {{.*}}#hyc_cpu.lowering_config<kernel = "quantize_u8", fused_producer = "rms_norm">
// REF-LABEL: func.func @quantize
// REF: hyc.quant.quantize {{.*}}#hyc_cpu.lowering_config<kernel = "reference", fused_producer = "rms_norm">
func.func @quantize(%tok0: tensor<?xi32>, %pos: tensor<?xi32>, %c: !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) -> (tensor<?x48xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>) attributes {hyc.entry = "extend"} {
  %tok = hyc.assume_bounds %tok0 [4] : tensor<?xi32>
  %e = hyc.param #hyc.param<"f" : "embed"> -> tensor<32x64xf32>
  %x = hyc.embedding %e[%tok] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %nw = hyc.param #hyc.param<"f" : "norm"> -> tensor<64xf32>
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %q, %s = hyc.quant.quantize %h {quant = #hyc.quant<w8a8>} : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x1xf32>
  %w = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8"} -> tensor<48x64xi8>
  %ws = hyc.param #hyc.param<"f" : "up"> {hyc.quantize = "w8a8.scale"} -> tensor<48xf32>
  %y = hyc.quant.matmul %q, %w scale(%ws) input_scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xi8>, tensor<48x64xi8>, tensor<48xf32>, tensor<?x1xf32>) -> tensor<?x48xf32>
  return %y, %c : tensor<?x48xf32>, !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
}

// -----

// RoPE runs on the kernel that computes each token's cos/sin once for all
// its heads, tokens split over the machine's threads; the reference target
// keeps the reference kernel.

// CHECK-LABEL: func.func @rope
// CHECK: hyc.rope {{.*}}<kernel = "rope", threads = 2>
// ONE-LABEL: func.func @rope
// ONE: hyc.rope {{.*}}<kernel = "rope">
// REF-LABEL: func.func @rope
// REF: hyc.rope {{.*}}<kernel = "reference">
func.func @rope(%q0: tensor<?x2x4xf32>, %pos: tensor<?xi32>) -> tensor<?x2x4xf32> attributes {hyc.entry = "extend"} {
  %qr = hyc.rope %q0, %pos {style = #hyc<rope_style neox>, rotary_dim = 4 : i64, theta = 1.0e+04 : f64, scaling = #hyc.rope_scaling<none>} : tensor<?x2x4xf32>, tensor<?xi32> -> tensor<?x2x4xf32>
  return %qr : tensor<?x2x4xf32>
}

// -----

// MoE routing, permute and combine run on the threaded kernels (routing
// split by tokens, copies and the weighted sum by rows); the reference
// target keeps the reference kernels.

// CHECK-LABEL: func.func @moe
// CHECK: hyc.moe.route {{.*}}<kernel = "moe", threads = 2>
// CHECK: hyc.moe.permute {{.*}}<kernel = "moe", threads = 2>
// CHECK: hyc.moe.unpermute {{.*}}<kernel = "moe", threads = 2>
// REF-LABEL: func.func @moe
// REF: hyc.moe.route {{.*}}<kernel = "reference">
// REF: hyc.moe.permute {{.*}}<kernel = "reference">
// REF: hyc.moe.unpermute {{.*}}<kernel = "reference">
func.func @moe(%logits: tensor<?x8xf32>, %x: tensor<?x16xf32>) -> tensor<?x16xf32> attributes {hyc.entry = "extend"} {
  %w, %ids = hyc.moe.route %logits {gating = #hyc.moe_gating<softmax, top_k = 2, renormalize = true>} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %px, %off, %rows = hyc.moe.permute %x, %ids {num_experts = 8 : i64} : tensor<?x16xf32>, tensor<?x2xi32> -> tensor<?x16xf32>, tensor<9xi32>, tensor<?xi32>
  %y = hyc.moe.unpermute %px, %rows, %w add(%x : tensor<?x16xf32>) : tensor<?x16xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// W8A8 experts right after the permute read the token rows through its row
// map (fused_producer = "moe_permute": each token quantized once); experts
// reading other rows (the down projection) do not.

// CHECK-LABEL: func.func @experts
// CHECK: %[[H:.+]] = hyc.moe.grouped_matmul %result, {{.*}}fused_producer = "moe_permute">
// CHECK: hyc.moe.grouped_matmul %[[H]], {{.*}}parallel_min_macs = {{[0-9]+}}>, quant
func.func @experts(%x: tensor<?x64xf32>, %ids: tensor<?x2xi32>) -> tensor<?x64xf32> attributes {hyc.entry = "extend"} {
  %px, %off, %rows = hyc.moe.permute %x, %ids {num_experts = 4 : i64} : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>, tensor<5xi32>, tensor<?xi32>
  %wu = hyc.param #hyc.param<"f" : "l.experts.*.{gate,up}_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<4x64x64xi8>
  %su = hyc.param #hyc.param<"f" : "l.experts.*.{gate,up}_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<4x64xf32>
  %h = hyc.moe.grouped_matmul %px, %wu, %off scale(%su : tensor<4x64xf32>) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue silu_mul>} : tensor<?x64xf32>, tensor<4x64x64xi8>, tensor<5xi32> -> tensor<?x32xf32>
  %wd = hyc.param #hyc.param<"f" : "l.experts.*.down_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<4x64x32xi8>
  %sd = hyc.param #hyc.param<"f" : "l.experts.*.down_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<4x64xf32>
  %y = hyc.moe.grouped_matmul %h, %wd, %off scale(%sd : tensor<4x64xf32>) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : tensor<?x32xf32>, tensor<4x64x32xi8>, tensor<5xi32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// RMSNorm and SiLU-multiply (not folded into a quantization) run on the
// vectorized row kernels, rows split over the machine's threads.

// CHECK-LABEL: func.func @elementwise
// CHECK: hyc.rms_norm {{.*}}<kernel = "rms_norm", threads = 2>
// CHECK: hyc.silu_mul {{.*}}<kernel = "silu_mul", threads = 2>
// ONE-LABEL: func.func @elementwise
// ONE: hyc.rms_norm {{.*}}<kernel = "rms_norm">
// REF-LABEL: func.func @elementwise
// REF: hyc.rms_norm {{.*}}<kernel = "reference">
// REF: hyc.silu_mul {{.*}}<kernel = "reference">
func.func @elementwise(%x: tensor<?x16xf32>, %u: tensor<?x16xf32>, %nw: tensor<16xf32>) -> tensor<?x16xf32> attributes {hyc.entry = "extend"} {
  %h = hyc.rms_norm %x, %nw {epsilon = 1.0e-05 : f32} : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %s = hyc.silu_mul %h, %u : tensor<?x16xf32>
  return %s : tensor<?x16xf32>
}

// -----

// Decode attention with its append, all on the paged kernel: the KV cache
// becomes bf16 by default on kernel targets, stays fp32 on the reference
// target and when asked.

// CHECK: module attributes {hyc_cpu.kv_cache_dtype = "bf16"}
// CHECK-NEXT: func.func @decode_attention
// REF: module attributes {hyc_cpu.kv_cache_dtype = "f32"}
// REF-NEXT: func.func @decode_attention
// Flash decoding: one decode token has 2 KV-head work items; 8 threads
// split its positions in ceil(8 / 2) = 4 ranges, 2 threads need none.
// CHECK: hyc.paged_attention.append {{.*}}<kernel = "paged_attention", threads = 2>
// EIGHT-LABEL: func.func @decode_attention
// EIGHT: hyc.paged_attention.append {{.*}}<kernel = "paged_attention", threads = 4, kv_splits = 4>
// KVF32-LABEL: func.func @elementwise
// KVF32: module attributes {hyc_cpu.kv_cache_dtype = "f32"}
// KVF32-NEXT: func.func @decode_attention
!c3 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 8, v_head_dim = 8>
func.func @decode_attention(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>, %c: !c3) -> (tensor<?x4x8xf32>, !c3) attributes {hyc.entry = "decode"} {
  %o, %c1 = hyc.paged_attention.append %q, %k, %v, %c {layer = 0 : i64, scale = 0.35 : f32} : tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, !c3 -> tensor<?x4x8xf32>
  return %o, %c1 : tensor<?x4x8xf32>, !c3
}

// -----

// FP8 weights: on native bf16, steps of up to 4 rows (the bf16 x f8 kernel's
// block, which widens the codes in registers as they stream in) take that
// kernel, larger ones the blockwise K = 128 path; FMA targets have no such
// kernel, so no threshold is written.
// NATIVE-LABEL: func.func @fp8
// NATIVE: hyc.quant.matmul {{.*}}{epilogue = #hyc<epilogue none>, hyc_cpu.fp8_fused_max_rows = 4 : i64, hyc_cpu.lowering_config = #hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512bf16", types = "bf16bf16f32", layout = "f8_vnni2"
// CHECK-LABEL: func.func @fp8
// CHECK-NOT: fp8_fused_max_rows
// CHECK: layout = "f8_vnni2"
!c3 = !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 4, v_head_dim = 4>
func.func @fp8(%tok: tensor<?xi32>, %pos: tensor<?xi32>, %c: !c3, %x: tensor<?x256xf32>) -> (tensor<?x128xf32>, !c3) attributes {hyc.entry = "decode"} {
  %q = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "fp8"} -> tensor<128x256xf8E4M3FN>
  %s = hyc.param #hyc.param<"f" : "w"> {hyc.quantize = "fp8.scale"} -> tensor<1x2xf32>
  %y = hyc.quant.matmul %x, %q scale(%s) {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>, epilogue = #hyc<epilogue none>} : (tensor<?x256xf32>, tensor<128x256xf8E4M3FN>, tensor<1x2xf32>) -> tensor<?x128xf32>
  return %y, %c : tensor<?x128xf32>, !c3
}

// -----

// Outputs that can outgrow the caches store C non-temporally from the rows
// where they pass stream-min-bytes (default: the cost model's 16 MiB, which
// these small bounds never reach). 64 tokens x top-2 = 128 expert rows; the
// down projection's rows are 64 floats = 256 bytes, so 8192 bytes from 32
// rows. Not marked: the [gate; up] pair (SiLU pairs the halves in a local
// tile), a GEMM with a bias (added to C afterwards), rows that are not whole
// 64-byte lines (N = 40), a GEMM whose bound stays below (N = 16 -> 128
// rows > 64 tokens), and the entry's result (the caller's buffer). The amx
// variant runs such steps on its AMX kernel instead.

// CHECK-LABEL: func.func @streams
// CHECK-NOT: stream_c_min_rows
// STREAM-LABEL: func.func @streams
// STREAM: hyc.moe.grouped_matmul
// STREAM-NOT: stream_c_min_rows
// STREAM: hyc.moe.grouped_matmul {{.*}}hyc_cpu.stream_c_min_rows = 32 : i64
// STREAM-NOT: stream_c_min_rows
// STREAM: return
// AMXSTREAM-LABEL: func.func @streams
// AMXSTREAM: hyc.moe.grouped_matmul {{.*}}hyc_cpu.amx_min_rows = 16 : i64
// AMXSTREAM-NOT: stream_c_min_rows
// AMXSTREAM: return
func.func @streams(%x0: tensor<?x64xf32>, %ids: tensor<?x2xi32>) -> tensor<?x64xf32> attributes {hyc.entry = "extend"} {
  %x = hyc.assume_bounds %x0 [64] : tensor<?x64xf32>
  %px, %off, %rows = hyc.moe.permute %x, %ids {num_experts = 4 : i64} : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>, tensor<5xi32>, tensor<?xi32>
  %wu = hyc.param #hyc.param<"f" : "l.experts.*.{gate,up}_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<4x64x64xi8>
  %su = hyc.param #hyc.param<"f" : "l.experts.*.{gate,up}_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<4x64xf32>
  %h = hyc.moe.grouped_matmul %px, %wu, %off scale(%su : tensor<4x64xf32>) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue silu_mul>} : tensor<?x64xf32>, tensor<4x64x64xi8>, tensor<5xi32> -> tensor<?x32xf32>
  %wd = hyc.param #hyc.param<"f" : "l.experts.*.down_proj.weight"> {hyc.quantize = "w8a8"} -> tensor<4x64x32xi8>
  %sd = hyc.param #hyc.param<"f" : "l.experts.*.down_proj.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<4x64xf32>
  %y = hyc.moe.grouped_matmul %h, %wd, %off scale(%sd : tensor<4x64xf32>) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : tensor<?x32xf32>, tensor<4x64x32xi8>, tensor<5xi32> -> tensor<?x64xf32>
  %wb = hyc.param #hyc.param<"f" : "b.weight"> {hyc.quantize = "w8a8"} -> tensor<64x64xi8>
  %sb = hyc.param #hyc.param<"f" : "b.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<64xf32>
  %bb = hyc.param #hyc.param<"f" : "b.bias"> -> tensor<64xf32>
  %yb = hyc.quant.matmul %x, %wb scale(%sb) bias(%bb) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<64x64xi8>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %w40 = hyc.param #hyc.param<"f" : "n40.weight"> {hyc.quantize = "w8a8"} -> tensor<40x64xi8>
  %s40 = hyc.param #hyc.param<"f" : "n40.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<40xf32>
  %y40 = hyc.quant.matmul %yb, %w40 scale(%s40) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<40x64xi8>, tensor<40xf32>) -> tensor<?x40xf32>
  %w16 = hyc.param #hyc.param<"f" : "n16.weight"> {hyc.quantize = "w8a8"} -> tensor<16x40xi8>
  %s16 = hyc.param #hyc.param<"f" : "n16.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<16xf32>
  %y16 = hyc.quant.matmul %y40, %w16 scale(%s16) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x40xf32>, tensor<16x40xi8>, tensor<16xf32>) -> tensor<?x16xf32>
  %w64 = hyc.param #hyc.param<"f" : "out.weight"> {hyc.quantize = "w8a8"} -> tensor<64x16xi8>
  %s64 = hyc.param #hyc.param<"f" : "out.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<64xf32>
  %o = hyc.quant.matmul %y16, %w64 scale(%s64) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x16xf32>, tensor<64x16xi8>, tensor<64xf32>) -> tensor<?x64xf32>
  %sum = hyc.add %o, %y : tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}

// A result returned through a view (the logits reshaped) lives in the
// caller's buffer too: not marked.
// STREAM-LABEL: func.func @streams_returned_view
// STREAM-NOT: stream_c_min_rows
// STREAM: return
func.func @streams_returned_view(%x0: tensor<?x64xf32>) -> tensor<?x4x16xf32> attributes {hyc.entry = "extend"} {
  %x = hyc.assume_bounds %x0 [64] : tensor<?x64xf32>
  %w = hyc.param #hyc.param<"f" : "head.weight"> {hyc.quantize = "w8a8"} -> tensor<64x64xi8>
  %s = hyc.param #hyc.param<"f" : "head.weight"> {hyc.quantize = "w8a8.scale"} -> tensor<64xf32>
  %y = hyc.quant.matmul %x, %w scale(%s) {quant = #hyc.quant<w8a8>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<64x64xi8>, tensor<64xf32>) -> tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?x64xf32>
  %v = tensor.expand_shape %y [[0], [1, 2]] output_shape [%n, 4, 16] : tensor<?x64xf32> into tensor<?x4x16xf32>
  return %v : tensor<?x4x16xf32>
}

// -----

// Integer codes (w4a8's q4, group 32) on the amx variant: many-row steps take
// the tdpbsud kernel of the same packed layout, as w8a8 and bf16 GEMMs do;
// the other variants have no AMX kernel to select.
// CHECK-LABEL: func.func @amx_codes
// CHECK-NOT: amx_min_rows
// CHECK: return
// AMXSTREAM-LABEL: func.func @amx_codes
// AMXSTREAM: hyc.quant.matmul {{.*}}hyc_cpu.amx_min_rows = 16 : i64{{.*}}types = "s8u4f32", layout = "q4_g32"
// AMXSTREAM: return
func.func @amx_codes(%x0: tensor<?x64xf32>) -> tensor<?x128xf32> attributes {hyc.entry = "extend"} {
  %x = hyc.assume_bounds %x0 [64] : tensor<?x64xf32>
  %w = hyc.param #hyc.param<"f" : "q.weight"> {hyc.quantize = "q4g32"} -> tensor<128x64xi8>
  %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<q4, group = 32>, epilogue = #hyc<epilogue none>} : (tensor<?x64xf32>, tensor<128x64xi8>) -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}
