// Hugging Face normalizers, pre-tokenizers and decoders, the regex and
// normalization ones over ICU (see tokenizer_hf_pipeline.h). HF's regexes are
// Oniguruma's; ICU agrees with it where tokenizer.json patterns care: \p{..}
// general categories, \s as the Unicode White_Space property (U+0085 in, U+FEFF
// out), (?i:...) and lookahead.
#include "tokenizer_hf_pipeline.h"

#include "tokenizer_util.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <nlohmann/json.hpp>
#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/utext.h>

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

void replace_all(std::string &s, const std::string &from,
                 const std::string &to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos;
       pos += to.size())
    s.replace(pos, from.size(), to);
}

/// Metaspace on one piece: spaces become the replacement, the prefix is
/// added as the scheme says (never doubled), then the piece splits before
/// each replacement (HF's MergedWithNext).
void metaspace_piece(const HfSplitStep &step, std::string piece, bool at_start,
                     std::vector<std::string> *out) {
  replace_all(piece, " ", step.replacement);
  using P = HfSplitStep::Prepend;
  const bool prepend =
      step.prepend == P::kAlways || (step.prepend == P::kFirst && at_start);
  if (prepend &&
      piece.compare(0, step.replacement.size(), step.replacement) != 0)
    piece = step.replacement + piece;
  if (!step.split) {
    out->push_back(std::move(piece));
    return;
  }
  size_t begin = 0;
  for (size_t pos = piece.find(step.replacement, 1); pos != std::string::npos;
       pos = piece.find(step.replacement, pos + step.replacement.size())) {
    out->push_back(piece.substr(begin, pos - begin));
    begin = pos;
  }
  if (begin < piece.size())
    out->push_back(piece.substr(begin));
}

/// Byte spans [begin, end) of every non-empty match of `re` in `text`.
std::vector<std::pair<size_t, size_t>> matches(const icu::RegexPattern &re,
                                               const std::string &text) {
  std::vector<std::pair<size_t, size_t>> spans;
  UErrorCode st = U_ZERO_ERROR;
  UText *ut = utext_openUTF8(nullptr, text.data(), int64_t(text.size()), &st);
  std::unique_ptr<icu::RegexMatcher> m(re.matcher(st));
  if (U_FAILURE(st) || !m) {
    utext_close(ut);
    return spans;
  }
  m->reset(ut);
  while (m->find(st) && U_SUCCESS(st)) {
    // UTF-8 UText native indices are byte offsets.
    const int64_t b = m->start64(st), e = m->end64(st);
    if (e > b)
      spans.emplace_back(size_t(b), size_t(e));
  }
  utext_close(ut);
  return spans;
}

void split_piece(const HfSplitStep &step, const std::string &piece,
                 std::vector<std::string> *out) {
  using B = HfSplitStep::Behavior;
  // Alternating (is_match, span) list covering the piece.
  std::vector<std::pair<bool, std::pair<size_t, size_t>>> parts;
  size_t pos = 0;
  for (auto span : matches(*step.pattern, piece)) {
    if (span.first > pos)
      parts.push_back({false, {pos, span.first}});
    parts.push_back({true, span});
    pos = span.second;
  }
  if (pos < piece.size())
    parts.push_back({false, {pos, piece.size()}});
  std::vector<std::pair<size_t, size_t>> spans;
  if (step.behavior == B::kMergedWithNext) {
    // Mirror of MergedWithPrevious, walking from the end.
    for (size_t k = parts.size(); k-- > 0;) {
      const bool next_is_match = k + 1 < parts.size() && parts[k + 1].first;
      if (parts[k].first && !next_is_match && !spans.empty())
        spans.back().first = parts[k].second.first;
      else
        spans.push_back(parts[k].second);
    }
    std::reverse(spans.begin(), spans.end());
  } else {
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto [is_match, span] = parts[i];
      const bool prev_is_match = i > 0 && parts[i - 1].first;
      if (step.behavior == B::kRemoved && is_match)
        continue;
      if (!spans.empty() && is_match &&
          ((step.behavior == B::kMergedWithPrevious && !prev_is_match) ||
           (step.behavior == B::kContiguous && prev_is_match)))
        spans.back().second = span.second;
      else
        spans.push_back(span);
    }
  }
  for (auto [b, e] : spans)
    out->push_back(piece.substr(b, e - b));
}

} // namespace

