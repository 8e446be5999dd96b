// Hugging Face BPE (kHfByteLevel): added tokens matched first, then per
// segment the normalizer, the pre-tokenizer splits and ranked BPE merges,
// over byte ids (byte-level pipelines) or over characters with <0xXX> byte
// fallback (SentencePiece-style ones: Llama-2, Mistral, TinyLlama), or
// Unigram's best-scoring segmentation.
// Decoding maps byte-level characters back to bytes, or runs the decoder
// chain.
#include "hyrt/text/tokenizer.h"
#include "merge_pairs.h"

#include "hf_pipeline.h"
#include "util.h"

#include <algorithm>

namespace hyrt {

namespace {
uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
}
} // namespace

Status Tokenizer::init_hf() {
  std::shared_ptr<detail::HfPipeline> p;
  if (Status s = detail::compile_hf_pipeline(data_.pipeline_json, &p);
      !s.ok())
    return s;
  const int64_t n = vocab_size();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t type = data_.types[i];
    const std::string &piece = data_.tokens[i];
    if ((type == kTokenControl || type == kTokenUserDefined) && !piece.empty())
      p->added_by_first_byte[static_cast<unsigned char>(piece[0])]
          .emplace_back(piece, int32_t(i));
  }
  for (auto &bucket : p->added_by_first_byte)
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const auto &a, const auto &b) {
                       return a.first.size() > b.first.size();
                     });
  for (int b = 0; b < 256 && p->byte_level; ++b) {
    byte_ids_[b] = lookup(
        detail::utf8_encode(detail::gpt2_byte_to_codepoint(uint8_t(b))));
    if (byte_ids_[b] < 0)
      return Status::Error("tokenizer: byte-level vocabulary lacks the token "
                           "for byte " +
                           std::to_string(b));
  }
  // SentencePiece-style: <0xXX> pieces, whatever their type, are the byte
  // fallback; a byte without one falls back to unk as HF does.
  for (int64_t i = 0; i < n && !p->byte_level && p->byte_fallback; ++i) {
    const int b = detail::parse_byte_piece(data_.tokens[i]);
    if (b >= 0 && data_.types[i] != kTokenUnused && byte_ids_[b] < 0)
      byte_ids_[b] = int32_t(i);
  }
  if (p->unigram) {
    if (data_.scores.size() != data_.tokens.size())
      return Status::Error("tokenizer: Unigram expects one score per token");
    float lowest = 0;
    for (int64_t i = 0; i < n; ++i) {
      p->max_piece_bytes = std::max(p->max_piece_bytes, data_.tokens[i].size());
      lowest = std::min(lowest, data_.scores[i]);
    }
    p->unk_score = lowest - 10.0f;
  }
  // Merges by id: every merge's halves and result must be tokens, else the
  // merge can never apply (HF refuses such files too).
  id_merges_.clear();
  id_merges_.reserve(data_.merges.size());
  for (size_t r = 0; r < data_.merges.size(); ++r) {
    const std::string &m = data_.merges[r];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos)
      return Status::Error("tokenizer: merge " + std::to_string(r) + " '" + m +
                           "' expects two tokens separated by a space");
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    const int32_t a = lookup(left), b = lookup(right),
                  c = lookup(left + right);
    if (a < 0 || b < 0 || c < 0)
      return Status::Error("tokenizer: merge " + std::to_string(r) + " '" + m +
                           "' names a token missing from the vocabulary");
    id_merges_.emplace(pair_key(a, b), std::make_pair(int32_t(r), c));
  }
  merge_rank_.clear(); // the string-keyed table is kGpt2's
  hf_ = std::move(p);
  return Status::Ok();
}

