// `hyc serve`: flags, tensor-parallel ranks, signals and the listener around
// the OpenAI-compatible routes of serving/http_server.h.
#include "hyrt/cli/serve.h"

#include "../serving/http_server.h"
#include "../text/text_input.h"
#include "args.h"
#include "common.h"
#include "hyrt/parallel/tensor_parallel.h"
#include "hyrt/text/tokenizer.h"


#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <iostream>
#include <random>
#include <thread>

namespace hyrt {

namespace {

const char kServeUsage[] =
    "usage: hyc serve ART [--host 127.0.0.1] [--port 8000] [--api-key K |\n"
    "                 --api-key-file F] [--max-body-bytes N]\n"
    "                 [--model-name NAME] [--page-size 16] [--kv-pages N]\n"
    "                 [--http-threads 64] [--max-connections 1024]\n"
    "                 [--request-timeout 10]\n"
    "                 [--no-mixed-steps] [--lenient] [--chat-template F]\n"
    "                 [--no-prefix-cache] [--no-verify] [--tp N]\n"
    "  --host H          address to bind (default 127.0.0.1, loopback only)\n"
    "  --port N          port (default 8000; 0 picks a free one)\n"
    "  --api-key K       require 'Authorization: Bearer K' on /v1/* (checked\n"
    "                    before the body is read; an empty key is refused)\n"
    "  --api-key-file F  the key from the first line of file F (keeps it out\n"
    "                    of the process list)\n"
    "  --max-body-bytes N  largest request body (default 1 MiB + 64 bytes\n"
    "                    per position of max_seq_len); a larger one is a 413\n"
    "                    before it is read\n"
    "  --model-name NAME the model id clients name (default: ART's base "
    "name)\n"
    "  --page-size N     KV cache positions per page (default 16)\n"
    "  --kv-pages N      KV cache pages (default: max_seqs x max_seq_len)\n"
    "  --http-threads N  requests answered at once (default 64); requests\n"
    "                    are received for every connection at once\n"
    "  --max-connections N  connections open at once (default 1024); one\n"
    "                    more gets a 503\n"
    "  --request-timeout S  seconds from a request's first byte to its last\n"
    "                    (default 10); a slower one gets a 408\n"
    "  --no-mixed-steps  prefill and decode in separate engine steps\n"
    "  --lenient         ignore request fields OpenAI does not document\n"
    "                    (default: a 400 naming the field, as OpenAI does)\n"
    "  --chat-template F render chat messages with the Jinja template in\n"
    "                    file F instead of the checkpoint's\n"
    "  --no-prefix-cache recompute every prompt (no KV pages shared between\n"
    "                    requests with a common prefix)\n"
    "  --no-verify       skip the weights.bin checksums (faster start)\n"
    "  --tp N            tensor-parallel ranks (the artifact's, hyc compile\n"
    "                    --tp; default its count): one process per rank; rank\n"
    "                    0 serves and schedules, and sends each step to the\n"
    "                    others, which run it on their heads in lockstep\n"
    "Prints 'hyc serve: listening on http://HOST:PORT' once it accepts "
    "connections.\n";

/// The key from --api-key or --api-key-file. An empty --api-key (an unset
/// shell variable) is refused: it used to turn authentication off silently.
Status resolve_api_key(bool key_given, const std::string &key_file,
                       std::string *key) {
  if (key_given && !key_file.empty())
    return Status::Error("--api-key and --api-key-file: give one, not both");
  if (key_given && key->empty())
    return Status::Error("--api-key: expected a non-empty key, found '' (an "
                         "unset variable?); leave the flag out to serve "
                         "without a key");
  if (key_file.empty())
    return Status::Ok();
  std::string text;
  if (Status s = cli::read_regular_file(key_file, 1 << 16, &text); !s.ok())
    return Status::Error("--api-key-file: " + s.message());
  *key = text.substr(0, text.find('\n'));
  while (!key->empty() && std::isspace(static_cast<unsigned char>(key->back())))
    key->pop_back();
  if (key->empty())
    return Status::Error("--api-key-file " + key_file +
                         ": expected the key on the first line, found an "
                         "empty line");
  return Status::Ok();
}

/// True for addresses only this machine can reach.
bool is_loopback(const std::string &host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

/// `hyc serve`'s flags and their defaults.
struct ServeFlags {
  std::string host = "127.0.0.1", api_key, api_key_file, model_name,
              chat_template;
  bool api_key_given = false;
  int64_t max_body_bytes = 0, max_connections = 1024;
  double request_timeout = 10;
  int64_t port = 8000, page_size = 16, kv_pages = 0, http_threads = 64;
  bool no_mixed = false, no_prefix_cache = false, no_verify = false,
       lenient = false;
  int64_t tp = 0;
};

/// Declares every flag of `hyc serve` on `parser`, writing into `f`.
void add_serve_flags(cli::ArgParser &parser, ServeFlags &f) {
  parser.add_int("--tp", &f.tp, 1);
  parser.add_string("--host", &f.host);
  parser.add_int("--port", &f.port, 0, 65535);
  parser.add_string("--api-key", &f.api_key, &f.api_key_given);
  parser.add_string("--api-key-file", &f.api_key_file);
  parser.add_int("--max-body-bytes", &f.max_body_bytes, 1024, int64_t(1) << 34);
  parser.add_string("--model-name", &f.model_name);
  parser.add_int("--page-size", &f.page_size, 1, 1 << 20);
  parser.add_int("--kv-pages", &f.kv_pages, 1);
  parser.add_int("--http-threads", &f.http_threads, 1, 4096);
  parser.add_int("--max-connections", &f.max_connections, 1, 1 << 20);
  parser.add_real("--request-timeout", &f.request_timeout, 0.1, 3600);
  parser.add_switch("--no-mixed-steps", &f.no_mixed);
  parser.add_switch("--no-prefix-cache", &f.no_prefix_cache);
  parser.add_switch("--no-verify", &f.no_verify);
  parser.add_switch("--lenient", &f.lenient);
  parser.add_string("--chat-template", &f.chat_template);
}

} // namespace

int cli_serve_artifact_index(const std::vector<std::string> &args) {
  ServeFlags f;
  cli::ArgParser parser;
  add_serve_flags(parser, f);
  std::vector<std::string> positional;
  std::vector<size_t> at;
  if (!parser.parse(args, &positional, &at).ok() || at.empty())
    return -1;
  return int(at[0]);
}

int cli_serve(const std::vector<std::string> &args, std::ostream &out,
              std::ostream &err) {
  const std::string command = "hyc serve";
  ServeFlags f;
  cli::ArgParser parser;
  add_serve_flags(parser, f);
  std::string &host = f.host, &api_key = f.api_key, &model_name = f.model_name;
  const std::string &api_key_file = f.api_key_file;
  const bool &api_key_given = f.api_key_given;
  const int64_t &max_body_bytes = f.max_body_bytes, &max_connections = f.max_connections;
  const double &request_timeout = f.request_timeout;
  const int64_t &port = f.port, &page_size = f.page_size, &kv_pages = f.kv_pages,
                &http_threads = f.http_threads;
  const bool &no_mixed = f.no_mixed, &no_prefix_cache = f.no_prefix_cache,
             &no_verify = f.no_verify;
  const int64_t &tp_flag = f.tp;
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
  if (Status s = resolve_api_key(api_key_given, api_key_file, &api_key); !s.ok())
    return cli::usage_error(err, command, s.message(), kServeUsage);
  if (api_key.empty() && !is_loopback(host))
    err << command << ": warning: listening on " << host
        << " without an API key: anyone who can reach it can use it "
           "(--api-key or --api-key-file)\n";
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
  const std::string who =
      tp.rank > 0 ? "rank " + std::to_string(tp.rank) + ": " : "";
  auto fail = [&](const std::string &message) {
    const int rc = cli::runtime_error(err, who + command, message);
    (void)finish_ranks(&tp, false, rc,
                       (tp.rank > 0 ? who : "rank 0: ") + message);
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
  std::string chat_template;
  if (!f.chat_template.empty())
    if (Status s = cli::read_regular_file(f.chat_template, 1 << 20, &chat_template);
        !s.ok())
      return fail("--chat-template: " + s.message());
  serve::HttpServer server(session.engine.get(), session.artifact.get(),
                           model_name, api_key, so, f.lenient, chat_template);
  http::ListenerOptions lo;
  lo.host = host;
  lo.port = int(port);
  lo.workers = size_t(http_threads);
  lo.max_connections = size_t(max_connections);
  lo.request_seconds = request_timeout;
  // Default: room for a prompt of max_seq_len positions written out as JSON
  // text (64 bytes a position covers escapes and chat framing) plus 1 MiB.
  lo.max_body_bytes =
      max_body_bytes > 0
          ? uint64_t(max_body_bytes)
          : (uint64_t(1) << 20) +
                64 * uint64_t(session.artifact->manifest().limits.max_seq_len);
  http::Listener http(
      lo, [&](const http::Request &head) { return server.screen(head); },
      [&](const http::Request &r, http::Responder &res) { server.handle(r, res); },
      [&](int status, const std::string &message) {
        return server.error_reply(status, message);
      });
  int bound = 0;
  if (Status s = http.bind(&bound); !s.ok())
    return fail(s.message());
  server.start();
  // On SIGINT / SIGTERM: no new request is taken, and the scheduler ends
  // the ones in flight (cancelled), so their handlers return at once.
  std::atomic<bool> signalled{false};
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    signalled = true;
    // A request's text in a pattern that backtracks would hold its handler
    // (and so the exit) for the rest of its regex budget: stop that now.
    abandon_text_work();
    http.stop();
    server.stop();
  });
  const Manifest &m = session.artifact->manifest();
  out << command << ": listening on http://" << host << ":" << bound
      << " (model '" << model_name << "', max_seq_len " << m.limits.max_seq_len
      << ", max_seqs " << m.limits.max_seqs << ", max_batch_tokens "
      << m.limits.max_batch_tokens << ", "
      << session.engine->kv_cache().config().num_pages << " KV pages of "
      << page_size << ")" << std::endl;
  // A rank that dies or freezes while the server is idle would be found
  // only at the next step (a frozen one at the collective deadline,
  // minutes): rank 0 looks at its ranks five times a second, and on a
  // failure turns /health to 503 for 2 s, then stops, naming the rank.
  std::atomic<bool> serving{true};
  std::string rank_failure; // written by rank_watch, read after its join
  std::thread rank_watch;
  if (tp.rank == 0 && tp.size > 1)
    rank_watch = std::thread([&] {
      while (serving) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        std::string why = check_ranks(tp);
        if (why.empty())
          continue;
        rank_failure = why;
        err << command << ": " << why << "; /health answers 503, stopping"
            << std::endl;
        server.fail(why);
        std::this_thread::sleep_for(std::chrono::seconds(2));
        http.stop();
        server.stop();
        return;
      }
    });
  http.run(); // returns after stop(), or when polling itself fails
  serving = false;
  if (rank_watch.joinable())
    rank_watch.join();
  if (!signalled)
    pthread_kill(watcher.native_handle(), SIGTERM); // still in sigwait
  watcher.join();
  server.stop();
  if (!rank_failure.empty()) {
    // The group is broken: a stopped rank would hold any collective until
    // its deadline, so no rank is asked to stop; they are ended.
    for (pid_t child : tp.children)
      ::kill(child, SIGKILL);
    (void)finish_ranks(&tp, false, cli::kExitOk, rank_failure);
    return cli::runtime_error(err, command, rank_failure);
  }
  // The other ranks run no step after this one; then they exit.
  Status stopped = stop_followers(&tp);
  Status ranks =
      finish_ranks(&tp, stopped.ok(), cli::kExitOk, "rank 0 stopped");
  if (!stopped.ok())
    return cli::runtime_error(err, command, stopped.message());
  return ranks.ok() ? cli::kExitOk
                    : cli::runtime_error(err, command, ranks.message());
}

} // namespace hyrt

extern "C" int hyrt_cli_serve(int argc, char **argv) {
  return hyrt::cli_serve(hyrt::cli::args_after_command(argc, argv), std::cout,
                         std::cerr);
}
