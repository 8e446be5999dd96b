// libFuzzer target: a Hugging Face tokenizer.json (+ tokenizer_config.json
// after a "\n--config--\n" line) through the runtime's reader, then the
// tokenizer built from it encoding and decoding a fixed text (chat templates
// have their own target, fuzz_chat_template). Besides libFuzzer's byte
// mutations, a structure-aware mutator edits the JSON the way a hostile
// file would: ids at the edges of int32/int64, fields of another type,
// backtracking pre-tokenizer regexes, entries duplicated or dropped.
#include "hyrt/text/tokenizer.h"
#include "test/fuzz/fuzz_files.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <random>
#include <unistd.h>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

namespace {

using json = nlohmann::json;

/// Every value in `j` (depth first), to pick one to edit.
void collect(json &j, std::vector<json *> *out, int depth = 0) {
  out->push_back(&j);
  if (depth < 8 && (j.is_object() || j.is_array()))
    for (auto &child : j)
      collect(child, out, depth + 1);
}

/// One structural edit of a tokenizer.json document.
void mutate(json &doc, std::mt19937_64 &rng) {
  std::vector<json *> values;
  collect(doc, &values);
  json &v = *values[rng() % values.size()];
  static const int64_t kIds[] = {-1, 0, 255, 256, 300, 1 << 24, INT32_MAX, int64_t(INT32_MAX) + 1,
                                 INT64_MAX, INT64_MIN};
  static const char *kRegexes[] = {"(a+)+b", "(.*)*$", "(\\p{L}|\\p{L}\\p{L})+!",
                                   "(?=(a*))*", "\\", "[", "(?i:x{0,65535})"};
  switch (rng() % 5) {
  case 0: v = kIds[rng() % std::size(kIds)]; break;
  case 1: v = v.is_string() ? json(7) : json("x"); break;
  case 2:
    doc["pre_tokenizer"] = {{"type", "Split"},
                            {"pattern", {{"Regex", kRegexes[rng() % std::size(kRegexes)]}}},
                            {"behavior", "Isolated"}};
    break;
  case 3:
    if (v.is_array() && !v.empty())
      v.push_back(v[rng() % v.size()]);
    else if (v.is_object() && !v.empty())
      v.erase(std::next(v.begin(), long(rng() % v.size())).key());
    break;
  default: v = rng() % 2 ? json::array({v, v}) : json(nullptr); break;
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937_64 rng(seed);
  const std::string all(reinterpret_cast<const char *>(data), size);
  const size_t sep = all.find("\n--config--\n");
  json doc = json::parse(all.substr(0, sep), nullptr, false);
  if (rng() % 4 == 0 || doc.is_discarded() || !doc.is_object())
    return LLVMFuzzerMutate(data, size, max_size);
  mutate(doc, rng);
  const std::string out = doc.dump() + (sep == std::string::npos ? "" : all.substr(sep));
  if (out.size() > max_size)
    return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace hyc;
  auto [tokenizer, config] = fuzz::splitAt(data, size, "\n--config--\n");
  fuzz::writeScratch("tokenizer.json",
                     reinterpret_cast<const uint8_t *>(tokenizer.data()),
                     tokenizer.size());
  const std::string config_path = fuzz::scratchDir() + "/tokenizer_config.json";
  if (config.empty())
    unlink(config_path.c_str());
  else
    fuzz::writeScratch("tokenizer_config.json",
                       reinterpret_cast<const uint8_t *>(config.data()),
                       config.size());
  hyrt::TokenizerData tokenizer_data;
  if (hyrt::Status st = hyrt::read_hf_tokenizer(fuzz::scratchDir(), &tokenizer_data); !st.ok()) {
    fuzz::explain("read", st.message());
    return 0;
  }
  hyrt::Tokenizer tok;
  if (hyrt::Status st = tok.init(std::move(tokenizer_data)); !st.ok()) {
    fuzz::explain("Tokenizer::init", st.message());
    return 0;
  }
  std::vector<int32_t> ids;
  if (hyrt::Status st = tok.encode(
          "Hello, world!  It's 2024\n\t\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80<|im_end|>aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
          true, &ids);
      !st.ok())
    fuzz::explain("encode", st.message());
  (void)tok.decode_text(ids, true);
  (void)tok.decode_text(ids, false);
  return 0;
}