void Tokenizer::split_characters(const std::string &piece,
                                 std::vector<int32_t> &word) const {
  const detail::HfPipeline &p = *hf_;
  bool last_was_unk = false;
  for (size_t i = 0; i < piece.size();) {
    const int len = detail::utf8_length(piece, i);
    const size_t n = size_t(len > 0 ? len : 1); // a stray byte alone
    const int32_t id = len > 0 ? lookup(piece.substr(i, n)) : -1;
    bool all_bytes = p.byte_fallback;
    for (size_t k = 0; k < n && all_bytes; ++k)
      all_bytes = byte_ids_[static_cast<unsigned char>(piece[i + k])] >= 0;
    if (id >= 0) {
      word.push_back(id);
      last_was_unk = false;
    } else if (all_bytes) {
      for (size_t k = 0; k < n; ++k)
        word.push_back(byte_ids_[static_cast<unsigned char>(piece[i + k])]);
      last_was_unk = false;
    } else if (data_.unk_id >= 0 && !(p.fuse_unk && last_was_unk)) {
      word.push_back(data_.unk_id);
      last_was_unk = true;
    }
    i += n;
  }
}

void Tokenizer::viterbi(const std::string &piece,
                        std::vector<int32_t> &word) const {
  const detail::HfPipeline &p = *hf_;
  // best[i]: highest total score of a segmentation of piece[0, i); from[i]:
  // where its last token starts and its id (unk_id for an unknown char).
  const size_t n = piece.size();
  std::vector<double> best(n + 1, -1e300);
  std::vector<std::pair<size_t, int32_t>> from(n + 1, {0, -1});
  best[0] = 0;
  for (size_t i = 0; i < n; ++i) {
    if (best[i] <= -1e300)
      continue;
    const int len = detail::utf8_length(piece, i);
    const size_t ch = size_t(len > 0 ? len : 1);
    bool single_char_piece = false;
    for (size_t end = i + ch; end <= n && end - i <= p.max_piece_bytes;) {
      const int32_t id = lookup(piece.substr(i, end - i));
      if (id >= 0) {
        single_char_piece |= end == i + ch;
        const double score = best[i] + data_.scores[size_t(id)];
        if (score > best[end]) {
          best[end] = score;
          from[end] = {i, id};
        }
      }
      const int next = end < n ? detail::utf8_length(piece, end) : 1;
      end += size_t(next > 0 ? next : 1);
    }
    // A character no piece starts with is unknown (HF's unk node).
    if (!single_char_piece && best[i] + p.unk_score > best[i + ch]) {
      best[i + ch] = best[i] + p.unk_score;
      from[i + ch] = {i, -1};
    }
  }
  std::vector<std::pair<size_t, int32_t>> path; // (start, id or -1)
  for (size_t end = n; end > 0; end = from[end].first)
    path.push_back(from[end]);
  std::reverse(path.begin(), path.end());
  // Unknown runs are fused into one, then spelled as byte tokens when all
  // their bytes have one, else one unk (HF's Unigram with byte_fallback).
  for (size_t k = 0; k < path.size(); ++k) {
    if (path[k].second >= 0) {
      word.push_back(path[k].second);
      continue;
    }
    const size_t begin = path[k].first;
    while (k + 1 < path.size() && path[k + 1].second < 0)
      ++k;
    const size_t end = k + 1 < path.size() ? path[k + 1].first : n;
    bool all_bytes = p.byte_fallback;
    for (size_t b = begin; b < end && all_bytes; ++b)
      all_bytes = byte_ids_[static_cast<unsigned char>(piece[b])] >= 0;
    if (all_bytes)
      for (size_t b = begin; b < end; ++b)
        word.push_back(byte_ids_[static_cast<unsigned char>(piece[b])]);
    else if (data_.unk_id >= 0)
      word.push_back(data_.unk_id);
  }
}

void Tokenizer::bpe_by_rank(std::vector<int32_t> &ids) const {
  // Lowest rank first, leftmost on ties: the order HF's BPE applies merges.
  detail::merge_pairs(ids, [&](int32_t a, int32_t b, double *rank,
                               int32_t *merged) {
    auto it = id_merges_.find(pair_key(a, b));
    if (it == id_merges_.end())
      return false;
    *rank = it->second.first;
    *merged = it->second.second;
    return true;
  });
}

