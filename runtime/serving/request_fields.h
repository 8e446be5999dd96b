// Typed reads of optional fields of a request body, each refusing a wrong
// type or range with an ApiError naming the field, what was expected and
// what was found. Shared by the parsers of the OpenAI routes and
// /tokenize, /detokenize.
#pragma once

#include "openai_api.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace hyrt::serve {

/// A 400 about `param`.
ApiError bad(const std::string &param, const std::string &message);

/// An optional field: absent or null gives null.
const nlohmann::json *field(const nlohmann::json &body, const char *name);

/// An integer in [lo, hi] (left alone when absent).
std::optional<ApiError> get_int(const nlohmann::json &body, const char *name,
                                int64_t lo, int64_t hi, int64_t *out);
/// A finite number in [lo, hi], or (lo, hi] when lo_open.
std::optional<ApiError> get_real(const nlohmann::json &body, const char *name,
                                 double lo, double hi, bool lo_open,
                                 double *out);
std::optional<ApiError> get_bool(const nlohmann::json &body, const char *name,
                                 bool *out);

/// A token id in [0, vocab_size), checked before narrowing (2^32 + 5 must
/// not become token 5). `what` names it in the error ("prompt", ...).
std::optional<ApiError> get_token_id(const nlohmann::json &v,
                                     const std::string &what,
                                     int64_t vocab_size, int32_t *out);

/// Parses `text` as a JSON object with bounded nesting.
std::optional<ApiError> parse_object(const std::string &text,
                                     nlohmann::json *out);

} // namespace hyrt::serve
