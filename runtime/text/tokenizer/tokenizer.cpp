// Tokenizer construction, dispatch and decoding (see hyrt/text/tokenizer.h).
#include "hyrt/text/tokenizer.h"

#include "hf_pipeline.h"
#include "util.h"

#include <string>

namespace hyrt {

namespace {
std::string str(int64_t v) { return std::to_string(v); }

bool in_merge_table(int32_t type, TokenizerKind kind) {
  // llama2.c looks pieces up in the whole vocabulary; SentencePiece and GPT-2
  // never produce control, byte, unknown or unused pieces from text.
  if (kind == TokenizerKind::kLlama2c)
    return true;
  return type != kTokenControl && type != kTokenByte &&
         type != kTokenUnknown && type != kTokenUnused;
}
} // namespace

Status Tokenizer::init(TokenizerData data) {
  const int64_t n = int64_t(data.tokens.size());
  if (n == 0)
    return Status::Error("tokenizer: expected a non-empty vocabulary");
  if (data.kind != TokenizerKind::kLlama2c &&
      data.kind != TokenizerKind::kSentencePiece &&
      data.kind != TokenizerKind::kGpt2 &&
      data.kind != TokenizerKind::kHfByteLevel)
    return Status::Error("tokenizer: unknown kind " + str(int(data.kind)));
  const bool needs_scores = data.kind == TokenizerKind::kLlama2c ||
                            data.kind == TokenizerKind::kSentencePiece;
  if (needs_scores && int64_t(data.scores.size()) != n)
    return Status::Error("tokenizer: expected " + str(n) +
                         " scores (one per token), found " +
                         str(int64_t(data.scores.size())));
  if (!data.types.empty() && int64_t(data.types.size()) != n)
    return Status::Error("tokenizer: expected " + str(n) +
                         " token types, found " +
                         str(int64_t(data.types.size())));
  for (int32_t id : {data.bos_id, data.eos_id, data.unk_id})
    if (id < -1 || id >= n)
      return Status::Error("tokenizer: special token id " + str(id) +
                           " outside [-1, " + str(n) + ")");
  if (data.types.empty()) {
    data.types.assign(n, kTokenNormal);
    for (int64_t i = 0; i < n; ++i) {
      if (i == data.bos_id || i == data.eos_id)
        data.types[i] = kTokenControl;
      else if (i == data.unk_id)
        data.types[i] = kTokenUnknown;
      else if (data.kind != TokenizerKind::kGpt2 &&
               detail::parse_byte_piece(data.tokens[i]) >= 0)
        data.types[i] = kTokenByte;
    }
  }
  data_ = std::move(data);
  piece_to_id_.clear();
  merge_rank_.clear();
  for (int i = 0; i < 256; ++i)
    byte_ids_[i] = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (in_merge_table(data_.types[i], data_.kind))
      piece_to_id_.emplace(data_.tokens[i], int32_t(i)); // first id wins
    if (data_.kind == TokenizerKind::kSentencePiece &&
        data_.types[i] == kTokenByte) {
      const int b = detail::parse_byte_piece(data_.tokens[i]);
      if (b >= 0 && byte_ids_[b] < 0)
        byte_ids_[b] = int32_t(i);
    }
  }
  if (data_.kind == TokenizerKind::kLlama2c)
    for (int b = 0; b < 256 && b + 3 < n; ++b)
      byte_ids_[b] = b + 3;
  for (size_t r = 0; r < data_.merges.size(); ++r)
    merge_rank_.emplace(data_.merges[r], int32_t(r));
  if (data_.kind == TokenizerKind::kGpt2 && data_.merges.empty() && n > 256)
    return Status::Error("tokenizer: gpt2 kind expects a merges list, found "
                         "none for " +
                         str(n) + " tokens");
  if (data_.kind == TokenizerKind::kHfByteLevel)
    return init_hf();
  return Status::Ok();
}

int32_t Tokenizer::lookup(const std::string &piece) const {
  auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

std::vector<int32_t> Tokenizer::encode(const std::string &text,
                                       bool add_bos) const {
  std::vector<int32_t> ids;
  (void)encode(text, add_bos, &ids);
  return ids;
}

Status Tokenizer::encode(const std::string &text, bool add_bos,
                         std::vector<int32_t> *out) const {
  out->clear();
  if (data_.kind == TokenizerKind::kHfByteLevel)
    return encode_hf(text, add_bos, out);
  *out = encode_plain(text, add_bos);
  return Status::Ok();
}

std::vector<int32_t> Tokenizer::encode_plain(const std::string &text,
                                             bool add_bos) const {
  std::vector<int32_t> ids;
  if (add_bos && data_.bos_id >= 0)
    ids.push_back(data_.bos_id);
  if (text.empty())
    return ids;
  std::vector<int32_t> body = data_.kind == TokenizerKind::kGpt2
                                  ? encode_gpt2(text)
                                  : encode_score_bpe(text);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::string Tokenizer::decode(int32_t prev, int32_t id) const {
  if (id < 0 || id >= vocab_size())
    return "";
  const int32_t type = data_.types[id];
  if (type == kTokenControl || type == kTokenUnused)
    return "";
  const std::string &piece = data_.tokens[id];
  if (type == kTokenByte) {
    const int b = detail::parse_byte_piece(piece);
    return b >= 0 ? std::string(1, char(b)) : piece;
  }
  std::string text;
  if (data_.kind == TokenizerKind::kHfByteLevel && !hf_->byte_level) {
    // One piece of the SentencePiece-style decoders: "▁" is a space, and
    // the prefix space the encoder added is dropped at the start.
    text = piece;
    for (size_t pos = 0;
         (pos = text.find("\xE2\x96\x81", pos)) != std::string::npos; ++pos)
      text.replace(pos, 3, " ");
    if ((prev < 0 || prev == data_.bos_id) && hf_->prefix_space &&
        !text.empty() && text[0] == ' ')
      text.erase(0, 1);
    return text;
  }
  if (data_.kind == TokenizerKind::kGpt2 ||
      data_.kind == TokenizerKind::kHfByteLevel) {
    for (size_t i = 0; i < piece.size();) {
      const int len = detail::utf8_length(piece, i);
      if (len == 0) {
        text += piece[i++];
        continue;
      }
      const int b = detail::gpt2_codepoint_to_byte(
          detail::utf8_decode(piece, i, len));
      text += b >= 0 ? std::string(1, char(b)) : piece.substr(i, len);
      i += len;
    }
    return text;
  }
  if (data_.kind == TokenizerKind::kSentencePiece) {
    static const std::string kSpace = "\xE2\x96\x81"; // U+2581
    for (size_t i = 0; i < piece.size();) {
      if (piece.compare(i, 3, kSpace) == 0) {
        text += ' ';
        i += 3;
      } else {
        text += piece[i++];
      }
    }
  } else {
    text = piece;
  }
  if (prev >= 0 && prev == data_.bos_id && !text.empty() && text[0] == ' ')
    text.erase(0, 1);
  return text;
}

std::string Tokenizer::decode_text(const std::vector<int32_t> &ids,
                                   bool skip_special) const {
  if (data_.kind == TokenizerKind::kHfByteLevel)
    return decode_hf(ids, skip_special);
  return decode_all(ids);
}

std::string Tokenizer::decode_all(const std::vector<int32_t> &ids) const {
  std::string text;
  int32_t prev = -1;
  for (int32_t id : ids) {
    text += decode(prev, id);
    prev = id;
  }
  return text;
}

} // namespace hyrt
