// Hugging Face pipelines from JSON: tokenizer.json's normalizer,
// pre_tokenizer, decoder and model options (as the tokenizer artifact keeps
// them) compiled into an HfPipeline, every option read by type with an error
// naming it. Running the pipeline is tokenizer_hf_pipeline.cpp.
#include "hf_pipeline.h"
#include "hyrt/support/json.h"

#include "util.h"

#include <memory>
#include <type_traits>
#include <utility>
#include <nlohmann/json.hpp>
#include <unicode/normalizer2.h>
#include <unicode/regex.h>

namespace hyrt::detail {

namespace {

using json = nlohmann::json;

std::string type_of(const json &j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return "";
  return j["type"].get<std::string>();
}

/// j[key] into *out, or `fallback` when absent or null. The JSON comes from
/// a file (tokenizer.json, or an artifact's tokenizer.hytk), so a value of
/// another type is an error naming the field, not an exception.
template <typename T>
Status field(const json &j, const std::string &where, const char *key,
             T fallback, T *out) {
  *out = std::move(fallback);
  if (!j.is_object() || !j.contains(key) || j[key].is_null())
    return Status::Ok();
  const json &v = j[key];
  constexpr bool kBool = std::is_same_v<T, bool>;
  if (kBool ? !v.is_boolean() : !v.is_string())
    return Status::Error("tokenizer.json: " + where + "." + key + " is " +
                         v.type_name() + ", expected " +
                         (kBool ? "a boolean" : "a string"));
  *out = v.get<T>();
  return Status::Ok();
}

Status unsupported(const std::string &component, const std::string &type) {
  return Status::Error("tokenizer.json: " + component + " of type '" + type +
                       "' is not supported");
}

/// A Replace normalizer's or decoder's {"pattern": {"String": from},
/// "content": to}; regex patterns are refused by name.
Status string_replace(const json &j, const std::string &component,
                      std::string *from, std::string *to) {
  const json &pat = j.value("pattern", json());
  if (pat.is_object() && pat.contains("Regex"))
    return unsupported(component + " Replace with a Regex pattern", "Replace");
  if (!pat.is_object() || !pat.contains("String") ||
      !pat["String"].is_string() || pat["String"].get<std::string>().empty() ||
      !j.contains("content") || !j["content"].is_string())
    return Status::Error("tokenizer.json: " + component +
                         " Replace expects {\"String\": ...} and a "
                         "'content' string, found " +
                         j.dump());
  *from = pat["String"].get<std::string>();
  *to = j["content"].get<std::string>();
  return Status::Ok();
}

/// Metaspace's prepend scheme: "prepend_scheme", or the older boolean
/// "add_prefix_space" (true meaning always).
Status metaspace_prepend(const json &j, const std::string &component,
                         HfSplitStep::Prepend *out) {
  using P = HfSplitStep::Prepend;
  if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
    const std::string scheme = j["prepend_scheme"].get<std::string>();
    if (scheme == "always")
      *out = P::kAlways;
    else if (scheme == "first")
      *out = P::kFirst;
    else if (scheme == "never")
      *out = P::kNever;
    else
      return Status::Error("tokenizer.json: " + component +
                           " Metaspace prepend_scheme '" + scheme +
                           "' is not one of always, first, never");
    return Status::Ok();
  }
  *out = j.value("add_prefix_space", true) ? P::kAlways : P::kNever;
  return Status::Ok();
}

Status add_normalizer(const json &j, HfPipeline *p) {
  const std::string type = type_of(j);
  UErrorCode st = U_ZERO_ERROR;
  if (type == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array())
      return Status::Error(
          "tokenizer.json: normalizer Sequence expects a 'normalizers' list");
    for (const json &sub : j["normalizers"])
      if (Status s = add_normalizer(sub, p); !s.ok())
        return s;
    return Status::Ok();
  }
  if (type == "Prepend") {
    if (!j.contains("prepend") || !j["prepend"].is_string())
      return Status::Error(
          "tokenizer.json: normalizer Prepend expects a 'prepend' string");
    p->normalizers.push_back({nullptr, "", j["prepend"].get<std::string>()});
    p->prefix_space = true;
    return Status::Ok();
  }
  if (type == "Replace") {
    std::string from, to;
    if (Status s = string_replace(j, "normalizer", &from, &to); !s.ok())
      return s;
    p->normalizers.push_back({nullptr, from, to});
    return Status::Ok();
  }
  const icu::Normalizer2 *n = nullptr;
  if (type == "NFC")
    n = icu::Normalizer2::getNFCInstance(st);
  else if (type == "NFD")
    n = icu::Normalizer2::getNFDInstance(st);
  else if (type == "NFKC")
    n = icu::Normalizer2::getNFKCInstance(st);
  else if (type == "NFKD")
    n = icu::Normalizer2::getNFKDInstance(st);
  else
    return unsupported("normalizer", type.empty() ? j.dump() : type);
  if (U_FAILURE(st) || !n)
    return Status::Error("tokenizer.json: ICU has no " + type +
                         " normalizer: " + u_errorName(st));
  p->normalizers.push_back({n, "", ""});
  return Status::Ok();
}

