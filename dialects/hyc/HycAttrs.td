//===- HycAttrs.td - hyc attributes and enums --------------*- tablegen -*-===//
//
// Quantization schemes, RoPE scaling, MoE gating options and the named
// weight parameter reference.
//
//===----------------------------------------------------------------------===//

#ifndef HYC_ATTRS_TD
#define HYC_ATTRS_TD

include "dialects/hyc/HycDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Hyc_QuantScheme : I32EnumAttr<"QuantScheme", "weight quantization scheme", [
    I32EnumAttrCase<"f32", 0>,
    I32EnumAttrCase<"bf16", 1>,
    I32EnumAttrCase<"w8a8", 2>,
    I32EnumAttrCase<"fp8_e4m3", 3>,
    I32EnumAttrCase<"q4", 4>,
    I32EnumAttrCase<"q8", 5>,
    I32EnumAttrCase<"q4k", 6>,
    I32EnumAttrCase<"q5k", 7>,
    I32EnumAttrCase<"q6k", 8>,
    I32EnumAttrCase<"iq4xs", 9>,
    I32EnumAttrCase<"iq4nl", 10>,
    I32EnumAttrCase<"q4z", 11>,
    I32EnumAttrCase<"q4_1", 12>,
    I32EnumAttrCase<"q5_1", 13>,
    I32EnumAttrCase<"q4z128", 14>
  ]> {
  let cppNamespace = "::hyc";
  let genSpecializedAttr = 0;
}

def Hyc_RopeStyle : I32EnumAttr<"RopeStyle", "pairing of rotated dims", [
    I32EnumAttrCase<"normal", 0>,  // adjacent pairs (2i, 2i+1): GGUF, llama2.c
    I32EnumAttrCase<"neox", 1>     // halves (i, i + d/2): Hugging Face
  ]> {
  let cppNamespace = "::hyc";
  let genSpecializedAttr = 0;
}
def Hyc_RopeStyleAttr : EnumAttr<Hyc_Dialect, Hyc_RopeStyle, "rope_style">;

def Hyc_RopeScalingKind : I32EnumAttr<"RopeScalingKind", "rope scaling", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"linear", 1>,
    I32EnumAttrCase<"llama3", 2>,
    I32EnumAttrCase<"yarn", 3>
  ]> {
  let cppNamespace = "::hyc";
  let genSpecializedAttr = 0;
}

def Hyc_MoeScoring : I32EnumAttr<"MoeScoring", "router score function", [
    I32EnumAttrCase<"softmax", 0>,
    I32EnumAttrCase<"sigmoid", 1>
  ]> {
  let cppNamespace = "::hyc";
  let genSpecializedAttr = 0;
}

def Hyc_MoeGroupScore : I32EnumAttr<"MoeGroupScore", "score of an expert group", [
    I32EnumAttrCase<"max", 0>,       // DeepSeek-V2 group_limited_greedy
    I32EnumAttrCase<"top2_sum", 1>   // DeepSeek-V3 noaux_tc
  ]> {
  let cppNamespace = "::hyc";
  let genSpecializedAttr = 0;
}

def Hyc_Epilogue : I32EnumAttr<"Epilogue", "matmul epilogue", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"silu_mul", 1>,   // columns [0,N) gate, [N,2N) up -> N
    I32EnumAttrCase<"residual_add", 2>
  ]> {
  let cppNamespace = "::hyc";
  let genSpecializedAttr = 0;
}
def Hyc_EpilogueAttr : EnumAttr<Hyc_Dialect, Hyc_Epilogue, "epilogue">;

def Hyc_ReduceKind : I32EnumAttr<"ReduceKind", "all-reduce combiner", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>
  ]> {
  let cppNamespace = "::hyc";
  let genSpecializedAttr = 0;
}
def Hyc_ReduceKindAttr : EnumAttr<Hyc_Dialect, Hyc_ReduceKind, "reduce_kind">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

/// A double-precision factor stored as an APFloat (hashable), parsed and
/// printed as a plain float literal.
class Hyc_F64Parameter<string default> : AttrOrTypeParameter<"::llvm::APFloat", ""> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = "::hyc::parseF64Parameter($_parser)";
  let printer = "$_printer << $_self.convertToDouble()";
  let defaultValue = "::llvm::APFloat(double(" # default # "))";
}

