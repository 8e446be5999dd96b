// The family registry and the config.json reading/writing every family
// shares (decoder dimensions, RoPE and its scaling variants).
#include "models/checkpoint/family.h"

#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>

namespace hyc::models::detail {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

const std::vector<const Family *> &families() {
  static const std::vector<const Family *> all = {
      &llama_family(),      &qwen2_family(),       &qwen3_family(),
      &qwen3_moe_family(),  &deepseek_v2_family(), &deepseek_v3_family(),
      &hunyuan_moe_family()};
  return all;
}

const Family *family_by_arch(const std::string &arch) {
  for (const Family *f : families())
    if (arch == f->arch)
      return f;
  return nullptr;
}

namespace {

bool contains(const std::vector<std::string> &list, const std::string &v) {
  for (const std::string &s : list)
    if (s == v)
      return true;
  return false;
}

std::string join(const std::vector<std::string> &parts, const char *sep) {
  std::string out;
  for (const std::string &p : parts)
    out += (out.empty() ? "" : sep) + p;
  return out;
}

} // namespace

Expected<const Family *> family_for_hf(const io::HfConfig &config) {
  std::vector<std::string> architectures;
  if (config.has("architectures"))
    HYC_CKPT_ASSIGN(architectures, config.get_string_array("architectures"));
  std::string model_type;
  HYC_CKPT_ASSIGN(model_type, config.get_string_or("model_type", ""));
  for (const std::string &a : architectures)
    for (const Family *f : families())
      if (contains(f->hf_architectures, a))
        return f;
  // A known model_type with an unknown head (e.g.
  // LlamaForSequenceClassification) is still not a causal LM we can compile.
  if (architectures.empty())
    for (const Family *f : families())
      if (contains(f->hf_model_types, model_type))
        return f;
  std::string found = architectures.empty()
                          ? "no 'architectures'"
                          : "architectures [" + join(architectures, ", ") + "]";
  found += model_type.empty() ? ", no model_type"
                              : ", model_type '" + model_type + "'";
  return Error(config.path() + ": unsupported architecture (" + found +
               "); supported: " + join(supported_architectures(), ", "));
}

const Family *family_for_gguf(const std::string &gguf_arch) {
  for (const Family *f : families())
    if (f->from_gguf && contains(f->gguf_architectures, gguf_arch))
      return f;
  return nullptr;
}

double f32_decimal(float value) {
  if (!std::isfinite(value))
    return value;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf) - 1, value);
  if (ec != std::errc())
    return value;
  *end = '\0';
  return std::strtod(buf, nullptr);
}

