//===- HycDialect.td - hyc tensor-level dialect ------------*- tablegen -*-===//
//
// The hyc dialect: LLM building blocks at tensor level (dynamic token dims
// with upper bounds), produced by models/ and consumed by passes/.
//
//===----------------------------------------------------------------------===//

#ifndef HYC_DIALECT_TD
#define HYC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Hyc_Dialect : Dialect {
  let name = "hyc";
  let summary = "Tensor-level operations for LLM inference";
  let description = [{
    Ops that a model definition emits: embedding, RMSNorm, RoPE, quantized
    matmul, attention (extend, paged decode, DeepSeek MLA), KV cache append,
    MoE routing and expert GEMMs, collectives. Weights are named parameters
    (`hyc.param`), never constants. The leading dimension of activations is
    the number of tokens in a step and is dynamic; `hyc.assume_bounds`
    carries its compile-time upper bound.
  }];
  let cppNamespace = "::hyc";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

class Hyc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Hyc_Dialect, mnemonic, traits>;

#endif // HYC_DIALECT_TD
