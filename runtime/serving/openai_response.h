// OpenAI response bodies for `hyc serve`: the choices of a finished
// request, the chunks of a streamed one, and log-probabilities in the two
// formats OpenAI has (chat: logprobs.content entries; completions: the
// tokens / token_logprobs / top_logprobs / text_offset arrays).
#pragma once

#include "openai_api.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hyrt::serve {

/// What one choice has produced so far.
struct ChoiceState {
  std::string text;
  std::string finish_reason; ///< "" while it runs
  int64_t completion_tokens = 0;
  int32_t prev_token = -1;   ///< the token before the next (for its text)
  int64_t text_offset = 0;   ///< completions logprobs: where the next starts
  nlohmann::json logprobs;   ///< accumulated, in the route's format
  bool started = false;      ///< a streamed chunk went out
};

/// Builds the bodies of one request's response.
class ResponseBuilder {
public:
  ResponseBuilder(const ServeLimits &limits, const ParsedRequest &request,
                  std::string id, int64_t created);

  /// A choice's state before its first token (echo included).
  ChoiceState start_choice() const;
  /// Adds an event's tokens, text and logprobs to `c`; returns the
  /// logprobs of just these tokens (null without logprobs), for a chunk.
  nlohmann::json add(ChoiceState &c, const RequestEvent &e) const;
  /// The whole response of a finished request.
  nlohmann::json final_body(const std::vector<ChoiceState> &choices,
                            const nlohmann::json &usage) const;
  /// One streamed chunk of choice `index`: `delta` text, `finish` reason
  /// (null while running), `first` adds the chat role, `logprobs` (null
  /// when none).
  nlohmann::json chunk(int64_t index, const std::string &delta,
                       const nlohmann::json &finish, bool first,
                       const nlohmann::json &logprobs) const;
  /// A chunk with no choices and the usage (stream_options.include_usage).
  nlohmann::json usage_chunk(const nlohmann::json &usage) const;

private:
  std::string piece(int32_t prev, int32_t token) const;
  nlohmann::json chat_entry(int32_t prev, const SampledToken &t) const;

  const ServeLimits &limits_;
  const ParsedRequest &request_;
  std::string id_;
  int64_t created_;
};

/// {"prompt_tokens", "completion_tokens", "total_tokens"}.
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

} // namespace hyrt::serve
