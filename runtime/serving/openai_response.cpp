// OpenAI response bodies (see openai_response.h).
#include "openai_response.h"

#include <cmath>

namespace hyrt::serve {

using nlohmann::json;

namespace {

/// JSON has no -inf: OpenAI reports a token that could not be drawn as
/// -9999.0.
double finite_logprob(float lp) {
  return std::isfinite(lp) ? double(lp) : -9999.0;
}

json bytes_of(const std::string &s) {
  json b = json::array();
  for (unsigned char c : s)
    b.push_back(int(c));
  return b;
}

} // namespace

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

ResponseBuilder::ResponseBuilder(const ServeLimits &limits,
                                 const ParsedRequest &request, std::string id,
                                 int64_t created)
    : limits_(limits), request_(request), id_(std::move(id)),
      created_(created) {}

std::string ResponseBuilder::piece(int32_t prev, int32_t token) const {
  // Without a tokenizer a token has no text; vLLM's spelling then.
  return limits_.tokenizer ? limits_.tokenizer->decode(prev, token)
                           : "token_id:" + std::to_string(token);
}

json ResponseBuilder::chat_entry(int32_t prev, const SampledToken &t) const {
  const std::string text = piece(prev, t.token);
  json top = json::array();
  for (const TokenLogprob &alt : t.top) {
    const std::string alt_text = piece(prev, alt.token);
    top.push_back({{"token", alt_text},
                   {"logprob", finite_logprob(alt.logprob)},
                   {"bytes", bytes_of(alt_text)}});
  }
  return {{"token", text},
          {"logprob", finite_logprob(t.logprob)},
          {"bytes", bytes_of(text)},
          {"top_logprobs", top}};
}

ChoiceState ResponseBuilder::start_choice(int64_t index) const {
  (void)index;
  ChoiceState c;
  const OutputPlan &plan = request_.output;
  if (request_.chat && (plan.split_reasoning ||
                        plan.tool_format != structured::ToolCallFormat::kNone))
    c.output = std::make_shared<ChoiceOutput>(plan);
  c.prev_token = request_.request.prompt.back();
  if (request_.echo) {
    c.text = request_.prompt_text;
    c.text_offset = int64_t(c.text.size());
  }
  if (request_.request.logprobs >= 0)
    c.logprobs = request_.chat ? json{{"content", json::array()}, {"refusal", nullptr}}
                               : json{{"tokens", json::array()},
                                      {"token_logprobs", json::array()},
                                      {"top_logprobs", json::array()},
                                      {"text_offset", json::array()}};
  return c;
}

void ResponseBuilder::take(ChoiceState &c, ChoiceDelta d, int64_t choice,
                           ReplyDelta *out) const {
  c.text += d.content;
  c.reasoning += d.reasoning;
  out->content += d.content;
  out->reasoning += d.reasoning;
  // Unique within this server's life: the response's number, the choice,
  // the call's index.
  const std::string rid = id_.substr(id_.find('-') + 1);
  using K = structured::ToolCallEvent::Kind;
  for (structured::ToolCallEvent &e : d.calls) {
    if (e.kind == K::kCallStart) {
      const size_t k = c.tool_calls.size();
      json entry = {{"id", "call_" + rid + "_" + std::to_string(choice) + "_" +
                               std::to_string(k)},
                    {"type", "function"},
                    {"function", {{"name", e.text}, {"arguments", ""}}}};
      c.tool_calls.push_back(entry);
      entry["index"] = k;
      out->tool_calls.push_back(std::move(entry));
    } else if (e.kind == K::kArguments && !c.tool_calls.empty()) {
      const size_t k = c.tool_calls.size() - 1;
      std::string &all = c.tool_calls[k]["function"]["arguments"]
                             .get_ref<std::string &>();
      all += e.text;
      // Pieces of the call this delta already names join its entry.
      if (out->tool_calls.empty() || out->tool_calls.back()["index"] != k)
        out->tool_calls.push_back(
            {{"index", k}, {"function", {{"arguments", ""}}}});
      json &sent = out->tool_calls.back()["function"]["arguments"];
      sent.get_ref<std::string &>() += e.text;
    }
  }
}

void ResponseBuilder::add_prompt_logprobs(
    const std::vector<SampledToken> &entries, json *part) const {
  // OpenAI's echo: the first token has no logprob (nothing precedes it);
  // offsets count from the echoed prompt's start.
  const std::vector<int32_t> &prompt = request_.request.prompt;
  int64_t offset = 0;
  for (size_t k = 0; k < prompt.size(); ++k) {
    const int32_t prev = k == 0 ? -1 : prompt[k - 1];
    const std::string text = piece(prev, prompt[k]);
    (*part)["tokens"].push_back(text);
    (*part)["text_offset"].push_back(offset);
    offset += int64_t(text.size());
    if (k == 0 || k - 1 >= entries.size()) {
      (*part)["token_logprobs"].push_back(nullptr);
      (*part)["top_logprobs"].push_back(nullptr);
      continue;
    }
    const SampledToken &t = entries[k - 1];
    json top = json::object();
    for (const TokenLogprob &alt : t.top)
      top[piece(prev, alt.token)] = finite_logprob(alt.logprob);
    (*part)["token_logprobs"].push_back(finite_logprob(t.logprob));
    (*part)["top_logprobs"].push_back(top);
  }
}

json ResponseBuilder::add(ChoiceState &c, const RequestEvent &e,
                          ReplyDelta *delta) const {
  *delta = ReplyDelta();
  if (c.output) {
    take(c, c.output->feed(e.text), e.choice, delta);
    if (e.finished)
      take(c, c.output->finish(), e.choice, delta);
  } else {
    c.text += e.text;
    delta->content = e.text;
  }
  c.completion_tokens = e.completion_tokens;
  if (e.finished) {
    c.finish_reason = e.finish_reason;
    // OpenAI's reason when the model stopped to call tools.
    if (c.finish_reason == "stop" && !c.tool_calls.empty())
      c.finish_reason = "tool_calls";
  }
  if (request_.request.logprobs < 0 ||
      (e.logprobs.empty() && e.prompt_logprobs.empty()))
    return json();
  json part = request_.chat ? json{{"content", json::array()}}
                            : json{{"tokens", json::array()},
                                   {"token_logprobs", json::array()},
                                   {"top_logprobs", json::array()},
                                   {"text_offset", json::array()}};
  if (!request_.chat && !e.prompt_logprobs.empty())
    add_prompt_logprobs(e.prompt_logprobs, &part);
  for (const SampledToken &t : e.logprobs) {
    if (request_.chat) {
      part["content"].push_back(chat_entry(c.prev_token, t));
    } else {
      const std::string text = piece(c.prev_token, t.token);
      json top = json::object();
      for (const TokenLogprob &alt : t.top)
        top[piece(c.prev_token, alt.token)] = finite_logprob(alt.logprob);
      part["tokens"].push_back(text);
      part["token_logprobs"].push_back(finite_logprob(t.logprob));
      part["top_logprobs"].push_back(top);
      part["text_offset"].push_back(c.text_offset);
      c.text_offset += int64_t(text.size());
    }
    c.prev_token = t.token;
  }
  for (auto it = part.begin(); it != part.end(); ++it)
    for (const json &v : *it)
      c.logprobs[it.key()].push_back(v);
  return part;
}

json ResponseBuilder::final_body(const std::vector<ChoiceState> &choices,
                                 const json &usage) const {
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceState &c = choices[i];
    json choice = {{"index", i},
                   {"finish_reason", c.finish_reason},
                   {"logprobs", c.logprobs}};
    if (request_.chat) {
      json message = {{"role", "assistant"},
                      {"content", c.text.empty() && !c.tool_calls.empty()
                                      ? json()
                                      : json(c.text)}};
      if (request_.output.split_reasoning)
        message["reasoning_content"] =
            c.reasoning.empty() ? json() : json(c.reasoning);
      if (!c.tool_calls.empty())
        message["tool_calls"] = c.tool_calls;
      choice["message"] = std::move(message);
    } else {
      choice["text"] = c.text;
    }
    list.push_back(choice);
  }
  return {{"id", id_},
          {"object", request_.chat ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", limits_.model_name},
          {"choices", list},
          {"usage", usage}};
}

json ResponseBuilder::chunk(int64_t index, const ReplyDelta &delta,
                            const json &finish, bool first,
                            const json &logprobs) const {
  json choice = {{"index", index}, {"finish_reason", finish}, {"logprobs", logprobs}};
  if (request_.chat) {
    json d = json::object();
    if (first)
      d["role"] = "assistant";
    if (!delta.content.empty() || (first && delta.reasoning.empty() &&
                                   delta.tool_calls.empty()))
      d["content"] = delta.content;
    if (!delta.reasoning.empty())
      d["reasoning_content"] = delta.reasoning;
    if (!delta.tool_calls.empty())
      d["tool_calls"] = delta.tool_calls;
    choice["delta"] = d;
  } else {
    choice["text"] = delta.content;
  }
  return {{"id", id_},
          {"object", request_.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", limits_.model_name},
          {"choices", json::array({choice})}};
}

json ResponseBuilder::usage_chunk(const json &usage) const {
  json u = chunk(0, ReplyDelta(), json(), false, json());
  u["choices"] = json::array();
  u["usage"] = usage;
  return u;
}

} // namespace hyrt::serve
