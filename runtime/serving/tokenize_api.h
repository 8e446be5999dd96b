// vLLM-style /tokenize and /detokenize for `hyc serve`: a prompt (text,
// token ids or chat messages, rendered as /v1/chat/completions renders
// them) to its token ids, and token ids back to text.
#pragma once

#include "openai_api.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace hyrt::serve {

/// POST /tokenize: {"model", "prompt" | "messages", "add_special_tokens",
/// "add_generation_prompt", "chat_template_kwargs"} -> {"tokens": [...],
/// "count": N, "max_model_len": M}.
std::optional<ApiError> tokenize(const std::string &body,
                                 const ServeLimits &limits,
                                 nlohmann::json *out);

/// POST /detokenize: {"model", "tokens": [ids]} -> {"prompt": text}; ids
/// outside the vocabulary are a 400.
std::optional<ApiError> detokenize(const std::string &body,
                                   const ServeLimits &limits,
                                   nlohmann::json *out);

} // namespace hyrt::serve
