// hyrt/text/tokenizer.h - text <-> token ids for the tokenizer families hyc
// serves: llama2.c tokenizer.bin, GGUF "llama" (SentencePiece BPE with byte
// fallback), GGUF "gpt2" (byte-level BPE) and Hugging Face tokenizer.json
// (BPE, byte-level or SentencePiece-style with byte fallback, or Unigram,
// with the file's normalizer, pre-tokenizer, decoder and added tokens),
// behind one interface.
#pragma once

#include "hyrt/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace hyrt {

/// Which encoding algorithm a vocabulary uses.
enum class TokenizerKind : int32_t {
  kLlama2c = 0,       ///< llama2.c: dummy " " prefix, score merges, id=byte+3
  kSentencePiece = 1, ///< GGUF llama: "▁" for spaces, score merges, <0xXX>
  kGpt2 = 2,          ///< GGUF gpt2: byte-level BPE with ranked merges
  /// tokenizer.json: BPE, byte-level or SentencePiece-style (Metaspace /
  /// Prepend+Replace, <0xXX> byte fallback), or Unigram (Viterbi over the
  /// pieces' scores, kept in `scores`); pipeline from JSON.
  kHfByteLevel = 3,
};

namespace detail {
struct HfPipeline;
}

/// SentencePiece / GGUF token types.
enum TokenType : int32_t {
  kTokenNormal = 1,
  kTokenUnknown = 2,
  kTokenControl = 3,
  kTokenUserDefined = 4,
  kTokenUnused = 5,
  kTokenByte = 6,
};

/// Everything a tokenizer is built from (what the compiler extracts from a
/// checkpoint). scores may be empty for kGpt2; types may be empty (then they
/// are inferred: bos/eos control, unk unknown, "<0xXX>" byte, rest normal).
struct TokenizerData {
  TokenizerKind kind = TokenizerKind::kLlama2c;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<std::string> merges; ///< kGpt2 only: "left right", by rank
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  /// kHfByteLevel only: the parts of tokenizer.json besides the vocabulary
  /// and merges ("normalizer", "pre_tokenizer", "decoder", "model" options)
  /// plus "add_bos" / "add_eos" (the special-token policy), as JSON text.
  /// Added tokens are ordinary entries of `tokens`: special ones typed
  /// kTokenControl, the others kTokenUserDefined; both are matched in text
  /// before the pipeline runs.
  std::string pipeline_json;
  /// The checkpoint's Jinja chat template ("" when it has none).
  std::string chat_template;
};

/// Encoder / decoder over one vocabulary.
///
/// kGpt2 pre-tokenization approximates the GPT-2 regex with ASCII classes:
/// contractions ('s 't 're 've 'm 'll 'd), then an optional single space
/// followed by a run of letters (bytes >= 0x80 count as letters), of digits,
/// or of other non-space characters; whitespace runs keep their last space
/// for the following word. Special-token strings in the text are not
/// recognized; they are encoded as plain text.
class Tokenizer {
public:
  /// Validates `data` (sizes agree, ids in range, kind-specific needs) and
  /// builds the lookup tables.
  Status init(TokenizerData data);

  /// Token ids of `text`, with the BOS id first when add_bos (and bos >= 0).
  /// For kHfByteLevel, add_bos means "add special tokens" as the checkpoint's
  /// policy says (BOS and/or EOS, or nothing), and added-token strings in
  /// the text are always matched as tokens (HF's split_special_tokens=false).
  std::vector<int32_t> encode(const std::string &text, bool add_bos) const;
  /// encode() for text from a user or a socket: a pre-tokenizer regex (from
  /// a downloaded tokenizer.json) that passes its time budget is an error
  /// naming it, not a thread pinned for hours. The form above gives the
  /// ids encoded before such an error; only tests and tools use it.
  Status encode(const std::string &text, bool add_bos,
                std::vector<int32_t> *ids) const;

