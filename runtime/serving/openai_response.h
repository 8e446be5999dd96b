// OpenAI response bodies for `hyc serve`: the choices of a finished
// request, the chunks of a streamed one, and log-probabilities in the two
// formats OpenAI has (chat: logprobs.content entries; completions: the
// tokens / token_logprobs / top_logprobs / text_offset arrays).
#pragma once

#include "choice_output.h"
#include "openai_api.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace hyrt::serve {

/// What one event added to a choice's reply.
struct ReplyDelta {
  std::string content; ///< chat content, or the completion's text
  std::string reasoning;
  /// Tool-call deltas as OpenAI streams them: a call's first entry
  /// {"index", "id", "type": "function", "function": {"name",
  /// "arguments"}}, later ones {"index", "function": {"arguments": piece}}
  /// (one entry per call and event; the pieces concatenate to the call's
  /// arguments).
  nlohmann::json tool_calls = nlohmann::json::array();
  bool empty() const {
    return content.empty() && reasoning.empty() && tool_calls.empty();
  }
};

/// What one choice has produced so far.
struct ChoiceState {
  std::string text; ///< completions: the text; chat: the content
  std::string reasoning;
  nlohmann::json tool_calls = nlohmann::json::array();
  /// Splits a chat reply (null: the text is all content).
  std::shared_ptr<ChoiceOutput> output;
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

  /// Choice `index`'s state before its first token (echo included).
  ChoiceState start_choice(int64_t index) const;
  /// Adds an event's tokens, text and logprobs to `c`; returns the
  /// logprobs of just these tokens (null without logprobs), for a chunk,
  /// and what the event added to the reply in `delta`.
  nlohmann::json add(ChoiceState &c, const RequestEvent &e,
                     ReplyDelta *delta) const;
  /// The whole response of a finished request.
  nlohmann::json final_body(const std::vector<ChoiceState> &choices,
                            const nlohmann::json &usage) const;
  /// One streamed chunk of choice `index`: `delta` (chat: content,
  /// reasoning_content and tool_calls; completions: text), `finish` reason
  /// (null while running), `first` adds the chat role, `logprobs` (null
  /// when none).
  nlohmann::json chunk(int64_t index, const ReplyDelta &delta,
                       const nlohmann::json &finish, bool first,
                       const nlohmann::json &logprobs) const;
  /// A chunk with no choices and the usage (stream_options.include_usage).
  nlohmann::json usage_chunk(const nlohmann::json &usage) const;

private:
  std::string piece(int32_t prev, int32_t token) const;
  /// Adds `d`'s text and calls to `c` and `out` (ids assigned here).
  void take(ChoiceState &c, ChoiceDelta d, int64_t choice,
            ReplyDelta *out) const;
  nlohmann::json chat_entry(int32_t prev, const SampledToken &t) const;
  /// echo with logprobs (completions): the prompt's tokens, first in `part`.
  void add_prompt_logprobs(const std::vector<SampledToken> &entries,
                           nlohmann::json *part) const;

  const ServeLimits &limits_;
  const ParsedRequest &request_;
  std::string id_;
  int64_t created_;
};

/// {"prompt_tokens", "completion_tokens", "total_tokens"}.
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

} // namespace hyrt::serve