class Hyc_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Hyc_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Hyc_QuantAttr : Hyc_Attr<"Quant", "quant"> {
  let summary = "How a weight is stored and how its GEMM computes";
  let description = [{
    `f32` and `bf16` are unquantized. `w8a8` is symmetric int8 weights with
    per-token dynamic int8 activations: one scale per output channel, or one
    per `group` of K elements (scale [N, ceil(K / group)]; the last group
    of a K that `group` does not divide is shorter). `fp8_e4m3` is weight-only e4m3 with one f32
    scale per `block = [n, k]` tile (DeepSeek: [128, 128]).

    `q4` and `q8` are integer codes with one fp16 scale per `group` (32) K
    elements and output channel held inside the weight itself (no scale
    operand): weight = scale * (code - 8) for 4-bit codes (GGUF Q4_0),
    scale * (code - 128) for 8-bit ones (GGUF Q8_0); activations int8 per
    token as in w8a8. The weight operand is i8 (one code per element;
    packed two per byte by the layout for q4).

    `q4k`, `q5k`, `q6k`, `iq4xs`, `iq4nl`, `q4z`, `q4_1`, `q5_1` and
    `q4z128` are integer codes kept exactly as a checkpoint stores them
    (GGUF Q4_K, Q5_K, Q6_K, IQ4_XS, IQ4_NL, Q4_1, Q5_1; Q4_K cut at half a
    super-block; AWQ / GPTQ int4 with zero points per 128): two-level scales
    (fp16 per super-block times an integer per `group`) or fp16 ones per
    group, mins, the IQ4 codebook (models/checkpoint/model_spec.h
    StoredCodes, hyrt/gemm_layout.h hyrt_gemm_code_format). `group` is the
    sub-group: 32, 16 for q6k, 128 for q4z128.

    ```mlir
    #hyc.quant<bf16>
    #hyc.quant<w8a8>
    #hyc.quant<w8a8, group = 128>
    #hyc.quant<fp8_e4m3, block = [128, 128]>
    #hyc.quant<q4, group = 32>
    ```
  }];
  let parameters = (ins
    EnumParameter<Hyc_QuantScheme>:$scheme,
    DefaultValuedParameter<"int64_t", "0">:$group,
    OptionalArrayRefParameter<"int64_t">:$block
  );
  let assemblyFormat = "`<` $scheme `` custom<QuantParams>($group, $block) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Quantized weights with a separate scale operand (w8a8, fp8_e4m3).
    bool isQuantized() const {
      return getScheme() == QuantScheme::w8a8 ||
             getScheme() == QuantScheme::fp8_e4m3;
    }
    /// Integer codes whose scales are part of the weight (q4, q8 and the
    /// stored formats q4k ... q4z128).
    bool isCodes() const { return ::hyc::isCodesScheme(getScheme()); }
    /// Stored in any quantized form: a quantization policy leaves it be.
    bool isStoredQuantized() const { return isQuantized() || isCodes(); }
  }];
}

def Hyc_RopeScalingAttr : Hyc_Attr<"RopeScaling", "rope_scaling"> {
  let summary = "RoPE frequency scaling (linear, Llama-3, YaRN)";
  let description = [{
    Parameters follow the Hugging Face `rope_scaling` fields. For YaRN,
    `mscale` / `mscale_all_dim` give the attention factor applied to cos/sin
    and the softmax-scale correction DeepSeek applies.

    ```mlir
    #hyc.rope_scaling<none>
    #hyc.rope_scaling<llama3, factor = 8.0, low_freq_factor = 1.0,
                      high_freq_factor = 4.0, original_max_position = 8192>
    #hyc.rope_scaling<yarn, factor = 40.0, original_max_position = 4096,
                      beta_fast = 32.0, beta_slow = 1.0, mscale = 1.0,
                      mscale_all_dim = 1.0>
    ```
  }];
  let parameters = (ins
    EnumParameter<Hyc_RopeScalingKind>:$kind,
    Hyc_F64Parameter<"1.0">:$factor,
    Hyc_F64Parameter<"1.0">:$low_freq_factor,
    Hyc_F64Parameter<"4.0">:$high_freq_factor,
    DefaultValuedParameter<"int64_t", "0">:$original_max_position,
    Hyc_F64Parameter<"32.0">:$beta_fast,
    Hyc_F64Parameter<"1.0">:$beta_slow,
    Hyc_F64Parameter<"1.0">:$mscale,
    Hyc_F64Parameter<"0.0">:$mscale_all_dim
  );
  let assemblyFormat = [{
    `<` $kind (`,` struct($factor, $low_freq_factor, $high_freq_factor,
                          $original_max_position, $beta_fast, $beta_slow,
                          $mscale, $mscale_all_dim)^)? `>`
  }];
  let genVerifyDecl = 1;
}

def Hyc_MoeGatingAttr : Hyc_Attr<"MoeGating", "moe_gating"> {
  let summary = "MoE router configuration";
  let description = [{
    Score function, experts per token, optional group-limited routing
    (`n_group` groups, keep `topk_group`), whether the top-k weights are
    renormalized and the routed scaling factor.

    ```mlir
    #hyc.moe_gating<softmax, top_k = 8, renormalize = true>
    #hyc.moe_gating<sigmoid, top_k = 8, n_group = 8, topk_group = 4,
                    group_score = top2_sum, renormalize = true,
                    routed_scaling_factor = 2.5>
    ```
  }];
  let parameters = (ins
    EnumParameter<Hyc_MoeScoring>:$scoring,
    "int64_t":$top_k,
    DefaultValuedParameter<"int64_t", "1">:$n_group,
    DefaultValuedParameter<"int64_t", "1">:$topk_group,
    DefaultValuedParameter<"::hyc::MoeGroupScore", "::hyc::MoeGroupScore::max">:$group_score,
    DefaultValuedParameter<"bool", "false">:$renormalize,
    Hyc_F64Parameter<"1.0">:$routed_scaling_factor
  );
  let assemblyFormat = [{
    `<` $scoring `,` struct($top_k, $n_group, $topk_group, $group_score,
                            $renormalize, $routed_scaling_factor) `>`
  }];
  let genVerifyDecl = 1;
}

def Hyc_ParamAttr : Hyc_Attr<"Param", "param"> {
  let summary = "Reference to a weight tensor in a checkpoint file";
  let description = [{
    Names the file and the tensor a weight comes from, so the IR never holds
    weight data. `file` is relative to the checkpoint root.

    ```mlir
    #hyc.param<"model.safetensors" : "model.layers.0.mlp.up_proj.weight">
    ```
  }];
  let parameters = (ins StringRefParameter<>:$file, StringRefParameter<>:$tensor);
  let assemblyFormat = "`<` $file `:` $tensor `>`";
}

#endif // HYC_ATTRS_TD
