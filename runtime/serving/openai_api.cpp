// OpenAI request parsing for `hyc serve` (see serve_api.h).
#include "openai_api.h"
#include "hyrt/support/json.h"

#include <cmath>

namespace hyrt::serve {

using nlohmann::json;

namespace {

ApiError bad(const std::string &param, const std::string &message) {
  ApiError e;
  e.param = param;
  e.message = message;
  return e;
}

std::string type_name(const json &v) { return v.type_name(); }

/// An optional field: absent or null gives nullopt.
const json *field(const json &body, const char *name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null())
    return nullptr;
  return &*it;
}

std::optional<ApiError> get_int(const json &body, const char *name,
                                int64_t lo, int64_t hi, int64_t *out) {
  const json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_number_integer())
    return bad(name, std::string(name) + ": expected an integer, found " +
                         type_name(*v));
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi)
    return bad(name, std::string(name) + ": expected a value in [" +
                         std::to_string(lo) + ", " + std::to_string(hi) +
                         "], found " + std::to_string(x));
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> get_real(const json &body, const char *name, double lo,
                                 double hi, bool lo_open, double *out) {
  const json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_number())
    return bad(name, std::string(name) + ": expected a number, found " +
                         type_name(*v));
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
    return bad(name, std::string(name) + ": expected a number in " +
                         (lo_open ? "(" : "[") + std::to_string(lo) + ", " +
                         std::to_string(hi) + "], found " + v->dump());
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> get_bool(const json &body, const char *name,
                                 bool *out) {
  const json *v = field(body, name);
  if (!v)
    return std::nullopt;
  if (!v->is_boolean())
    return bad(name, std::string(name) + ": expected a boolean, found " +
                         type_name(*v));
  *out = v->get<bool>();
  return std::nullopt;
}

