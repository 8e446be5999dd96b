// Hugging Face normalizers, pre-tokenizers and decoders, the regex and
// normalization ones over ICU (see tokenizer_hf_pipeline.h). HF's regexes are
// Oniguruma's; ICU agrees with it where tokenizer.json patterns care: \p{..}
// general categories, \s as the Unicode White_Space property (U+0085 in, U+FEFF
// out), (?i:...) and lookahead.
// Building a pipeline from its JSON is tokenizer_hf_pipeline_compile.cpp.
#include "hf_pipeline.h"

#include "util.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>
#include <unicode/normalizer2.h>
#include <unicode/regex.h>
#include <unicode/utext.h>

namespace hyrt::detail {

namespace {

void replace_all(std::string &s, const std::string &from,
                 const std::string &to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos;
       pos += to.size())
    s.replace(pos, from.size(), to);
}

/// Metaspace on one piece: spaces become the replacement, the prefix is
/// added as the scheme says (never doubled), then the piece splits before
/// each replacement (HF's MergedWithNext).
void metaspace_piece(const HfSplitStep &step, std::string piece, bool at_start,
                     std::vector<std::string> *out) {
  replace_all(piece, " ", step.replacement);
  using P = HfSplitStep::Prepend;
  const bool prepend =
      step.prepend == P::kAlways || (step.prepend == P::kFirst && at_start);
  if (prepend &&
      piece.compare(0, step.replacement.size(), step.replacement) != 0)
    piece = step.replacement + piece;
  if (!step.split) {
    out->push_back(std::move(piece));
    return;
  }
  size_t begin = 0;
  for (size_t pos = piece.find(step.replacement, 1); pos != std::string::npos;
       pos = piece.find(step.replacement, pos + step.replacement.size())) {
    out->push_back(piece.substr(begin, pos - begin));
    begin = pos;
  }
  if (begin < piece.size())
    out->push_back(piece.substr(begin));
}

std::atomic<bool> g_abandoned{false};

/// ICU calls this every tick of a match (about 10,000 engine steps): false
/// stops the match (U_REGEX_STOPPED_BY_CALLER), so that neither the
/// budget's deadline nor abandon_text_work() waits for a match to end.
UBool keepMatching(const void *context, int32_t /*steps*/) {
  const auto *budget = static_cast<const RegexBudget *>(context);
  return !g_abandoned.load(std::memory_order_relaxed) &&
         std::chrono::steady_clock::now() <= budget->deadline;
}

/// Byte spans [begin, end) of every non-empty match of `re` in `text`;
/// "" or the reason the matching stopped (ICU's time limit, the budget's
/// deadline, an ICU error).
std::string matches(const icu::RegexPattern &re, const std::string &text,
                    RegexBudget *budget,
                    std::vector<std::pair<size_t, size_t>> *spans) {
  UErrorCode st = U_ZERO_ERROR;
  UText *ut = utext_openUTF8(nullptr, text.data(), int64_t(text.size()), &st);
  std::unique_ptr<icu::RegexMatcher> m(re.matcher(st));
  if (U_FAILURE(st) || !m) {
    utext_close(ut);
    return std::string("tokenizer: regex matcher: ") + u_errorName(st);
  }
  m->reset(ut);
  m->setTimeLimit(RegexBudget::kFindLimit, st);
  m->setMatchCallback(keepMatching, budget, st);
  std::string error;
  while (!g_abandoned.load(std::memory_order_relaxed) && m->find(st) && U_SUCCESS(st)) {
    // UTF-8 UText native indices are byte offsets.
    const int64_t b = m->start64(st), e = m->end64(st);
    if (e > b) {
      spans->emplace_back(size_t(b), size_t(e));
      // ICU's clock runs from the last reset, not per match: restart it at
      // the match's end so that the limit bounds one match, whatever the
      // length of the text. (Not after an empty match: ICU's own step past
      // it would be lost.)
      m->reset(e, st);
    }
    if (std::chrono::steady_clock::now() > budget->deadline) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.2f", budget->seconds);
      error = std::string("tokenizer: the pre-tokenizer regex ran past its "
                          "budget of ") +
              seconds + " s for this text";
      break;
    }
  }
  if (error.empty() && g_abandoned.load())
    error = "tokenizer: stopped (the process is ending)";
  else if (error.empty() && st == U_REGEX_STOPPED_BY_CALLER) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", budget->seconds);
    error = std::string("tokenizer: the pre-tokenizer regex ran past its budget of ") +
            seconds + " s for this text";
  } else if (error.empty() && st == U_REGEX_TIME_OUT)
    error = "tokenizer: the pre-tokenizer regex passed ICU's time limit of " +
            std::to_string(RegexBudget::kFindLimit) +
            " steps on one match (catastrophic backtracking?)";
  else if (error.empty() && U_FAILURE(st))
    error = std::string("tokenizer: regex: ") + u_errorName(st);
  utext_close(ut);
  return error;
}

