//===- Passes.td - hyc passes ------------------------------*- tablegen -*-===//
//
// Alphabetical. Names carry their phase: hyc-global-* (graph level),
// hyc-cpu-* (CPU code generation).
//
//===----------------------------------------------------------------------===//

#ifndef HYC_PASSES_TD
#define HYC_PASSES_TD

include "mlir/Pass/PassBase.td"

def HycCpuLowerToCalls : Pass<"hyc-cpu-lower-to-calls", "::mlir::ModuleOp"> {
  let summary = "Lower hyc entry functions to LLVM calls into runtime kernels";
  let description = [{
    Calls the fp32 reference kernels (`--target=reference`) or, with
    `kernels=true`, GEMMs on generated brgemm kernels through the
    `hyrt_cpu_gemm_*` drivers and attention on `hyrt_cpu_paged_attention`
    (`--target=avx2|avx512|avx512-bf16`; the kernel choice per scheme is in
    KernelSchemes.cpp). Every `func.func` carrying `hyc.entry` becomes
    an `llvm.func @hyc_<entry>_v0(step, kv, weights, arena) -> i32` following
    `runtime/include/hyrt/abi.h`:

    * activation memory is planned statically at the maximum shape given by
      `hyc.assume_bounds`: one arena, liveness-based first-fit reuse, 64-byte
      aligned; the returned logits are written straight into `step->logits`;
    * `hyc.param`s become loads from the weight table (index = order of first
      use across the module, recorded in the module attribute `hyc.weights`);
    * each hyc op becomes one call to its `hyrt_ref_*` kernel with the actual
      token count read from the step at run time;
    * RoPE frequency tables are computed here and emitted as constant globals.

    The module also gets `hyc_abi_version` and `hyc_arena_bytes` globals.
    Ops without a reference lowering (fused epilogues, collectives across more
    than one rank) are rejected with an error naming the op.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"arenaAlignment", "arena-alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every planned buffer">,
    Option<"useKernels", "kernels", "bool", /*default=*/"false",
           "Lower quant.matmul ops on named weights to generated brgemm "
           "kernels (f32: AVX-512 FMA, bf16: AVX-512 BF16, w8a8: AVX-512 "
           "VNNI) called through the hyrt_cpu_gemm_* drivers">,
    Option<"isa", "isa", "std::string", /*default=*/"\"avx512\"",
           "Kernel ISA family: avx512 (f32, bf16, w8a8 kernels) or avx2 "
           "(f32 kernels; other schemes stay on the reference path)">,
    Option<"nativeBf16", "native-bf16", "bool", /*default=*/"false",
           "bf16 GEMMs use AVX-512 BF16 dot products (vdpbf16ps, bf16 "
           "activations) instead of fp32 FMA over bf16 weights">
  ];
}

def HycGlobalQuantizePolicy : Pass<"hyc-global-quantize-policy", "::mlir::ModuleOp"> {
  let summary = "Choose the weight precision of every linear layer";
  let description = [{
    Sets `#hyc.quant<...>` on `hyc.quant.matmul` ops whose weight is a
    `hyc.param`, following `--quant`: every linear layer takes `scheme`,
    except the sensitive ones that stay fp32 (weights whose name contains one
    of `keep-f32`: by default the MoE router `mlp.gate.weight`, `lm_head`
    and tied embeddings used as the output head). The decision is an
    attribute, so later passes (and lit tests) see it; packing happens when
    the artifact is written.
  }];
  let options = [
    Option<"scheme", "scheme", "std::string", /*default=*/"\"bf16\"",
           "Weight scheme for linear layers: f32, bf16 or w8a8 (per-channel "
           "int8 weights derived at compile time, per-token int8 activations)">,
    ListOption<"keepF32", "keep-f32", "std::string",
               "Weight-name substrings that stay fp32 (default: mlp.gate.weight, lm_head.weight, embed_tokens.weight)">
  ];
}

#endif // HYC_PASSES_TD
