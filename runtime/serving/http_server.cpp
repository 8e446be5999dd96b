// The OpenAI-compatible routes of `hyc serve` (serving/http_server.h).
#include "http_server.h"

#include <httplib.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <optional>

namespace hyrt::serve {

using nlohmann::json;

void HttpServer::reply_error(httplib::Response &res,
                             const std::string &endpoint,
                             const serve::ApiError &e) {
  res.status = e.status;
  res.set_content(e.body().dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
  metrics_.count_response(endpoint, e.status);
}

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

/// The metrics label of a /v1 path.
std::string endpoint_of(const std::string &path) {
  if (path == "/v1/chat/completions")
    return "chat";
  if (path == "/v1/completions")
    return "completions";
  if (path == "/v1/models")
    return "models";
  return "other";
}

/// A 413 for a declared body over `max_body` bytes, a 411 for a chunked
/// one (its size is unknown until it has been read); none otherwise.
std::optional<serve::ApiError> body_refusal(const httplib::Request &req,
                                            size_t max_body) {
  serve::ApiError e;
  if (req.has_header("Transfer-Encoding")) {
    e.status = 411;
    e.code = "length_required";
    e.message = "request bodies must carry a Content-Length (found "
                "Transfer-Encoding: " +
                req.get_header_value("Transfer-Encoding") + ")";
    return e;
  }
  const std::string length = req.get_header_value("Content-Length");
  if (length.empty())
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  const unsigned long long n = std::strtoull(length.c_str(), &end, 10);
  if (errno == 0 && end && *end == 0 && n <= max_body)
    return std::nullopt;
  e.status = 413;
  e.code = "request_too_large";
  e.message = "request body of " + length.substr(0, 32) +
              " bytes, expected at most " + std::to_string(max_body) +
              " (hyc serve --max-body-bytes)";
  return e;
}

} // namespace

bool HttpServer::authorized(const httplib::Request &req, httplib::Response &res,
                            const std::string &endpoint) {
  if (api_key_.empty() ||
      constant_time_equal(req.get_header_value("Authorization"),
                          "Bearer " + api_key_))
    return true;
  serve::ApiError e;
  e.status = 401;
  e.message = "missing or wrong API key (expected 'Authorization: Bearer "
              "<key>')";
  e.code = "invalid_api_key";
  reply_error(res, endpoint, e);
  return false;
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

void HttpServer::generate(const httplib::Request &req, httplib::Response &res,
                          bool chat) {
  const std::string endpoint = chat ? "chat" : "completions";
  serve::ParsedRequest pr;
  if (auto e = serve::parse_request(req.body, chat, limits_, next_seed_++, &pr))
    return reply_error(res, endpoint, *e);
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
    return reply_error(res, endpoint, e);
  }
  pending->id = id;
  const std::string rid =
      (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_response_++);
  auto usage = [](const RequestEvent &e) {
    return json{{"prompt_tokens", e.prompt_tokens},
                {"completion_tokens", e.completion_tokens},
                {"total_tokens", e.prompt_tokens + e.completion_tokens}};
  };
  metrics_.count_response(endpoint, 200);

  if (!pr.stream) {
    std::string text;
    RequestEvent e;
    while (true) {
      if (!pending->pop(&e, std::chrono::milliseconds(1000)))
        continue;
      text += e.text;
      if (e.finished)
        break;
    }
    if (e.finish_reason == "error") {
      res.status = 500;
      serve::ApiError err;
      err.status = 500;
      err.type = "server_error";
      err.message = e.error;
      res.set_content(
          err.body().dump(-1, ' ', false, json::error_handler_t::replace),
          "application/json");
      return;
    }
    json choice = {{"index", 0}, {"finish_reason", e.finish_reason}};
    if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", text}};
    else {
      choice["text"] = text;
      choice["logprobs"] = nullptr;
    }
    json body = {{"id", rid},
                 {"object", chat ? "chat.completion" : "text_completion"},
                 {"created", created_},
                 {"model", limits_.model_name},
                 {"choices", json::array({choice})},
                 {"usage", usage(e)}};
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
    return;
  }

  // Streaming: one SSE event per scheduler event. A client that goes away
  // (a failed write, or a socket that is no longer writable while we wait)
  // cancels its request, which frees its pages at the next step.
  auto state = std::make_shared<int>(0); // 0 first chunk, 1 later, 2 done
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, pending, pr, rid, state, usage](size_t, httplib::DataSink &sink) {
        auto send = [&](const json &j) {
          const std::string line =
              "data: " +
              j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
          return sink.write(line.data(), line.size());
        };
        RequestEvent e;
        while (!pending->pop(&e, std::chrono::milliseconds(100)))
          if (!sink.is_writable()) {
            scheduler_.cancel(pending->id);
            return false;
          }
        bool ok = true;
        if (e.finished && e.finish_reason == "error") {
          serve::ApiError err;
          err.status = 500;
          err.type = "server_error";
          err.message = e.error;
          ok = send(err.body());
        } else if (!e.text.empty() || *state == 0 || e.finished) {
          ok = send(chunk(pr, rid, e.text,
                          e.finished ? json(e.finish_reason) : json(),
                          *state == 0));
          *state = 1;
        }
        if (ok && e.finished && pr.include_usage) {
          json u = chunk(pr, rid, "", json(), false);
          u["choices"] = json::array();
          u["usage"] = usage(e);
          ok = send(u);
        }
        if (!ok) {
          scheduler_.cancel(pending->id);
          return false;
        }
        if (e.finished) {
          *state = 2;
          const std::string done = "data: [DONE]\n\n";
          sink.write(done.data(), done.size());
          sink.done();
        }
        return true;
      },
      [this, pending, state](bool success) {
        if (!success || *state != 2)
          scheduler_.cancel(pending->id);
      });
}

