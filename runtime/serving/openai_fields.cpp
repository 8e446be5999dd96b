// Known request fields per route (see openai_fields.h).
#include "openai_fields.h"

#include "request_fields.h"

#include <algorithm>
#include <string_view>

namespace hyrt::serve {

using nlohmann::json;

namespace {

// Honoured by openai_api.cpp / openai_sampling.cpp.
constexpr std::string_view kCommonHonoured[] = {
    "model", "frequency_penalty", "presence_penalty", "logit_bias",
    "logprobs", "max_tokens", "n", "seed", "stop", "stream",
    "stream_options", "temperature", "top_p",
    // vLLM-style extensions.
    "top_k", "min_p", "repetition_penalty", "ignore_eos", "stop_token_ids"};

// Accepted and ignored, each for a reason:
//  user, safety_identifier: end-user ids for OpenAI's abuse monitoring;
//    nothing here monitors.
//  metadata, store: stored completions; this server stores nothing.
//  service_tier: one tier here.
//  prompt_cache_key: the prefix cache matches prompts by their tokens.
//  prediction: a latency hint; the output does not depend on it.
//  reasoning_effort, verbosity: knobs of OpenAI's reasoning models; a
//    checkpoint that has one takes it through chat_template_kwargs.
//  modalities: ["text"] is all there is (checked below).
// Honoured by structured_request.cpp: response_format (both routes, as
// vLLM takes it), tools, tool_choice, parallel_tool_calls. Refused below:
// functions / function_call, the deprecated form of tools.
constexpr std::string_view kChatOnly[] = {
    "messages", "max_completion_tokens", "top_logprobs",
    "chat_template_kwargs", "user", "safety_identifier", "metadata", "store",
    "service_tier", "prompt_cache_key", "prediction", "reasoning_effort",
    "verbosity", "response_format", "tools", "tool_choice",
    "parallel_tool_calls", "functions", "function_call", "modalities",
    "audio", "web_search_options"};
constexpr std::string_view kCompletionsOnly[] = {"prompt", "echo", "best_of",
                                                 "suffix", "user",
                                                 "response_format"};
constexpr std::string_view kTokenize[] = {
    "model", "prompt", "messages", "add_special_tokens",
    "add_generation_prompt", "chat_template_kwargs", "tools"};
constexpr std::string_view kDetokenize[] = {"model", "tokens"};
// A message: role and content, the author's name, and the fields of
// assistant tool calls and tool results (chat_messages.cpp);
// function_call and refusal are accepted and not rendered. reasoning_content
// is what this server (and vLLM, DeepSeek) answers with: a client sends
// the reply back as it got it, and templates that keep reasoning read it.
constexpr std::string_view kMessage[] = {"role", "content", "name",
                                         "tool_calls", "tool_call_id",
                                         "function_call", "refusal",
                                         "reasoning_content"};
constexpr std::string_view kStreamOptions[] = {"include_usage",
                                               "include_obfuscation"};

template <size_t N>
bool in(const std::string &key, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

bool known(const std::string &key, Route route) {
  switch (route) {
  case Route::kChat:
    return in(key, kCommonHonoured) || in(key, kChatOnly);
  case Route::kCompletions:
    return in(key, kCommonHonoured) || in(key, kCompletionsOnly);
  case Route::kTokenize:
    return in(key, kTokenize);
  case Route::kDetokenize:
    return in(key, kDetokenize);
  }
  return false;
}

template <size_t N>
std::optional<ApiError> unknown_in(const json &object, const std::string &where,
                                   const std::string_view (&list)[N]) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!in(it.key(), list))
      return bad(where + "." + it.key(),
                 "unrecognized field '" + where + "." + it.key() +
                     "' (expected one of the fields OpenAI documents there; "
                     "hyc serve --lenient ignores unknown fields)");
  return std::nullopt;
}

} // namespace

std::optional<ApiError> check_fields(const json &body, Route route,
                                     bool lenient) {
  if (!lenient) {
    for (auto it = body.begin(); it != body.end(); ++it)
      if (!known(it.key(), route))
        return bad(it.key(),
                   "unrecognized request argument supplied: '" + it.key() +
                       "' (hyc serve --lenient ignores unknown fields)");
    if (route == Route::kChat || route == Route::kTokenize) {
      if (const json *msgs = field(body, "messages"); msgs && msgs->is_array())
        for (size_t i = 0; i < msgs->size(); ++i)
          if ((*msgs)[i].is_object())
            if (auto e = unknown_in((*msgs)[i], "messages[" + std::to_string(i) + "]",
                                    kMessage))
              return e;
    }
    if (const json *so = field(body, "stream_options"); so && so->is_object())
      if (auto e = unknown_in(*so, "stream_options", kStreamOptions))
        return e;
  }
  // Documented, but not something this server can do: refused, not
  // silently dropped.
  if (field(body, "audio"))
    return bad("audio", "audio: audio output is not supported by this server "
                        "(text only)");
  if (field(body, "web_search_options"))
    return bad("web_search_options",
               "web_search_options: web search is not supported by this server");
  for (const char *old : {"functions", "function_call"})
    if (field(body, old))
      return bad(old, std::string(old) + ": the deprecated form of tools is "
                                         "not supported; use tools and "
                                         "tool_choice");
  if (const json *m = field(body, "modalities"))
    if (*m != json::array({"text"}))
      return bad("modalities", "modalities: expected [\"text\"] (the only "
                               "output this server has), found " + m->dump());
  if (route == Route::kCompletions) {
    if (const json *b = field(body, "best_of"))
      if (*b != json(1) && (!field(body, "n") || *b != body["n"]))
        return bad("best_of", "best_of: expected 1 or the value of n (ranking "
                              "more candidates than are returned is not "
                              "supported), found " + b->dump());
    if (const json *s = field(body, "suffix"))
      if (*s != json(""))
        return bad("suffix", "suffix: insertion (text after the completion) "
                             "is not supported by this server");
  }
  return std::nullopt;
}

} // namespace hyrt::serve
