//===- QuantChoice.cpp - --quant auto: the checkpoint's own precision -----===//
#include "compiler/QuantChoice.h"

#include "models/checkpoint/model_spec.h"

#include <algorithm>
#include <set>
#include <climits>

namespace hyc::compiler {


bool isQuantizedGemm(const models::WeightInfo &w) {
  // Not norms and biases (1-D), nor the embedding, the head or the MoE
  // router, which keep their own types (and would decide for a small model
  // with a large vocabulary).
  const auto has = [&](const char *part) { return w.name.find(part) != std::string::npos; };
  return w.shape.size() >= 2 && !has("embed_tokens") && !has("lm_head") &&
         !has("mlp.gate.weight") && !has("token_embd") && !has("output.weight");
}

int64_t partialGroupMatrices(const models::WeightSource &weights,
                             const std::vector<std::string> &keptAsIs) {
  int64_t count = 0;
  for (const models::WeightInfo &w : weights.weights())
    count += isQuantizedGemm(w) && w.shape.back() % 32 != 0 &&
             std::none_of(keptAsIs.begin(), keptAsIs.end(), [&](const std::string &k) {
               return w.name.find(k) != std::string::npos;
             });
  return count;
}

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
  // Block types whose codes and scales the kernels hold exactly (the
  // q4 / q8 panels, or hyrt_gemm_code_format's stored formats): a file of
  // only those keeps every matrix as stored, in 4-bit codes when most of
  // its elements are 4-bit (Q4_K_M's Q6_K matrices stay Q6_K), else 8-bit.
  // Packed int4 from Hugging Face (AWQ, GPTQ, compressed-tensors) holds an
  // fp16 scale and a zero point per 128 K-elements (the loader's "q4z128").
  static const std::set<std::string> k4 = {"Q4_0",     "Q4_1",      "Q4_K",   "IQ4_XS",
                                           "IQ4_NL",   "AWQ_INT4",  "GPTQ_INT4", "CT_INT4"},
                                      k8 = {"Q8_0", "Q5_0", "Q5_1", "Q5_K", "Q6_K"};
  int64_t four = 0, eight = 0;
  bool allCodes = true;
  std::string types;
  for (const auto &[dtype, elements] : elementsByDtype) {
    if (elements <= 0 || dtype == "F32" || dtype == "F16" || dtype == "BF16")
      continue;
    (k4.count(dtype) ? four : eight) += elements;
    allCodes = allCodes && (k4.count(dtype) || k8.count(dtype));
    types += (types.empty() ? "" : ", ") + dtype;
  }
  if (allCodes && four + eight > 0) {
    const std::string kind =
        top == "Q4_0"        ? "4-bit codes with fp16 scales per 32"
        : top == "Q8_0"      ? "int8 codes with fp16 scales per 32"
        : top == "Q5_0"      ? "5-bit codes with fp16 scales per 32 (as 8-bit codes)"
        : top == "Q4_1"      ? "4-bit codes with fp16 scales and mins per 32"
        : top == "Q5_1"      ? "5-bit codes with fp16 scales and mins per 32 (as 8-bit codes)"
        : top == "AWQ_INT4"  ? "AWQ int4, group 128 with zero points"
        : top == "GPTQ_INT4" ? "GPTQ int4, group 128 with zero points"
        : top == "CT_INT4"   ? "compressed-tensors int4, group 128 with zero points"
                             : "codes with their block scales";
    const std::string all = types == top ? stores : "the checkpoint stores its matrices as " + types;
    if (four >= eight)
      return {"w4a8", all + ": " + kind + ", kept as stored"};
    // Q4_0 and Q5_0 fit 8-bit codes too (code = q + 128 with the same scale).
    return {"w8a8-g32", all + ": " + kind + ", kept as stored"};
  }
  if (top == "Q8_0" || top == "Q4_0")
    return {"bf16", stores + " beside other block types (no one hyc layout holds them all "
                             "exactly: dequantized exactly, then one rounding to bf16; "
                             "--quant f32 keeps them exactly)"};
  return {"bf16", stores + " (no hyc layout holds that block type exactly yet: dequantized "
                           "exactly, then one rounding to bf16; --quant f32 keeps it "
                           "exactly)"};
}

std::vector<std::string> storedCodesEntries(const models::WeightSource &weights) {
  // Expert e's weight `...experts.<e>.<proj>.weight` belongs to the stack
  // `...experts.*.<proj>.weight`: listed when every expert stores the same
  // format.
  std::map<std::string, std::string> formats; // tensor -> format ("" = mixed)
  for (const models::WeightInfo &w : weights.weights()) {
    if (w.shape.size() != 2)
      continue;
    std::string format = weights.stored_codes_format(w.name);
    if (format.empty() &&
        (w.source_dtype == "Q4_0" || w.source_dtype == "Q8_0" || w.source_dtype == "Q5_0"))
      format = w.source_dtype == "Q4_0" ? "q4" : "q8"; // Q5_0 as 8-bit codes
    if (format.empty())
      continue;
    std::string name = w.name;
    if (size_t at = name.find("experts."); at != std::string::npos) {
      const size_t digits = at + 8, end = name.find('.', digits);
      if (end != std::string::npos && end > digits &&
          std::all_of(name.begin() + long(digits), name.begin() + long(end),
                      [](char c) { return c >= '0' && c <= '9'; }))
        name.replace(digits, end - digits, "*");
    }
    auto [it, fresh] = formats.emplace(name, format);
    if (!fresh && it->second != format)
      it->second.clear();
  }
  std::vector<std::string> entries;
  for (const auto &[name, format] : formats)
    if (!format.empty())
      entries.push_back(name + "=" + format);
  return entries;
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
      if (!isQuantizedGemm(w))
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