std::string HfPipeline::normalize(const std::string &text) const {
  std::string out = text;
  for (const HfNormalizeStep &step : normalizers) {
    if (!step.icu) {
      // HF's Prepend leaves an empty string empty.
      if (step.from.empty() && !out.empty())
        out = step.to + out;
      else if (!step.from.empty())
        replace_all(out, step.from, step.to);
      continue;
    }
    if (!valid_utf8(out))
      continue;
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(out);
    UErrorCode st = U_ZERO_ERROR;
    icu::UnicodeString v = step.icu->normalize(u, st);
    if (U_SUCCESS(st)) {
      out.clear();
      v.toUTF8String(out);
    }
  }
  return out;
}

std::vector<std::string> HfPipeline::pre_tokenize(const std::string &text,
                                                  bool at_start) const {
  std::vector<std::string> pieces{text};
  if (byte_level_prefix_space && !text.empty() && text[0] != ' ')
    pieces[0] = " " + text;
  for (const HfSplitStep &step : splits) {
    std::vector<std::string> next;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (step.pattern)
        split_piece(step, pieces[i], &next);
      else
        metaspace_piece(step, pieces[i], at_start && i == 0, &next);
    }
    pieces.swap(next);
  }
  return pieces;
}

std::string HfPipeline::decode(std::vector<std::string> tokens) const {
  using K = HfDecodeStep::Kind;
  for (const HfDecodeStep &step : decoders) {
    std::vector<std::string> next;
    switch (step.kind) {
    case K::kReplace:
      for (std::string &t : tokens)
        replace_all(t, step.from, step.to);
      continue;
    case K::kFuse: {
      std::string all;
      for (const std::string &t : tokens)
        all += t;
      tokens.assign(1, std::move(all));
      continue;
    }
    case K::kStrip:
      for (std::string &t : tokens) {
        const size_t w = step.content.size();
        for (int k = 0; k < step.start && t.compare(0, w, step.content) == 0;
             ++k)
          t.erase(0, w);
        for (int k = 0; k < step.stop && t.size() >= w &&
                        t.compare(t.size() - w, w, step.content) == 0;
             ++k)
          t.erase(t.size() - w);
      }
      continue;
    case K::kMetaspace:
      for (size_t i = 0; i < tokens.size(); ++i) {
        replace_all(tokens[i], step.from, " ");
        if (i == 0 && step.strip_first && !tokens[i].empty() &&
            tokens[i][0] == ' ')
          tokens[i].erase(0, 1);
      }
      continue;
    case K::kByteFallback: {
      // A run of <0xXX> tokens becomes its bytes when they are valid UTF-8,
      // else one U+FFFD per byte token (HF's ByteFallback).
      std::string run;
      size_t run_tokens = 0;
      auto flush = [&] {
        if (run_tokens == 0)
          return;
        if (valid_utf8(run))
          next.push_back(run);
        else
          for (size_t k = 0; k < run_tokens; ++k)
            next.push_back("\xEF\xBF\xBD");
        run.clear();
        run_tokens = 0;
      };
      for (std::string &t : tokens) {
        const int b = t.size() == 6 ? parse_byte_piece(t) : -1;
        if (b >= 0) {
          run += char(b);
          ++run_tokens;
          continue;
        }
        flush();
        next.push_back(std::move(t));
      }
      flush();
      tokens.swap(next);
      continue;
    }
    }
  }
  std::string out;
  for (const std::string &t : tokens)
    out += t;
  return out;
}

namespace {
Status compile_pipeline(const std::string &pipeline_json,
                        std::shared_ptr<HfPipeline> *out) {
  json j = json::parse(pipeline_json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
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
    if (Status s = field(j, "pipeline", "add_bos", false, &p->add_bos); !s.ok())
      return s;
    if (Status s = field(j, "pipeline", "add_eos", false, &p->add_eos); !s.ok())
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
  if (Status s = field(j, "pipeline", "add_bos", false, &p->add_bos); !s.ok())
    return s;
  if (Status s = field(j, "pipeline", "add_eos", false, &p->add_eos); !s.ok())
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

bool valid_utf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    const int len = utf8_length(s, i);
    if (len == 0)
      return false;
    const uint32_t cp = utf8_decode(s, i, len);
    // Overlong forms and surrogates are ill-formed too.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += size_t(len);
  }
  return true;
}

std::string utf8_lossy(const std::string &bytes) {
  if (valid_utf8(bytes))
    return bytes;
  // ICU's UTF-8 conversion substitutes U+FFFD per maximal ill-formed
  // subpart, the same policy as Rust's from_utf8_lossy.
  std::string out;
  icu::UnicodeString::fromUTF8(bytes).toUTF8String(out);
  return out;
}

} // namespace hyrt::detail