Status Tokenizer::encode_hf(const std::string &text, bool add_special,
                            std::vector<int32_t> *out) const {
  const detail::HfPipeline &p = *hf_;
  std::vector<int32_t> &ids = *out;
  if (add_special && p.add_bos && data_.bos_id >= 0)
    ids.push_back(data_.bos_id);
  std::vector<int32_t> word;
  detail::RegexBudget budget(text.size());
  std::string error;
  auto encode_segment = [&](size_t begin, size_t end) {
    if (end <= begin || !error.empty())
      return;
    const std::string normalized = p.normalize(text.substr(begin, end - begin));
    for (const std::string &piece :
         p.pre_tokenize(normalized, begin == 0, &budget, &error)) {
      if (p.ignore_merges) {
        std::string mapped;
        if (!p.byte_level)
          mapped = piece;
        else
          for (char c : piece)
            mapped += detail::utf8_encode(
                detail::gpt2_byte_to_codepoint(static_cast<unsigned char>(c)));
        if (int32_t id = lookup(mapped); id >= 0) {
          ids.push_back(id);
          continue;
        }
      }
      word.clear();
      if (p.byte_level)
        for (char c : piece)
          word.push_back(byte_ids_[static_cast<unsigned char>(c)]);
      else if (p.unigram)
        viterbi(piece, word);
      else
        split_characters(piece, word);
      if (!p.unigram)
        bpe_by_rank(word);
      ids.insert(ids.end(), word.begin(), word.end());
    }
  };
  size_t segment = 0;
  for (size_t pos = 0; pos < text.size();) {
    int32_t match_id = -1;
    size_t match_len = 0;
    for (const auto &[content, id] :
         p.added_by_first_byte[static_cast<unsigned char>(text[pos])])
      if (text.compare(pos, content.size(), content) == 0) {
        match_id = id;
        match_len = content.size();
        break;
      }
    if (match_id < 0) {
      ++pos;
      continue;
    }
    encode_segment(segment, pos);
    ids.push_back(match_id);
    pos += match_len;
    segment = pos;
  }
  encode_segment(segment, text.size());
  if (!error.empty())
    return Status::Error(error);
  if (add_special && p.add_eos && data_.eos_id >= 0)
    ids.push_back(data_.eos_id);
  return Status::Ok();
}

std::string Tokenizer::decode_hf(const std::vector<int32_t> &ids,
                                 bool skip_special) const {
  if (!hf_->byte_level) {
    std::vector<std::string> tokens;
    for (int32_t id : ids)
      if (id >= 0 && id < vocab_size() && data_.types[id] != kTokenUnused &&
          !(skip_special && data_.types[id] == kTokenControl))
        tokens.push_back(data_.tokens[id]);
    return detail::utf8_lossy(hf_->decode(std::move(tokens)));
  }
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size())
      continue;
    const int32_t type = data_.types[id];
    if (type == kTokenUnused || (skip_special && type == kTokenControl))
      continue;
    // HF's ByteLevel decoder maps a token's characters back to bytes when
    // every character has a byte; otherwise (e.g. "<｜User｜>") the token's
    // UTF-8 is taken as is.
    const std::string &piece = data_.tokens[id];
    std::string mapped;
    bool all_mapped = true;
    for (size_t i = 0; i < piece.size() && all_mapped;) {
      const int len = detail::utf8_length(piece, i);
      const int b = len == 0 ? -1
                             : detail::gpt2_codepoint_to_byte(
                                   detail::utf8_decode(piece, i, len));
      if (b < 0)
        all_mapped = false;
      else
        mapped += char(b);
      i += size_t(std::max(len, 1));
    }
    bytes += all_mapped ? mapped : piece;
  }
  return detail::utf8_lossy(bytes);
}

} // namespace hyrt
