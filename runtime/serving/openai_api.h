// OpenAI-compatible request parsing and validation for `hyc serve`: JSON
// bodies of /v1/completions and /v1/chat/completions become scheduler
// Requests, or an ApiError that becomes a 4xx with an OpenAI error body.
// The prompt (text, token ids or chat messages) is openai_api.cpp; the
// sampling fields openai_sampling.cpp; which fields exist openai_fields.cpp.
#pragma once

#include "hyrt/engine/scheduler.h"
#include "hyrt/structured/tool_calls.h"
#include "hyrt/text/chat_template.h"
#include "hyrt/text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace hyrt::serve {

class StructuredSupport;
struct ToolsRequest;

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

/// One chat message ("role", text "content"), as the plain format (no
/// template) writes it.
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
  int64_t vocab_size = 0;
  /// Unknown request fields are ignored rather than refused (hyc serve
  /// --lenient).
  bool lenient = false;
  const Tokenizer *tokenizer = nullptr; ///< null: token-id prompts only
  int32_t bos_id = -1, eos_id = -1;
  /// The checkpoint's chat template (null: render_chat_prompt). Rendered
  /// with the messages, add_generation_prompt = true, the tokenizer's
  /// bos_token / eos_token strings and the request's
  /// `chat_template_kwargs` (e.g. Qwen3's enable_thinking); the text is
  /// tokenized without adding BOS (the template places it).
  std::shared_ptr<const ChatTemplate> chat_template;
  /// The template's traits, the vocabulary as bytes and the compiled
  /// schemas (structured_support.h); null without a tokenizer.
  std::shared_ptr<StructuredSupport> structured;
};

/// What a chat reply is parsed for, beyond its text.
struct OutputPlan {
  /// The template reasons in <think> blocks: reasoning_content is split
  /// from content (starts_in_reasoning: the prompt opened the block, as
  /// DeepSeek-R1's does; reasoning_closed: it closed an empty one, as
  /// Qwen3's does with enable_thinking false).
  bool split_reasoning = false;
  bool starts_in_reasoning = false;
  bool reasoning_closed = false;
  /// Tool calls in this format become tool_calls (kNone: not parsed).
  structured::ToolCallFormat tool_format = structured::ToolCallFormat::kNone;
  /// false: only the first call is returned.
  bool parallel_tool_calls = true;
};

/// A validated request.
struct ParsedRequest {
  Request request;
  bool stream = false;
  bool include_usage = false; ///< stream_options.include_usage
  bool chat = false;
  /// Completions: the prompt's text goes before the generated text.
  bool echo = false;
  std::string prompt_text; ///< with echo: the prompt as text
  OutputPlan output;
};

/// A prompt's token ids (and, when given as text, its text).
struct Prompt {
  std::vector<int32_t> tokens;
  std::string text;
  bool from_text = false;
};

/// The prompt of a body: chat (`messages`, rendered by the chat template
/// or render_chat_prompt) or completions (`prompt`: text or token ids,
/// bounds-checked). `add_special` adds the BOS to text that no template
/// rendered; `generation_prompt` is the template's add_generation_prompt;
/// `tools` (null: none) go to the template when active. `templated` (may
/// be null) tells whether the checkpoint's template rendered it.
std::optional<ApiError> build_prompt(const nlohmann::json &body, bool chat,
                                     const ServeLimits &limits,
                                     bool add_special, bool generation_prompt,
                                     const ToolsRequest *tools, Prompt *out,
                                     bool *templated = nullptr);

/// The messages of a chat body: roles system, developer, user, assistant
/// (with tool_calls) and tool (with tool_call_id), checked and bounded,
/// as the template's `messages` (shaped by `template_traits`, may be null)
/// and as plain messages (chat_messages.cpp).
std::optional<ApiError> read_messages(const nlohmann::json &body,
                                      const StructuredSupport *support,
                                      nlohmann::ordered_json *for_template,
                                      std::vector<ChatMessage> *plain);

/// The sampling fields of a body into `out->request`: temperature, top_p,
/// top_k, min_p, penalties, logit_bias, seed, n, logprobs / top_logprobs,
/// stop, stop_token_ids, ignore_eos (openai_sampling.cpp).
std::optional<ApiError> parse_sampling(const nlohmann::json &body,
                                       const ServeLimits &limits,
                                       uint64_t default_seed,
                                       ParsedRequest *out);

/// Parses a /v1/completions (chat = false) or /v1/chat/completions body.
/// `default_seed` seeds sampled requests that give no seed.
std::optional<ApiError> parse_request(const std::string &body, bool chat,
                                      const ServeLimits &limits,
                                      uint64_t default_seed,
                                      ParsedRequest *out);

} // namespace hyrt::serve
