// Typed reads of request fields (see request_fields.h).
#include "request_fields.h"

#include "hyrt/support/json.h"

#include <cmath>

namespace hyrt::serve {

using nlohmann::json;

ApiError bad(const std::string &param, const std::string &message) {
  ApiError e;
  e.param = param;
  e.message = message;
  return e;
}

const json *field(const json &body, const char *name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null())
    return nullptr;
  return &*it;
}

std::optional<ApiError> get_int(const json &body, const char *name, int64_t lo,
                                int64_t hi, int64_t *out) {
  const json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_number_integer())
    return bad(name, std::string(name) + ": expected an integer, found " +
                         (v->is_number() ? v->dump() : v->type_name()));
  // Checked before narrowing: an unsigned value past INT64_MAX must not
  // wrap into range.
  const bool fits = (!v->is_number_unsigned() ||
                     v->get<uint64_t>() <= uint64_t(INT64_MAX)) &&
                    v->get<int64_t>() >= lo && v->get<int64_t>() <= hi;
  if (!fits)
    return bad(name, std::string(name) + ": expected an integer in [" +
                         std::to_string(lo) + ", " + std::to_string(hi) +
                         "], found " + v->dump());
  *out = v->get<int64_t>();
  return std::nullopt;
}

std::optional<ApiError> get_real(const json &body, const char *name, double lo,
                                 double hi, bool lo_open, double *out) {
  const json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_number())
    return bad(name, std::string(name) + ": expected a number, found " +
                         v->type_name());
  const double x = v->get<double>();
  auto fmt = [](double d) {
    std::string s = std::to_string(d);
    while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.')
      s.pop_back();
    return s;
  };
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
    return bad(name, std::string(name) + ": expected a number in " +
                         (lo_open ? "(" : "[") + fmt(lo) + ", " + fmt(hi) +
                         "], found " + v->dump());
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> get_bool(const json &body, const char *name,
                                 bool *out) {
  const json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_boolean())
    return bad(name, std::string(name) + ": expected a boolean, found " +
                         v->type_name());
  *out = v->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> get_token_id(const json &v, const std::string &what,
                                     int64_t vocab_size, int32_t *out) {
  if (!v.is_number_integer())
    return bad(what, what + ": expected token ids (integers), found " +
                         (v.is_number() ? v.dump() : std::string(v.type_name())));
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() < uint64_t(vocab_size)
                        : v.get<int64_t>() >= 0 && v.get<int64_t>() < vocab_size;
  if (!fits)
    return bad(what, what + ": token id " + v.dump() +
                         " outside the vocabulary [0, " +
                         std::to_string(vocab_size) + ")");
  *out = int32_t(v.get<int64_t>());
  return std::nullopt;
}

std::optional<ApiError> parse_object(const std::string &text, json *out) {
  if (std::string depth = json_depth_error(text); !depth.empty())
    return bad("", "the request body " + depth.substr(5));
  *out = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded())
    return bad("", "the request body is not valid JSON");
  if (!out->is_object())
    return bad("", "the request body must be a JSON object, found " +
                       std::string(out->type_name()));
  return std::nullopt;
}

} // namespace hyrt::serve