/// Text of a message's content: a string, or an array of {"type": "text",
/// "text": ...} parts joined.
std::optional<ApiError> content_text(const json &c, size_t i,
                                     std::string *out) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  if (c.is_string()) {
    *out = c.get<std::string>();
    return std::nullopt;
  }
  if (!c.is_array())
    return bad(param, param + ": expected a string or an array of text "
                              "parts, found " + type_name(c));
  for (const json &part : c) {
    if (!part.is_object() || part.value("type", json()) != "text" ||
        !part.contains("text") || !part["text"].is_string())
      return bad(param, param + ": only {\"type\": \"text\", \"text\": ...} "
                                "parts are supported");
    *out += part["text"].get<std::string>();
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

std::optional<ApiError> parse_request(const std::string &body_text, bool chat,
                                      const ServeLimits &limits,
                                      uint64_t default_seed,
                                      ParsedRequest *out) {
  json body;
  if (std::string depth = json_depth_error(body_text); !depth.empty())
    return bad("", "the request body " + depth.substr(5));
  body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded())
    return bad("", "the request body is not valid JSON");
  if (!body.is_object())
    return bad("", "the request body must be a JSON object, found " +
                       type_name(body));
  *out = ParsedRequest();
  out->chat = chat;
  Request &r = out->request;

  if (const json *m = field(body, "model")) {
    if (!m->is_string())
      return bad("model", "model: expected a string, found " + type_name(*m));
    if (m->get<std::string>() != limits.model_name) {
      ApiError e = bad("model", "the model '" + m->get<std::string>() +
                                    "' does not exist; this server serves '" +
                                    limits.model_name + "'");
      e.status = 404;
      e.code = "model_not_found";
      return e;
    }
  }

  // The prompt: text (tokenized as `hyc run` does: BOS first) or token ids.
  std::string text;
  bool have_text = false, templated = false;
  if (chat) {
    const json *msgs = field(body, "messages");
    if (!msgs || !msgs->is_array() || msgs->empty())
      return bad("messages", "messages: expected a non-empty array of "
                             "{role, content} objects");
    std::vector<ChatMessage> list;
    for (size_t i = 0; i < msgs->size(); ++i) {
      const json &m = (*msgs)[i];
      const std::string at = "messages[" + std::to_string(i) + "]";
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        return bad(at, at + ": expected an object with a string role");
      ChatMessage cm;
      cm.role = m["role"].get<std::string>();
      if (cm.role != "system" && cm.role != "user" && cm.role != "assistant" &&
          cm.role != "developer")
        return bad(at + ".role", at + ".role: expected system, developer, "
                                      "user or assistant, found '" +
                                      cm.role + "'");
      if (m.contains("content") && !m["content"].is_null())
        if (auto e = content_text(m["content"], i, &cm.content))
          return e;
      list.push_back(std::move(cm));
    }
    if (limits.chat_template) {
      json vars = {{"messages", json::array()}, {"add_generation_prompt", true}};
      for (const ChatMessage &m : list)
        vars["messages"].push_back({{"role", m.role}, {"content", m.content}});
      const std::vector<std::string> &tokens = limits.tokenizer->data().tokens;
      auto special = [&](int32_t id) {
        return id >= 0 && size_t(id) < tokens.size() ? json(tokens[size_t(id)]) : json();
      };
      vars["bos_token"] = special(limits.bos_id);
      vars["eos_token"] = special(limits.eos_id);
      if (const json *kw = field(body, "chat_template_kwargs")) {
        if (!kw->is_object())
          return bad("chat_template_kwargs", "chat_template_kwargs: expected an object, "
                                             "found " + type_name(*kw));
        for (auto it = kw->begin(); it != kw->end(); ++it)
          vars[it.key()] = it.value();
      }
      if (Status st = limits.chat_template->render(vars.dump(), &text); !st.ok())
        return bad("messages", "the chat template could not render these messages: " +
                                   st.message());
      templated = true;
    } else {
      text = render_chat_prompt(list);
    }
    have_text = true;
  } else {
    const json *p = field(body, "prompt");
    if (!p)
      return bad("prompt", "prompt: required (a string or an array of token "
                           "ids)");
    if (p->is_array() && p->size() == 1 && (*p)[0].is_string())
      p = &(*p)[0];
    if (p->is_string()) {
      text = p->get<std::string>();
      have_text = true;
    } else if (p->is_array() && !p->empty()) {
      for (const json &t : *p) {
        if (!t.is_number_integer())
          return bad("prompt", "prompt: expected a string or an array of "
                               "token ids, found an array holding " +
                                   type_name(t));
        // Checked before narrowing: 2^32 + 5 must not become token 5.
        const bool fits = t.is_number_unsigned()
                              ? t.get<uint64_t>() <= uint64_t(INT32_MAX)
                              : t.get<int64_t>() >= 0 &&
                                    t.get<int64_t>() <= INT32_MAX;
        if (!fits)
          return bad("prompt", "prompt: token id " + t.dump() +
                                   " outside the vocabulary");
        r.prompt.push_back(int32_t(t.get<int64_t>()));
      }
    } else {
      return bad("prompt", "prompt: expected a string or a non-empty array "
                           "of token ids, found " + type_name(*p));
    }
  }
  if (have_text) {
    if (!limits.tokenizer)
      return bad(chat ? "messages" : "prompt",
                 "this artifact has no tokenizer; give the prompt as token "
                 "ids");
    if (Status s = limits.tokenizer->encode(
            text, /*add_bos=*/!templated && limits.bos_id >= 0, &r.prompt);
        !s.ok())
      return bad(chat ? "messages" : "prompt", s.message());
    if (r.prompt.empty() && limits.bos_id >= 0)
      r.prompt.push_back(limits.bos_id);
    if (r.prompt.empty())
      return bad("prompt", "empty prompt and the model has no BOS token");
  }
  const int64_t n = int64_t(r.prompt.size());
  if (n > limits.max_seq_len) {
    ApiError e = bad(chat ? "messages" : "prompt",
                     "the prompt has " + std::to_string(n) +
                         " tokens; this model's context (max_seq_len) is " +
                         std::to_string(limits.max_seq_len));
    e.code = "context_length_exceeded";
    return e;
  }

  // max_tokens: OpenAI's default is 16 for completions and the rest of
  // the context for chat; an explicit value must fit in the context.
  int64_t max_tokens = -1;
  const char *max_name =
      chat && field(body, "max_completion_tokens") ? "max_completion_tokens"
                                                   : "max_tokens";
  if (auto e = get_int(body, max_name, 1, INT32_MAX, &max_tokens))
    return e;
  const int64_t room = std::max<int64_t>(1, limits.max_seq_len - n);
  if (max_tokens < 0) {
    r.max_tokens = chat ? room : std::min<int64_t>(16, room);
  } else if (max_tokens > room) {
    ApiError e = bad(max_name, "the prompt's " + std::to_string(n) + " tokens + " +
                                   std::string(max_name) + " " +
                                   std::to_string(max_tokens) +
                                   " exceed this model's context "
                                   "(max_seq_len) of " +
                                   std::to_string(limits.max_seq_len));
    e.code = "context_length_exceeded";
    return e;
  } else {
    r.max_tokens = max_tokens;
  }

  double temperature = 1, top_p = 1;
  int64_t top_k = 0, seed = -1, n_choices = 1;
  if (auto e = get_real(body, "temperature", 0, 2, false, &temperature))
    return e;
  if (auto e = get_real(body, "top_p", 0, 1, true, &top_p))
    return e;
  if (auto e = get_int(body, "top_k", 0, INT32_MAX, &top_k))
    return e;
  if (auto e = get_int(body, "seed", INT64_MIN, INT64_MAX, &seed))
    return e;
  if (auto e = get_int(body, "n", 1, 1, &n_choices))
    return e;
  for (const char *ignored : {"frequency_penalty", "presence_penalty"}) {
    double unused = 0;
    if (auto e = get_real(body, ignored, -2, 2, false, &unused))
      return e;
    if (unused != 0)
      return bad(ignored, std::string(ignored) + " is not supported; "
                                                 "expected 0");
  }
  r.sampler.temperature = float(temperature);
  r.sampler.top_p = float(top_p);
  r.sampler.top_k = top_k;
  r.sampler.seed = field(body, "seed") ? uint64_t(seed) : default_seed;

  if (const json *stop = field(body, "stop")) {
    std::vector<json> items =
        stop->is_array() ? stop->get<std::vector<json>>() : std::vector<json>{*stop};
    if (items.size() > 4)
      return bad("stop", "stop: at most 4 sequences, found " +
                             std::to_string(items.size()));
    for (const json &s : items) {
      if (!s.is_string() || s.get<std::string>().empty())
        return bad("stop", "stop: expected a non-empty string or an array "
                           "of them");
      r.stop_strings.push_back(s.get<std::string>());
    }
    if (!r.stop_strings.empty() && !limits.tokenizer)
      return bad("stop", "stop strings need a tokenizer and this artifact "
                         "has none");
  }
  bool ignore_eos = false;
  if (auto e = get_bool(body, "ignore_eos", &ignore_eos))
    return e;
  if (!ignore_eos) // as `hyc run`: llama2.c models also end at BOS
    for (int32_t id : {limits.eos_id, limits.bos_id})
      if (id >= 0)
        r.stop_tokens.push_back(id);

  if (auto e = get_bool(body, "stream", &out->stream))
    return e;
  if (const json *so = field(body, "stream_options")) {
    if (!so->is_object())
      return bad("stream_options", "stream_options: expected an object");
    if (auto e = get_bool(*so, "include_usage", &out->include_usage))
      return e;
  }
  for (const char *unsupported : {"logprobs", "echo", "suffix"}) {
    const json *v = field(body, unsupported);
    if (v && !(v->is_boolean() && !v->get<bool>()))
      return bad(unsupported, std::string(unsupported) +
                                  " is not supported by this server");
  }
  return std::nullopt;
}

} // namespace hyrt::serve
