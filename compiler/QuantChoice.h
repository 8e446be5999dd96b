//===- QuantChoice.h - --quant auto: the checkpoint's own precision -*- C++ -*-===//
//
// `hyc compile` without --quant takes the precision the checkpoint stores,
// never wider and never a second rounding where hyc has a format that holds
// the stored numbers: f32 stays f32, bf16 stays bf16, DeepSeek's FP8 blocks
// and channel-INT8 keep their codes (fp8, w8a8), GGUF Q4_0 / Q8_0 their
// blocks (w4a8, w8a8-g32), AWQ / GPTQ / compressed-tensors int4 their
// codes, scales and zero points (w4a8). Formats hyc cannot hold exactly yet (f16, other
// GGUF block types) go to bf16, and the line says so.
//
//===----------------------------------------------------------------------===//
#ifndef HYC_COMPILER_QUANTCHOICE_H
#define HYC_COMPILER_QUANTCHOICE_H

#include "compiler/CompileOptions.h"
#include "models/checkpoint/model_spec.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hyc::compiler {

/// The precision --quant auto picks.
struct QuantChoice {
  std::string quant;  ///< f32, bf16, w8a8, fp8, w4a8, w8a8-g32
  std::string reason; ///< why, for the compile's decision line
};

/// The choice for a checkpoint whose GEMM weights (2-D; not the embedding,
/// the head or the MoE router) hold `elementsByDtype` elements per stored
/// type ("F32", "BF16", "F16", "F8_E4M3", "I8", "Q8_0", "Q4_K", ...): the
/// type holding most of them decides (elements, not bytes: a Q8_0 file's
/// few f32 tensors take more bytes than their share of the model). A
/// calibration build records fp32 activations: f32. GGUF files whose block
/// matrices are all Q4_0 (w4a8) or Q4_0 / Q8_0 (w8a8-g32), and int4 files
/// whose packed matrices are all "AWQ_INT4", "GPTQ_INT4" or "CT_INT4"
/// (groups of 128 or a multiple: w4a8), keep them as codes; their
/// float-stored matrices (llama-quantize leaves some in F32, AWQ its
/// modules_to_not_convert) are not counted against that: resolveAutoQuant
/// keeps them as stored.
QuantChoice chooseQuant(const std::map<std::string, int64_t> &elementsByDtype,
                        bool calibrationBuild);

/// Whether --quant applies to `w`: a 2-D weight other than the embedding,
/// the output head and the MoE router.
bool isQuantizedGemm(const models::WeightInfo &w);

/// The --quant matrices whose K is not whole groups of 32, apart from those
/// a name in `keptAsIs` keeps f32 / bf16: under w4a8 they keep 8 bits (the
/// quantize policy's rule; MoE experts count one each).
int64_t partialGroupMatrices(const models::WeightSource &weights,
                             const std::vector<std::string> &keptAsIs);

/// `tensor=format` for every 2-D weight `weights` stores as integer codes
/// hyc keeps exactly (GGUF Q4_0 / Q8_0 as "q4" / "q8", the K-quants and
/// IQ4, AWQ: WeightSource::stored_codes_format), expert weights under their
/// stack's name (`...experts.*.<proj>.weight`, when every expert stores the
/// same format): the quantize policy's stored-codes entries.
std::vector<std::string> storedCodesEntries(const models::WeightSource &weights);

/// Replaces options.quant "auto" by the choice for options.input (a .mlir
/// input has no weights: f32); `*line` gets the decision line. False with
/// `error` when the checkpoint cannot be read.
bool resolveAutoQuant(CompileOptions &options, std::string *line, std::string &error);

} // namespace hyc::compiler

#endif // HYC_COMPILER_QUANTCHOICE_H
