// json_pieces.cpp - JSON strings, integers in ranges, numbers and the
// generic value rule.
#include "json_pieces.h"

#include <cmath>

namespace hyrt::structured {

Frag JsonPieces::string_char() {
  Frag raw = b_.code_points({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}});
  Frag simple_escape = b_.literal_set(
      {"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"});
  // \uXXXX minus D800..DFFF: a lone surrogate is not valid text.
  auto hex = [&] {
    return b_.alt({b_.byte_range('0', '9'), b_.byte_range('a', 'f'),
                   b_.byte_range('A', 'F')});
  };
  Frag first_not_d = b_.alt({b_.byte_range('0', '9'), b_.byte_range('a', 'c'),
                             b_.byte_range('e', 'f'), b_.byte_range('A', 'C'),
                             b_.byte_range('E', 'F')});
  Frag not_surrogate = b_.alt(
      {b_.seq({first_not_d, hex()}),
       b_.seq({b_.alt({b_.literal("d"), b_.literal("D")}),
               b_.byte_range('0', '7')})});
  Frag unicode = b_.seq({b_.literal("\\u"), not_surrogate, hex(), hex()});
  return b_.alt({raw, simple_escape, unicode});
}

Frag JsonPieces::string(int64_t min, int64_t max) {
  return b_.seq({b_.literal("\""),
                 b_.repeat([&] { return string_char(); }, min, max),
                 b_.literal("\"")});
}

// Decimal strings lo..hi of the same length.
Frag JsonPieces::digits_between(const std::string &lo, const std::string &hi) {
  if (lo.empty())
    return b_.empty();
  if (lo.size() == 1)
    return b_.byte_range(uint8_t(lo[0]), uint8_t(hi[0]));
  const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  if (lo[0] == hi[0])
    return b_.seq(b_.literal(lo.substr(0, 1)), digits_between(lo_rest, hi_rest));
  const std::string zeros(lo_rest.size(), '0'), nines(lo_rest.size(), '9');
  if (lo_rest == zeros && hi_rest == nines)
    return b_.seq(b_.byte_range(uint8_t(lo[0]), uint8_t(hi[0])),
                  digits_between(zeros, nines));
  std::vector<Frag> alts;
  alts.push_back(b_.seq(b_.literal(lo.substr(0, 1)),
                        digits_between(lo_rest, nines)));
  if (lo[0] + 1 <= hi[0] - 1)
    alts.push_back(b_.seq(b_.byte_range(uint8_t(lo[0] + 1), uint8_t(hi[0] - 1)),
                          digits_between(zeros, nines)));
  alts.push_back(b_.seq(b_.literal(hi.substr(0, 1)),
                        digits_between(zeros, hi_rest)));
  return b_.alt(alts);
}

Frag JsonPieces::magnitude(uint64_t lo, uint64_t hi) {
  const std::string a = std::to_string(lo), z = std::to_string(hi);
  std::vector<Frag> alts;
  for (size_t len = a.size(); len <= z.size(); ++len) {
    const std::string from =
        len == a.size() ? a : "1" + std::string(len - 1, '0');
    const std::string to = len == z.size() ? z : std::string(len, '9');
    alts.push_back(digits_between(from, to));
  }
  return alts.size() == 1 ? alts[0] : b_.alt(alts);
}

Frag JsonPieces::integer(int64_t lo, int64_t hi) {
  std::vector<Frag> alts;
  if (hi >= 0)
    alts.push_back(magnitude(uint64_t(std::max<int64_t>(lo, 0)), uint64_t(hi)));
  if (lo < 0) {
    const uint64_t most = uint64_t(-(lo + 1)) + 1; // |lo| without overflow
    const uint64_t least = hi < 0 ? uint64_t(-(hi + 1)) + 1 : 1;
    alts.push_back(b_.seq(b_.literal("-"), magnitude(least, most)));
  }
  return alts.size() == 1 ? alts[0] : b_.alt(alts);
}

