// quantization_config of the int4 packings hyc reads (AWQ, GPTQ,
// compressed-tensors pack-quantized) -> Int4Scheme. Whatever would change
// the layout or the arithmetic and is not read is refused by name.
#include "models/checkpoint/int4_layers.h"

#include "models/checkpoint/family.h"

#include <algorithm>
#include <cctype>

namespace hyc::models::detail {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

/// bits must be 4 and group_size a positive multiple of 32 (the kernels'
/// sub-block), read from `bitsField` / `groupField` of `config`.
Status readBitsAndGroup(const io::HfConfig &config, const std::string &where,
                        const std::string &bitsField, const std::string &groupField,
                        std::optional<int64_t> bitsDefault, std::optional<int64_t> groupDefault,
                        Int4Scheme &scheme) {
  int64_t bits = 0;
  if (bitsDefault)
    HYC_CKPT_ASSIGN(bits, config.get_int_or(bitsField, *bitsDefault));
  else
    HYC_CKPT_ASSIGN(bits, config.get_int(bitsField));
  const std::string bitsName = bitsField.substr(bitsField.rfind('.') + 1);
  const std::string groupName = groupField.substr(groupField.rfind('.') + 1);
  if (bits != 4)
    return Error(where + bitsName + " = " + std::to_string(bits) +
                 ", expected 4 (hyc reads 4-bit codes only)");
  if (groupDefault)
    HYC_CKPT_ASSIGN(scheme.group, config.get_int_or(groupField, *groupDefault));
  else
    HYC_CKPT_ASSIGN(scheme.group, config.get_int(groupField));
  if (scheme.group <= 0 || scheme.group % 32 != 0)
    return Error(where + groupName + " = " + std::to_string(scheme.group) +
                 ", expected a positive multiple of 32 (128 is the usual; per-channel "
                 "scales, -1, are not read)");
  return Status();
}

} // namespace

Expected<Int4Scheme> read_awq_scheme(const io::HfConfig &config) {
  const std::string where = config.path() + ": quantization_config (quant_method awq): ";
  Int4Scheme scheme;
  scheme.method = "awq";
  HYC_CKPT_TRY(readBitsAndGroup(config, where, "quantization_config.bits",
                                "quantization_config.group_size", 4, 128, scheme));
  bool zeroPoint = true;
  HYC_CKPT_ASSIGN(zeroPoint, config.get_bool_or("quantization_config.zero_point", true));
  if (!zeroPoint)
    return Error(where + "zero_point = false, expected true (hyc reads AWQ's " +
                 "asymmetric codes with qzeros)");
  std::string version;
  HYC_CKPT_ASSIGN(version, config.get_string_or("quantization_config.version", "gemm"));
  // GEMV and the kernel-specific variants (exllama, marlin, ...) pack their
  // words differently; only GEMM's layout is implemented here.
  if (lower(version) != "gemm")
    return Error(where + "version = '" + version + "', expected 'gemm' (the " +
                 "qweight [K, N / 8] packing hyc reads)");
  return scheme;
}

Expected<Int4Scheme> read_gptq_scheme(const io::HfConfig &config) {
  const std::string where = config.path() + ": quantization_config (quant_method gptq): ";
  Int4Scheme scheme;
  scheme.method = "gptq";
  HYC_CKPT_TRY(readBitsAndGroup(config, where, "quantization_config.bits",
                                "quantization_config.group_size", std::nullopt, std::nullopt,
                                scheme));
  bool descAct = false;
  HYC_CKPT_ASSIGN(descAct, config.get_bool_or("quantization_config.desc_act", false));
  if (descAct)
    return Error(where + "desc_act = true, expected false (act-order permutes K " +
                 "by g_idx; hyc reads GPTQ's groups in K order only)");
  std::string format;
  HYC_CKPT_ASSIGN(format, config.get_string_or("quantization_config.checkpoint_format", "gptq"));
  // AutoGPTQ (format "gptq") stores each zero point minus one; GPTQModel's
  // "gptq_v2" stores it as is.
  if (format == "gptq")
    scheme.zero_offset = 1;
  else if (format != "gptq_v2")
    return Error(where + "checkpoint_format = '" + format +
                 "', expected 'gptq' or 'gptq_v2' (the qweight [K / 8, N] packing)");
  return scheme;
}

Expected<Int4Scheme> read_ct_packed_scheme(const io::HfConfig &config) {
  const std::string where =
      config.path() + ": quantization_config (compressed-tensors pack-quantized): ";
  if (!config.has("quantization_config.config_groups"))
    return Error(where + "config_groups is missing (expected the weights' num_bits, "
                         "strategy and group_size there)");
  const nlohmann::json &groups = config.json()["quantization_config"]["config_groups"];
  if (!groups.is_object() || groups.empty())
    return Error(where + "config_groups is not a non-empty object");
  std::optional<Int4Scheme> common;
  for (const auto &[name, group] : groups.items()) {
    const std::string in = where + "config_groups." + name + ": ";
    io::HfConfig g = io::HfConfig::from_json(group, config.path());
    Int4Scheme scheme;
    scheme.method = "compressed-tensors";
    if (!g.has("weights"))
      return Error(in + "weights is missing");
    HYC_CKPT_TRY(readBitsAndGroup(g, in, "weights.num_bits", "weights.group_size", std::nullopt,
                                  std::nullopt, scheme));
    std::string type, strategy;
    HYC_CKPT_ASSIGN(type, g.get_string_or("weights.type", "int"));
    HYC_CKPT_ASSIGN(strategy, g.get_string_or("weights.strategy", "group"));
    if (type != "int")
      return Error(in + "weights.type = '" + type + "', expected 'int'");
    if (strategy != "group")
      return Error(in + "weights.strategy = '" + strategy +
                   "', expected 'group' (one scale per group_size K-elements)");
    HYC_CKPT_ASSIGN(scheme.symmetric, g.get_bool_or("weights.symmetric", true));
    // actorder permutes K by weight_g_idx (a string or a bool, by version).
    const nlohmann::json &w = group["weights"];
    if (w.contains("actorder") && !w["actorder"].is_null() && w["actorder"] != false)
      return Error(in + "weights.actorder = " + w["actorder"].dump() +
                   ", expected null (act-order permutes K by weight_g_idx; hyc reads "
                   "groups in K order only)");
    if (g.has("input_activations"))
      return Error(in + "input_activations is set, expected null (pack-quantized "
                        "weight-only int4)");
    if (common && (common->group != scheme.group || common->symmetric != scheme.symmetric))
      return Error(in + "group_size " + std::to_string(scheme.group) +
                   (scheme.symmetric ? ", symmetric" : ", asymmetric") +
                   " differs from another group's " + std::to_string(common->group) +
                   (common->symmetric ? ", symmetric" : ", asymmetric") +
                   " (hyc reads one int4 scheme per checkpoint)");
    common = scheme;
  }
  return *common;
}

} // namespace hyc::models::detail
