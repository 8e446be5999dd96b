// OpenAI request parsing for `hyc serve`: the body, the model, the prompt
// and max_tokens (see openai_api.h); sampling fields are
// openai_sampling.cpp.
#include "openai_api.h"

#include "openai_fields.h"
#include "request_fields.h"
#include "structured_request.h"

namespace hyrt::serve {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

/// The chat messages rendered to prompt text; `templated` when the
/// checkpoint's template did it (it places the BOS itself). Active tools
/// go to the template as `tools`.
std::optional<ApiError> render_messages(const json &body,
                                        const ServeLimits &limits,
                                        bool generation_prompt,
                                        const ToolsRequest *tools,
                                        std::string *text, bool *templated) {
  ojson messages;
  std::vector<ChatMessage> list;
  if (auto e = read_messages(body, limits.structured.get(), &messages, &list))
    return e;
  *templated = false;
  if (!limits.chat_template) {
    *text = render_chat_prompt(list);
    return std::nullopt;
  }
  ojson vars = {{"messages", std::move(messages)},
                {"add_generation_prompt", generation_prompt}};
  if (tools && tools->active())
    vars["tools"] = tools->tools;
  const std::vector<std::string> &tokens = limits.tokenizer->data().tokens;
  auto special = [&](int32_t id) {
    return id >= 0 && size_t(id) < tokens.size() ? ojson(tokens[size_t(id)]) : ojson();
  };
  vars["bos_token"] = special(limits.bos_id);
  vars["eos_token"] = special(limits.eos_id);
  if (const json *kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object())
      return bad("chat_template_kwargs", "chat_template_kwargs: expected an "
                                         "object, found " + std::string(kw->type_name()));
    for (auto it = kw->begin(); it != kw->end(); ++it)
      vars[it.key()] = ojson::parse(it.value().dump());
  }
  if (Status st = limits.chat_template->render(
          vars.dump(-1, ' ', false, ojson::error_handler_t::replace), text);
      !st.ok())
    return bad("messages", "the chat template could not render these "
                           "messages: " + st.message());
  *templated = true;
  return std::nullopt;
}

/// max_tokens (or max_completion_tokens, its newer name): OpenAI's default
/// is 16 for completions and the rest of the context for chat; an
/// explicit value must fit in the context.
std::optional<ApiError> parse_max_tokens(const json &body, bool chat,
                                         const ServeLimits &limits,
                                         Request *r) {
  const int64_t n = int64_t(r->prompt.size());
  const bool both = field(body, "max_tokens") && field(body, "max_completion_tokens");
  if (both && body["max_tokens"] != body["max_completion_tokens"])
    return bad("max_completion_tokens",
               "max_tokens and max_completion_tokens (its newer name) differ: "
               "give one");
  const char *name =
      field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  int64_t max_tokens = -1;
  if (auto e = get_int(body, name, 1, INT32_MAX, &max_tokens))
    return e;
  const int64_t room = std::max<int64_t>(1, limits.max_seq_len - n);
  if (max_tokens < 0) {
    r->max_tokens = chat ? room : std::min<int64_t>(16, room);
  } else if (max_tokens > room) {
    ApiError e = bad(name, "the prompt's " + std::to_string(n) + " tokens + " +
                               std::string(name) + " " + std::to_string(max_tokens) +
                               " exceed this model's context (max_seq_len) of " +
                               std::to_string(limits.max_seq_len));
    e.code = "context_length_exceeded";
    return e;
  } else {
    r->max_tokens = max_tokens;
  }
  return std::nullopt;
}

} // namespace

json ApiError::body() const {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json() : json(param)},
            {"code", code.empty() ? json() : json(code)}}}};
}

std::string render_chat_prompt(const std::vector<ChatMessage> &messages) {
  std::string text;
  for (const ChatMessage &m : messages)
    text += m.role + ": " + m.content + "\n";
  return text + "assistant:";
}

