// `hyc serve`: an OpenAI-compatible HTTP server (cpp-httplib) over one
// artifact, with a Scheduler doing continuous batching behind it.
#include "hyrt/serve.h"

#include "cli_args.h"
#include "cli_common.h"
#include "serve_api.h"
#include "serve_metrics.h"
#include "hyrt/tensor_parallel.h"

#include <httplib.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <random>
#include <thread>

namespace hyrt {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char kServeUsage[] =
    "usage: hyc serve ART [--host 127.0.0.1] [--port 8000] [--api-key K]\n"
    "                 [--model-name NAME] [--page-size 16] [--kv-pages N]\n"
    "                 [--http-threads 64] [--no-mixed-steps]\n"
    "                 [--no-prefix-cache] [--no-verify] [--tp N]\n"
    "  --host H          address to bind (default 127.0.0.1, loopback only)\n"
    "  --port N          port (default 8000; 0 picks a free one)\n"
    "  --api-key K       require 'Authorization: Bearer K' on /v1/*\n"
    "  --model-name NAME the model id clients name (default: ART's base "
    "name)\n"
    "  --page-size N     KV cache positions per page (default 16)\n"
    "  --kv-pages N      KV cache pages (default: max_seqs x max_seq_len)\n"
    "  --http-threads N  connections served at once (default 64)\n"
    "  --no-mixed-steps  prefill and decode in separate engine steps\n"
    "  --no-prefix-cache recompute every prompt (no KV pages shared between\n"
    "                    requests with a common prefix)\n"
    "  --no-verify       skip the weights.bin checksums (faster start)\n"
    "  --tp N            tensor-parallel ranks (the artifact's, hyc compile\n"
    "                    --tp; default its count): one process per rank; rank\n"
    "                    0 serves and schedules, and sends each step to the\n"
    "                    others, which run it on their heads in lockstep\n"
    "Prints 'hyc serve: listening on http://HOST:PORT' once it accepts "
    "connections.\n";

/// Events of one request, handed from the scheduler thread to the HTTP
/// thread that answers it.
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<RequestEvent> events;
  bool finished = false;
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
    finished = finished || e.finished;
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

class Server {
public:
  Server(cli::Session *session, std::string model_name, std::string api_key,
         SchedulerOptions so)
      : session_(session), scheduler_(session->engine.get(),
                                      session->artifact->tokenizer(), so),
        api_key_(std::move(api_key)) {
    const Manifest &m = session->artifact->manifest();
    const Tokenizer *tok = session->artifact->tokenizer();
    limits_.model_name = std::move(model_name);
    limits_.max_seq_len = m.limits.max_seq_len;
    limits_.tokenizer = tok;
    limits_.bos_id = tok ? tok->bos_id() : m.model.bos_token_id;
    limits_.eos_id = tok ? tok->eos_id() : m.model.eos_token_id;
    // The checkpoint's chat template, compiled once (a template the
    // renderer cannot run falls back to the plain format, with a warning).
    if (tok && !tok->data().chat_template.empty()) {
      auto t = std::make_shared<ChatTemplate>();
      if (Status st = t->compile(tok->data().chat_template); st.ok())
        limits_.chat_template = std::move(t);
      else
        std::fprintf(stderr, "hyc serve: warning: chat template not used (%s); chat "
                     "messages are rendered as \"role: content\" lines\n",
                     st.message().c_str());
    }
  }

