// token_vocabulary.cpp - token bytes and the preorder trie over them.
#include "hyrt/structured/token_vocabulary.h"

#include <algorithm>
#include <numeric>

namespace hyrt::structured {

bool TokenVocabulary::is_stop(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

Status TokenVocabulary::build(const Tokenizer &tokenizer,
                              std::vector<int32_t> stop_ids,
                              std::shared_ptr<const TokenVocabulary> *out) {
  auto v = std::make_shared<TokenVocabulary>();
  const int64_t n = tokenizer.vocab_size();
  if (n <= 0 || n > (int64_t(1) << 30))
    return Status::Error("tokenizer vocabulary has " + std::to_string(n) +
                         " tokens; expected 1 to 2^30");
  if (stop_ids.empty() && tokenizer.eos_id() >= 0)
    stop_ids.push_back(tokenizer.eos_id());
  for (int32_t id : stop_ids)
    if (id < 0 || id >= n)
      return Status::Error("stop token id " + std::to_string(id) +
                           " is outside the vocabulary (0.." +
                           std::to_string(n - 1) + ")");
  v->stop_ids_ = stop_ids;
  // A predecessor that is not BOS: pieces as they read mid-output.
  const int32_t mid = tokenizer.bos_id() == 0 ? 1 : 0;
  v->bytes_.resize(n);
  for (int32_t id = 0; id < n; ++id)
    if (!v->is_stop(id))
      v->bytes_[id] = tokenizer.decode(mid, id);

  std::vector<int32_t> ids;
  for (int32_t id = 0; id < n; ++id)
    if (!v->bytes_[id].empty())
      ids.push_back(id);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return v->bytes_[a] < v->bytes_[b] || (v->bytes_[a] == v->bytes_[b] && a < b);
  });
  v->sorted_ids_ = ids;
  // Preorder: a string shares its first `common` bytes with the previous
  // one; nodes deeper than that are closed, new ones opened below.
  std::vector<int64_t> open; // node index per depth - 1
  const std::string empty;
  const std::string *prev = &empty;
  for (size_t k = 0; k < ids.size(); ++k) {
    const std::string &s = v->bytes_[ids[k]];
    if (s.size() > 65535)
      return Status::Error("token " + std::to_string(ids[k]) + " is " +
                           std::to_string(s.size()) + " bytes long");
    size_t common = 0;
    while (common < s.size() && common < prev->size() &&
           s[common] == (*prev)[common])
      ++common;
    while (open.size() > common) {
      v->subtree_end_[open.back()] = int32_t(v->trie_byte_.size());
      open.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      open.push_back(int64_t(v->trie_byte_.size()));
      v->trie_byte_.push_back(uint8_t(s[d]));
      v->trie_depth_.push_back(uint16_t(d + 1));
      v->subtree_end_.push_back(-1);
      v->token_begin_.push_back(int32_t(k));
      v->exact_end_.push_back(int32_t(k));
    }
    v->exact_end_[open.back()] = int32_t(k + 1);
    v->max_depth_ = std::max<int32_t>(v->max_depth_, int32_t(s.size()));
    prev = &s;
  }
  while (!open.empty()) {
    v->subtree_end_[open.back()] = int32_t(v->trie_byte_.size());
    open.pop_back();
  }
  *out = std::move(v);
  return Status::Ok();
}

} // namespace hyrt::structured
