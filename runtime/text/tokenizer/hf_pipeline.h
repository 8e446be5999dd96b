// The text-processing stages of a Hugging Face tokenizer.json that run
// before and after the BPE model: normalizer (ICU forms, Prepend, Replace),
// pre-tokenizer (regex splits over ICU, byte-level mapping, Metaspace) and
// decoder, compiled once from the JSON and shared read-only by every copy
// of a Tokenizer.
#pragma once

#include "hyrt/status.h"

#include <cstdint>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <unicode/uversion.h> // declares the versioned `icu` namespace

U_NAMESPACE_BEGIN
class RegexPattern;
class Normalizer2;
U_NAMESPACE_END

namespace hyrt::detail {

/// How long the split regexes of one encode may run: each match is held to
/// ICU's time limit, and all of them to a wall-clock deadline that grows
/// with the text (the real patterns split several MB a second here).
struct RegexBudget {
  /// ICU's limit for one match (its units are match-engine ticks of the
  /// order of a millisecond).
  static constexpr int32_t kFindLimit = 1000;
  /// Wall-clock seconds for all the regex work of one encode: a base plus
  /// a rate per MiB of text.
  static constexpr double kBaseSeconds = 0.5;
  static constexpr double kSecondsPerMiB = 1.0;
  explicit RegexBudget(size_t text_bytes)
      : seconds(kBaseSeconds + kSecondsPerMiB * double(text_bytes) / (1 << 20)),
        deadline(std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(seconds))) {}
  double seconds;
  std::chrono::steady_clock::time_point deadline;
};


/// One normalizer step: an ICU normalization form, or (icu null) the
/// string edit Prepend (`from` empty) / Replace (`from` -> `to`).
struct HfNormalizeStep {
  const icu::Normalizer2 *icu = nullptr;
  std::string from, to;
};

/// One pre-tokenizer step, in the order tokenizer.json lists them: a regex
/// split, or (pattern null) Metaspace.
struct HfSplitStep {
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious,
                        kMergedWithNext, kContiguous };
  enum class Prepend { kAlways, kFirst, kNever };
  std::shared_ptr<icu::RegexPattern> pattern;
  Behavior behavior = Behavior::kIsolated;
  bool invert = false;
  std::string replacement; ///< Metaspace: what spaces become ("▁")
  Prepend prepend = Prepend::kAlways;
  bool split = true; ///< Metaspace: split before each replacement
};

/// One decoder step of a non-byte-level pipeline; each maps the list of
/// token strings as HF's decode_chain does.
struct HfDecodeStep {
  enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kFuse;
  std::string from, to;     ///< kReplace; kMetaspace: from = replacement
  std::string content;      ///< kStrip: the character stripped
  int start = 0, stop = 0;  ///< kStrip: at most this many from each end
  bool strip_first = false; ///< kMetaspace: prepend scheme is not never
};

struct HfPipeline {
  /// Normalizers in order; empty: none.
  std::vector<HfNormalizeStep> normalizers;
  std::vector<HfSplitStep> splits;
  /// True: GPT-2 byte-level BPE (the pre-tokenizer has a ByteLevel step).
  /// False: SentencePiece-style BPE over characters, whose unknown
  /// characters become <0xXX> byte tokens (byte_fallback) or unk.
  bool byte_level = false;
  bool byte_level_prefix_space = false; ///< ByteLevel add_prefix_space
  bool ignore_merges = false;           ///< BPE: whole words in vocab win
  /// Unigram model: Viterbi over the pieces' scores instead of BPE merges.
  bool unigram = false;
  size_t max_piece_bytes = 0; ///< Unigram: the longest piece
  float unk_score = 0;        ///< Unigram: lowest score minus 10, as HF
  bool byte_fallback = false;           ///< unknown chars as <0xXX>
  bool fuse_unk = false;                ///< BPE: adjacent unks become one
  /// Non-byte-level decoder chain, in order; empty: tokens joined as is.
  std::vector<HfDecodeStep> decoders;
  /// Encoding puts a "▁" before the text (Prepend normalizer or Metaspace
  /// with a prepend scheme), so a decoder drops the first leading space.
  bool prefix_space = false;
  bool add_bos = false;
  bool add_eos = false;
  /// Added tokens by first byte, longest first, so that scanning the text
  /// finds the leftmost-longest match as HF's added-vocabulary split does.
  std::vector<std::pair<std::string, int32_t>> added_by_first_byte[256];

  /// Applies the normalizers to `text` (ICU forms to valid UTF-8 only;
  /// other text is left as is, since HF cannot hold it either).
  std::string normalize(const std::string &text) const;
  /// Splits `text` into the pieces BPE encodes one by one. `at_start`:
  /// the text begins the input (Metaspace prepend_scheme "first"). A split
  /// regex that passes `budget` (a pattern from a downloaded tokenizer.json
  /// can backtrack for hours) stops the split and sets `*error`.
  std::vector<std::string> pre_tokenize(const std::string &text, bool at_start,
                                        RegexBudget *budget,
                                        std::string *error) const;
  /// Runs the decoder chain over the token strings and joins the result.
  std::string decode(std::vector<std::string> tokens) const;
};

/// Compiles the pipeline from TokenizerData::pipeline_json. Errors name the
/// component and its type ("pre_tokenizer: unsupported type 'Metaspace'").
Status compile_hf_pipeline(const std::string &pipeline_json,
                           std::shared_ptr<HfPipeline> *out);

/// True when `s` is well-formed UTF-8.
bool valid_utf8(const std::string &s);

/// `bytes` with every ill-formed UTF-8 sequence replaced by U+FFFD, as
/// Rust's String::from_utf8_lossy does.
std::string utf8_lossy(const std::string &bytes);

} // namespace hyrt::detail