std::optional<ApiError> build_prompt(const json &body, bool chat,
                                     const ServeLimits &limits,
                                     bool add_special, bool generation_prompt,
                                     const ToolsRequest *tools, Prompt *out,
                                     bool *templated_out) {
  *out = Prompt();
  const char *param = chat ? "messages" : "prompt";
  bool templated = false;
  if (chat) {
    if (auto e = render_messages(body, limits, generation_prompt, tools,
                                 &out->text, &templated))
      return e;
    out->from_text = true;
  } else {
    const json *p = field(body, "prompt");
    if (!p)
      return bad("prompt", "prompt: required (a string or an array of token "
                           "ids)");
    if (p->is_array() && p->size() == 1 && (*p)[0].is_string())
      p = &(*p)[0];
    if (p->is_string()) {
      out->text = p->get<std::string>();
      out->from_text = true;
    } else if (p->is_array() && !p->empty()) {
      // Bounded by the body size; checked against max_seq_len below.
      for (const json &t : *p) {
        int32_t id = 0;
        if (auto e = get_token_id(t, "prompt", limits.vocab_size, &id))
          return e;
        out->tokens.push_back(id);
      }
    } else {
      return bad("prompt", "prompt: expected a string or a non-empty array "
                           "of token ids, found " + std::string(p->type_name()));
    }
  }
  if (out->from_text) {
    if (!limits.tokenizer)
      return bad(param, "this artifact has no tokenizer; give the prompt as "
                        "token ids");
    if (Status s = limits.tokenizer->encode(
            out->text, /*add_bos=*/add_special && !templated && limits.bos_id >= 0,
            &out->tokens);
        !s.ok())
      return bad(param, s.message());
    if (out->tokens.empty() && limits.bos_id >= 0)
      out->tokens.push_back(limits.bos_id);
    if (out->tokens.empty())
      return bad(param, "empty prompt and the model has no BOS token");
  }
  const int64_t n = int64_t(out->tokens.size());
  if (n > limits.max_seq_len) {
    ApiError e = bad(param, "the prompt has " + std::to_string(n) +
                                " tokens; this model's context (max_seq_len) is " +
                                std::to_string(limits.max_seq_len));
    e.code = "context_length_exceeded";
    return e;
  }
  if (templated_out)
    *templated_out = templated;
  return std::nullopt;
}

std::optional<ApiError> parse_request(const std::string &body_text, bool chat,
                                      const ServeLimits &limits,
                                      uint64_t default_seed,
                                      ParsedRequest *out) {
  json body;
  if (auto e = parse_object(body_text, &body))
    return e;
  if (auto e = check_fields(body, chat ? Route::kChat : Route::kCompletions,
                            limits.lenient))
    return e;
  *out = ParsedRequest();
  out->chat = chat;
  Request &r = out->request;

  if (const json *m = field(body, "model")) {
    if (!m->is_string())
      return bad("model", "model: expected a string, found " +
                              std::string(m->type_name()));
    if (m->get<std::string>() != limits.model_name) {
      ApiError e = bad("model", "the model '" + m->get<std::string>() +
                                    "' does not exist; this server serves '" +
                                    limits.model_name + "'");
      e.status = 404;
      e.code = "model_not_found";
      return e;
    }
  }

  ToolsRequest tools;
  if (chat)
    if (auto e = parse_tools(body_text, body, &tools))
      return e;
  // The prompt: text (tokenized as `hyc run` does: BOS first) or token ids.
  Prompt prompt;
  bool templated = false;
  if (auto e = build_prompt(body, chat, limits, /*add_special=*/true,
                            /*generation_prompt=*/true, &tools, &prompt,
                            &templated))
    return e;
  r.prompt = prompt.tokens;
  if (auto e = parse_max_tokens(body, chat, limits, &r))
    return e;
  if (auto e = parse_sampling(body, limits, default_seed, out))
    return e;
  if (auto e = plan_structured(body_text, body, limits, tools, prompt,
                               templated, out))
    return e;

  if (!chat) {
    if (auto e = get_bool(body, "echo", &out->echo))
      return e;
    // echo with logprobs: the prompt's tokens lead the logprobs too.
    r.prompt_logprobs = out->echo && r.logprobs >= 0;
    if (out->echo)
      out->prompt_text = prompt.from_text
                             ? prompt.text
                             : limits.tokenizer
                                   ? limits.tokenizer->decode_all(r.prompt)
                                   : std::string();
  }
  if (auto e = get_bool(body, "stream", &out->stream))
    return e;
  if (const json *so = field(body, "stream_options")) {
    if (!so->is_object())
      return bad("stream_options", "stream_options: expected an object, found " +
                                       std::string(so->type_name()));
    if (auto e = get_bool(*so, "include_usage", &out->include_usage))
      return e;
  }
  return std::nullopt;
}

} // namespace hyrt::serve