  void install(httplib::Server &http);
  void start() { scheduler_.start(); }
  void stop() { scheduler_.stop(); }

private:
  void reply_error(httplib::Response &res, const std::string &endpoint,
                   const serve::ApiError &e) {
    res.status = e.status;
    res.set_content(e.body().dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    metrics_.count_response(endpoint, e.status);
  }
  bool authorized(const httplib::Request &req, httplib::Response &res,
                  const std::string &endpoint);
  void generate(const httplib::Request &req, httplib::Response &res,
                bool chat);
  void record_finish(const Pending &p, const RequestEvent &last);
  json chunk(const serve::ParsedRequest &pr, const std::string &id,
             const std::string &delta, const json &finish, bool first) const;

  cli::Session *session_;
  Scheduler scheduler_;
  std::string api_key_;
  serve::ServeLimits limits_;
  serve::Metrics metrics_;
  std::atomic<uint64_t> next_seed_{std::random_device{}()};
  std::atomic<int64_t> next_response_{1};
  const int64_t created_ = int64_t(std::time(nullptr));
};

bool Server::authorized(const httplib::Request &req, httplib::Response &res,
                        const std::string &endpoint) {
  if (api_key_.empty() ||
      req.get_header_value("Authorization") == "Bearer " + api_key_)
    return true;
  serve::ApiError e;
  e.status = 401;
  e.message = "missing or wrong API key (expected 'Authorization: Bearer "
              "<key>')";
  e.code = "invalid_api_key";
  reply_error(res, endpoint, e);
  return false;
}

void Server::record_finish(const Pending &p, const RequestEvent &last) {
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

json Server::chunk(const serve::ParsedRequest &pr, const std::string &id,
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

void Server::generate(const httplib::Request &req, httplib::Response &res,
                      bool chat) {
  const std::string endpoint = chat ? "chat" : "completions";
  if (!authorized(req, res, endpoint))
    return;
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
  const std::string rid = (chat ? "chatcmpl-" : "cmpl-") +
                          std::to_string(next_response_++);
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
      res.set_content(err.body().dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
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
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
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
          const std::string line = "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
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

void Server::install(httplib::Server &http) {
  http.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
    res.set_content("{\"status\":\"ok\"}", "application/json");
    metrics_.count_response("health", 200);
  });
  http.Get("/metrics", [this](const httplib::Request &,
                              httplib::Response &res) {
    res.set_content(metrics_.render(scheduler_.stats()),
                    "text/plain; version=0.0.4");
  });
  http.Get("/v1/models", [this](const httplib::Request &req,
                                httplib::Response &res) {
    if (!authorized(req, res, "models"))
      return;
    json model = {{"id", limits_.model_name},
                  {"object", "model"},
                  {"created", created_},
                  {"owned_by", "hyc"},
                  {"max_model_len", limits_.max_seq_len}};
    res.set_content(json{{"object", "list"}, {"data", json::array({model})}}
                        .dump(-1, ' ', false, json::error_handler_t::replace),
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
  auto not_found = [this](const httplib::Request &req,
                          httplib::Response &res) {
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

} // namespace

int cli_serve(const std::vector<std::string> &args, std::ostream &out,
              std::ostream &err) {
  const std::string command = "hyc serve";
  std::string host = "127.0.0.1", api_key, model_name;
  int64_t port = 8000, page_size = 16, kv_pages = 0, http_threads = 64;
  bool no_mixed = false, no_prefix_cache = false, no_verify = false;
  int64_t tp_flag = 0;
  cli::ArgParser parser;
  parser.add_int("--tp", &tp_flag, 1);
  parser.add_string("--host", &host);
  parser.add_int("--port", &port, 0, 65535);
  parser.add_string("--api-key", &api_key);
  parser.add_string("--model-name", &model_name);
  parser.add_int("--page-size", &page_size, 1, 1 << 20);
  parser.add_int("--kv-pages", &kv_pages, 1);
  parser.add_int("--http-threads", &http_threads, 1, 4096);
  parser.add_switch("--no-mixed-steps", &no_mixed);
  parser.add_switch("--no-prefix-cache", &no_prefix_cache);
  parser.add_switch("--no-verify", &no_verify);
  for (const std::string &a : args)
    if (a == "--help" || a == "-h") {
      out << kServeUsage;
      return cli::kExitOk;
    }
  std::vector<std::string> positional;
  if (Status s = parser.parse(args, &positional); !s.ok())
    return cli::usage_error(err, command, s.message(), kServeUsage);
  if (positional.size() != 1)
    return cli::usage_error(err, command,
                            positional.empty()
                                ? "missing the artifact directory ART"
                                : "unexpected argument '" + positional[1] + "'",
                            kServeUsage);
  if (model_name.empty()) {
    std::string dir = positional[0];
    while (dir.size() > 1 && dir.back() == '/')
      dir.pop_back();
    model_name = dir.substr(dir.find_last_of('/') + 1);
  }

  // Tensor parallel: ranks 1..N-1 start here, before any thread exists,
  // and follow rank 0's steps until it stops them.
  TensorParallel tp;
  tp.follower_waits = true;
  if (Status s = start_ranks(positional[0], tp_flag, &tp); !s.ok())
    return cli::runtime_error(err, command, s.message());
  // A rank's error, printed first (a rank > 0 exits in finish_ranks) and
  // sent to the others so that they stop at once.
  const std::string who = tp.rank > 0 ? "rank " + std::to_string(tp.rank) + ": " : "";
  auto fail = [&](const std::string &message) {
    const int rc = cli::runtime_error(err, who + command, message);
    (void)finish_ranks(&tp, false, rc, (tp.rank > 0 ? who : "rank 0: ") + message);
    return rc;
  };
  if (Status s = join_ranks(nullptr, &tp); !s.ok())
    return fail(s.message());

  // SIGINT / SIGTERM are blocked in every rank (every thread started later
  // inherits the mask). Rank 0 takes them with one sigwait thread and ends
  // the server cleanly; the other ranks leave when rank 0 stops them (or
  // dies), not before it has finished its last step, though Ctrl-C reaches
  // the whole process group.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  EngineOptions eo;
  eo.page_size = page_size;
  eo.num_pages = kv_pages;
  cli::Session session;
  ArtifactOptions ao;
  ao.verify_weights = !no_verify;
  if (Status s = cli::open_session(tp.dir, ao, eo, 0, &session); !s.ok())
    return fail(s.message());
  if (Status s = join_ranks(session.artifact.get(), &tp); !s.ok())
    return fail(s.message());
  if (tp.rank > 0) { // runs rank 0's steps until it stops them
    if (Status s = follow_steps(session.engine.get(), &tp); !s.ok())
      return fail(s.message());
    (void)finish_ranks(&tp, true, cli::kExitOk);
    return cli::kExitOk; // not reached: finish_ranks exits a rank > 0
  }
  lead_steps(session.engine.get(), &tp);
  SchedulerOptions so;
  so.mixed_steps = !no_mixed;
  so.prefix_cache = !no_prefix_cache;
  Server server(&session, model_name, api_key, so);
  httplib::Server http;
  const size_t threads = size_t(http_threads);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.install(http);
  const int bound = port == 0 ? http.bind_to_any_port(host)
                              : (http.bind_to_port(host, int(port)) ? int(port)
                                                                    : -1);
  if (bound < 0)
    return fail("cannot listen on " + host + ":" + std::to_string(port));
  server.start();
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    http.stop();
  });
  const Manifest &m = session.artifact->manifest();
  out << command << ": listening on http://" << host << ":" << bound
      << " (model '" << model_name << "', max_seq_len " << m.limits.max_seq_len
      << ", max_seqs " << m.limits.max_seqs << ", max_batch_tokens "
      << m.limits.max_batch_tokens << ", "
      << session.engine->kv_cache().config().num_pages << " KV pages of "
      << page_size << ")" << std::endl;
  const bool listened = http.listen_after_bind();
  // listen_after_bind returns after stop(); wake the watcher if it is
  // still waiting (the listener failed on its own).
  if (watcher.joinable()) {
    pthread_kill(watcher.native_handle(), SIGTERM);
    watcher.join();
  }
  server.stop();
  // The other ranks run no step after this one; then they exit.
  Status stopped = stop_followers(&tp);
  Status ranks = finish_ranks(&tp, stopped.ok(), cli::kExitOk, "rank 0 stopped");
  if (!listened)
    return cli::runtime_error(err, command, "the listener failed");
  if (!stopped.ok())
    return cli::runtime_error(err, command, stopped.message());
  return ranks.ok() ? cli::kExitOk : cli::runtime_error(err, command, ranks.message());
}

} // namespace hyrt

extern "C" int hyrt_cli_serve(int argc, char **argv) {
  return hyrt::cli_serve(hyrt::cli::args_after_command(argc, argv), std::cout,
                         std::cerr);
}
