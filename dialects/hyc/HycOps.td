//===- HycOps.td - hyc operations --------------------------*- tablegen -*-===//
//
// Tensor-level LLM ops. Activations are [tokens, ...] with a dynamic leading
// dim; weights come from `hyc.param`. Verifiers name the offending values.
//
//===----------------------------------------------------------------------===//

#ifndef HYC_OPS_TD
#define HYC_OPS_TD

include "dialects/hyc/HycDialect.td"
include "dialects/hyc/HycAttrs.td"
include "dialects/hyc/HycTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpBase.td"

def Hyc_Tensor : RankedTensorOf<[AnyType]>;
def Hyc_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def Hyc_IndexTensor : RankedTensorOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// Parameters and simple elementwise ops
//===----------------------------------------------------------------------===//

def Hyc_ParamOp : Hyc_Op<"param", [Pure]> {
  let summary = "A named weight tensor";
  let description = [{
    Produces the weight named by `ref`. The data stays in the checkpoint (and
    later the artifact's weight file); the IR only names it.

    ```mlir
    %w = hyc.param #hyc.param<"model.safetensors" : "lm_head.weight"> -> tensor<512x64xf32>
    ```
  }];
  let arguments = (ins Hyc_ParamAttr:$ref);
  let results = (outs Hyc_Tensor:$result);
  let assemblyFormat = "qualified($ref) attr-dict `->` type($result)";
  let hasVerifier = 1;
}

def Hyc_AddOp : Hyc_Op<"add", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise addition";
  let description = [{
    ```mlir
    %s = hyc.add %a, %b : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$lhs, Hyc_FloatTensor:$rhs);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Hyc_SiluMulOp : Hyc_Op<"silu_mul", [Pure, SameOperandsAndResultType]> {
  let summary = "silu(gate) * up, elementwise";
  let description = [{
    ```mlir
    %h = hyc.silu_mul %gate, %up : tensor<?x172xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$gate, Hyc_FloatTensor:$up);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Hyc_AssumeBoundsOp : Hyc_Op<"assume_bounds", [Pure, SameOperandsAndResultType]> {
  let summary = "Upper bounds of the dynamic dims of a tensor";
  let description = [{
    Returns its operand and records one upper bound per dynamic dim, in
    order. Memory planning sizes buffers at these bounds.

    ```mlir
    %t = hyc.assume_bounds %tokens [64] : tensor<?xi32>
    ```
  }];
  let arguments = (ins Hyc_Tensor:$input, DenseI64ArrayAttr:$upper_bounds);
  let results = (outs Hyc_Tensor:$result);
  let assemblyFormat = "$input $upper_bounds attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Hyc_ObserveOp : Hyc_Op<"observe"> {
  let summary = "Record per-channel max |x| of a GEMM input (calibration builds)";
  let description = [{
    Folds `max_t |input[t][j]|` of every step into observer `slot` of the
    artifact (`hyc_observe_v0`, runtime/include/hyrt/abi.h). `feeds` names
    the weights of the GEMMs that read `input`, so that `hyc calibrate` can
    write the maxima under their names. Inserted by
    hyc-global-observe-activations; reads its operand and has a side
    effect, so it is neither moved nor removed.

    ```mlir
    hyc.observe %x slot 0 feeds ["model.layers.0.self_attn.q_proj.weight",
                                 "model.layers.0.self_attn.k_proj.weight"]
        : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, I64Attr:$slot,
                       StrArrayAttr:$feeds);
  let assemblyFormat = "$input `slot` $slot `feeds` $feeds attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Embedding, normalization, rotary embedding
//===----------------------------------------------------------------------===//

def Hyc_EmbeddingOp : Hyc_Op<"embedding", [Pure]> {
  let summary = "Row gather from an embedding table";
  let description = [{
    `result[t] = table[ids[t]]`.

    ```mlir
    %x = hyc.embedding %table[%ids] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Hyc_Tensor:$table, Hyc_IndexTensor:$ids);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Hyc_RMSNormOp : Hyc_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm with an optional fused residual add";
  let description = [{
    `s = x (+ residual)`, `result = s / sqrt(mean(s^2) + epsilon) * weight`.
    With a residual the op also returns `s` as `residual_out`.

    ```mlir
    %y = hyc.rms_norm %x, %w {epsilon = 1.0e-05 : f32}
        : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %y2, %s = hyc.rms_norm %x, %w residual(%r) {epsilon = 1.0e-05 : f32}
        : (tensor<?x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>)
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, Hyc_FloatTensor:$weight,
                       Optional<Hyc_FloatTensor>:$residual, F32Attr:$epsilon);
  let results = (outs Hyc_FloatTensor:$result,
                      Optional<Hyc_FloatTensor>:$residual_out);
  let assemblyFormat = [{
    $input `,` $weight (`residual` `(` $residual^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Hyc_RopeOp : Hyc_Op<"rope", [Pure]> {
  let summary = "Rotary position embedding";
  let description = [{
    Rotates the first `rotary_dim` dims of every head of `input`
    ([tokens, heads, head_dim]) by `positions[t] * inv_freq(i)`, where the
    frequencies come from `theta` and `scaling`. `style` picks the pairing.

    ```mlir
    %q2 = hyc.rope %q, %pos {style = #hyc<rope_style neox>, rotary_dim = 64 : i64,
                             theta = 1.0e+04 : f64, scaling = #hyc.rope_scaling<none>}
        : tensor<?x8x64xf32>, tensor<?xi32> -> tensor<?x8x64xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, Hyc_IndexTensor:$positions,
                       Hyc_RopeStyleAttr:$style, I64Attr:$rotary_dim,
                       F64Attr:$theta, Hyc_RopeScalingAttr:$scaling);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` type($input) `,` type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Quantization and matmul
//===----------------------------------------------------------------------===//

def Hyc_QuantizeOp : Hyc_Op<"quant.quantize", [Pure]> {
  let summary = "Dynamic per-token int8 quantization of activations";
  let description = [{
    Symmetric: `scale = max|x| / 127` per token (per group of `group` K
    values when the scheme has a group), `q = round(x / scale)`.

    ```mlir
    %q, %s = hyc.quant.quantize %x {quant = #hyc.quant<w8a8>}
        : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, Hyc_QuantAttr:$quant);
  let results = (outs RankedTensorOf<[I8]>:$result, RankedTensorOf<[F32]>:$scale);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Hyc_DequantizeOp : Hyc_Op<"quant.dequantize", [Pure]> {
  let summary = "Dequantize an int8 or fp8 tensor with its scales";
  let description = [{
    Scales are per row ([N] or [N, 1]), per group ([N, K / group]) or per
    block ([ceil(N / bn), ceil(K / bk)]) according to `quant`.

    ```mlir
    %w = hyc.quant.dequantize %q, %s {quant = #hyc.quant<fp8_e4m3, block = [128, 128]>}
        : tensor<256x256xf8E4M3FN>, tensor<2x2xf32> -> tensor<256x256xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8, F8E4M3FN]>:$input,
                       RankedTensorOf<[F32]>:$scale, Hyc_QuantAttr:$quant);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Hyc_QuantMatmulOp : Hyc_Op<"quant.matmul", [Pure, AttrSizedOperandSegments]> {
  let summary = "x · wᵀ with a quantized or 16-bit weight and a fused epilogue";
  let description = [{
    `input` is [M, K], `weight` is [N', K] (Hugging Face layout). `scale` is
    required for `w8a8` ([N'] or [N', K / group]) and `fp8_e4m3`
    ([ceil(N'/bn), ceil(K/bk)]). For per-channel `w8a8` the input may come
    already quantized: i8 values from `hyc.quant.quantize` with their
    per-token `input_scale` ([M, 1]). Epilogues: `silu_mul` treats the N' = 2N
    outputs as [gate | up] and returns silu(gate) * up ([M, N]);
    `residual_add` adds `residual` ([M, N]). `bias` is [N'].

    ```mlir
    %y = hyc.quant.matmul %x, %w {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>}
        : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Hyc_Tensor:$input, Hyc_Tensor:$weight,
                       Optional<RankedTensorOf<[F32]>>:$scale,
                       Optional<Hyc_FloatTensor>:$bias,
                       Optional<Hyc_FloatTensor>:$residual,
                       Optional<RankedTensorOf<[F32]>>:$input_scale,
                       Hyc_QuantAttr:$quant, Hyc_EpilogueAttr:$epilogue);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`scale` `(` $scale^ `)`)? (`bias` `(` $bias^ `)`)?
    (`residual` `(` $residual^ `)`)? (`input_scale` `(` $input_scale^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Hyc_LogitRowsOp : Hyc_Op<"logit_rows", [Pure, SameOperandsAndResultType]> {
  let summary = "The rows of the step whose logits are wanted";
  let description = [{
    Keeps the rows of `input` ([T, D]) that the step lists in its
    `logit_rows` (runtime/include/hyrt/abi.h): the last token of each
    sequence when the caller only samples, every token when it asks for all
    positions (perplexity, logits dumps). The result has R <= T rows in that
    order, so the lm_head after it runs on R rows only.

    ```mlir
    %h = hyc.logit_rows %x : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention and KV cache
//===----------------------------------------------------------------------===//

def Hyc_KVCacheAppendOp : Hyc_Op<"kv_cache.append", [Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "Write this step's keys and values into the paged cache";
  let description = [{
    Writes `key` ([T, kv_heads, k_head_dim]) and `value` ([T, kv_heads,
    v_head_dim], absent for MLA latents) of layer `layer` at each token's
    position. Returns the updated cache.

    ```mlir
    %c1 = hyc.kv_cache.append %c0, %k, %v {layer = 0 : i64}
        : !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>,
          tensor<?x4x16xf32>, tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins Hyc_KVCacheType:$cache, Hyc_FloatTensor:$key,
                       Optional<Hyc_FloatTensor>:$value, I64Attr:$layer);
  let results = (outs Hyc_KVCacheType:$result);
  let assemblyFormat = [{
    $cache `,` $key (`,` $value^)? attr-dict `:` qualified(type($cache)) `,` type($key) (`,` type($value)^)?
  }];
  let hasVerifier = 1;
}

def Hyc_AttentionOp : Hyc_Op<"attention", [Pure]> {
  let summary = "Extend attention: cached prefix plus causal in-step tokens";
  let description = [{
    Token t of a sequence attends to the sequence's cached prefix (read from
    `cache` for layer `layer`) and to the in-step tokens of its sequence at
    positions up to its own (from `key` / `value`). GQA: query head h uses
    KV head h / (heads / kv_heads).

    ```mlir
    %o = hyc.attention %q, %k, %v, %c {layer = 0 : i64, scale = 0.25 : f32}
        : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>,
          !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>
          -> tensor<?x8x16xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$query, Hyc_FloatTensor:$key,
                       Hyc_FloatTensor:$value, Hyc_KVCacheType:$cache,
                       I64Attr:$layer, F32Attr:$scale);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $cache attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Hyc_PagedAttentionOp : Hyc_Op<"paged_attention", [Pure]> {
  let summary = "Decode attention over the paged cache";
  let description = [{
    Token t at position p attends to cached positions [0, p] of its
    sequence; its own key/value must already be appended. `kv_splits` > 1
    lets a kernel split long contexts (flash-decoding); it does not change
    the result.

    ```mlir
    %o = hyc.paged_attention %q, %c {layer = 0 : i64, scale = 0.25 : f32}
        : tensor<?x8x16xf32>,
          !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>
          -> tensor<?x8x16xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$query, Hyc_KVCacheType:$cache,
                       I64Attr:$layer, F32Attr:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$kv_splits);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $cache attr-dict `:` type($query) `,` qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Hyc_PagedAttentionAppendOp
    : Hyc_Op<"paged_attention.append", [Pure, AllTypesMatch<["cache", "cache_out"]>]> {
  let summary = "Decode attention that first writes this step's keys and values";
  let description = [{
    `hyc.kv_cache.append` followed by `hyc.paged_attention` on the appended
    cache, as one op (hyc-global-fuse-kv-append-into-attention): each
    token's `key` / `value` ([T, kv_heads, dim]) are written at its position
    of layer `layer`, then the token attends to cached positions [0, p] of
    its sequence. Returns the attention output and the updated cache; the
    result equals the unfused pair.

    ```mlir
    %o, %c1 = hyc.paged_attention.append %q, %k, %v, %c0 {layer = 0 : i64, scale = 0.25 : f32}
        : tensor<?x8x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>,
          !hyc.kv_cache<num_layers = 2, num_kv_heads = 4, k_head_dim = 16, v_head_dim = 16>
          -> tensor<?x8x16xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$query, Hyc_FloatTensor:$key,
                       Hyc_FloatTensor:$value, Hyc_KVCacheType:$cache,
                       I64Attr:$layer, F32Attr:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$kv_splits);
  let results = (outs Hyc_FloatTensor:$result, Hyc_KVCacheType:$cache_out);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $cache attr-dict `:` type($query) `,`
    type($key) `,` type($value) `,` qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Hyc_MLAAttentionOp : Hyc_Op<"mla.attention", [Pure]> {
  let summary = "DeepSeek multi-head latent attention on the latent cache";
  let description = [{
    Queries are split into `q_nope` [T, H, nope] and roped `q_pe` [T, H, rope].
    The cache holds, per position, the normalized latent (kv_lora_rank) and
    the roped shared key part (rope). `kv_b` is [H * (nope + v_head_dim),
    kv_lora_rank]: per head, nope key rows then v rows. Every token attends to
    cached positions [0, p] of its sequence (append first).

    ```mlir
    %o = hyc.mla.attention %qn, %qp, %kvb, %c {layer = 0 : i64, scale = 0.1 : f32, v_head_dim = 16 : i64}
        : tensor<?x4x16xf32>, tensor<?x4x8xf32>, tensor<128x32xf32>,
          !hyc.kv_cache<num_layers = 1, num_kv_heads = 1, k_head_dim = 40, v_head_dim = 0>
          -> tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$q_nope, Hyc_FloatTensor:$q_pe,
                       Hyc_Tensor:$kv_b, Hyc_KVCacheType:$cache,
                       I64Attr:$layer, F32Attr:$scale, I64Attr:$v_head_dim);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $q_nope `,` $q_pe `,` $kv_b `,` $cache attr-dict `:` type($q_nope) `,`
    type($q_pe) `,` type($kv_b) `,` qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Hyc_MoeRouteOp : Hyc_Op<"moe.route", [Pure]> {
  let summary = "Top-k expert selection with optional group limiting";
  let description = [{
    From router `logits` [T, E] computes scores (softmax or sigmoid), adds
    the optional `correction_bias` [E] for selection only, keeps the best
    `topk_group` of `n_group` groups, selects `top_k` experts (ties to the
    lower index) and returns their weights and ids ([T, top_k]).

    ```mlir
    %w, %ids = hyc.moe.route %logits {gating = #hyc.moe_gating<softmax, top_k = 2, renormalize = true>}
        : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$logits,
                       Optional<RankedTensorOf<[F32]>>:$correction_bias,
                       Hyc_MoeGatingAttr:$gating);
  let results = (outs RankedTensorOf<[F32]>:$weights, RankedTensorOf<[I32]>:$ids);
  let assemblyFormat = [{
    $logits (`bias` `(` $correction_bias^ `:` type($correction_bias) `)`)? attr-dict
    `:` type($logits) `->` type($weights) `,` type($ids)
  }];
  let hasVerifier = 1;
}

def Hyc_MoePermuteOp : Hyc_Op<"moe.permute", [Pure]> {
  let summary = "Group token rows by expert";
  let description = [{
    Produces T * top_k rows ordered by expert (stable in token order),
    `offsets` [E + 1] with each expert's first row, and `rows` giving
    `t * top_k + j` for each permuted row. With `first_expert` F (expert
    parallel: this rank holds experts [F, F + E)), id i is local expert
    i - F and pairs routed elsewhere are dropped (their rows are -1).

    ```mlir
    %px, %off, %rows = hyc.moe.permute %x, %ids {num_experts = 8 : i64}
        : tensor<?x64xf32>, tensor<?x2xi32> -> tensor<?x64xf32>, tensor<9xi32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, RankedTensorOf<[I32]>:$ids,
                       I64Attr:$num_experts,
                       DefaultValuedAttr<I64Attr, "0">:$first_expert);
  let results = (outs Hyc_FloatTensor:$result, RankedTensorOf<[I32]>:$offsets,
                      RankedTensorOf<[I32]>:$rows);
  let assemblyFormat = [{
    $input `,` $ids attr-dict `:` type($input) `,` type($ids) `->`
    type($result) `,` type($offsets) `,` type($rows)
  }];
  let hasVerifier = 1;
}

def Hyc_MoeDispatchOp : Hyc_Op<"moe.dispatch", [Pure]> {
  let summary = "Send each token to the ranks that hold its experts";
  let description = [{
    Token-distributed expert parallel over `group_size` ranks, each holding
    `experts_per_rank` consecutive experts. This rank takes its own tokens
    [T r/N, T (r+1)/N) of `input` with their routes, counts per destination
    rank the tokens that have an expert there, exchanges the counts, then
    moves each such token once per destination (its row, and for each of
    its top_k slots the rank-local expert there or -1, and the weight) in
    one batched exchange: a staged all-to-all. Results, shaped like
    input / ids / weights: the tokens received in source-rank order
    (`rows`, `row_ids`, `row_weights`; unused rows have ids -1), `sent` [T,
    top_k] (the token of each row sent, destination order, then -1) and
    `counts` [2 N] (rows sent to, then received from, each rank), which
    `hyc.moe.undispatch` reads to send the results back.

    ```mlir
    %r, %ri, %rw, %sent, %n = hyc.moe.dispatch %x, %ids, %w {experts_per_rank = 4 : i64, group_size = 2 : i64}
        : tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>
        -> tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<4xi32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, RankedTensorOf<[I32]>:$ids,
                       RankedTensorOf<[F32]>:$weights, I64Attr:$experts_per_rank,
                       I64Attr:$group_size);
  let results = (outs Hyc_FloatTensor:$rows, RankedTensorOf<[I32]>:$row_ids,
                      RankedTensorOf<[F32]>:$row_weights, RankedTensorOf<[I32]>:$sent,
                      RankedTensorOf<[I32]>:$counts);
  let assemblyFormat = [{
    $input `,` $ids `,` $weights attr-dict `:` type($input) `,` type($ids) `,`
    type($weights) `->` type($rows) `,` type($row_ids) `,` type($row_weights) `,`
    type($sent) `,` type($counts)
  }];
  let hasVerifier = 1;
}

def Hyc_MoeUndispatchOp : Hyc_Op<"moe.undispatch", [Pure]> {
  let summary = "Return dispatched tokens' expert rows and sum them per token";
  let description = [{
    The reverse of `hyc.moe.dispatch`: each received token's row of
    `results` (in received order: this rank's experts' weighted sum for it)
    goes back to its source rank in one batched exchange; the source adds
    them into its tokens' rows, and the ranks' token rows are gathered, so
    every rank holds `result` [T, H]. `ids` ([T, top_k], the routes) gives
    the token count.

    ```mlir
    %y = hyc.moe.undispatch %ids, %z, %sent, %n {group_size = 2 : i64}
        : tensor<?x2xi32>, tensor<?x64xf32>, tensor<?x2xi32>, tensor<4xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$ids, Hyc_FloatTensor:$results,
                       RankedTensorOf<[I32]>:$sent, RankedTensorOf<[I32]>:$counts,
                       I64Attr:$group_size);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $results `,` $sent `,` $counts attr-dict `:` type($ids) `,` type($results) `,`
    type($sent) `,` type($counts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Hyc_MoeGroupedMatmulOp : Hyc_Op<"moe.grouped_matmul", [Pure]> {
  let summary = "Per-expert GEMM over expert-grouped rows";
  let description = [{
    Rows in [offsets[e], offsets[e+1]) multiply `weight[e]` ([E, N', K]).
    Epilogue `silu_mul` halves N' as in `hyc.quant.matmul`.

    ```mlir
    %h = hyc.moe.grouped_matmul %px, %w, %off {quant = #hyc.quant<f32>, epilogue = #hyc<epilogue none>}
        : tensor<?x64xf32>, tensor<8x32x64xf32>, tensor<9xi32> -> tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, Hyc_Tensor:$weight,
                       RankedTensorOf<[I32]>:$offsets,
                       Optional<RankedTensorOf<[F32]>>:$scale,
                       Hyc_QuantAttr:$quant, Hyc_EpilogueAttr:$epilogue);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $offsets (`scale` `(` $scale^ `:` type($scale) `)`)? attr-dict
    `:` type($input) `,` type($weight) `,` type($offsets) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Hyc_MoeUnpermuteOp : Hyc_Op<"moe.unpermute", [Pure]> {
  let summary = "Weighted sum of expert outputs back to token order";
  let description = [{
    `result[t] = sum_j weights[t, j] * input[r]` where `rows[r] = t*top_k+j`,
    then plus each of `addends` (at most two, e.g. the shared experts' output
    and the residual; hyc-global-fuse-moe-combine folds them in), added in
    order in fp32.

    ```mlir
    %y = hyc.moe.unpermute %h, %rows, %w
        : tensor<?x64xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x64xf32>
    %z = hyc.moe.unpermute %h, %rows, %w add(%shared : tensor<?x64xf32>)
        : tensor<?x64xf32>, tensor<?xi32>, tensor<?x2xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, RankedTensorOf<[I32]>:$rows,
                       RankedTensorOf<[F32]>:$weights,
                       Variadic<Hyc_FloatTensor>:$addends);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $rows `,` $weights (`add` `(` $addends^ `:` type($addends) `)`)?
    attr-dict `:` type($input) `,` type($rows) `,` type($weights) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (tensor parallel ranks)
//===----------------------------------------------------------------------===//

def Hyc_AllReduceOp : Hyc_Op<"collective.all_reduce", [Pure, SameOperandsAndResultType]> {
  let summary = "All-reduce across the ranks of a tensor-parallel group";
  let description = [{
    ```mlir
    %s = hyc.collective.all_reduce %x {kind = #hyc<reduce_kind sum>, group_size = 2 : i64} : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, Hyc_ReduceKindAttr:$kind,
                       I64Attr:$group_size);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Hyc_AllGatherOp : Hyc_Op<"collective.all_gather", [Pure]> {
  let summary = "Concatenate every rank's tensor along `dim`";
  let description = [{
    ```mlir
    %g = hyc.collective.all_gather %x {dim = 1 : i64, group_size = 2 : i64}
        : tensor<?x32xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, I64Attr:$dim, I64Attr:$group_size);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Hyc_AllToAllOp : Hyc_Op<"collective.all_to_all", [Pure]> {
  let summary = "Split along `split_dim`, exchange, concatenate along `concat_dim`";
  let description = [{
    ```mlir
    %a = hyc.collective.all_to_all %x {split_dim = 0 : i64, concat_dim = 1 : i64, group_size = 2 : i64}
        : tensor<8x32xf32> -> tensor<4x64xf32>
    ```
  }];
  let arguments = (ins Hyc_FloatTensor:$input, I64Attr:$split_dim,
                       I64Attr:$concat_dim, I64Attr:$group_size);
  let results = (outs Hyc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

#endif // HYC_OPS_TD