Frag JsonPieces::number() {
  Frag sign = b_.optional(b_.literal("-"));
  Frag integral = b_.alt(
      {b_.literal("0"),
       b_.seq(b_.byte_range('1', '9'),
              b_.repeat([&] { return b_.byte_range('0', '9'); }, 0, 14))});
  Frag fraction = b_.optional(b_.seq(
      b_.literal("."),
      b_.repeat([&] { return b_.byte_range('0', '9'); }, 1, 15)));
  Frag exponent = b_.optional(b_.seq(
      {b_.alt({b_.literal("e"), b_.literal("E")}),
       b_.optional(b_.alt({b_.literal("+"), b_.literal("-")})),
       b_.repeat([&] { return b_.byte_range('0', '9'); }, 1, 2)}));
  return b_.seq({sign, integral, fraction, exponent});
}

// Non-negative values k[.ddd] within the bounds: k alone must be in range,
// and k with a fraction only when all of [k, k+1) is.
std::optional<Frag> JsonPieces::nonnegative_side(double lo, bool lo_exclusive,
                                                 double hi, bool hi_exclusive) {
  const double cap = double(kMaxUnboundedMagnitude);
  double kmin = (lo_exclusive && std::floor(lo) == lo) ? lo + 1 : std::ceil(lo);
  kmin = std::max(kmin, 0.0);
  double kmax_whole =
      (hi_exclusive && std::floor(hi) == hi) ? hi - 1 : std::floor(hi);
  double kmax_fraction = std::floor(hi) - 1;
  kmax_whole = std::min(kmax_whole, cap);
  kmax_fraction = std::min(kmax_fraction, cap);
  std::vector<Frag> alts;
  if (kmin <= kmax_fraction) {
    Frag fraction = b_.optional(b_.seq(
        b_.literal("."),
        b_.repeat([&] { return b_.byte_range('0', '9'); }, 1, 15)));
    alts.push_back(
        b_.seq(magnitude(uint64_t(kmin), uint64_t(kmax_fraction)), fraction));
  }
  const double whole_from = std::max(kmin, kmax_fraction + 1);
  if (whole_from <= kmax_whole)
    alts.push_back(magnitude(uint64_t(whole_from), uint64_t(kmax_whole)));
  if (alts.empty())
    return std::nullopt;
  return alts.size() == 1 ? alts[0] : b_.alt(alts);
}

std::optional<Frag> JsonPieces::number_in(std::optional<NumberBound> lo,
                                          std::optional<NumberBound> hi) {
  const double cap = double(kMaxUnboundedMagnitude);
  const NumberBound l = lo.value_or(NumberBound{-cap, false});
  const NumberBound h = hi.value_or(NumberBound{cap, false});
  std::vector<Frag> alts;
  if (auto f = nonnegative_side(l.value, l.exclusive, h.value, h.exclusive))
    alts.push_back(*f);
  // v = -m: m within [-hi, -lo], the same construction mirrored.
  if (l.value < 0)
    if (auto f = nonnegative_side(-h.value, h.exclusive, -l.value, l.exclusive))
      alts.push_back(b_.seq(b_.literal("-"), *f));
  if (alts.empty())
    return std::nullopt;
  return alts.size() == 1 ? alts[0] : b_.alt(alts);
}

Frag JsonPieces::object_of(const std::function<Frag()> &value) {
  auto member = [&] {
    return b_.seq({string(0, -1), b_.literal(":"), ws(), value()});
  };
  Frag members = b_.seq(
      member(), b_.star(b_.seq({b_.literal(","), ws(), member()})));
  return b_.seq({b_.literal("{"), b_.optional(members), b_.literal("}")});
}

Frag JsonPieces::array_of(const std::function<Frag()> &value) {
  Frag items =
      b_.seq(value(), b_.star(b_.seq({b_.literal(","), ws(), value()})));
  return b_.seq({b_.literal("["), b_.optional(items), b_.literal("]")});
}

int32_t JsonPieces::any_value_rule() {
  if (any_value_ >= 0)
    return any_value_;
  any_value_ = b_.new_rule("any JSON value");
  auto nested = [&] { return b_.call(any_value_); };
  Frag body = b_.alt({object_of(nested), array_of(nested), string(0, -1),
                      number(), b_.literal_set({"true", "false", "null"})});
  b_.set_rule_body(any_value_, body);
  return any_value_;
}

Frag JsonPieces::any_object() {
  const int32_t value = any_value_rule();
  return object_of([&] { return b_.call(value); });
}

} // namespace hyrt::structured
