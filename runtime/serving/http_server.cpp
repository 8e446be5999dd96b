// The OpenAI-compatible routes of `hyc serve` (serving/http_server.h).
#include "http_server.h"

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
  return "other";
}

std::string dump(const json &j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json usage_of(const RequestEvent &e) {
  return {{"prompt_tokens", e.prompt_tokens},
          {"completion_tokens", e.completion_tokens},
          {"total_tokens", e.prompt_tokens + e.completion_tokens}};
}

} // namespace

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
  if (api_key_.empty() || head.path.rfind("/v1/", 0) != 0 ||
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

json HttpServer::chunk(const serve::ParsedRequest &pr, const std::string &id,
                       const std::string &delta, const json &finish,
                       bool first) const {
  json choice = {{"index", 0}, {"finish_reason", finish}};
  if (pr.chat) {
    json d = json::object();
    if (first)
      d["role"] = "assistant";
    if (!delta.empty() || first)
      d["content"] = delta;
    choice["delta"] = d;
  } else {
    choice["text"] = delta;
    choice["logprobs"] = nullptr;
  }
  return {{"id", id},
          {"object", pr.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", limits_.model_name},
          {"choices", json::array({choice})}};
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

  std::string text;
  RequestEvent e;
  bool cancelled = false;
  while (true) {
    if (!pending->pop(&e, std::chrono::milliseconds(100))) {
      if (!cancelled && res.client_gone()) { // nobody to answer: free its pages
        scheduler_.cancel(pending->id);
        cancelled = true;
      }
      continue;
    }
    text += e.text;
    if (e.finished)
      break;
  }
  if (e.finish_reason == "error") {
    serve::ApiError err;
    err.status = 500;
    err.type = "server_error";
    err.message = e.error;
    return res.send({500, "application/json", dump(err.body()), {}});
  }
  json choice = {{"index", 0}, {"finish_reason", e.finish_reason}};
  if (chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  json body = {{"id", rid},
               {"object", chat ? "chat.completion" : "text_completion"},
               {"created", created_},
               {"model", limits_.model_name},
               {"choices", json::array({choice})},
               {"usage", usage_of(e)}};
  res.send({200, "application/json", dump(body), {}});
}

// Streaming: one SSE event per scheduler event. A client that goes away (a
// failed write, or a closed socket seen while we wait) cancels its request,
// which frees its pages at the next step.
void HttpServer::stream(const serve::ParsedRequest &pr, const std::string &rid,
                        const std::shared_ptr<Pending> &pending,
                        http::Responder &res) {
  auto send = [&](const json &j) {
    return res.send_chunk("data: " + dump(j) + "\n\n");
  };
  bool ok = res.begin_chunks(200, "text/event-stream",
                             {{"Cache-Control", "no-cache"}});
  bool first = true;
  RequestEvent e;
  while (ok) {
    if (!pending->pop(&e, std::chrono::milliseconds(100))) {
      ok = !res.client_gone();
      continue;
    }
    if (e.finished && e.finish_reason == "error") {
      serve::ApiError err;
      err.status = 500;
      err.type = "server_error";
      err.message = e.error;
      ok = send(err.body());
    } else if (!e.text.empty() || first || e.finished) {
      ok = send(chunk(pr, rid, e.text,
                      e.finished ? json(e.finish_reason) : json(), first));
      first = false;
    }
    if (ok && e.finished && pr.include_usage) {
      json u = chunk(pr, rid, "", json(), false);
      u["choices"] = json::array();
      u["usage"] = usage_of(e);
      ok = send(u);
    }
    if (ok && e.finished) {
      res.send_chunk("data: [DONE]\n\n");
      res.end_chunks();
      return;
    }
  }
  scheduler_.cancel(pending->id);
}

} // namespace hyrt::serve