Status compile_regex(const std::string &source, bool literal,
                     std::shared_ptr<icu::RegexPattern> *out) {
  UErrorCode st = U_ZERO_ERROR;
  UParseError pe{};
  std::unique_ptr<icu::RegexPattern> re(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(source), literal ? UREGEX_LITERAL : 0, pe,
      st));
  if (U_FAILURE(st) || !re)
    return Status::Error("tokenizer.json: pre_tokenizer Split pattern '" +
                         source + "' does not compile (" + u_errorName(st) +
                         " at offset " + std::to_string(pe.offset) + ")");
  *out = std::move(re);
  return Status::Ok();
}

// The GPT-2 pattern ByteLevel applies when its use_regex is true.
constexpr const char *kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

Status add_pre_tokenizer(const json &j, HfPipeline *p, bool *byte_level) {
  const std::string type = type_of(j);
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      return Status::Error("tokenizer.json: pre_tokenizer Sequence expects a "
                           "'pretokenizers' list");
    for (const json &sub : j["pretokenizers"])
      if (Status s = add_pre_tokenizer(sub, p, byte_level); !s.ok())
        return s;
    return Status::Ok();
  }
  if (type == "Split") {
    HfSplitStep step;
    const json &pat = j.value("pattern", json());
    if (pat.contains("Regex") && pat["Regex"].is_string()) {
      if (Status s = compile_regex(pat["Regex"], false, &step.pattern);
          !s.ok())
        return s;
    } else if (pat.contains("String") && pat["String"].is_string()) {
      if (Status s = compile_regex(pat["String"], true, &step.pattern);
          !s.ok())
        return s;
    } else {
      return Status::Error("tokenizer.json: pre_tokenizer Split expects a "
                           "pattern {\"Regex\": ...} or {\"String\": ...}, "
                           "found " +
                           pat.dump());
    }
    std::string behavior;
    if (Status s = field(j, "pre_tokenizer", "behavior", std::string("Isolated"),
                         &behavior);
        !s.ok())
      return s;
    using B = HfSplitStep::Behavior;
    if (behavior == "Isolated")
      step.behavior = B::kIsolated;
    else if (behavior == "Removed")
      step.behavior = B::kRemoved;
    else if (behavior == "MergedWithPrevious")
      step.behavior = B::kMergedWithPrevious;
    else if (behavior == "MergedWithNext")
      step.behavior = B::kMergedWithNext;
    else if (behavior == "Contiguous")
      step.behavior = B::kContiguous;
    else
      return unsupported("pre_tokenizer Split behavior", behavior);
    if (Status s = field(j, "pre_tokenizer", "invert", false, &step.invert); !s.ok())
      return s;
    if (step.invert)
      return unsupported("pre_tokenizer Split with invert=true", "Split");
    p->splits.push_back(std::move(step));
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    // The byte mapping itself happens in the BPE (it starts from byte ids);
    // only the optional GPT-2 regex split is a text step.
    *byte_level = true;
    bool use_regex = true;
    if (Status s = field(j, "pre_tokenizer", "add_prefix_space", false,
                         &p->byte_level_prefix_space);
        !s.ok())
      return s;
    if (Status s = field(j, "pre_tokenizer", "use_regex", true, &use_regex); !s.ok())
      return s;
    if (use_regex) {
      HfSplitStep step;
      if (Status s = compile_regex(kGpt2Pattern, false, &step.pattern);
          !s.ok())
        return s;
      p->splits.push_back(std::move(step));
    }
    return Status::Ok();
  }
  if (type == "Metaspace") {
    HfSplitStep step;
    step.replacement = j.value("replacement", std::string("\xE2\x96\x81"));
    if (step.replacement.empty())
      return Status::Error("tokenizer.json: pre_tokenizer Metaspace expects a "
                           "non-empty 'replacement'");
    if (Status s = metaspace_prepend(j, "pre_tokenizer", &step.prepend);
        !s.ok())
      return s;
    step.split = j.value("split", true);
    if (step.prepend != HfSplitStep::Prepend::kNever)
      p->prefix_space = true;
    p->splits.push_back(std::move(step));
    return Status::Ok();
  }
  return unsupported("pre_tokenizer", type.empty() ? j.dump() : type);
}

