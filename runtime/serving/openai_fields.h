// The fields OpenAI documents for /v1/chat/completions and /v1/completions
// (and the vLLM-style extensions hyc serve takes): an unknown field is a
// 400 naming it, as OpenAI answers, unless the server runs --lenient.
#pragma once

#include "openai_api.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace hyrt::serve {

/// Which body a field table describes.
enum class Route { kChat, kCompletions, kTokenize, kDetokenize };

/// Refuses a field of `body` (and, for chat, of each message and of
/// stream_options) that the route does not know, and documented fields
/// this server cannot honour (audio output, web search, best_of > 1,
/// suffix). Fields it accepts and ignores are listed, with why, in
/// openai_fields.cpp. `lenient` skips the unknown-field check only.
std::optional<ApiError> check_fields(const nlohmann::json &body, Route route,
                                     bool lenient);

} // namespace hyrt::serve