namespace {

/// The shortest text that reads back as `v` ("1e+300", "nan").
std::string realText(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

} // namespace

Status check_int(const std::string &where, const std::string &field,
                 int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi)
    return Status();
  return Error(where + ": " + field + " = " + std::to_string(value) +
               ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
}

Status check_real(const std::string &where, const std::string &field,
                  double value, double lo, double hi, bool open_lo) {
  if (std::isfinite(value) && (open_lo ? value > lo : value >= lo) &&
      value <= hi)
    return Status();
  return Error(where + ": " + field + " = " + realText(value) +
               ", expected a finite number in " + (open_lo ? "(" : "[") +
               realText(lo) + ", " + realText(hi) + "]");
}

Expected<int32_t> check_token_id(const std::string &where,
                                 const std::string &field, int64_t value,
                                 int64_t vocab) {
  if (value == -1 || (value >= 0 && value < vocab && value <= INT32_MAX))
    return static_cast<int32_t>(value);
  return Error(where + ": " + field + " = " + std::to_string(value) +
               ", expected a token id in 0.." + std::to_string(vocab - 1) +
               " (the vocabulary) or -1 for none");
}

Status check_rope_values(
    const std::string &where, const RopeSpec &rope,
    const std::function<std::string(const std::string &)> &names) {
  // theta <= 0 makes the frequencies NaN; the bounds leave every real model
  // (10^4..10^7, NTK-scaled bases included) far inside.
  HYC_CKPT_TRY(check_real(where, names("theta"), rope.theta, 0.0,
                          kMaxRopeTheta, true));
  if (rope.scaling == "none")
    return Status();
  HYC_CKPT_TRY(check_real(where, names("factor"), rope.factor, 0.0, kMaxFactor,
                          true));
  if (rope.scaling == "llama3") {
    HYC_CKPT_TRY(check_real(where, names("low_freq_factor"),
                            rope.low_freq_factor, 0.0, kMaxFactor, true));
    HYC_CKPT_TRY(check_real(where, names("high_freq_factor"),
                            rope.high_freq_factor, 0.0, kMaxFactor, true));
  }
  if (rope.scaling == "llama3" || rope.scaling == "yarn")
    HYC_CKPT_TRY(check_int(where, names("original_max_position"),
                           rope.original_max_position, 1, INT32_MAX));
  if (rope.scaling == "yarn") {
    HYC_CKPT_TRY(check_real(where, names("beta_fast"), rope.beta_fast, 0.0,
                            kMaxFactor, true));
    HYC_CKPT_TRY(check_real(where, names("beta_slow"), rope.beta_slow, 0.0,
                            kMaxFactor, true));
    HYC_CKPT_TRY(
        check_real(where, names("mscale"), rope.mscale, 0.0, kMaxFactor, false));
    HYC_CKPT_TRY(check_real(where, names("mscale_all_dim"), rope.mscale_all_dim,
                            0.0, kMaxFactor, false));
  }
  if (rope.scaling == "ntk_alpha") {
    HYC_CKPT_TRY(
        check_real(where, names("alpha"), rope.alpha, 0.0, kMaxFactor, true));
    HYC_CKPT_TRY(check_real(where, names("theta") + " scaled by " + names("alpha"),
                            rope_base(rope), 0.0, kMaxRopeTheta, true));
  }
  return Status();
}

Expected<int64_t> gguf_int_or(const io::GgufFile &file, const std::string &key,
                              int64_t fallback) {
  if (!file.has(key))
    return fallback;
  return file.get_i64(key);
}

Expected<double> gguf_float_or(const io::GgufFile &file, const std::string &key,
                               double fallback) {
  const io::GgufValue *v = file.find(key);
  if (!v)
    return fallback;
  if (v->type == io::GgufType::FLOAT32) {
    Expected<float> f = file.get_f32(key);
    if (!f)
      return f.take_error();
    return f32_decimal(*f);
  }
  return file.get_f64(key);
}

Status require_hf_value(const io::HfConfig &config, const std::string &field,
                        const Json &supported) {
  if (!config.has(field))
    return Status();
  const Json *node = &config.json();
  size_t start = 0;
  while (true) {
    size_t dot = field.find('.', start);
    node = &(*node)[field.substr(start, dot - start)];
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  if (*node == supported)
    return Status();
  return Error(config.path() + ": " + field + " = " + node->dump() +
               " is not supported yet (supported: " + supported.dump() + ")");
}

namespace {

Status parseHfRopeFields(const io::HfConfig &config, ModelSpec &spec) {
  RopeSpec &rope = spec.rope;
  rope = RopeSpec();
  // transformers >= 4.56 may keep everything under rope_parameters.
  const std::string params =
      config.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (config.has("rope_theta"))
    HYC_CKPT_ASSIGN(rope.theta, config.get_float("rope_theta"));
  else
    HYC_CKPT_ASSIGN(rope.theta,
                    config.get_float_or(params + ".rope_theta", 10000.0));
  double partial = 1.0;
  HYC_CKPT_ASSIGN(partial, config.get_float_or("partial_rotary_factor", 1.0));
  HYC_CKPT_TRY(check_real(config.path(), "partial_rotary_factor", partial, 0.0,
                          1.0, true));
  rope.rotary_dim = static_cast<int64_t>(spec.head_dim * partial);
  if (rope.rotary_dim < 2 || rope.rotary_dim % 2 != 0)
    return Error(config.path() + ": partial_rotary_factor " +
                 std::to_string(partial) + " with head_dim " +
                 std::to_string(spec.head_dim) + " gives rotary dim " +
                 std::to_string(rope.rotary_dim) +
                 ", expected an even number in 2..head_dim");
  rope.neox = true;
  if (!config.has(params))
    return Status();

  io::HfConfig scaling;
  HYC_CKPT_ASSIGN(scaling, config.get_object(params));
  std::string type;
  HYC_CKPT_ASSIGN(type, scaling.get_string_or("type", "default"));
  HYC_CKPT_ASSIGN(type, scaling.get_string_or("rope_type", type));
  const std::string where = config.path() + ": " + params;
  if (type == "default" || type == "none")
    return Status();
  if (type == "linear") {
    rope.scaling = "linear";
    HYC_CKPT_ASSIGN(rope.factor, scaling.get_float("factor"));
  } else if (type == "llama3") {
    // transformers reads every llama3 field from inside rope_scaling
    // (llama.cpp's converter reads original_max_position_embeddings from the
    // top level; see shared/golden/README.md).
    rope.scaling = "llama3";
    HYC_CKPT_ASSIGN(rope.factor, scaling.get_float("factor"));
    HYC_CKPT_ASSIGN(rope.low_freq_factor, scaling.get_float("low_freq_factor"));
    HYC_CKPT_ASSIGN(rope.high_freq_factor,
                    scaling.get_float("high_freq_factor"));
    HYC_CKPT_ASSIGN(rope.original_max_position,
                    scaling.get_int("original_max_position_embeddings"));
    if (!(rope.high_freq_factor > rope.low_freq_factor))
      return Error(where + ": llama3 high_freq_factor " +
                   std::to_string(rope.high_freq_factor) +
                   " must exceed low_freq_factor " +
                   std::to_string(rope.low_freq_factor));
  } else if (type == "yarn") {
    rope.scaling = "yarn";
    HYC_CKPT_ASSIGN(rope.factor, scaling.get_float("factor"));
    HYC_CKPT_ASSIGN(rope.original_max_position,
                    scaling.get_int_or("original_max_position_embeddings",
                                       spec.max_position_embeddings));
    HYC_CKPT_ASSIGN(rope.beta_fast, scaling.get_float_or("beta_fast", 32.0));
    HYC_CKPT_ASSIGN(rope.beta_slow, scaling.get_float_or("beta_slow", 1.0));
    HYC_CKPT_ASSIGN(rope.mscale, scaling.get_float_or("mscale", 1.0));
    HYC_CKPT_ASSIGN(rope.mscale_all_dim,
                    scaling.get_float_or("mscale_all_dim", 0.0));
    if (scaling.has("attention_factor"))
      return Error(where + ".attention_factor is not supported yet");
  } else {
    return Error(where + " type '" + type +
                 "' is not supported (supported: default, linear, llama3, "
                 "yarn)");
  }
  return Status();
}

} // namespace

Status parse_hf_rope(const io::HfConfig &config, ModelSpec &spec) {
  HYC_CKPT_TRY(parseHfRopeFields(config, spec));
  const std::string params =
      config.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  const bool topTheta = config.has("rope_theta");
  return check_rope_values(
      config.path(), spec.rope, [&](const std::string &field) {
        if (field == "theta")
          return topTheta ? std::string("rope_theta") : params + ".rope_theta";
        if (field == "original_max_position")
          return params + ".original_max_position_embeddings";
        return params + "." + field;
      });
}

Status parse_hf_decoder(const io::HfConfig &config, ModelSpec &spec,
                        const HfDefaults &defaults,
                        std::vector<std::string> &warnings) {
  HYC_CKPT_ASSIGN(spec.vocab_size, config.get_int("vocab_size"));
  HYC_CKPT_ASSIGN(spec.hidden_size, config.get_int("hidden_size"));
  HYC_CKPT_ASSIGN(spec.intermediate_size, config.get_int("intermediate_size"));
  HYC_CKPT_ASSIGN(spec.num_layers, config.get_int("num_hidden_layers"));
  HYC_CKPT_ASSIGN(spec.num_heads, config.get_int("num_attention_heads"));
  HYC_CKPT_ASSIGN(spec.num_kv_heads,
                  config.get_int_or("num_key_value_heads", spec.num_heads));
  struct Positive {
    const char *field;
    int64_t value;
  };
  for (const Positive &p :
       {Positive{"vocab_size", spec.vocab_size},
        Positive{"hidden_size", spec.hidden_size},
        Positive{"intermediate_size", spec.intermediate_size},
        Positive{"num_hidden_layers", spec.num_layers},
        Positive{"num_attention_heads", spec.num_heads},
        Positive{"num_key_value_heads", spec.num_kv_heads}})
    if (p.value <= 0)
      return Error(config.path() + ": " + p.field + " = " +
                   std::to_string(p.value) + ", expected > 0");
  // The layer count is checked against the tensors present (which bound
  // it); token ids are int32, and widths multiply together in int64.
  HYC_CKPT_TRY(check_int(config.path(), "vocab_size", spec.vocab_size, 1,
                         INT32_MAX));
  for (const Positive &p :
       {Positive{"hidden_size", spec.hidden_size},
        Positive{"intermediate_size", spec.intermediate_size},
        Positive{"num_attention_heads", spec.num_heads},
        Positive{"num_key_value_heads", spec.num_kv_heads}})
    HYC_CKPT_TRY(check_int(config.path(), p.field, p.value, 1, kMaxModelDim));
  if (spec.num_heads % spec.num_kv_heads != 0)
    return Error(config.path() +
                 ": num_attention_heads = " + std::to_string(spec.num_heads) +
                 " is not a multiple of num_key_value_heads = " +
                 std::to_string(spec.num_kv_heads));
  if (config.has("head_dim")) {
    HYC_CKPT_ASSIGN(spec.head_dim, config.get_int("head_dim"));
  } else if (defaults.head_dim > 0) {
    spec.head_dim = defaults.head_dim;
  } else {
    if (spec.hidden_size % spec.num_heads != 0)
      return Error(config.path() + ": no head_dim and hidden_size = " +
                   std::to_string(spec.hidden_size) +
                   " is not a multiple of num_attention_heads = " +
                   std::to_string(spec.num_heads));
    spec.head_dim = spec.hidden_size / spec.num_heads;
  }
  HYC_CKPT_TRY(
      check_int(config.path(), "head_dim", spec.head_dim, 1, kMaxModelDim));
  HYC_CKPT_ASSIGN(spec.rms_norm_eps,
                  config.get_float_or("rms_norm_eps", defaults.rms_norm_eps));
  // eps only keeps 1/sqrt(mean + eps) finite: anything in (0, 1] is a
  // norm, NaN, infinity or 1e300 turn every activation into NaN or zero.
  HYC_CKPT_TRY(check_real(config.path(), "rms_norm_eps", spec.rms_norm_eps,
                          0.0, 1.0, true));
  HYC_CKPT_ASSIGN(spec.max_position_embeddings,
                  config.get_int_or("max_position_embeddings",
                                    defaults.max_position_embeddings));
  HYC_CKPT_TRY(check_int(config.path(), "max_position_embeddings",
                         spec.max_position_embeddings, 1, INT32_MAX));
  HYC_CKPT_ASSIGN(
      spec.tie_word_embeddings,
      config.get_bool_or("tie_word_embeddings", defaults.tie_word_embeddings));
  std::string act;
  HYC_CKPT_ASSIGN(act, config.get_string_or("hidden_act", "silu"));
  if (act != "silu")
    return Error(config.path() + ": hidden_act '" + act +
                 "' is not supported (supported: silu)");

  int64_t bos = defaults.bos_token_id;
  HYC_CKPT_ASSIGN(bos, config.get_int_or("bos_token_id", bos));
  HYC_CKPT_ASSIGN(spec.bos_token_id,
                  check_token_id(config.path(), "bos_token_id", bos,
                                 spec.vocab_size));
  int64_t eos = defaults.eos_token_id;
  if (config.has("eos_token_id") && config.json()["eos_token_id"].is_array()) {
    std::vector<int64_t> ids;
    HYC_CKPT_ASSIGN(ids, config.get_int_array("eos_token_id"));
    if (!ids.empty())
      eos = ids[0];
    if (ids.size() > 1)
      warnings.push_back(config.path() + ": eos_token_id lists " +
                         std::to_string(ids.size()) +
                         " ids; using the first (" + std::to_string(eos) + ")");
  } else {
    HYC_CKPT_ASSIGN(eos, config.get_int_or("eos_token_id", eos));
  }
  HYC_CKPT_ASSIGN(spec.eos_token_id,
                  check_token_id(config.path(), "eos_token_id", eos,
                                 spec.vocab_size));
  return parse_hf_rope(config, spec);
}

namespace {

OrderedJson rope_scaling_json(const RopeSpec &rope) {
  if (rope.scaling == "linear")
    return {{"rope_type", "linear"}, {"factor", rope.factor}};
  if (rope.scaling == "llama3")
    return {{"rope_type", "llama3"},
            {"factor", rope.factor},
            {"low_freq_factor", rope.low_freq_factor},
            {"high_freq_factor", rope.high_freq_factor},
            {"original_max_position_embeddings", rope.original_max_position}};
  if (rope.scaling == "yarn")
    return {{"rope_type", "yarn"},
            {"factor", rope.factor},
            {"original_max_position_embeddings", rope.original_max_position},
            {"beta_fast", rope.beta_fast},
            {"beta_slow", rope.beta_slow},
            {"mscale", rope.mscale},
            {"mscale_all_dim", rope.mscale_all_dim}};
  return nullptr;
}

} // namespace

OrderedJson hf_decoder_config(const ModelSpec &spec,
                              const std::string &architecture,
                              const std::string &model_type) {
  OrderedJson j;
  j["architectures"] = {architecture};
  j["model_type"] = model_type;
  j["vocab_size"] = spec.vocab_size;
  j["hidden_size"] = spec.hidden_size;
  j["intermediate_size"] = spec.intermediate_size;
  j["num_hidden_layers"] = spec.num_layers;
  j["num_attention_heads"] = spec.num_heads;
  j["num_key_value_heads"] = spec.num_kv_heads;
  j["head_dim"] = spec.head_dim;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = spec.max_position_embeddings;
  j["rms_norm_eps"] = spec.rms_norm_eps;
  j["rope_theta"] = spec.rope.theta;
  j["rope_scaling"] = rope_scaling_json(spec.rope);
  if (spec.rope.rotary_dim != spec.head_dim && spec.head_dim > 0)
    j["partial_rotary_factor"] =
        static_cast<double>(spec.rope.rotary_dim) / spec.head_dim;
  j["tie_word_embeddings"] = spec.tie_word_embeddings;
  j["bos_token_id"] = spec.bos_token_id;
  j["eos_token_id"] = spec.eos_token_id;
  j["torch_dtype"] = "float32";
  return j;
}

} // namespace hyc::models::detail

namespace hyc::models {

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const detail::Family *f : detail::families()) {
    std::string entry;
    for (const std::string &a : f->hf_architectures)
      entry += (entry.empty() ? "" : "/") + a;
    entry += std::string(" (") + f->arch;
    if (!f->gguf_architectures.empty()) {
      entry += "; GGUF";
      for (const std::string &g : f->gguf_architectures)
        entry += " '" + g + "'";
    }
    if (std::string(f->arch) == "llama")
      entry += "; llama2.c .bin";
    out.push_back(entry + ")");
  }
  return out;
}

} // namespace hyc::models
