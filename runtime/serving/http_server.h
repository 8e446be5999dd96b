// The HTTP side of `hyc serve`: the OpenAI-compatible routes over one
// Engine, with a Scheduler doing continuous batching behind them. The
// sockets and their bounds are http_listener.h; the command (flags, ranks,
// signals) is runtime/cli/serve.cpp.
#pragma once

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/engine.h"
#include "hyrt/engine/scheduler.h"
#include "http_listener.h"
#include "metrics.h"
#include "openai_api.h"
#include "structured_support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>

namespace hyrt::serve {

using Clock = std::chrono::steady_clock;

/// Events of one request, handed from the scheduler thread to the HTTP
/// thread that answers it.
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<RequestEvent> events;
  int64_t id = 0;
  Clock::time_point arrival = Clock::now(), first_token, last_token;
  int64_t tokens = 0;

  void push(const RequestEvent &e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!e.tokens.empty()) {
      if (tokens == 0)
        first_token = Clock::now();
      last_token = Clock::now();
      tokens += int64_t(e.tokens.size());
    }
    events.push_back(e);
    cv.notify_all();
  }
  /// Next event, waiting at most `timeout`; false when none came.
  bool pop(RequestEvent *e, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, timeout, [&] { return !events.empty(); }))
      return false;
    *e = std::move(events.front());
    events.pop_front();
    return true;
  }
};

/// The routes of one server: /v1/completions, /v1/chat/completions,
/// /v1/models, /tokenize, /detokenize, /health and /metrics.
class HttpServer {
public:
  HttpServer(Engine *engine, const Artifact *artifact, std::string model_name,
             std::string api_key, SchedulerOptions so, bool lenient = false,
             std::string chat_template = "");

  /// The listener's three callbacks: the screen of a request head (the API
  /// key, before any body is read), the routes, and the error replies of
  /// the listener itself, all in OpenAI's error format.
  std::optional<http::Reply> screen(const http::Request &head);
  void handle(const http::Request &req, http::Responder &res);
  http::Reply error_reply(int status, const std::string &message);
  /// The server can no longer answer (a tensor-parallel rank died or
  /// froze): /health turns 503 with `reason`, and so does every request.
  void fail(const std::string &reason) {
    std::lock_guard<std::mutex> lock(failed_mu_);
    failed_ = reason;
  }
  void start() { scheduler_.start(); }
  void stop() { scheduler_.stop(); }

private:
  http::Reply error(const std::string &endpoint, const serve::ApiError &e);
  void generate(const http::Request &req, http::Responder &res, bool chat);
  void stream(const serve::ParsedRequest &pr, const std::string &rid,
              const std::shared_ptr<Pending> &pending, http::Responder &res);
  void tokens(const http::Request &req, http::Responder &res, bool tokenize);
  http::Reply models();
  void record_finish(const Pending &p, const RequestEvent &last);

  Scheduler scheduler_;
  std::string api_key_;
  serve::ServeLimits limits_;
  serve::Metrics metrics_;
  std::atomic<uint64_t> next_seed_{std::random_device{}()};
  std::atomic<int64_t> next_response_{1};
  std::mutex failed_mu_;
  std::string failed_; ///< why the server cannot answer ("" while it can)
  const int64_t created_ = int64_t(std::time(nullptr));
};

} // namespace hyrt::serve
