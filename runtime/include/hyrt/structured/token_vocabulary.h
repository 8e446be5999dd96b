// hyrt/structured/token_vocabulary.h - a tokenizer's vocabulary as the
// bytes each token writes, in a trie, built once per tokenizer and shared by
// every constrained request on that model.
#pragma once

#include "hyrt/status.h"
#include "hyrt/text/tokenizer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hyrt::structured {

class TokenVocabulary {
public:
  /// Decodes every token of `tokenizer` to its bytes as they appear in the
  /// middle of an output (byte-level pieces back to bytes, "▁" to space,
  /// <0xXX> to its byte; a multi-byte character may be split across
  /// tokens). Control tokens and tokens that write nothing are left out,
  /// except `stop_ids` (empty: the tokenizer's EOS), which end the output
  /// and are allowed only once it is complete.
  static Status build(const Tokenizer &tokenizer,
                      std::vector<int32_t> stop_ids,
                      std::shared_ptr<const TokenVocabulary> *out);

  int64_t size() const { return int64_t(bytes_.size()); }
  /// The bytes token `id` writes ("" for left-out tokens and stop ids).
  const std::string &bytes(int32_t id) const { return bytes_[id]; }
  const std::vector<int32_t> &stop_ids() const { return stop_ids_; }
  bool is_stop(int32_t id) const;

  /// The trie, nodes in preorder (the root is implicit): node i reads
  /// byte(i) at depth(i) >= 1; its subtree is [i, subtree_end(i)). Tokens
  /// are sorted by bytes; node i's tokens (bytes equal to its path) are
  /// sorted_ids[token_begin(i) .. exact_end(i)), and the tokens of its
  /// whole subtree run to token_begin(subtree_end(i)).
  int64_t trie_size() const { return int64_t(trie_byte_.size()); }
  uint8_t byte(int64_t i) const { return trie_byte_[i]; }
  int32_t depth(int64_t i) const { return trie_depth_[i]; }
  int64_t subtree_end(int64_t i) const { return subtree_end_[i]; }
  int64_t token_begin(int64_t i) const {
    return i < trie_size() ? token_begin_[i] : int64_t(sorted_ids_.size());
  }
  int64_t exact_end(int64_t i) const { return exact_end_[i]; }
  int32_t sorted_id(int64_t k) const { return sorted_ids_[k]; }
  int32_t max_depth() const { return max_depth_; }

private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> stop_ids_;
  std::vector<uint8_t> trie_byte_;
  std::vector<uint16_t> trie_depth_;
  std::vector<int32_t> subtree_end_, token_begin_, exact_end_, sorted_ids_;
  int32_t max_depth_ = 0;
};

} // namespace hyrt::structured
