// The text-processing stages of a Hugging Face tokenizer.json that run
// before and after the BPE model: normalizer, pre-tokenizer (regex splits
// over ICU, byte-level mapping) and decoder, compiled once from the JSON
// and shared read-only by every copy of a Tokenizer.
#pragma once

#include "hyrt/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <unicode/uversion.h> // declares the versioned `icu` namespace

U_NAMESPACE_BEGIN
class RegexPattern;
class Normalizer2;
U_NAMESPACE_END

namespace hyrt::detail {

/// One pre-tokenizer step, in the order tokenizer.json lists them.
struct HfSplitStep {
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious,
                        kMergedWithNext, kContiguous };
  std::shared_ptr<icu::RegexPattern> pattern;
  Behavior behavior = Behavior::kIsolated;
  bool invert = false;
};

struct HfPipeline {
  /// Normalizers in order (NFC/NFD/NFKC/NFKD); empty: none.
  std::vector<const icu::Normalizer2 *> normalizers;
  std::vector<HfSplitStep> splits;
  bool byte_level_prefix_space = false; ///< ByteLevel add_prefix_space
  bool ignore_merges = false;           ///< BPE: whole words in vocab win
  bool add_bos = false;
  bool add_eos = false;
  /// Added tokens by first byte, longest first, so that scanning the text
  /// finds the leftmost-longest match as HF's added-vocabulary split does.
  std::vector<std::pair<std::string, int32_t>> added_by_first_byte[256];

  /// Applies the normalizers to `text` (valid UTF-8 only; other text is
  /// left as is, since HF cannot hold it either).
  std::string normalize(const std::string &text) const;
  /// Splits `text` into the pieces BPE encodes one by one.
  std::vector<std::string> pre_tokenize(const std::string &text) const;
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
