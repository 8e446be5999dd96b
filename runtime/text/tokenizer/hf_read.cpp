// Reads a Hugging Face tokenizer directory (tokenizer.json and
// tokenizer_config.json) into TokenizerData; see read_hf_tokenizer in
// hyrt/text/tokenizer.h.
#include "hyrt/text/tokenizer.h"
#include "hyrt/support/json.h"

#include "../text_input.h"
#include "util.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace hyrt {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

/// The largest tokenizer file read (real ones are tens of MB).
constexpr uint64_t kMaxTokenizerFileBytes = uint64_t(1) << 30;

Status read_json(const fs::path &path, json *out) {
  // A FIFO or a device in a checkpoint directory is refused, not waited on.
  std::string text;
  if (Status s = cli::read_regular_file(path.string(), kMaxTokenizerFileBytes,
                                        &text);
      !s.ok())
    return s;
  if (std::string e = parse_json(text, out); !e.empty())
    return Status::Error(path.string() + ": malformed JSON: " + e);
  if (!out->is_object())
    return Status::Error(path.string() + ": expected a JSON object at the "
                                         "top level");
  return Status::Ok();
}

/// bos_token / eos_token are a string, an AddedToken object or null.
std::string token_content(const json &config, const char *key) {
  if (!config.contains(key))
    return "";
  const json &v = config[key];
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return "";
}

/// Special tokens a TemplateProcessing post-processor puts before and after
/// a single sequence ("single": [{SpecialToken}, {Sequence}, ...]).
Status template_specials(const json &pp, std::string *before,
                         std::string *after) {
  if (!pp.contains("single") || !pp["single"].is_array())
    return Status::Error("tokenizer.json: post_processor TemplateProcessing "
                         "expects a 'single' list");
  bool seen_sequence = false;
  for (const json &item : pp["single"]) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
    } else if (item.contains("SpecialToken")) {
      const std::string id = item["SpecialToken"].value("id", "");
      if (!seen_sequence && before->empty())
        *before = id;
      else if (seen_sequence && after->empty())
        *after = id;
      else
        return Status::Error("tokenizer.json: post_processor "
                             "TemplateProcessing with more than one special "
                             "token on a side is not supported");
    }
  }
  return Status::Ok();
}

/// Ids are int32 in the runtime, and a vocabulary this large is no real
/// tokenizer's: an id past it is refused before anything is sized by it.
constexpr int64_t kMaxTokenId = (int64_t(1) << 24) - 1;

Status read_checked(const std::string &dir, TokenizerData *out);

} // namespace

Status read_hf_tokenizer(const std::string &dir, TokenizerData *out) {
  // Every field is type-checked where it is read; this catch keeps a field
  // of a type no check foresaw an error, not an abort of the process.
  try {
    return read_checked(dir, out);
  } catch (const json::exception &e) {
    return Status::Error(dir + ": malformed tokenizer files: " + e.what());
  }
}

