// json_pieces.h - the JSON building blocks schemas are made of: strings
// (with UTF-8 and escapes), integers in a range, numbers, the whitespace
// policy, and a generic "any JSON value" rule.
//
// Whitespace policy: no free whitespace, except one optional space after
// ':' and after ',' (the form json.dumps writes). Models that drift into
// spaces or newlines get nowhere to loop, and the usual spacing stays
// available so the text looks as the model expects.
#pragma once

#include "grammar_builder.h"

#include <cstdint>
#include <optional>
#include <string>

namespace hyrt::structured {

/// Largest magnitude written when a schema leaves a number unbounded:
/// 15 digits, which a double holds exactly.
constexpr int64_t kMaxUnboundedMagnitude = 999'999'999'999'999;

/// A numeric bound from a schema.
struct NumberBound {
  double value = 0;
  bool exclusive = false;
};

class JsonPieces {
public:
  JsonPieces(GrammarBuilder &b) : b_(b) {}

  /// The optional single space allowed after ':' and ','.
  Frag ws() { return b_.optional(b_.literal(" ")); }
  /// One character of a JSON string: raw UTF-8 (no controls, '"' or '\'),
  /// or an escape; \u escapes never name a surrogate.
  Frag string_char();
  /// A JSON string of min..max characters (max < 0: unbounded).
  Frag string(int64_t min, int64_t max);
  /// An integer in [lo, hi] (inclusive), written without leading zeros.
  Frag integer(int64_t lo, int64_t hi);
  /// Any JSON number (bounded digits and exponent).
  Frag number();
  /// A number within the bounds, written without exponent. Some values in
  /// range may be left out (a fraction on the integral part next to a
  /// non-integral bound), never one outside. Empty optional: no value left.
  std::optional<Frag> number_in(std::optional<NumberBound> lo,
                                std::optional<NumberBound> hi);
  /// The rule "any JSON value" (made on first use).
  int32_t any_value_rule();
  /// Any JSON object (the body of json_object mode).
  Frag any_object();

private:
  Frag digits_between(const std::string &lo, const std::string &hi);
  Frag magnitude(uint64_t lo, uint64_t hi);
  std::optional<Frag> nonnegative_side(double lo, bool lo_exclusive,
                                        double hi, bool hi_exclusive);
  Frag object_of(const std::function<Frag()> &value);
  Frag array_of(const std::function<Frag()> &value);

  GrammarBuilder &b_;
  int32_t any_value_ = -1;
};

} // namespace hyrt::structured
