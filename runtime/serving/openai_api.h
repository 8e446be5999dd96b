// OpenAI-compatible request parsing and validation for `hyc serve`: JSON
// bodies of /v1/completions and /v1/chat/completions become scheduler
// Requests, or an ApiError that becomes a 4xx with an OpenAI error body.
#pragma once

#include "hyrt/text/chat_template.h"
#include "hyrt/engine/scheduler.h"
#include "hyrt/text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace hyrt::serve {

/// A client error: HTTP status, OpenAI error type / code and the offending
/// parameter (empty when none).
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;
  std::string code;
  /// {"error": {"message", "type", "param", "code"}} as OpenAI sends it.
  nlohmann::json body() const;
};

/// One chat message ("role", text "content").
struct ChatMessage {
  std::string role, content;
};

/// The prompt text for `messages` when the artifact's tokenizer has no chat
/// template (or one the renderer cannot run): each message as "<role>:
/// <content>\n", then "assistant:" (the turn the model writes).
std::string render_chat_prompt(const std::vector<ChatMessage> &messages);

/// What the model and artifact allow a request.
struct ServeLimits {
  std::string model_name;
  int64_t max_seq_len = 0;
  const Tokenizer *tokenizer = nullptr; ///< null: token-id prompts only
  int32_t bos_id = -1, eos_id = -1;
  /// The checkpoint's chat template (null: render_chat_prompt). Rendered
  /// with the messages, add_generation_prompt = true, the tokenizer's
  /// bos_token / eos_token strings and the request's
  /// `chat_template_kwargs` (e.g. Qwen3's enable_thinking); the text is
  /// tokenized without adding BOS (the template places it).
  std::shared_ptr<const ChatTemplate> chat_template;
};

/// A validated request.
struct ParsedRequest {
  Request request;
  bool stream = false;
  bool include_usage = false; ///< stream_options.include_usage
  bool chat = false;
};

/// Parses a /v1/completions (chat = false) or /v1/chat/completions body.
/// `default_seed` seeds sampled requests that give no seed.
std::optional<ApiError> parse_request(const std::string &body, bool chat,
                                      const ServeLimits &limits,
                                      uint64_t default_seed,
                                      ParsedRequest *out);

} // namespace hyrt::serve
