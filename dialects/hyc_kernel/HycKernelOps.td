//===- HycKernelOps.td - hyc_kernel operations -------------*- tablegen -*-===//

#ifndef HYC_KERNEL_OPS_TD
#define HYC_KERNEL_OPS_TD

include "dialects/hyc_kernel/HycKernelDialect.td"
include "dialects/hyc/HycAttrs.td"
include "dialects/hyc/HycTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"

//===----------------------------------------------------------------------===//
// Batch-reduce GEMM
//===----------------------------------------------------------------------===//

def HycKernel_BrgemmDispatchOp : HycKernel_Op<"brgemm.dispatch", [Pure]> {
  let summary = "Describe a batch-reduce GEMM microkernel; returns its handle";
  let description = [{
    `C[m, n] (+)= sum_b A_b[m, k] * B_b[k, n]` for an `[m, n, k]` block with
    leading dims `[lda, ldb, ldc]`. `b_layout` names the packed weight layout
    the kernel reads (`row`, `vnni2` for bf16 pairs, `vnni4` for int8 quads,
    `q4_g32` / `q8_g32` for 4- / 8-bit codes with in-panel fp16 scales per
    32 k: s8 A times unsigned codes, types spelled `s8u4f32` / `s8u8f32`).
    `m` is the maximum block height; invoke may pass fewer rows. `isa`
    names the instruction set the kernel is generated for (`avx512core`,
    `avx512bf16`, `avx512vnni`, `avx2`, `amx`); the kernel is then the
    function `hyc_brgemm_<types>_<m>x<n>x<k>_<isa>` embedded in the
    artifact, and the handle is its address. `stream_c` asks for
    non-temporal C stores (suffix `_nt`): f32 C = A.B (zero_init, no
    epilogue) on an AVX-512 ISA, every C row 64-byte aligned.

    ```mlir
    %h = hyc_kernel.brgemm.dispatch [32, 32, 64] ld [64, 32, 32]
        (bf16, bf16 -> f32) {b_layout = "vnni2", zero_init, epilogue = #hyc<epilogue none>} -> i64
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$shape, DenseI64ArrayAttr:$leading_dims,
                       TypeAttr:$a_type, TypeAttr:$b_type, TypeAttr:$c_type,
                       StrAttr:$b_layout, UnitAttr:$zero_init,
                       Hyc_EpilogueAttr:$epilogue, OptionalAttr<StrAttr>:$isa,
                       UnitAttr:$stream_c);
  let results = (outs I64:$handle);
  let assemblyFormat = [{
    $shape `ld` $leading_dims `(` $a_type `,` $b_type `->` $c_type `)` attr-dict `->` type($handle)
  }];
  let hasVerifier = 1;
}

def HycKernel_BrgemmOp : HycKernel_Op<"brgemm"> {
  let summary = "Invoke a dispatched batch-reduce GEMM";
  let description = [{
    Runs the kernel `handle` on `num_batches` (A, B) block pairs laid out
    back to back in `a` and `b`, accumulating into `c` (its rows: the actual
    M, at most the dispatched maximum).

    ```mlir
    hyc_kernel.brgemm %h, %a, %b, %c, %nb
        : memref<?x64xbf16>, memref<2x32x32x2xbf16>, memref<?x32xf32>
    ```
  }];
  let arguments = (ins I64:$handle,
                       Arg<AnyMemRef, "A blocks", [MemRead]>:$a,
                       Arg<AnyMemRef, "packed B blocks", [MemRead]>:$b,
                       Arg<AnyMemRef, "accumulator", [MemRead, MemWrite]>:$c,
                       Index:$num_batches);
  let assemblyFormat = [{
    $handle `,` $a `,` $b `,` $c `,` $num_batches attr-dict `:` type($a) `,` type($b) `,` type($c)
  }];
  let hasVerifier = 1;
}

def HycKernel_PackOp : HycKernel_Op<"pack"> {
  let summary = "Pack a [N, K] weight into K-major panels";
  let description = [{
    Writes `source` ([N, K]) into `dest` ([ceil(N/bn), ceil(K/v), bn, v]) for
    `inner_tiles = [bn, v]`: 32-column panels with v = 2 (bf16 VNNI pairs)
    or 4 (int8 quads); out-of-range elements are zero. Runs at compile time
    for weights, at run time for activations that need it.

    ```mlir
    hyc_kernel.pack %w into %p {inner_tiles = array<i64: 32, 2>}
        : memref<64x64xbf16> -> memref<2x32x32x2xbf16>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "source", [MemRead]>:$source,
                       Arg<AnyMemRef, "destination", [MemWrite]>:$dest,
                       DenseI64ArrayAttr:$inner_tiles);
  let assemblyFormat = [{
    $source `into` $dest attr-dict `:` type($source) `->` type($dest)
  }];
  let hasVerifier = 1;
}

def HycKernel_TileConfigOp : HycKernel_Op<"tile_config", [MemoryEffects<[MemWrite]>]> {
  let summary = "Configure this thread's AMX tiles for a dispatched GEMM";
  let description = [{
    Loads the palette for `handle` (`ldtilecfg`). Each thread configures its
    own tiles; pair with `hyc_kernel.tile_release`.

    ```mlir
    hyc_kernel.tile_config %h
    ```
  }];
  let arguments = (ins I64:$handle);
  let assemblyFormat = "$handle attr-dict";
}

def HycKernel_TileReleaseOp : HycKernel_Op<"tile_release", [MemoryEffects<[MemWrite]>]> {
  let summary = "Release this thread's AMX tile state";
  let description = [{
    ```mlir
    hyc_kernel.tile_release
    ```
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Paged attention
//===----------------------------------------------------------------------===//

def HycKernel_PagedAttentionDispatchOp
    : HycKernel_Op<"paged_attention.dispatch", [Pure]> {
  let summary = "Describe a paged decode-attention kernel; returns its handle";
  let description = [{
    ```mlir
    %h = hyc_kernel.paged_attention.dispatch {num_heads = 8 : i64, num_kv_heads = 2 : i64,
        head_dim = 64 : i64, v_head_dim = 64 : i64, page_size = 16 : i64,
        kv_splits = 4 : i64, kv_type = f32} -> i64
    ```
  }];
  let arguments = (ins I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, I64Attr:$v_head_dim,
                       I64Attr:$page_size, I64Attr:$kv_splits,
                       TypeAttr:$kv_type);
  let results = (outs I64:$handle);
  let assemblyFormat = "attr-dict `->` type($handle)";
  let hasVerifier = 1;
}

def HycKernel_PagedAttentionOp : HycKernel_Op<"paged_attention"> {
  let summary = "Invoke a dispatched paged decode-attention kernel";
  let description = [{
    ```mlir
    hyc_kernel.paged_attention %h, %q, %cache, %out {layer = 0 : i64, scale = 0.125 : f32}
        : memref<?x8x64xf32>,
          !hyc.kv_cache<num_layers = 1, num_kv_heads = 2, k_head_dim = 64, v_head_dim = 64>,
          memref<?x8x64xf32>
    ```
  }];
  let arguments = (ins I64:$handle,
                       Arg<AnyMemRef, "queries", [MemRead]>:$query,
                       Hyc_KVCacheType:$cache,
                       Arg<AnyMemRef, "output", [MemWrite]>:$out,
                       I64Attr:$layer, F32Attr:$scale);
  let assemblyFormat = [{
    $handle `,` $query `,` $cache `,` $out attr-dict `:` type($query) `,` qualified(type($cache)) `,` type($out)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Planned buffers and microkernel calls
//===----------------------------------------------------------------------===//

def HycKernel_BufferOp : HycKernel_Op<"buffer", [Pure]> {
  let summary = "A planned buffer seen as a memref";
  let description = [{
    Where hyc-cpu-plan-memory put a tensor: `arena` (byte `offset` into the
    activation arena), `scratch` (the drivers' scratch region at `offset`),
    `weight` (slot `offset` of the weight table), a field of the step
    (`step_tokens`, `step_positions`, `step_logits`, `step_logit_rows`), or
    `null` (an absent
    optional operand). `sizes` give the dynamic dims. Views of one buffer
    with other shapes are further `buffer` ops at the same place: no copy.

    ```mlir
    %x = hyc_kernel.buffer "arena" [128] (%t) : memref<?x64xf32>
    %w = hyc_kernel.buffer "weight" [3] : memref<64x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$space, I64Attr:$offset, Variadic<Index>:$sizes);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = [{
    $space `[` $offset `]` (`(` $sizes^ `)`)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def HycKernel_StepSizeOp : HycKernel_Op<"step_size", [Pure]> {
  let summary = "A size read from the step at run time";
  let description = [{
    `num_tokens` (tokens in the step) or `num_logit_rows` (rows of logits
    the step asks for).

    ```mlir
    %t = hyc_kernel.step_size "num_tokens"
    ```
  }];
  let arguments = (ins StrAttr:$field);
  let results = (outs Index:$result);
  let assemblyFormat = "$field attr-dict";
  let hasVerifier = 1;
}

def HycKernel_ConstantTableOp : HycKernel_Op<"constant_table", [Pure]> {
  let summary = "Read-only data computed at compile time (e.g. RoPE frequencies)";
  let description = [{
    ```mlir
    %f = hyc_kernel.constant_table dense<[1.0, 0.01]> : tensor<2xf32> -> memref<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$values);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = "$values attr-dict `->` type($result)";
}

def HycKernel_UkernelOp : HycKernel_Op<"ukernel"> {
  let summary = "Call a runtime microkernel by name";
  let description = [{
    Calls the C function `name` of the runtime's kernel libraries
    (`hyrt_ref_*`, `hyrt_cpu_*`) with its operands in order: a memref passes
    its base address, an index or integer its value, a float its value, a
    kernel handle the kernel's address. With `kv_step`, the KV cache and
    the step are passed first. Reads and writes memory: calls keep their
    order.

    ```mlir
    hyc_kernel.ukernel "hyrt_ref_rms_norm" (%x, %res, %w, %rows, %dim, %eps, %y, %r)
        : memref<?x64xf32>, memref<0xf32>, memref<64xf32>, index, index, f32,
          memref<?x64xf32>, memref<0xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, UnitAttr:$kv_step,
                       Variadic<AnyType>:$args);
  let assemblyFormat = [{
    $name `(` $args `)` attr-dict `:` type($args)
  }];
  let hasVerifier = 1;
}

#endif // HYC_KERNEL_OPS_TD
