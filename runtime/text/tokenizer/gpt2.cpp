// GPT-2 style byte-level BPE: a simplified pre-tokenizer (documented in
// hyrt/text/tokenizer.h), bytes mapped through bytes_to_unicode, then merges by
// rank (lowest first, leftmost on ties).
#include "hyrt/text/tokenizer.h"

#include "util.h"

#include <algorithm>

namespace hyrt {

namespace {

enum class CharClass { kSpace, kLetter, kDigit, kOther };

CharClass classify(unsigned char c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
      c == '\f')
    return CharClass::kSpace;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80)
    return CharClass::kLetter;
  if (c >= '0' && c <= '9')
    return CharClass::kDigit;
  return CharClass::kOther;
}

/// Length of a contraction ('s 't 're 've 'm 'll 'd) at text[i], or 0.
size_t contraction(const std::string &text, size_t i) {
  if (text[i] != '\'')
    return 0;
  for (const char *suffix : {"re", "ve", "ll", "s", "t", "m", "d"}) {
    const std::string s(suffix);
    if (text.compare(i + 1, s.size(), s) == 0)
      return 1 + s.size();
  }
  return 0;
}

std::vector<std::string> pre_tokenize(const std::string &text) {
  std::vector<std::string> words;
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    if (size_t len = contraction(text, i)) {
      words.push_back(text.substr(i, len));
      i += len;
      continue;
    }
    size_t start = i;
    if (classify(text[i]) == CharClass::kSpace) {
      size_t j = i;
      while (j < n && classify(text[j]) == CharClass::kSpace)
        ++j;
      if (j == n || j - i > 1 || text[i] != ' ') {
        // Trailing whitespace, or a run that leaves its last character for
        // the next word, or a single non-space whitespace character.
        const size_t end = j == n ? n : (j - i > 1 ? j - 1 : j);
        words.push_back(text.substr(i, end - i));
        i = end;
        continue;
      }
      ++i; // a single ' ' prefixes the following run
    }
    const CharClass cls = classify(text[i]);
    size_t j = i;
    while (j < n && classify(text[j]) == cls)
      ++j;
    words.push_back(text.substr(start, j - start));
    i = j;
  }
  return words;
}

} // namespace

std::vector<int32_t> Tokenizer::encode_gpt2(const std::string &text) const {
  std::vector<int32_t> ids;
  std::vector<std::string> symbols;
  for (const std::string &word : pre_tokenize(text)) {
    symbols.clear();
    for (char c : word)
      symbols.push_back(detail::utf8_encode(
          detail::gpt2_byte_to_codepoint(static_cast<unsigned char>(c))));
    while (symbols.size() > 1) {
      int64_t best = -1;
      int32_t best_rank = 0;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        auto it = merge_rank_.find(symbols[i] + " " + symbols[i + 1]);
        if (it != merge_rank_.end() && (best < 0 || it->second < best_rank)) {
          best = int64_t(i);
          best_rank = it->second;
        }
      }
      if (best < 0)
        break;
      symbols[best] += symbols[best + 1];
      symbols.erase(symbols.begin() + best + 1);
    }
    for (const std::string &sym : symbols) {
      const int32_t id = lookup(sym);
      if (id >= 0) {
        ids.push_back(id);
        continue;
      }
      // A merge result missing from the vocabulary: its characters alone.
      for (size_t i = 0; i < sym.size();) {
        const int len = std::max(1, detail::utf8_length(sym, i));
        const int32_t cid = lookup(sym.substr(i, len));
        if (cid >= 0)
          ids.push_back(cid);
        else if (data_.unk_id >= 0)
          ids.push_back(data_.unk_id);
        i += len;
      }
    }
  }
  return ids;
}

} // namespace hyrt
