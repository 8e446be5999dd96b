// validate_weights: a checkpoint's tensors against its spec. The layer and
// expert counts are checked against the tensors present before the list of
// required weights is built (a config claiming 2^31 layers must fail at
// once, not after allocating 2^31 names); tensors past those counts are an
// error, other tensors the spec does not use a warning; every required
// weight must have its shape and a floating-point storage.
#include "models/checkpoint/family.h"
#include "models/checkpoint/weight_source.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace hyc::models::detail {

namespace {

/// Parses the decimal index at s[pos..] up to `end_char`; false when there
/// is none or it has more than 9 digits (no checkpoint has 10^9 layers).
bool parseIndex(const std::string &s, size_t pos, int64_t *index,
                size_t *after) {
  size_t end = pos;
  while (end < s.size() && s[end] >= '0' && s[end] <= '9')
    ++end;
  if (end == pos || end - pos > 9 || end >= s.size() || s[end] != '.')
    return false;
  *index = std::stoll(s.substr(pos, end - pos));
  *after = end + 1;
  return true;
}

/// The layer of "model.layers.N.*" (canonical) or "blk.N.*" (a GGUF block
/// tensor hyc does not rename), and where the rest of the name starts.
bool layerOf(const std::string &name, int64_t *layer, size_t *rest) {
  for (const char *prefix : {"model.layers.", "blk."}) {
    const std::string p = prefix;
    if (name.compare(0, p.size(), p) == 0)
      return parseIndex(name, p.size(), layer, rest);
  }
  return false;
}

/// The routed expert of "<layer prefix>mlp.experts.E.*".
bool expertOf(const std::string &name, size_t rest, int64_t *expert) {
  static const std::string kExperts = "mlp.experts.";
  size_t after = 0;
  return name.compare(rest, kExperts.size(), kExperts) == 0 &&
         parseIndex(name, rest + kExperts.size(), expert, &after);
}

/// Tensors a loader reads besides the required weights: the scales of
/// quantized weights (FP8 `weight_scale_inv`, channel-INT8 `weight_scale`),
/// llama.cpp's baked llama3 `rope_freqs`, and the rotary tables old
/// transformers checkpoints saved (recomputed from the config).
bool isAuxiliary(const std::string &name) {
  auto endsWith = [&](const std::string &suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return endsWith("_scale_inv") || endsWith("_scale") ||
         name == "rope_freqs.weight" || endsWith("rotary_emb.inv_freq");
}

std::string listed(const std::vector<std::string> &names, size_t total) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "'" : ", '") + n + "'";
  if (total > names.size())
    out += " and " + std::to_string(total - names.size()) + " more";
  return out;
}