  /// The text of `ids` as Hugging Face's decode gives it: pieces joined,
  /// special (control) tokens dropped when skip_special, byte-level pieces
  /// turned back into bytes, and (kHfByteLevel) invalid UTF-8 replaced by
  /// U+FFFD. Other kinds: decode_all, minus control tokens.
  std::string decode_text(const std::vector<int32_t> &ids,
                          bool skip_special) const;

  /// Text of `id` when it starts the output (no preceding token).
  std::string decode(int32_t id) const { return decode(-1, id); }
  /// Text piece of `id` following `prev`: control tokens give "", byte
  /// tokens give their byte, and (llama2c / SentencePiece) a leading space
  /// is dropped right after BOS. Out-of-range ids give "".
  std::string decode(int32_t prev, int32_t id) const;
  /// Concatenated pieces of `ids` (each decoded after its predecessor).
  std::string decode_all(const std::vector<int32_t> &ids) const;

  int32_t bos_id() const { return data_.bos_id; }
  int32_t eos_id() const { return data_.eos_id; }
  int64_t vocab_size() const { return int64_t(data_.tokens.size()); }
  TokenizerKind kind() const { return data_.kind; }
  const TokenizerData &data() const { return data_; }

  /// Writes the tokenizer to `path` in hyrt's own binary format.
  Status save(const std::string &path) const;
  /// Reads a file written by save() and initializes `out` from it.
  static Status load(const std::string &path, Tokenizer *out);

private:
  std::vector<int32_t> encode_plain(const std::string &text,
                                    bool add_bos) const;
  std::vector<int32_t> encode_score_bpe(const std::string &text) const;
  std::vector<int32_t> encode_gpt2(const std::string &text) const;
  void bpe_by_score(std::vector<int32_t> &ids) const;
  void push_byte_fallback(unsigned char byte, std::vector<int32_t> &ids) const;
  int32_t lookup(const std::string &piece) const;
  Status init_hf();
  Status encode_hf(const std::string &text, bool add_special,
                   std::vector<int32_t> *ids) const;
  void bpe_by_rank(std::vector<int32_t> &ids) const;
  void split_characters(const std::string &piece,
                        std::vector<int32_t> &word) const;
  void viterbi(const std::string &piece, std::vector<int32_t> &word) const;
  std::string decode_hf(const std::vector<int32_t> &ids,
                        bool skip_special) const;

  TokenizerData data_;
  /// kHfByteLevel: compiled regexes and options, shared by copies.
  std::shared_ptr<const detail::HfPipeline> hf_;
  /// kHfByteLevel: (left id << 32 | right id) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> id_merges_;
  std::unordered_map<std::string, int32_t> piece_to_id_;
  std::unordered_map<std::string, int32_t> merge_rank_; // kGpt2
  int32_t byte_ids_[256] = {};                          // -1: none
};

/// Makes every tokenizer regex match in flight, and every later one, stop
/// within one ICU tick (about a millisecond) with an error: for a process
/// that is stopping (`hyc serve` on SIGTERM), so that no request's text
/// (a pattern that backtracks for its whole budget) holds the exit.
void abandon_text_work();

/// Reads a llama2.c tokenizer.bin (i32 max_token_length, then per token f32
/// score, i32 length, bytes) into `out` as kind kLlama2c with bos 1, eos 2,
/// unk 0. vocab_size < 0 reads records until end of file.
Status read_llama2c_tokenizer(const std::string &path, int64_t vocab_size,
                              TokenizerData *out);

/// Reads a Hugging Face tokenizer from `dir` (tokenizer.json, plus
/// tokenizer_config.json when present: add_bos_token / add_eos_token,
/// bos_token / eos_token, chat_template) into `out` as kind kHfByteLevel.
/// Components the runtime cannot run are reported by init(), naming them.
Status read_hf_tokenizer(const std::string &dir, TokenizerData *out);

} // namespace hyrt
