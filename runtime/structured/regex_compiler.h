// regex_compiler.h - a bounded subset of JSON Schema's regular expressions
// ("pattern", and the "format"s written as patterns) compiled into the
// inside of a JSON string.
//
// Supported: literals, escapes (\d \w \s \D \W \S and escaped punctuation,
// \n \t \r), ".", classes [...] with ranges and negation, groups ( ) and
// (?: ), alternation, quantifiers ? * + {m} {m,} {m,n} (n <= 1000), and ^ / $
// only at the ends. The whole string must match (a pattern written without
// ^...$ is matched as if anchored: every string generated then also
// contains a match, so it validates). Code points that JSON must escape
// are produced as their escapes. Everything else (backreferences,
// lookaround, \b, \p{...}) is an error naming it.
#pragma once

#include "grammar_builder.h"

#include <string_view>

namespace hyrt::structured {

/// Longest pattern accepted, in bytes.
constexpr size_t kMaxPatternBytes = 1000;

/// Compiles `pattern` into a fragment matching the JSON-string content
/// (between the quotes) of every string the pattern matches in full.
Status compile_pattern(std::string_view pattern, GrammarBuilder &builder,
                       Frag *out);

} // namespace hyrt::structured
