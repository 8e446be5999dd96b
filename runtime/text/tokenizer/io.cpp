// Tokenizer files: hyrt's own save/load format and the llama2.c
// tokenizer.bin reader.
//
// hyrt format (little-endian): "HYTK", u32 version (1), i32 kind, i32 bos,
// i32 eos, i32 unk, u32 n_tokens, per token {u32 len, bytes, f32 score,
// i32 type}, u32 n_merges, per merge {u32 len, bytes}. Version 2 (written
// only for kHfByteLevel, so other tokenizers keep producing version 1 files)
// appends {u32 len, bytes} pipeline_json and chat_template.
#include "hyrt/text/tokenizer.h"

#include <cstring>
#include <fstream>

namespace hyrt {

namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kVersionHf = 2;
constexpr uint32_t kMaxStringBytes = 1u << 20;

template <typename T> void put(std::ofstream &f, T v) {
  f.write(reinterpret_cast<const char *>(&v), sizeof(T));
}
void put_string(std::ofstream &f, const std::string &s) {
  put<uint32_t>(f, uint32_t(s.size()));
  f.write(s.data(), std::streamsize(s.size()));
}
template <typename T> bool get(std::ifstream &f, T *v) {
  return bool(f.read(reinterpret_cast<char *>(v), sizeof(T)));
}
bool get_string(std::ifstream &f, std::string *s) {
  uint32_t len = 0;
  if (!get(f, &len) || len > kMaxStringBytes)
    return false;
  s->resize(len);
  return len == 0 || bool(f.read(&(*s)[0], len));
}

/// Bytes from the read position to the end of the file.
uint64_t bytes_left(std::ifstream &f) {
  const std::streampos at = f.tellg();
  f.seekg(0, std::ios::end);
  const std::streampos end = f.tellg();
  f.seekg(at);
  return at < 0 || end < at ? 0 : uint64_t(end - at);
}

} // namespace

Status Tokenizer::save(const std::string &path) const {
  std::ofstream f(path, std::ios::binary);
  if (!f)
    return Status::Error("tokenizer save: cannot open " + path);
  f.write("HYTK", 4);
  const bool hf = data_.kind == TokenizerKind::kHfByteLevel;
  put<uint32_t>(f, hf ? kVersionHf : kVersion);
  put<int32_t>(f, int32_t(data_.kind));
  put<int32_t>(f, data_.bos_id);
  put<int32_t>(f, data_.eos_id);
  put<int32_t>(f, data_.unk_id);
  put<uint32_t>(f, uint32_t(data_.tokens.size()));
  for (size_t i = 0; i < data_.tokens.size(); ++i) {
    put_string(f, data_.tokens[i]);
    put<float>(f, i < data_.scores.size() ? data_.scores[i] : 0.f);
    put<int32_t>(f, data_.types[i]);
  }
  put<uint32_t>(f, uint32_t(data_.merges.size()));
  for (const std::string &m : data_.merges)
    put_string(f, m);
  if (hf) {
    put_string(f, data_.pipeline_json);
    put_string(f, data_.chat_template);
  }
  if (!f)
    return Status::Error("tokenizer save: write failed for " + path);
  return Status::Ok();
}

Status Tokenizer::load(const std::string &path, Tokenizer *out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Status::Error("tokenizer load: cannot open " + path);
  char magic[4] = {};
  uint32_t version = 0;
  if (!f.read(magic, 4) || std::memcmp(magic, "HYTK", 4) != 0)
    return Status::Error(path + ": expected magic HYTK");
  if (!get(f, &version) || (version != kVersion && version != kVersionHf))
    return Status::Error(path + ": expected tokenizer format version " +
                         std::to_string(kVersion) + " or " +
                         std::to_string(kVersionHf) + ", found " +
                         std::to_string(version));
  TokenizerData d;
  int32_t kind = 0;
  uint32_t n = 0;
  if (!get(f, &kind) || !get(f, &d.bos_id) || !get(f, &d.eos_id) ||
      !get(f, &d.unk_id) || !get(f, &n))
    return Status::Error(path + ": truncated header");
  // Each token takes at least 12 bytes (length, score, type): a count the
  // file cannot hold is refused before the tables are sized for it.
  if (const uint64_t left = bytes_left(f); n > left / 12)
    return Status::Error(path + ": truncated: " + std::to_string(n) +
                         " tokens announced, but only " + std::to_string(left) +
                         " bytes follow (at least 12 per token)");
  d.kind = TokenizerKind(kind);
  d.tokens.resize(n);
  d.scores.resize(n);
  d.types.resize(n);
  for (uint32_t i = 0; i < n; ++i)
    if (!get_string(f, &d.tokens[i]) || !get(f, &d.scores[i]) ||
        !get(f, &d.types[i]))
      return Status::Error(path + ": truncated at token " + std::to_string(i) +
                           " of " + std::to_string(n));
  uint32_t m = 0;
  if (!get(f, &m))
    return Status::Error(path + ": truncated before the merges count");
  if (const uint64_t left = bytes_left(f); m > left / 4)
    return Status::Error(path + ": truncated: " + std::to_string(m) +
                         " merges announced, but only " + std::to_string(left) +
                         " bytes follow (at least 4 per merge)");
  d.merges.resize(m);
  for (uint32_t i = 0; i < m; ++i)
    if (!get_string(f, &d.merges[i]))
      return Status::Error(path + ": truncated at merge " + std::to_string(i) +
                           " of " + std::to_string(m));
  if (version == kVersionHf &&
      (!get_string(f, &d.pipeline_json) || !get_string(f, &d.chat_template)))
    return Status::Error(path + ": truncated in the tokenizer.json pipeline "
                                "section");
  return out->init(std::move(d));
}

Status read_llama2c_tokenizer(const std::string &path, int64_t vocab_size,
                              TokenizerData *out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Status::Error("cannot open llama2.c tokenizer " + path);
  int32_t max_token_length = 0;
  if (!get(f, &max_token_length) || max_token_length <= 0)
    return Status::Error(path + ": expected a positive max_token_length, "
                                "found " +
                         std::to_string(max_token_length));
  TokenizerData d;
  d.kind = TokenizerKind::kLlama2c;
  d.unk_id = 0;
  d.bos_id = 1;
  d.eos_id = 2;
  for (int64_t i = 0; vocab_size < 0 || i < vocab_size; ++i) {
    float score = 0.f;
    int32_t len = 0;
    if (!get(f, &score)) {
      if (vocab_size < 0 && f.eof())
        break;
      return Status::Error(path + ": expected " + std::to_string(vocab_size) +
                           " tokens, found " + std::to_string(i));
    }
    // max_token_length is advisory in llama2.c; only reject absurd lengths.
    if (!get(f, &len) || len < 0 || uint32_t(len) > kMaxStringBytes)
      return Status::Error(path + ": token " + std::to_string(i) +
                           " length " + std::to_string(len) +
                           " outside [0, " + std::to_string(kMaxStringBytes) +
                           "]");
    std::string piece(size_t(len), '\0');
    if (len > 0 && !f.read(&piece[0], len))
      return Status::Error(path + ": truncated in token " + std::to_string(i));
    d.tokens.push_back(std::move(piece));
    d.scores.push_back(score);
  }
  if (d.tokens.size() < 3)
    return Status::Error(path + ": expected at least 3 tokens (unk, bos, "
                                "eos), found " +
                         std::to_string(d.tokens.size()));
  *out = std::move(d);
  return Status::Ok();
}

} // namespace hyrt
