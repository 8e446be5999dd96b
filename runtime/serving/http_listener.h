// The sockets of `hyc serve`: an HTTP/1.1 server whose every cost to a
// client is bounded (http_wire.h parses, this file waits).
//
// One I/O thread receives requests for every open connection at once (poll):
// a slow client costs a slot in its poll set, never a thread, and each
// request must arrive whole within a deadline. A request only reaches a
// worker thread when its head and body are complete; the screen (API key,
// body size) runs on the head before any body byte is read. After the
// response the connection goes back to the I/O thread with whatever the
// client already sent after its request, so pipelined requests are answered
// in order. Past the connection cap a new connection gets a 503 at once.
#pragma once

#include "http_wire.h"

#include "hyrt/status.h"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace hyrt::http {

/// What a client may cost.
struct ListenerOptions {
  std::string host = "127.0.0.1";
  int port = 8000; ///< 0 picks a free port
  size_t workers = 64; ///< requests handled at once
  size_t max_connections = 1024; ///< open at once; past it a 503
  double request_seconds = 10;   ///< first byte of a request to its last
  /// A keep-alive connection with no request is closed after this long. An
  /// idle connection costs a poll slot, no thread, so this can be long; it
  /// must exceed clients' own pool timeouts, or a client reusing a
  /// connection the server is closing at that moment sees a reset.
  double idle_seconds = 60;
  double write_seconds = 10;     ///< a write that makes no progress this long
  int max_requests_per_connection = 1000;
  uint64_t max_body_bytes = 1 << 20;
  HeadLimits head;
};

/// A complete response.
struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  Headers headers;
};

/// Answers one request on its connection; the handler's side.
class Responder {
public:
  Responder(int fd, double write_seconds, bool keep_alive)
      : fd_(fd), write_seconds_(write_seconds), keep_alive_(keep_alive) {}
  /// A whole response.
  void send(const Reply &reply);
  /// A chunked response (server-sent events): the head, then chunks. Each
  /// returns false once the client is gone or a write timed out.
  bool begin_chunks(int status, const std::string &content_type,
                    const Headers &headers = {});
  bool send_chunk(const std::string &data);
  bool end_chunks();
  /// True once the client has closed its side or the connection failed;
  /// bytes of a pipelined next request do not count as gone.
  bool client_gone();

  bool responded() const { return state_ != State::kNothing; }
  /// Whether the connection can carry the next request.
  bool reusable() const {
    return keep_alive_ && !failed_ && state_ == State::kDone;
  }

private:
  enum class State { kNothing, kStreaming, kDone };
  bool write_all(const std::string &bytes);
  int fd_;
  double write_seconds_;
  bool keep_alive_;
  bool failed_ = false;
  State state_ = State::kNothing;
};

/// Decides on a request head before its body is read: a reply refuses it
/// (the connection then closes), nullopt lets it through.
using Screen = std::function<std::optional<Reply>(const Request &head)>;
/// Answers a complete request.
using Handler = std::function<void(const Request &, Responder &)>;
/// The reply for an error the listener finds itself (400, 408, 413, 431,
/// 503, ...), in the API's error format.
using ErrorReply = std::function<Reply(int status, const std::string &message)>;

class Listener {
public:
  Listener(ListenerOptions options, Screen screen, Handler handler,
           ErrorReply error_reply);
  ~Listener();
  Listener(const Listener &) = delete;
  Listener &operator=(const Listener &) = delete;

  /// Binds and listens; `*bound_port` is the port (useful with port 0).
  Status bind(int *bound_port);
  /// Serves until stop(); then closes every connection, lets the handlers
  /// in flight finish and returns.
  void run();
  /// Ends run() soon; callable from any thread.
  void stop();

  /// Connections open now (reading, queued or being answered).
  size_t open_connections() const { return open_.load(); }

private:
  struct Connection;
  void accept_all();
  void receive(Connection *c);
  void advance(std::unique_ptr<Connection> &c);
  void refuse(std::unique_ptr<Connection> &c, int status,
              const std::string &message);
  void close(std::unique_ptr<Connection> &c);
  void expire();
  void take_returned();
  void worker();
  void wake();

  ListenerOptions options_;
  Screen screen_;
  Handler handler_;
  ErrorReply error_reply_;
  int listen_fd_ = -1;
  int wake_fds_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};
  /// Owned by the I/O thread: connections waiting for (more of) a request.
  std::vector<std::unique_ptr<Connection>> reading_;
  /// Complete requests for the workers; connections handed back by them.
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::deque<std::unique_ptr<Connection>> ready_, returned_;
  std::vector<std::thread> workers_;
};

} // namespace hyrt::http
