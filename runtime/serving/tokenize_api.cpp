// /tokenize and /detokenize (see tokenize_api.h).
#include "tokenize_api.h"

#include "openai_fields.h"
#include "request_fields.h"
#include "structured_request.h"

namespace hyrt::serve {

using nlohmann::json;

namespace {

/// The body as an object, its fields known, its model this one.
std::optional<ApiError> open_body(const std::string &text, Route route,
                                  const ServeLimits &limits, json *body) {
  if (auto e = parse_object(text, body))
    return e;
  if (auto e = check_fields(*body, route, limits.lenient))
    return e;
  if (const json *m = field(*body, "model"))
    if (!m->is_string() || m->get<std::string>() != limits.model_name) {
      ApiError e = bad("model", "model: expected '" + limits.model_name +
                                    "' (the model this server serves), found " +
                                    m->dump());
      e.status = 404;
      e.code = "model_not_found";
      return e;
    }
  return std::nullopt;
}

} // namespace

std::optional<ApiError> tokenize(const std::string &text,
                                 const ServeLimits &limits, json *out) {
  json body;
  if (auto e = open_body(text, Route::kTokenize, limits, &body))
    return e;
  const bool chat = field(body, "messages") != nullptr;
  if (chat == (field(body, "prompt") != nullptr))
    return bad("prompt", "expected either prompt or messages, found " +
                             std::string(chat ? "both" : "neither"));
  // vLLM's defaults: special tokens for a prompt, not for messages (the
  // template places them); the generation prompt for messages.
  bool add_special = !chat, generation_prompt = true;
  if (auto e = get_bool(body, "add_special_tokens", &add_special))
    return e;
  if (auto e = get_bool(body, "add_generation_prompt", &generation_prompt))
    return e;
  // vLLM's: tools render as a chat request would render them.
  ToolsRequest tools;
  if (chat)
    if (auto e = parse_tools(text, body, &tools))
      return e;
  Prompt prompt;
  if (auto e = build_prompt(body, chat, limits, add_special, generation_prompt,
                            &tools, &prompt))
    return e;
  *out = {{"tokens", prompt.tokens},
          {"count", prompt.tokens.size()},
          {"max_model_len", limits.max_seq_len}};
  return std::nullopt;
}

std::optional<ApiError> detokenize(const std::string &text,
                                   const ServeLimits &limits, json *out) {
  json body;
  if (auto e = open_body(text, Route::kDetokenize, limits, &body))
    return e;
  const json *tokens = field(body, "tokens");
  if (!tokens || !tokens->is_array())
    return bad("tokens", "tokens: expected an array of token ids, found " +
                             std::string(tokens ? tokens->type_name() : "nothing"));
  if (!limits.tokenizer)
    return bad("tokens", "this artifact has no tokenizer: token ids have no text");
  std::vector<int32_t> ids;
  for (const json &t : *tokens) {
    int32_t id = 0;
    if (auto e = get_token_id(t, "tokens", limits.vocab_size, &id))
      return e;
    ids.push_back(id);
  }
  *out = {{"prompt", limits.tokenizer->decode_text(ids, /*skip_special=*/false)}};
  return std::nullopt;
}

} // namespace hyrt::serve
