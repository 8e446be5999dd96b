//===- QuantChoice.cpp - --quant auto: the checkpoint's own precision -----===//
#include "compiler/QuantChoice.h"

#include "models/checkpoint/model_spec.h"

#include <algorithm>
#include <climits>

namespace hyc::compiler {


QuantChoice chooseQuant(const std::map<std::string, int64_t> &elementsByDtype,
                        bool calibrationBuild) {
  if (calibrationBuild)
    return {"f32", "a calibration build records fp32 activations"};
  std::string top;
  int64_t most = -1;
  for (const auto &[dtype, elements] : elementsByDtype)
    if (elements > most)
      most = elements, top = dtype;
  if (top.empty())
    return {"f32", "no weights"};
  const std::string stores = "the checkpoint stores its matrices as " + top;
  if (top == "F32")
    return {"f32", stores};
  if (top == "BF16")
    return {"bf16", stores};
  if (top == "F16")
    return {"bf16", stores + " (hyc has no f16 kernels: one rounding to bf16's 8-bit "
                             "mantissa; --quant f32 keeps them exactly)"};
  if (top == "F8_E4M3")
    return {"fp8", stores + ", kept as stored (128x128 block scales)"};
  if (top == "I8")
    return {"w8a8", stores + " with per-channel scales, kept as stored"};
  // GGUF's 32-element blocks with one fp16 scale: q4 / q8 codes keep them
  // bit for bit, so long as every GEMM matrix is such a block type (Q4_0
  // fits 8-bit codes too: code = q + 128 with the same scale).
  const auto only = [&](std::initializer_list<const char *> types) {
    for (const auto &[dtype, elements] : elementsByDtype)
      if (elements > 0 && dtype != "F32" && dtype != "F16" && dtype != "BF16" &&
          std::none_of(types.begin(), types.end(), [&](const char *t) { return dtype == t; }))
        return false;
    return true;
  };
  // Packed int4 (AWQ, GPTQ, compressed-tensors) with an fp16 scale and a
  // zero point per 128 K-elements (the loader's StoredCodes "q4z"): the
  // 4-bit kernels keep them as stored.
  for (const auto &[dtype, method] : {std::pair<const char *, const char *>{"AWQ_INT4", "AWQ"},
                                      {"GPTQ_INT4", "GPTQ"},
                                      {"CT_INT4", "compressed-tensors"}})
    if (top == dtype && only({dtype}))
      return {"w4a8", stores + ": " + method +
                          " int4, group 128 with zero points, kept as stored"};
  if (only({"Q4_0"}))
    return {"w4a8", stores + ": 4-bit codes with fp16 scales per 32, kept as stored"};
  if (only({"Q4_0", "Q8_0"}))
    return {"w8a8-g32", stores + (top == "Q8_0" ? "" : " and Q8_0") +
                            ": int8 codes with fp16 scales per 32, kept as stored"};
  if (top == "Q8_0" || top == "Q4_0")
    return {"bf16", stores + " beside other block types (no one hyc layout holds them all "
                             "exactly: dequantized exactly, then one rounding to bf16; "
                             "--quant f32 keeps them exactly)"};
  return {"bf16", stores + " (no hyc layout holds that block type exactly yet: dequantized "
                           "exactly, then one rounding to bf16; --quant f32 keeps it "
                           "exactly)"};
}

bool resolveAutoQuant(CompileOptions &options, std::string *line, std::string &error) {
  if (options.quant != "auto")
    return true;
  QuantChoice choice;
  if (options.isMlirInput()) {
    choice = {"f32", "a .mlir input has no stored weights"};
  } else {
    models::LoadOptions loadOptions;
    loadOptions.tokenizer_path = options.tokenizer;
    auto loaded = models::load_checkpoint(options.input, loadOptions);
    if (!loaded.ok()) {
      error = loaded.error();
      return false;
    }
    std::map<std::string, int64_t> elements;
    std::vector<std::pair<std::string, std::string>> floatMatrices; // name, dtype
    for (const models::WeightInfo &w : loaded.value().weights->weights()) {
      // The GEMMs --quant applies to: not norms and biases (1-D), nor the
      // embedding, the head or the MoE router, which keep their own types
      // (and would decide for a small model with a large vocabulary).
      const auto has = [&](const char *part) { return w.name.find(part) != std::string::npos; };
      if (w.shape.size() < 2 || has("embed_tokens") || has("lm_head") ||
          has("mlp.gate.weight") || has("token_embd") || has("output.weight"))
        continue;
      int64_t n = 1;
      for (int64_t d : w.shape)
        n = d > 0 && n <= INT64_MAX / d ? n * d : n; // shapes were checked at load
      const std::string dtype = w.source_dtype.empty() ? "F32" : w.source_dtype;
      elements[dtype] += n;
      if (dtype == "F32" || dtype == "F16" || dtype == "BF16")
        floatMatrices.push_back({w.name, dtype});
    }
    choice = chooseQuant(elements, options.calibrationBuild);
    // Codes for the block matrices; a matrix the file stores as floats
    // (llama-quantize keeps ones whose K is not whole blocks) stays as
    // stored: f32, or bf16 for 16-bit ones.
    if (choice.quant == "w4a8" || choice.quant == "w8a8-g32") {
      int64_t kept = 0;
      for (const auto &[name, dtype] : floatMatrices) {
        (dtype == "F32" ? options.keepF32 : options.keepBf16).push_back(name);
        ++kept;
      }
      if (kept)
        choice.reason += "; " + std::to_string(kept) + " matri" + (kept == 1 ? "x" : "ces") +
                         " stored as floats stay as stored";
    }
  }
  options.quant = choice.quant;
  *line = "precision: " + choice.quant + " (--quant auto: " + choice.reason + ")";
  return true;
}

} // namespace hyc::compiler
