//===- Passes.td - hyc passes ------------------------------*- tablegen -*-===//
//
// Alphabetical. Names carry their phase: hyc-global-* (graph level),
// hyc-cpu-* (CPU code generation).
//
//===----------------------------------------------------------------------===//

#ifndef HYC_PASSES_TD
#define HYC_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertHycKernelToLLVM : Pass<"convert-hyc-kernel-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Convert kernel-level entry functions to the LLVM dialect";
  let description = [{
    Every `func.func` carrying `hyc.entry` (after hyc-cpu-lower-to-kernel:
    no arguments, only hyc_kernel, arith and func ops) becomes
    `llvm.func @hyc_<entry>_v0(step, kv, weights, arena) -> i32` following
    `runtime/include/hyrt/abi.h`: `hyc_kernel.buffer` -> an address (arena +
    i64 offset, a weight-table slot, a step field), `step_size` -> a load of
    the step, `brgemm.dispatch` -> the address of the generated kernel
    (listed in the module attribute `hyc.kernels` for the compiler to
    generate and embed), `constant_table` -> an internal global, `ukernel` ->
    a call. The module gets the `hyc_abi_version` and `hyc_arena_bytes`
    globals.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def HycCpuCheckNoReferenceKernels
    : Pass<"hyc-cpu-check-no-reference-kernels", "::mlir::ModuleOp"> {
  let summary = "Refuse kernel-level IR that calls a hyrt_ref_* reference kernel";
  let description = [{
    Runs after hyc-cpu-lower-to-kernel, before LLVM conversion, on the
    optimized variants (`hyc compile` leaves it out on `--target=reference`
    and with `--allow-reference`): every `hyc_kernel.ukernel` whose callee is
    a `hyrt_ref_*` kernel (the scalar fp32 loops that define the ops, not a
    fast path) is listed, one line per call with the op it lowers (its
    location: the op kind, its weight or layer, the entry), and the compile
    fails. A module whose `hyc.variant` is `reference` passes.

    ```
    error: 1 call of a reference kernel in variant avx512 (scalar loops, not a
    fast path): hyrt_ref_matmul for hyc.quant.matmul model.embed_tokens.weight
    in @decode; give the op a kernel, or compile with --allow-reference
    (debugging only)
    ```
  }];
  let dependentDialects = ["::hyc::kernel::HycKernelDialect"];
}

def HycCpuLowerToKernel : Pass<"hyc-cpu-lower-to-kernel", "::mlir::ModuleOp"> {
  let summary = "Lower hyc ops to hyc_kernel microkernel calls on planned buffers";
  let description = [{
    Applies the schedule of hyc-cpu-select-lowering-strategy and the plan of
    hyc-cpu-plan-memory: each entry function is rebuilt as a function of no
    arguments whose body is hyc_kernel ops. Tensors become
    `hyc_kernel.buffer`s (views of where the plan put them; reshapes are
    further views, no copies), dynamic sizes `hyc_kernel.step_size` reads
    and index arithmetic, a GEMM scheduled on `brgemm` a
    `hyc_kernel.brgemm.dispatch` of its block kernel plus a `ukernel` call of
    its `hyrt_cpu_gemm_*` driver with the config's row tile and threading
    threshold, attention scheduled on `paged_attention` a call of
    `hyrt_cpu_paged_attention[_append]`, and every other op a `ukernel` call
    of its fp32 reference kernel; RoPE frequency tables are computed here
    as `hyc_kernel.constant_table`s. Ops without a lowering (collectives
    across more than one rank, unsupported quantization) are rejected with
    an error naming the op.
  }];
  let dependentDialects = ["::hyc::kernel::HycKernelDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"bf16Activations", "bf16-activations", "bool", /*default=*/"false",
           "Reference bf16 GEMMs round their activations to bf16 first "
           "(the semantics of native-bf16 kernels, for comparing with them)">
  ];
}

def HycCpuPlanMemory : Pass<"hyc-cpu-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Plan every activation into one arena at the maximum shape";
  let description = [{
    Sizes each tensor of an entry function at its bounds (dynamic dims from
    `hyc.assume_bounds`, propagated along token dims) and gives it a byte
    offset in one arena with liveness-based first-fit reuse; results are
    allocated before operands are freed, so no kernel runs in place. Records
    `hyc_cpu.arena_offsets` on each op (per result; -2: the returned logits,
    written into the step), `hyc_cpu.weight_index` on each `hyc.param`,
    `hyc_cpu.scratch_offset` on each entry (the kernel drivers' scratch,
    above every buffer), and on the module the weight table
    (`hyc.weights`, `hyc.weight_types`, `hyc.weight_layouts`: the layout of
    the kernel the weight's GEMMs were scheduled on) and `hyc.arena_bytes`.
  }];
  let options = [
    Option<"arenaAlignment", "arena-alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every planned buffer">
  ];
}

def HycCpuSelectLoweringStrategy
    : Pass<"hyc-cpu-select-lowering-strategy", "::mlir::ModuleOp"> {
  let summary = "Decide how every compute op of the entry functions is lowered";
  let description = [{
    Writes `hyc_cpu.lowering_config = #hyc_cpu.lowering_config<...>` on each
    compute op: the kernel (`reference`, `brgemm`, `paged_attention`), for
    GEMMs the generated kernel's ISA, types, packed weight layout and tile
    `[m, n, k]`, the threads it may use and the smallest M*N*K worth forking
    for; for attention the threads and KV splits. The numbers come from
    shapes and the machine description in CpuCostModel.cpp, not from
    constants in kernels. Later passes only read these decisions.

    A GEMM gets `brgemm` when its weight is a named parameter without K
    groups or fused epilogue and the target has a kernel for its scheme;
    extend attention gets `paged_attention` when this step's keys and values
    were appended to the cache it reads (then it is paged attention over
    [0, p]).
  }];
  let dependentDialects = ["::hyc::cpu::HycCpuDialect"];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"reference\"",
           "Kernel family: reference (every op on its fp32 reference), "
           "avx2 (fp32 GEMM kernels) or avx512 (f32, bf16 and w8a8 GEMM "
           "kernels)">,
    Option<"nativeBf16", "native-bf16", "bool", /*default=*/"false",
           "bf16 GEMMs use AVX-512 BF16 dot products (vdpbf16ps, bf16 "
           "activations) instead of fp32 FMA over bf16 weights">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "bf16 and w8a8 GEMMs also get AMX tile kernels (tdpbf16ps, "
           "tdpbusd) for steps of at least `hyc_cpu.amx_min_rows` rows, "
           "written on each such GEMM">,
    Option<"threads", "threads", "int64_t", /*default=*/"2",
           "Worker threads the schedule plans for">,
    Option<"kvCache", "kv-cache", "std::string", /*default=*/"\"auto\"",
           "KV cache element type: auto (bf16 on kernel targets when every "
           "op reading the cache has a bf16 kernel, else f32), f32 or bf16; "
           "written as the module's hyc_cpu.kv_cache_dtype">,
    Option<"streamMinBytes", "stream-min-bytes", "int64_t", /*default=*/"0",
           "Output bytes from which a GEMM stores C non-temporally "
           "(`hyc_cpu.stream_c_min_rows`); 0: the cost model's "
           "streamStoreMinBytes">
  ];
}

def HycGlobalFuseActivationQuant
    : Pass<"hyc-global-fuse-activation-quant", "::mlir::ModuleOp"> {
  let summary = "Quantize activations once for every W8A8 GEMM that reads them";
  let description = [{
    When a value is read only by per-channel W8A8 `hyc.quant.matmul`s (at
    least two, e.g. q/k/v after a norm; or one, when the value comes from an
    `rms_norm` or `silu_mul`, whose kernel can then write the int8 rows
    itself) and its K is a multiple of 4, a
    `hyc.quant.quantize` after its producer writes the int8 values and
    per-token scales once and the GEMMs read them through `input_scale`
    instead of quantizing again. Runs after the other graph fusions. Same
    quantization function: bit-identical results.
  }];
}

def HycGlobalFuseDequantIntoAttention
    : Pass<"hyc-global-fuse-dequant-into-attention", "::mlir::ModuleOp"> {
  let summary = "Attention kernels read the int8 KV cache and dequantize while loading";
  let description = [{
    With `kv-cache=int8`, marks every op that attends over the cache
    (`hyc.attention`, `hyc.paged_attention`, `hyc.paged_attention.append`,
    `hyc.mla.attention`) `hyc.kv_dequant = "int8"`: its kernel reads int8
    rows and one fp32 scale per (token, KV head) row and widens them in
    registers, so no dequantized copy of the cache is ever written.
    hyc-cpu-lower-to-kernel consumes the attribute and rejects an int8-cache
    module whose attention op lacks it. Any other `kv-cache` leaves the
    module unchanged.
  }];
  let options = [
    Option<"kvCache", "kv-cache", "std::string", /*default=*/"\"auto\"",
           "The KV cache's element type (--kv-cache): auto, f32, bf16 or int8">
  ];
}

def HycGlobalFuseGateUpSilu
    : Pass<"hyc-global-fuse-gate-up-silu", "::mlir::ModuleOp"> {
  let summary = "One GEMM over [W_gate; W_up] with a SiLU-multiply epilogue";
  let description = [{
    Two `hyc.quant.matmul`s (or `hyc.moe.grouped_matmul`s) on the same input
    with the same quantization, whose results are read only by one
    `hyc.silu_mul` (gate, up), become one GEMM over the row-concatenated
    weight with `epilogue = silu_mul`. The weight (and, for W8A8, its
    scales) is a new parameter named `<prefix>{gate,up}<suffix>` that the
    artifact writer assembles, each half packed on its own. Runs after the
    quantize policy. Every output element is computed exactly as before:
    fused and unfused results are bit-identical.
  }];
}

def HycGlobalAbsorbMla : Pass<"hyc-global-absorb-mla", "::mlir::ModuleOp"> {
  let summary = "Attend over the MLA latent cache as multi-query attention";
  let description = [{
    Marks `hyc.mla.attention` ops `hyc.mla_form = "absorbed"`: W_UK is
    folded into the query, W_UV into the output, and the heads attend over
    the cached latent rows (keys [c | k_pe], values c) instead of
    re-expanding every cached latent through kv_b on every step. Requires
    an f32 kv_b of static shape (read in its stored layout). The CPU
    strategy maps the form to the absorbed kernel; the result is the same
    attention with re-associated sums.
  }];
}

def HycGlobalFuseKvAppendIntoAttention
    : Pass<"hyc-global-fuse-kv-append-into-attention", "::mlir::ModuleOp"> {
  let summary = "Write decode keys/values inside the decode attention kernel";
  let description = [{
    `%c1 = hyc.kv_cache.append %c0, %k, %v` followed by
    `%o = hyc.paged_attention %q, %c1` of the same layer becomes
    `%o, %c1' = hyc.paged_attention.append %q, %k, %v, %c0`; later readers of
    the cache (the next layer's append, the returned cache) read `%c1'`.
    Fires only when every other reader of the appended cache comes after the
    attention in the same block. Same arithmetic: bit-identical results.
  }];
}

def HycGlobalFuseMoeCombine
    : Pass<"hyc-global-fuse-moe-combine", "::mlir::ModuleOp"> {
  let summary = "Add shared experts and the residual inside the MoE combine";
  let description = [{
    `%y = hyc.moe.unpermute ...` read only by `hyc.add %y, %s` becomes
    `hyc.moe.unpermute ... add(%s)` at the add's place (up to two addends,
    e.g. the shared experts' output and the residual). Runs after hyc-global-fuse-residual-norm, which takes the
    residual add into the next norm where it can. The sum is rounded to fp32
    before each addend, as the unfused adds do: bit-identical results.
  }];
}

def HycGlobalFuseResidualNorm
    : Pass<"hyc-global-fuse-residual-norm", "::mlir::ModuleOp"> {
  let summary = "Fold a residual add into the RMSNorm that reads the sum";
  let description = [{
    `%s = hyc.add %x, %r` followed by `%y = hyc.rms_norm %s, %w` becomes
    `%y, %s2 = hyc.rms_norm %x, %w residual(%r)`: the norm adds while it
    reads, and later readers of the sum (the next residual add) use `%s2`.
    Fires only when every other reader of the sum comes after the norm in
    the same block. Same fp32 arithmetic: fused and unfused results are
    bit-identical.
  }];
}

def HycGlobalObserveActivations
    : Pass<"hyc-global-observe-activations", "::mlir::ModuleOp"> {
  let summary = "Calibration builds: observe every quantizable GEMM input";
  let description = [{
    Inserts `hyc.observe` on the input of every `hyc.quant.matmul` whose
    weight a W8A8 policy would quantize (a `hyc.param` other than the
    output head and the MoE router): one observer per distinct input, its
    `feeds` naming every weight that reads it (q/k/v share one, gate/up
    another), one slot per feeds list for the whole module (so @extend and
    @decode fold into the same maxima). Run first in the global phase of an
    fp32 build (`hyc compile --calibration-build`), before fusions that
    would fold the observed rows into their consumer. `hyc calibrate` reads
    the maxima back.
  }];
}

def HycGlobalQuantizePolicy : Pass<"hyc-global-quantize-policy", "::mlir::ModuleOp"> {
  let summary = "Choose the weight precision of every linear layer";
  let description = [{
    Sets `#hyc.quant<...>` on `hyc.quant.matmul` and `hyc.moe.grouped_matmul`
    ops whose weight is a `hyc.param`, following `scheme`: every linear layer
    takes it, except the sensitive ones, which stay 16-bit (bf16): the MoE
    router `mlp.gate.weight`, `lm_head` and embeddings used as the output
    head, plus names containing one of `keep-bf16` (e.g. `q_proj,k_proj`, as
    the 770B INT8 deployment kept its q/k projections). A weight also read as
    a table (tied embeddings used as the lm_head) gets a second param for the
    GEMM (`hyc.quantize = "copy"`): the embedding keeps the fp32 table, the
    head its own bf16 copy in the kernel's layout. Names containing one of
    `keep-f32` stay fp32 (the old behaviour: `keep-f32=mlp.gate,lm_head`).
    The decision is an attribute, so later passes (and lit tests) see it;
    packing happens when the artifact is written.
  }];
  // The quant attributes it builds belong to hyc: a module with no hyc op
  // yet (nothing loaded it) must not crash the pass.
  let dependentDialects = ["::hyc::HycDialect"];
  let options = [
    Option<"scheme", "scheme", "std::string", /*default=*/"\"bf16\"",
           "Weight scheme for linear layers: f32, bf16, w8a8 (per-channel "
           "int8 weights derived at compile time, per-token int8 activations) "
           "w8a8-g128 (one weight scale per 128 K-elements and channel), "
           "w8a8-g32 / w4a8 (8- / 4-bit codes with one fp16 scale per 32 "
           "K-elements inside the weight: GGUF Q8_0 / Q4_0) or "
           "fp8 (e4m3 weights with one factor per 128 x 128 block, weight-only: "
           "the GEMM widens them to bf16)">,
    ListOption<"keepBf16", "keep-bf16", "std::string",
               "Further weight-name substrings that stay bf16 (router, lm_head "
               "and embeddings always do)">,
    ListOption<"keepF32", "keep-f32", "std::string",
               "Weight-name substrings that stay fp32">,
    ListOption<"keepInt8", "keep-int8", "std::string",
               "Under w4a8 / w8a8-g32: weight-name substrings that stay "
               "per-channel int8 (w8a8) instead of taking the codes">,
    ListOption<"storedCodes", "stored-codes", "std::string",
               "Under w4a8 / w8a8-g32: `tensor=format` for each weight the "
               "checkpoint stores as integer codes hyc keeps exactly (format "
               "q4, q8, q4k, q5k, q6k, iq4xs, iq4nl or q4z; expert stacks "
               "named `...experts.*.<proj>.weight`): that weight takes its "
               "stored format instead of the scheme (q4 under w8a8-g32 as "
               "8-bit codes)">,
    Option<"lmHead", "lm-head", "std::string", /*default=*/"\"bf16\"",
           "The output head's precision under scheme=w8a8: bf16 (default) "
           "or int8 (per-channel int8 like the other linear layers, half the "
           "bytes of the largest decode read; a tied head quantizes its own "
           "copy, the embedding keeps its table)">
  ];
}

def HycGlobalShard : Pass<"hyc-global-shard", "::mlir::ModuleOp"> {
  let summary = "Split attention heads and MLP columns over tensor-parallel ranks";
  let description = [{
    For rank `tp-rank` of `tp-size`: q/k/v and gate/up GEMMs become
    column-parallel (the rank's heads, kv heads and ffn columns), o_proj and
    down row-parallel followed by `hyc.collective.all_reduce`; the KV cache
    type keeps num_kv_heads / tp-size (one kv head, shared with the ranks
    whose q heads read it, when there are fewer kv heads than ranks). An ffn
    width that does not divide is padded with zeros. Routed experts: each
    expert's ffn columns, or with ep-size whole experts per rank (tokens
    dispatched to their experts' ranks by a staged all-to-all, or the
    combines all-reduced: ep-exchange). MLA: by
    heads. An untied output head: by vocabulary rows, all-gathered. Split
    params get `hyc.shard = array<i64: dim, part, parts[, whole]>`, and the
    module `hyc.tensor_parallel = {rank, size, shards}` (checkpoint tensor
    -> split dim, or [dim, parts, part, whole]) for the weight writer. Runs
    first, on the imported model. Heads that do not divide are refused by
    name. A no-op for tp-size 1.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
  let options = [
    Option<"tpSize", "tp-size", "int64_t", /*default=*/"1", "Ranks of the group">,
    Option<"tpRank", "tp-rank", "int64_t", /*default=*/"0", "This rank (0 .. tp-size - 1)">,
    Option<"epSize", "ep-size", "int64_t", /*default=*/"1",
           "Expert parallel over the same ranks (1 or tp-size): whole experts per rank "
           "instead of each expert's ffn columns">,
    Option<"epExchange", "ep-exchange", "std::string", /*default=*/"\"all-to-all\"",
           "How expert parallel meets the experts' owners: all-to-all (each rank "
           "dispatches its own tokens' pairs with hyc.moe.dispatch / undispatch, a "
           "staged all-to-all each way) or all-reduce (every rank routes every token, "
           "keeps its experts' pairs, and the partial combines are all-reduced)">
  ];
}

def HycGlobalSmoothActivations
    : Pass<"hyc-global-smooth-activations", "::mlir::ModuleOp"> {
  let summary = "Choose the RMSNorm -> GEMM groups for SmoothQuant migration";
  let description = [{
    SmoothQuant moves activation outliers into the weights: with per-channel
    factors s, `norm(x) * w / s` feeds GEMMs whose weight columns are
    multiplied by s, which leaves the product unchanged and flattens the
    per-token activation range. This pass chooses where that is exact: an
    `hyc.rms_norm` whose weight is a `hyc.param` read by RMSNorms only, and
    whose result is read only as the input of `hyc.quant.matmul`s whose
    weights are params read nowhere else (attention input norm -> q/k/v,
    post-attention norm -> gate/up; not the output head or the router). It
    records each group as `{norm, gemms, alpha}` in the module attribute
    `hyc.smooth_groups`; the compiler computes the factors from calibrated
    activation maxima when it reads the weights. Runs before the quantize
    policy (which renames nothing: the tensors keep their names).
  }];
  let options = [
    Option<"alpha", "alpha", "double", /*default=*/"0.5",
           "Migration strength: s_j = max|X_j|^alpha / max|W_j|^(1 - alpha)">
  ];
}

#endif // HYC_PASSES_TD