/// Byte-level pipelines take ByteLevel decoders only (decode_hf maps the
/// byte characters itself); the others compile their chain into
/// p->decoders.
Status add_decoder(const json &j, HfPipeline *p) {
  const std::string type = type_of(j);
  if (type == "Sequence" && j.contains("decoders") &&
      j["decoders"].is_array()) {
    for (const json &sub : j["decoders"])
      if (Status s = add_decoder(sub, p); !s.ok())
        return s;
    return Status::Ok();
  }
  if (p->byte_level) {
    if (type == "ByteLevel")
      return Status::Ok();
    return unsupported("decoder", type.empty() ? j.dump() : type);
  }
  using K = HfDecodeStep::Kind;
  HfDecodeStep step;
  if (type == "Replace") {
    step.kind = K::kReplace;
    if (Status s = string_replace(j, "decoder", &step.from, &step.to); !s.ok())
      return s;
  } else if (type == "ByteFallback") {
    step.kind = K::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = K::kFuse;
  } else if (type == "Strip") {
    step.kind = K::kStrip;
    step.content = j.value("content", std::string(" "));
    step.start = j.value("start", 0);
    step.stop = j.value("stop", 0);
    if (utf8_length(step.content, 0) != int(step.content.size()) ||
        step.start < 0 || step.stop < 0)
      return Status::Error("tokenizer.json: decoder Strip expects one "
                           "character 'content' and non-negative start/stop, "
                           "found " +
                           j.dump());
  } else if (type == "Metaspace") {
    step.kind = K::kMetaspace;
    step.from = j.value("replacement", std::string("\xE2\x96\x81"));
    HfSplitStep::Prepend prepend;
    if (Status s = metaspace_prepend(j, "decoder", &prepend); !s.ok())
      return s;
    step.strip_first = prepend != HfSplitStep::Prepend::kNever;
  } else {
    return unsupported("decoder", type.empty() ? j.dump() : type);
  }
  p->decoders.push_back(std::move(step));
  return Status::Ok();
}
} // namespace

namespace {
Status compile_pipeline(const std::string &pipeline_json,
                        std::shared_ptr<HfPipeline> *out) {
  json j;
  if (std::string e = parse_json(pipeline_json, &j); !e.empty())
    return Status::Error("tokenizer: pipeline description: " + e);
  if (!j.is_object())
    return Status::Error("tokenizer: pipeline description is not a JSON "
                         "object");
  auto p = std::make_shared<HfPipeline>();
  if (j.contains("normalizer") && !j["normalizer"].is_null())
    if (Status s = add_normalizer(j["normalizer"], p.get()); !s.ok())
      return s;
  if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null())
    if (Status s =
            add_pre_tokenizer(j["pre_tokenizer"], p.get(), &p->byte_level);
        !s.ok())
      return s;
  if (j.contains("decoder") && !j["decoder"].is_null())
    if (Status s = add_decoder(j["decoder"], p.get()); !s.ok())
      return s;
  // Added by the tokenizer artifact from tokenizer_config.json.
  if (Status s = field(j, "pipeline", "add_bos", false, &p->add_bos); !s.ok())
    return s;
  if (Status s = field(j, "pipeline", "add_eos", false, &p->add_eos); !s.ok())
    return s;
  const json &model = j.value("model", json::object());
  const std::string model_type = type_of(model);
  if (model_type == "Unigram") {
    if (p->byte_level)
      return unsupported("model Unigram over a ByteLevel pre_tokenizer",
                         "Unigram");
    p->unigram = true;
    if (Status s = field(model, "model", "byte_fallback", false, &p->byte_fallback);
        !s.ok())
      return s;
    *out = std::move(p);
    return Status::Ok();
  }
  if (model_type != "BPE")
    return unsupported("model", model_type.empty() ? model.dump() : model_type);
  if (model.contains("dropout") && model["dropout"].is_number() &&
      model["dropout"].get<double>() > 0)
    return unsupported("model BPE with dropout", "BPE");
  for (const char *affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(affix) && model[affix].is_string() &&
        !model[affix].get<std::string>().empty())
      return unsupported(std::string("model BPE with ") + affix, "BPE");
  for (auto [key, flag] : {std::pair<const char *, bool *>{"ignore_merges", &p->ignore_merges},
                           {"byte_fallback", &p->byte_fallback},
                           {"fuse_unk", &p->fuse_unk}})
    if (Status s = field(model, "model", key, false, flag); !s.ok())
      return s;
  *out = std::move(p);
  return Status::Ok();
}
} // namespace

Status compile_hf_pipeline(const std::string &pipeline_json,
                           std::shared_ptr<HfPipeline> *out) {
  // The common options are read by type (field()); this backstop turns
  // any other option of the wrong JSON type into an error, not an abort.
  try {
    return compile_pipeline(pipeline_json, out);
  } catch (const json::exception &e) {
    return Status::Error(std::string("tokenizer.json: malformed component "
                                     "option: ") +
                         e.what());
  }
}

} // namespace hyrt::detail
