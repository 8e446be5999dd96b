// The OpenAI-compatible routes of `hyc serve` (serving/http_server.h).
#include "http_server.h"

#include "openai_response.h"
#include "tokenize_api.h"

#include <algorithm>
#include <cstdio>

namespace hyrt::serve {

using nlohmann::json;

namespace {

/// a == b in a time that depends on the lengths only, not on where the
/// first difference is (a key compared with == leaks its prefix by timing).
bool constant_time_equal(const std::string &a, const std::string &b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < n; ++i)
    diff |= unsigned((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

/// The metrics label of a path.
std::string endpoint_of(const std::string &path) {
  if (path == "/v1/chat/completions")
    return "chat";
  if (path == "/v1/completions")
    return "completions";
  if (path == "/v1/models")
    return "models";
  if (path == "/health")
    return "health";
  if (path == "/tokenize" || path == "/detokenize")
    return "tokenize";
  return "other";
}

std::string dump(const json &j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// The 500 of a request the engine failed.
http::Reply server_error(const std::string &message) {
  serve::ApiError err;
  err.status = 500;
  err.type = "server_error";
  err.message = message;
  return {500, "application/json", dump(err.body()), {}};
}

/// Usage over all choices: the prompt counts once.
json usage_of(const std::vector<serve::ChoiceState> &choices,
              int64_t prompt_tokens) {
  int64_t completion = 0;
  for (const serve::ChoiceState &c : choices)
    completion += c.completion_tokens;
  return serve::usage_json(prompt_tokens, completion);
}

} // namespace

HttpServer::HttpServer(Engine *engine, const Artifact *artifact,
                       std::string model_name, std::string api_key,
                       SchedulerOptions so, bool lenient,
                       std::string chat_template)
      : scheduler_(engine, artifact->tokenizer(), so),
        api_key_(std::move(api_key)) {
    const Manifest &m = artifact->manifest();
    const Tokenizer *tok = artifact->tokenizer();
    limits_.model_name = std::move(model_name);
    limits_.max_seq_len = m.limits.max_seq_len;
    limits_.vocab_size = m.model.vocab_size;
    limits_.lenient = lenient;
    limits_.tokenizer = tok;
    limits_.bos_id = tok ? tok->bos_id() : m.model.bos_token_id;
    limits_.eos_id = tok ? tok->eos_id() : m.model.eos_token_id;
    // The checkpoint's chat template, compiled once (a template the
    // renderer cannot run falls back to the plain format, with a warning).
    // (hyc serve --chat-template replaces the checkpoint's.)
    if (chat_template.empty() && tok)
      chat_template = tok->data().chat_template;
    if (tok && !chat_template.empty()) {
      auto t = std::make_shared<ChatTemplate>();
      if (Status st = t->compile(chat_template); st.ok())
        limits_.chat_template = std::move(t);
      else
        std::fprintf(stderr,
                     "hyc serve: warning: chat template not used (%s); chat "
                     "messages are rendered as \"role: content\" lines\n",
                     st.message().c_str());
    }
    // Constrained output stops at the ids that end a request.
    if (tok) {
      std::vector<int32_t> stops;
      for (int32_t id : {limits_.eos_id, limits_.bos_id})
        if (id >= 0 && id < tok->vocab_size() &&
            std::find(stops.begin(), stops.end(), id) == stops.end())
          stops.push_back(id);
      limits_.structured = std::make_shared<StructuredSupport>(
          tok, std::move(stops),
          limits_.chat_template
              ? TemplateTraits::of(chat_template)
              : TemplateTraits());
    }
  }

http::Reply HttpServer::error(const std::string &endpoint,
                              const serve::ApiError &e) {
  metrics_.count_response(endpoint, e.status);
  http::Reply r;
  r.status = e.status;
  r.body = dump(e.body());
  return r;
}

http::Reply HttpServer::error_reply(int status, const std::string &message) {
  serve::ApiError e;
  e.status = status;
  e.message = message;
  e.type = status >= 500 ? "server_error" : "invalid_request_error";
  e.code = status == 503 ? "overloaded"
           : status == 413 ? "request_too_large"
           : status == 408 ? "request_timeout"
                           : "";
  return error("other", e);
}

std::optional<http::Reply> HttpServer::screen(const http::Request &head) {
  // The model's routes need the key; /health and /metrics do not.
  const bool model_route = head.path.rfind("/v1/", 0) == 0 ||
                           head.path == "/tokenize" || head.path == "/detokenize";
  if (api_key_.empty() || !model_route ||
      constant_time_equal(head.header("authorization"), "Bearer " + api_key_))
    return std::nullopt;
  serve::ApiError e;
  e.status = 401;
  e.message = "missing or wrong API key (expected 'Authorization: Bearer "
              "<key>')";
  e.code = "invalid_api_key";
  return error(endpoint_of(head.path), e);
}

http::Reply HttpServer::models() {
  json model = {{"id", limits_.model_name},
                {"object", "model"},
                {"created", created_},
                {"owned_by", "hyc"},
                {"max_model_len", limits_.max_seq_len}};
  metrics_.count_response("models", 200);
  http::Reply r;
  r.body = dump(json{{"object", "list"}, {"data", json::array({model})}});
  return r;
}

void HttpServer::handle(const http::Request &req, http::Responder &res) {
  const bool get = req.method == "GET", post = req.method == "POST";
  std::string failed;
  {
    std::lock_guard<std::mutex> lock(failed_mu_);
    failed = failed_;
  }
  if (!failed.empty() && req.path != "/metrics") {
    // Load balancers read /health; clients get the same reason.
    return res.send(error_reply(503, "the server cannot answer: " + failed));
  }
  if (get && req.path == "/health") {
    metrics_.count_response("health", 200);
    return res.send({200, "application/json", "{\"status\":\"ok\"}", {}});
  }
  if (get && req.path == "/metrics")
    return res.send({200, "text/plain; version=0.0.4",
                     metrics_.render(scheduler_.stats()), {}});
  if (get && req.path == "/v1/models")
    return res.send(models());
  if (post && (req.path == "/v1/completions" || req.path == "/v1/chat/completions"))
    return generate(req, res, req.path == "/v1/chat/completions");
  if (post && (req.path == "/tokenize" || req.path == "/detokenize"))
    return tokens(req, res, req.path == "/tokenize");
  serve::ApiError e;
  e.status = 404;
  e.message = "no route " + req.method + " " + req.path;
  e.code = "not_found";
  res.send(error("other", e));
}

void HttpServer::record_finish(const Pending &p, const RequestEvent &last) {
  const double ttft =
      p.tokens > 0
          ? std::chrono::duration<double>(p.first_token - p.arrival).count()
          : -1;
  const double tpot =
      p.tokens > 1 ? std::chrono::duration<double>(p.last_token - p.first_token)
                             .count() /
                         double(p.tokens - 1)
                   : -1;
  metrics_.count_finished(last.finish_reason, last.prompt_tokens,
                          last.completion_tokens, ttft, tpot);
}

void HttpServer::tokens(const http::Request &req, http::Responder &res,
                        bool tokenize) {
  json body;
  std::optional<serve::ApiError> e =
      tokenize ? serve::tokenize(req.body, limits_, &body)
               : serve::detokenize(req.body, limits_, &body);
  if (e)
    return res.send(error("tokenize", *e));
  metrics_.count_response("tokenize", 200);
  res.send({200, "application/json", dump(body), {}});
}

void HttpServer::generate(const http::Request &req, http::Responder &res,
                          bool chat) {
  const std::string endpoint = chat ? "chat" : "completions";
  serve::ParsedRequest pr;
  if (auto e = serve::parse_request(req.body, chat, limits_, next_seed_++, &pr))
    return res.send(error(endpoint, *e));
  auto pending = std::make_shared<Pending>();
  int64_t id = 0;
  Status s = scheduler_.submit(
      pr.request,
      // Counted here, on the scheduler's thread: a request whose client
      // went away still ends (cancelled) and must show in /metrics.
      [this, pending](const RequestEvent &e) {
        pending->push(e);
        if (e.finished)
          record_finish(*pending, e);
      },
      &id);
  if (!s.ok()) {
    serve::ApiError e;
    e.message = s.message();
    return res.send(error(endpoint, e));
  }
  pending->id = id;
  const std::string rid =
      (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_response_++);
  metrics_.count_response(endpoint, 200);
  if (pr.stream)
    return stream(pr, rid, pending, res);

  const serve::ResponseBuilder build(limits_, pr, rid, created_);
  std::vector<serve::ChoiceState> choices;
  for (int64_t i = 0; i < pr.request.n; ++i)
    choices.push_back(build.start_choice(i));
  int64_t open = pr.request.n;
  std::string failure;
  bool cancelled = false;
  RequestEvent e;
  while (open > 0) {
    if (!pending->pop(&e, std::chrono::milliseconds(100))) {
      if (!cancelled && res.client_gone()) { // nobody to answer: free its pages
        scheduler_.cancel(pending->id);
        cancelled = true;
      }
      continue;
    }
    serve::ReplyDelta delta;
    build.add(choices[size_t(e.choice)], e, &delta);
    if (e.finished) {
      --open;
      if (e.finish_reason == "error" && failure.empty()) {
        failure = e.error;
        scheduler_.cancel(pending->id); // the other choices are moot
      }
    }
  }
  if (!failure.empty())
    return res.send(server_error(failure));
  res.send({200, "application/json",
            dump(build.final_body(choices, usage_of(choices, int64_t(pr.request.prompt.size())))),
            {}});
}

// Streaming: one SSE event per scheduler event, each naming its choice. A
// client that goes away (a failed write, or a closed socket seen while we
// wait) cancels its request, which frees its pages at the next step.
void HttpServer::stream(const serve::ParsedRequest &pr, const std::string &rid,
                        const std::shared_ptr<Pending> &pending,
                        http::Responder &res) {
  auto send = [&](const json &j) {
    return res.send_chunk("data: " + dump(j) + "\n\n");
  };
  const serve::ResponseBuilder build(limits_, pr, rid, created_);
  std::vector<serve::ChoiceState> choices;
  for (int64_t i = 0; i < pr.request.n; ++i)
    choices.push_back(build.start_choice(i));
  int64_t open = pr.request.n;
  bool ok = res.begin_chunks(200, "text/event-stream",
                             {{"Cache-Control", "no-cache"}});
  RequestEvent e;
  while (ok) {
    if (!pending->pop(&e, std::chrono::milliseconds(100))) {
      ok = !res.client_gone();
      continue;
    }
    serve::ChoiceState &c = choices[size_t(e.choice)];
    if (e.finished)
      --open;
    if (e.finished && e.finish_reason == "error") {
      serve::ApiError err;
      err.status = 500;
      err.type = "server_error";
      err.message = e.error;
      if (send(err.body()) && res.send_chunk("data: [DONE]\n\n"))
        res.end_chunks();
      break; // the stream ends here; the other choices are cancelled
    }
    // The echoed prompt leads the choice's first chunk.
    const std::string lead = c.started ? "" : c.text;
    serve::ReplyDelta delta;
    const json logprobs = build.add(c, e, &delta);
    delta.content = lead + delta.content;
    if (!delta.empty() || !c.started || e.finished || !logprobs.is_null()) {
      ok = send(build.chunk(e.choice, delta,
                            e.finished ? json(c.finish_reason) : json(),
                            !c.started, logprobs));
      c.started = true;
    }
    if (ok && open == 0) {
      if (pr.include_usage)
        ok = send(build.usage_chunk(
            usage_of(choices, int64_t(pr.request.prompt.size()))));
      if (ok) {
        res.send_chunk("data: [DONE]\n\n");
        res.end_chunks();
        return;
      }
    }
  }
  scheduler_.cancel(pending->id);
}

} // namespace hyrt::serve
