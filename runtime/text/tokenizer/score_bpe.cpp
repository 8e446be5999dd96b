// Score-driven BPE shared by the llama2.c and SentencePiece ("llama" GGUF)
// tokenizers: split into UTF-8 characters (bytes as fallback), then merge the
// adjacent pair whose joined piece has the highest score until none exists.
#include "hyrt/text/tokenizer.h"
#include "merge_pairs.h"

#include "util.h"

namespace hyrt {

void Tokenizer::push_byte_fallback(unsigned char byte,
                                   std::vector<int32_t> &ids) const {
  if (byte_ids_[byte] >= 0)
    ids.push_back(byte_ids_[byte]);
  else if (data_.unk_id >= 0)
    ids.push_back(data_.unk_id);
}

std::vector<int32_t> Tokenizer::encode_score_bpe(const std::string &text) const {
  std::string s;
  std::vector<int32_t> ids;
  if (data_.kind == TokenizerKind::kSentencePiece) {
    // Dummy prefix and spaces become U+2581.
    static const std::string kSpace = "\xE2\x96\x81";
    s = kSpace;
    for (char c : text)
      s += c == ' ' ? kSpace : std::string(1, c);
  } else {
    // llama2.c: the dummy prefix is a separate " " piece before the text.
    const int32_t space = lookup(" ");
    if (space >= 0)
      ids.push_back(space);
    else
      push_byte_fallback(' ', ids);
    s = text;
  }
  for (size_t i = 0; i < s.size();) {
    const int len = detail::utf8_length(s, i);
    if (len > 0) {
      const int32_t id = lookup(s.substr(i, len));
      if (id >= 0) {
        ids.push_back(id);
        i += len;
        continue;
      }
    }
    // Not a known character: every byte of it (or the stray byte) alone.
    const int n = len > 0 ? len : 1;
    for (int k = 0; k < n; ++k)
      push_byte_fallback(static_cast<unsigned char>(s[i + k]), ids);
    i += n;
  }
  bpe_by_score(ids);
  return ids;
}

void Tokenizer::bpe_by_score(std::vector<int32_t> &ids) const {
  // The pair whose concatenation is the highest-scoring piece first,
  // leftmost on ties (llama2.c's and SentencePiece's order).
  detail::merge_pairs(ids, [&](int32_t a, int32_t b, double *priority,
                               int32_t *merged) {
    *merged = lookup(data_.tokens[a] + data_.tokens[b]);
    if (*merged < 0)
      return false;
    *priority = -double(data_.scores[*merged]);
    return true;
  });
}

} // namespace hyrt