namespace {

Status read_checked(const std::string &dir, TokenizerData *out) {
  const fs::path tj = fs::path(dir) / "tokenizer.json";
  json tok;
  if (Status s = read_json(tj, &tok); !s.ok())
    return s;
  json config = json::object();
  const fs::path cj = fs::path(dir) / "tokenizer_config.json";
  std::error_code ec;
  if (fs::exists(cj, ec))
    if (Status s = read_json(cj, &config); !s.ok())
      return s;

  if (!tok.contains("model") || !tok["model"].is_object())
    return Status::Error(tj.string() + ": expected a 'model' object");
  const json &model = tok["model"];
  // Unigram lists [piece, log-probability] by id; BPE maps piece -> id.
  const bool unigram = model.value("type", json()) == "Unigram";
  if (unigram && (!model.contains("vocab") || !model["vocab"].is_array()))
    return Status::Error(tj.string() + ": expected Unigram 'model.vocab' to "
                                       "be a list of [piece, score]");
  if (!unigram && (!model.contains("vocab") || !model["vocab"].is_object()))
    return Status::Error(tj.string() + ": expected 'model.vocab' to be an "
                                       "object of token -> id (type '" +
                         model.value("type", std::string("?")) + "')");
  TokenizerData d;
  d.kind = TokenizerKind::kHfByteLevel;
  std::vector<std::pair<std::string, int64_t>> entries;
  std::vector<float> unigram_scores;
  int64_t n = 0;
  for (size_t i = 0; unigram && i < model["vocab"].size(); ++i) {
    const json &e = model["vocab"][i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() ||
        !e[1].is_number())
      return Status::Error(tj.string() + ": Unigram vocab entry " +
                           std::to_string(i) +
                           " expects [piece, score], found " + e.dump());
    entries.emplace_back(e[0].get<std::string>(), int64_t(i));
    unigram_scores.push_back(e[1].get<float>());
    n = int64_t(i) + 1;
  }
  for (auto it = model["vocab"].begin(); !unigram && it != model["vocab"].end();
       ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > kMaxTokenId)
      return Status::Error(tj.string() + ": vocab entry '" + it.key() +
                           "' expects an integer id in [0, " +
                           std::to_string(kMaxTokenId) + "], found " +
                           it.value().dump());
    entries.emplace_back(it.key(), it.value().get<int64_t>());
    n = std::max(n, entries.back().second + 1);
  }
  const json added =
      tok.contains("added_tokens") ? tok["added_tokens"] : json::array();
  if (!added.is_array())
    return Status::Error(tj.string() + ": expected 'added_tokens' to be a "
                                       "list");
  for (const json &a : added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        a["id"].get<int64_t>() < 0 || a["id"].get<int64_t>() > kMaxTokenId ||
        !a.contains("content") || !a["content"].is_string())
      return Status::Error(tj.string() + ": added token expects an integer "
                                         "'id' in [0, " +
                           std::to_string(kMaxTokenId) +
                           "] and a string 'content', found " +
                           a.dump().substr(0, 200));
    for (const char *flag : {"lstrip", "rstrip", "single_word", "special"})
      if (a.contains(flag) && !a[flag].is_boolean())
        return Status::Error(tj.string() + ": added token '" +
                             a["content"].get<std::string>() + "' expects '" +
                             flag + "' to be a boolean, found " + a[flag].dump());
    if (a.value("lstrip", false) || a.value("rstrip", false) ||
        a.value("single_word", false))
      return Status::Error(tj.string() + ": added token '" +
                           a["content"].get<std::string>() +
                           "' uses lstrip/rstrip/single_word, which are not "
                           "supported");
    n = std::max(n, a["id"].get<int64_t>() + 1);
  }
  if (n > (int64_t(1) << 24))
    return Status::Error(tj.string() + ": vocabulary of " + std::to_string(n) +
                         " ids is implausibly large");
  d.tokens.assign(size_t(n), std::string());
  d.types.assign(size_t(n), kTokenUnused); // ids no entry names
  // With byte_fallback the <0xXX> pieces are bytes, not text to match.
  const bool byte_fallback = model.contains("byte_fallback") &&
                             model["byte_fallback"].is_boolean() &&
                             model["byte_fallback"].get<bool>();
  for (auto &[piece, id] : entries) {
    d.types[size_t(id)] = byte_fallback && piece.size() == 6 &&
                                  detail::parse_byte_piece(piece) >= 0
                              ? kTokenByte
                              : kTokenNormal;
    d.tokens[size_t(id)] = std::move(piece);
  }
  if (unigram) {
    unigram_scores.resize(size_t(n), 0.f);
    d.scores = std::move(unigram_scores);
  }
  for (const json &a : added) {
    const int64_t id = a["id"].get<int64_t>();
    d.tokens[size_t(id)] = a["content"].get<std::string>();
    d.types[size_t(id)] =
        a.value("special", false) ? kTokenControl : kTokenUserDefined;
  }

  if (model.contains("merges")) {
    if (!model["merges"].is_array())
      return Status::Error(tj.string() + ": expected 'model.merges' to be a "
                                         "list");
    d.merges.reserve(model["merges"].size());
    for (const json &m : model["merges"]) {
      if (m.is_string())
        d.merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2 && m[0].is_string() &&
               m[1].is_string())
        d.merges.push_back(m[0].get<std::string>() + " " +
                           m[1].get<std::string>());
      else
        return Status::Error(tj.string() + ": merge expects \"a b\" or "
                                           "[\"a\", \"b\"], found " +
                             m.dump());
    }
  }

  auto id_of = [&](const std::string &content) -> int32_t {
    if (content.empty())
      return -1;
    for (size_t i = 0; i < d.tokens.size(); ++i)
      if (d.tokens[i] == content && d.types[i] != kTokenUnused)
        return int32_t(i);
    return -1;
  };

  // Special-token policy. transformers' Llama-style fast tokenizers read
  // add_bos_token / add_eos_token from the config and replace the
  // post-processor with BOS $A EOS accordingly; without those keys the
  // tokenizer.json post-processor decides (Llama-3's TemplateProcessing).
  std::string bos = token_content(config, "bos_token");
  std::string eos = token_content(config, "eos_token");
  bool add_bos = false, add_eos = false;
  const json pp = tok.value("post_processor", json());
  const std::string pp_type =
      pp.is_object() ? pp.value("type", std::string()) : std::string();
  if (config.contains("add_bos_token") || config.contains("add_eos_token")) {
    add_bos = config.value("add_bos_token", false);
    add_eos = config.value("add_eos_token", false);
  } else if (pp_type == "TemplateProcessing") {
    std::string before, after;
    if (Status s = template_specials(pp, &before, &after); !s.ok())
      return s;
    add_bos = !before.empty();
    add_eos = !after.empty();
    if (add_bos)
      bos = before;
    if (add_eos && eos.empty())
      eos = after;
  } else if (!pp.is_null() && pp_type != "ByteLevel") {
    return Status::Error(tj.string() + ": post_processor of type '" +
                         pp_type + "' is not supported");
  }
  d.bos_id = id_of(bos);
  d.eos_id = id_of(eos);
  if (add_bos && d.bos_id < 0)
    return Status::Error(dir + ": add_bos_token is set but bos_token '" + bos +
                         "' is not in the vocabulary");
  if (add_eos && d.eos_id < 0)
    return Status::Error(dir + ": add_eos_token is set but eos_token '" + eos +
                         "' is not in the vocabulary");
  if (model.contains("unk_token") && model["unk_token"].is_string())
    d.unk_id = id_of(model["unk_token"].get<std::string>());
  if (unigram && model.contains("unk_id") &&
      model["unk_id"].is_number_integer()) {
    const int64_t unk = model["unk_id"].get<int64_t>();
    if (unk < 0 || unk >= n)
      return Status::Error(tj.string() + ": Unigram unk_id " +
                           std::to_string(unk) + " outside the vocabulary");
    d.unk_id = int32_t(unk);
  }

  json model_options = model;
  model_options.erase("vocab");
  model_options.erase("merges");
  json pipeline = {{"normalizer", tok.value("normalizer", json())},
                   {"pre_tokenizer", tok.value("pre_tokenizer", json())},
                   {"decoder", tok.value("decoder", json())},
                   {"model", model_options},
                   {"add_bos", add_bos},
                   {"add_eos", add_eos}};
  d.pipeline_json = pipeline.dump();

  if (config.contains("chat_template")) {
    const json &ct = config["chat_template"];
    if (ct.is_string()) {
      d.chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {
      // Several named templates: the one named "default" is the chat one.
      for (const json &t : ct)
        if (t.is_object() && t.value("name", "") == "default" &&
            t.contains("template") && t["template"].is_string())
          d.chat_template = t["template"].get<std::string>();
    }
  }
  *out = std::move(d);
  return Status::Ok();
}

} // namespace

} // namespace hyrt