void HttpServer::install(httplib::Server &http, const HttpLimits &limits) {
  // The key is checked from the headers alone, before cpp-httplib reads a
  // body (the pre-routing handler runs first): an unauthenticated client
  // cannot make the server read, buffer or parse anything.
  // The body's size is judged from the headers too: cpp-httplib's own
  // limit reads (and discards) a too-large body before it answers, and
  // buffers a chunked one without bound. A refused request closes its
  // connection, so an unread body is never taken for the next request.
  const size_t max_body = limits.max_body_bytes;
  http.set_pre_routing_handler([this, max_body](const httplib::Request &req,
                                                httplib::Response &res) {
    using Handler = httplib::Server::HandlerResponse;
    if (req.path.rfind("/v1/", 0) != 0)
      return Handler::Unhandled;
    const std::string endpoint = endpoint_of(req.path);
    if (!authorized(req, res, endpoint)) {
      res.set_header("Connection", "close");
      return Handler::Handled;
    }
    if (std::optional<serve::ApiError> e = body_refusal(req, max_body)) {
      res.set_header("Connection", "close");
      reply_error(res, endpoint, *e);
      return Handler::Handled;
    }
    return Handler::Unhandled;
  });
  // Reads and writes that stall are dropped after their timeout.
  http.set_payload_max_length(limits.max_body_bytes);
  http.set_read_timeout(limits.read_timeout_seconds, 0);
  http.set_write_timeout(limits.write_timeout_seconds, 0);
  http.set_keep_alive_timeout(limits.keep_alive_seconds);
  http.set_keep_alive_max_count(limits.keep_alive_max_requests);
  http.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    res.set_content("{\"status\":\"ok\"}", "application/json");
    metrics_.count_response("health", 200);
  });
  http.Get("/metrics",
           [this](const httplib::Request &, httplib::Response &res) {
             res.set_content(metrics_.render(scheduler_.stats()),
                             "text/plain; version=0.0.4");
           });
  http.Get("/v1/models",
           [this](const httplib::Request &req, httplib::Response &res) {
             json model = {{"id", limits_.model_name},
                           {"object", "model"},
                           {"created", created_},
                           {"owned_by", "hyc"},
                           {"max_model_len", limits_.max_seq_len}};
             res.set_content(
                 json{{"object", "list"}, {"data", json::array({model})}}.dump(
                     -1, ' ', false, json::error_handler_t::replace),
                 "application/json");
             metrics_.count_response("models", 200);
           });
  http.Post("/v1/completions",
            [this](const httplib::Request &req, httplib::Response &res) {
              generate(req, res, /*chat=*/false);
            });
  http.Post("/v1/chat/completions",
            [this](const httplib::Request &req, httplib::Response &res) {
              generate(req, res, /*chat=*/true);
            });
  auto not_found = [this](const httplib::Request &req, httplib::Response &res) {
    serve::ApiError e;
    e.status = 404;
    e.message = "no route " + req.method + " " + req.path;
    e.code = "not_found";
    reply_error(res, "other", e);
  };
  http.Get(".*", not_found);
  http.Post(".*", not_found);
  http.set_exception_handler([this](const httplib::Request &,
                                    httplib::Response &res,
                                    std::exception_ptr ep) {
    serve::ApiError e;
    e.status = 500;
    e.type = "server_error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception &ex) {
      e.message = ex.what();
    } catch (...) {
      e.message = "unknown error";
    }
    reply_error(res, "other", e);
  });
}

} // namespace hyrt::serve