/// Layer and expert counts of the spec against the tensors of the source.
Status checkCounts(const ModelSpec &spec, const ViewWeightSource &source,
                   const SpecFields &fields, std::vector<std::string> &warnings) {
  std::set<int64_t> layers;
  int64_t experts = 0;
  std::string beyondLayers, beyondExperts, unusedLayer;
  size_t unusedCount = 0;
  for (const WeightInfo &w : source.weights()) {
    int64_t layer = 0, expert = 0;
    size_t rest = 0;
    if (!layerOf(w.name, &layer, &rest))
      continue;
    layers.insert(layer);
    if (layer >= spec.num_layers + fields.unused_layers) {
      if (beyondLayers.empty())
        beyondLayers = w.name;
      continue;
    }
    if (layer >= spec.num_layers) {
      ++unusedCount;
      unusedLayer = w.name;
      continue;
    }
    if (expertOf(w.name, rest, &expert)) {
      experts = std::max(experts, expert + 1);
      if (spec.moe && expert >= spec.moe->num_experts && beyondExperts.empty())
        beyondExperts = w.name;
    }
  }
  const std::string origin = source.origin() + ": ";
  const int64_t found = static_cast<int64_t>(layers.size());
  const std::string range =
      found == 0 ? "none"
                 : std::to_string(found) + " (layers " +
                       std::to_string(*layers.begin()) + ".." +
                       std::to_string(*layers.rbegin()) + ")";
  if (spec.num_layers > found)
    return Error(origin + fields.layers + " = " +
                 std::to_string(spec.num_layers) +
                 ", but the checkpoint has tensors for " + range +
                 " layers");
  if (!beyondLayers.empty())
    return Error(origin + "tensor '" + beyondLayers + "' belongs to a layer past " +
                 fields.layers + " = " + std::to_string(spec.num_layers) +
                 " (the checkpoint has tensors for " + range +
                 " layers; expected 0.." + std::to_string(spec.num_layers - 1) +
                 ")");
  if (unusedCount > 0)
    warnings.push_back(origin + "ignored " + std::to_string(unusedCount) +
                       " tensors of the " + std::to_string(fields.unused_layers) +
                       " layers after " + fields.layers + " = " +
                       std::to_string(spec.num_layers) + " (" +
                       fields.unused_layers_reason + "), e.g. '" + unusedLayer +
                       "'");
  if (!spec.moe)
    return Status();
  if (spec.moe->num_experts > experts)
    return Error(origin + fields.experts + " = " +
                 std::to_string(spec.moe->num_experts) +
                 ", but the checkpoint has tensors for " +
                 std::to_string(experts) + " routed experts per layer");
  if (!beyondExperts.empty())
    return Error(origin + "tensor '" + beyondExperts +
                 "' belongs to an expert past " + fields.experts + " = " +
                 std::to_string(spec.moe->num_experts));
  return Status();
}

} // namespace

Status validate_weights(const ModelSpec &spec, const ViewWeightSource &source,
                        const SpecFields &fields,
                        std::vector<std::string> &warnings) {
  HYC_CKPT_TRY(checkCounts(spec, source, fields, warnings));
  constexpr size_t kMaxListed = 8;
  std::vector<std::string> problems;
  size_t count = 0;
  const std::vector<WeightInfo> required = required_weights(spec);
  for (const WeightInfo &want : required) {
    std::string problem;
    const WeightInfo *have = source.find(want.name);
    if (!have) {
      problem = "missing weight '" + want.name + "' (expected shape " +
                io::shape_to_string(want.shape) + ")";
    } else if (have->shape != want.shape) {
      problem = "weight '" + want.name + "' has shape " +
                io::shape_to_string(have->shape) + ", expected " +
                io::shape_to_string(want.shape);
    } else {
      Status readable = source.check_readable(want.name);
      if (!readable)
        return readable;
    }
    if (problem.empty())
      continue;
    if (++count <= kMaxListed)
      problems.push_back(problem);
  }
  if (count > 0) {
    std::string msg = source.origin() + ": ";
    if (count > 1)
      msg += std::to_string(count) + " weights do not match the " + spec.arch +
             " spec: ";
    for (size_t i = 0; i < problems.size(); ++i)
      msg += (i ? "; " : "") + problems[i];
    if (count > problems.size())
      msg += "; and " + std::to_string(count - problems.size()) + " more";
    return Error(msg);
  }

  // Tensors inside the spec's layers that it has no use for (an o_proj
  // bias of a Llama, a sliding-window table): transformers loads such
  // checkpoints with a warning, and so does hyc.
  std::unordered_set<std::string> used;
  for (const WeightInfo &w : required)
    used.insert(w.name);
  std::vector<std::string> unused;
  size_t unusedCount = 0;
  for (const WeightInfo &w : source.weights()) {
    int64_t layer = 0;
    size_t rest = 0;
    if (used.count(w.name) || isAuxiliary(w.name) ||
        (layerOf(w.name, &layer, &rest) && layer >= spec.num_layers))
      continue;
    if (++unusedCount <= kMaxListed)
      unused.push_back(w.name);
  }
  if (unusedCount > 0)
    warnings.push_back(source.origin() + ": ignored " +
                       std::to_string(unusedCount) + " tensors the " +
                       spec.arch + " spec does not use: " +
                       listed(unused, unusedCount));
  return Status();
}

} // namespace hyc::models::detail