std::string split_piece(const HfSplitStep &step, const std::string &piece,
                        RegexBudget *budget, std::vector<std::string> *out) {
  using B = HfSplitStep::Behavior;
  // Alternating (is_match, span) list covering the piece.
  std::vector<std::pair<bool, std::pair<size_t, size_t>>> parts;
  size_t pos = 0;
  std::vector<std::pair<size_t, size_t>> found;
  if (std::string e = matches(*step.pattern, piece, budget, &found); !e.empty())
    return e;
  for (auto span : found) {
    if (span.first > pos)
      parts.push_back({false, {pos, span.first}});
    parts.push_back({true, span});
    pos = span.second;
  }
  if (pos < piece.size())
    parts.push_back({false, {pos, piece.size()}});
  std::vector<std::pair<size_t, size_t>> spans;
  if (step.behavior == B::kMergedWithNext) {
    // Mirror of MergedWithPrevious, walking from the end.
    for (size_t k = parts.size(); k-- > 0;) {
      const bool next_is_match = k + 1 < parts.size() && parts[k + 1].first;
      if (parts[k].first && !next_is_match && !spans.empty())
        spans.back().first = parts[k].second.first;
      else
        spans.push_back(parts[k].second);
    }
    std::reverse(spans.begin(), spans.end());
  } else {
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto [is_match, span] = parts[i];
      const bool prev_is_match = i > 0 && parts[i - 1].first;
      if (step.behavior == B::kRemoved && is_match)
        continue;
      if (!spans.empty() && is_match &&
          ((step.behavior == B::kMergedWithPrevious && !prev_is_match) ||
           (step.behavior == B::kContiguous && prev_is_match)))
        spans.back().second = span.second;
      else
        spans.push_back(span);
    }
  }
  for (auto [b, e] : spans)
    out->push_back(piece.substr(b, e - b));
  return "";
}

} // namespace

std::string HfPipeline::normalize(const std::string &text) const {
  std::string out = text;
  for (const HfNormalizeStep &step : normalizers) {
    if (!step.icu) {
      // HF's Prepend leaves an empty string empty.
      if (step.from.empty() && !out.empty())
        out = step.to + out;
      else if (!step.from.empty())
        replace_all(out, step.from, step.to);
      continue;
    }
    if (!valid_utf8(out))
      continue;
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(out);
    UErrorCode st = U_ZERO_ERROR;
    icu::UnicodeString v = step.icu->normalize(u, st);
    if (U_SUCCESS(st)) {
      out.clear();
      v.toUTF8String(out);
    }
  }
  return out;
}

std::vector<std::string> HfPipeline::pre_tokenize(const std::string &text,
                                                  bool at_start,
                                                  RegexBudget *budget,
                                                  std::string *error) const {
  std::vector<std::string> pieces{text};
  if (byte_level_prefix_space && !text.empty() && text[0] != ' ')
    pieces[0] = " " + text;
  for (const HfSplitStep &step : splits) {
    std::vector<std::string> next;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (step.pattern) {
        *error = split_piece(step, pieces[i], budget, &next);
        if (!error->empty())
          return {};
      } else
        metaspace_piece(step, pieces[i], at_start && i == 0, &next);
    }
    pieces.swap(next);
  }
  return pieces;
}

std::string HfPipeline::decode(std::vector<std::string> tokens) const {
  using K = HfDecodeStep::Kind;
  for (const HfDecodeStep &step : decoders) {
    std::vector<std::string> next;
    switch (step.kind) {
    case K::kReplace:
      for (std::string &t : tokens)
        replace_all(t, step.from, step.to);
      continue;
    case K::kFuse: {
      std::string all;
      for (const std::string &t : tokens)
        all += t;
      tokens.assign(1, std::move(all));
      continue;
    }
    case K::kStrip:
      for (std::string &t : tokens) {
        const size_t w = step.content.size();
        for (int k = 0; k < step.start && t.compare(0, w, step.content) == 0;
             ++k)
          t.erase(0, w);
        for (int k = 0; k < step.stop && t.size() >= w &&
                        t.compare(t.size() - w, w, step.content) == 0;
             ++k)
          t.erase(t.size() - w);
      }
      continue;
    case K::kMetaspace:
      for (size_t i = 0; i < tokens.size(); ++i) {
        replace_all(tokens[i], step.from, " ");
        if (i == 0 && step.strip_first && !tokens[i].empty() &&
            tokens[i][0] == ' ')
          tokens[i].erase(0, 1);
      }
      continue;
    case K::kByteFallback: {
      // A run of <0xXX> tokens becomes its bytes when they are valid UTF-8,
      // else one U+FFFD per byte token (HF's ByteFallback).
      std::string run;
      size_t run_tokens = 0;
      auto flush = [&] {
        if (run_tokens == 0)
          return;
        if (valid_utf8(run))
          next.push_back(run);
        else
          for (size_t k = 0; k < run_tokens; ++k)
            next.push_back("\xEF\xBF\xBD");
        run.clear();
        run_tokens = 0;
      };
      for (std::string &t : tokens) {
        const int b = t.size() == 6 ? parse_byte_piece(t) : -1;
        if (b >= 0) {
          run += char(b);
          ++run_tokens;
          continue;
        }
        flush();
        next.push_back(std::move(t));
      }
      flush();
      tokens.swap(next);
      continue;
    }
    }
  }
  std::string out;
  for (const std::string &t : tokens)
    out += t;
  return out;
}

bool valid_utf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    const int len = utf8_length(s, i);
    if (len == 0)
      return false;
    const uint32_t cp = utf8_decode(s, i, len);
    // Overlong forms and surrogates are ill-formed too.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += size_t(len);
  }
  return true;
}

std::string utf8_lossy(const std::string &bytes) {
  if (valid_utf8(bytes))
    return bytes;
  // ICU's UTF-8 conversion substitutes U+FFFD per maximal ill-formed
  // subpart, the same policy as Rust's from_utf8_lossy.
  std::string out;
  icu::UnicodeString::fromUTF8(bytes).toUTF8String(out);
  return out;
}

} // namespace hyrt::detail

namespace hyrt {

void abandon_text_work() { detail::g_abandoned.store(true); }

} // namespace hyrt
