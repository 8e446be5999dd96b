//===- HycCpuDialect.td - hyc_cpu dialect ------------------*- tablegen -*-===//
//
// CPU code-generation decisions as attributes: written by
// hyc-cpu-select-lowering-strategy, read by the passes that lower.
//
//===----------------------------------------------------------------------===//

#ifndef HYC_CPU_DIALECT_TD
#define HYC_CPU_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def HycCpu_Dialect : Dialect {
  let name = "hyc_cpu";
  let summary = "CPU schedule decisions (kernel variant, tiles, threads)";
  let description = [{
    Holds no ops: only the attributes in which the CPU pipeline records what
    it decided for each compute op, so that the decision is visible in
    `--compile-to=strategy` dumps, lit-testable, and consumed by a later pass
    instead of being re-derived there.
  }];
  let cppNamespace = "::hyc::cpu";
  let useDefaultAttributePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def HycCpu_LoweringConfigAttr
    : AttrDef<HycCpu_Dialect, "LoweringConfig"> {
  let mnemonic = "lowering_config";
  let summary = "How one compute op is lowered on the CPU";
  let description = [{
    `kernel` names the implementation: `reference` (the fp32 reference
    kernel that defines the op), `brgemm` (a generated block GEMM called by a
    threaded driver), `paged_attention` (the threaded paged-attention
    kernel), `quantize_u8` (per-token activation quantization into the layout
    the W8A8 drivers read, u8 = q + 128), `rope`, `rms_norm`, `silu_mul`,
    `moe`, `mla_absorbed` (their threaded kernels), `copy` (row gathers and
    last-dim copies: embedding, logit rows, slices, concats), `kv_append`
    (the threaded KV cache append), `add` (an unfused residual add) and
    `collective` (a tensor-parallel exchange: the rows around the registered
    group's collectives packed and summed across threads). For `brgemm`, `isa` / `types` / `layout` name the generated
    kernel (`hyc_brgemm_<types>_<tile_m>x<tile_n>x<tile_k>_<isa>`) and the
    packed weight layout it reads; `tile = [m, n, k]` is its block (`m`: the
    largest row block, N is cut in `n`-column panels, K is not split);
    `threads` is how many threads the op may use and `parallel_min_macs`
    the smallest M*N*K worth forking for (below it one thread runs the op:
    fork/join costs more than it saves). `kv_splits` is the number of
    splits of the context for decode attention. On an activation
    quantization, `fused_producer` names the op whose kernel computes it
    (`rms_norm`, `silu_mul`): the producer writes the int8 rows and scales
    directly and its fp32 output is never stored.

    ```mlir
    #hyc_cpu.lowering_config<kernel = "brgemm", isa = "avx512vnni",
        types = "u8s8f32", layout = "s8_vnni4", tile = [14, 32, 64],
        threads = 2, parallel_min_macs = 262144>
    #hyc_cpu.lowering_config<kernel = "paged_attention", threads = 2, kv_splits = 1>
    #hyc_cpu.lowering_config<kernel = "reference">
    ```
  }];
  let parameters = (ins
    StringRefParameter<"implementation">:$kernel,
    OptionalParameter<"mlir::StringAttr">:$isa,
    OptionalParameter<"mlir::StringAttr">:$types,
    OptionalParameter<"mlir::StringAttr">:$layout,
    OptionalParameter<"mlir::DenseI64ArrayAttr">:$tile,
    DefaultValuedParameter<"int64_t", "1">:$threads,
    DefaultValuedParameter<"int64_t", "0">:$parallel_min_macs,
    DefaultValuedParameter<"int64_t", "1">:$kv_splits,
    OptionalParameter<"mlir::StringAttr">:$fused_producer
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // HYC_CPU_DIALECT_TD
