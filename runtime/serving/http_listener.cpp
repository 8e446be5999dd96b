// The bounded HTTP/1.1 server of `hyc serve` (http_listener.h).
#include "http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace hyrt::http {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/// Best effort for a reply to a client that is being dropped: what the
/// socket buffer takes now, nothing waited for.
void write_now(int fd, const std::string &bytes) {
  (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::string serialize(const Reply &r, bool keep_alive) {
  Headers h = r.headers;
  h.emplace_back("Content-Type", r.content_type);
  return response(r.status, h, r.body, keep_alive);
}

} // namespace

//===----------------------------------------------------------------------===//
// Responder
//===----------------------------------------------------------------------===//

bool Responder::write_all(const std::string &bytes) {
  if (failed_)
    return false;
  size_t sent = 0;
  auto deadline = after(write_seconds_);
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += size_t(n);
      deadline = after(write_seconds_); // a stall, not a slow stream, fails
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - Clock::now());
      pollfd p{fd_, POLLOUT, 0};
      if (left.count() > 0 && ::poll(&p, 1, int(left.count())) > 0 &&
          !(p.revents & (POLLERR | POLLHUP)))
        continue;
    }
    failed_ = true;
    return false;
  }
  return true;
}

void Responder::send(const Reply &reply) {
  if (state_ != State::kNothing)
    return;
  state_ = State::kDone;
  write_all(serialize(reply, keep_alive_));
}

bool Responder::begin_chunks(int status, const std::string &content_type,
                             const Headers &headers) {
  if (state_ != State::kNothing)
    return false;
  state_ = State::kStreaming;
  Headers h = headers;
  h.emplace_back("Content-Type", content_type);
  return write_all(chunked_head(status, h, keep_alive_));
}

bool Responder::send_chunk(const std::string &data) {
  return state_ == State::kStreaming && (data.empty() || write_all(chunk(data)));
}

bool Responder::end_chunks() {
  if (state_ != State::kStreaming)
    return false;
  state_ = State::kDone;
  return write_all(last_chunk());
}

bool Responder::client_gone() {
  if (failed_)
    return true;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0)
    return false;
  if (p.revents & (POLLERR | POLLHUP | POLLRDHUP))
    return true;
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0; // > 0: the next pipelined request, still there
}

//===----------------------------------------------------------------------===//
// Listener
//===----------------------------------------------------------------------===//

struct Listener::Connection {
  int fd = -1;
  std::string in;         ///< received, not yet consumed
  Request request;        ///< the head once parsed, then the body
  size_t head_bytes = 0;  ///< 0 until the head is parsed
  int served = 0;
  bool eof = false;       ///< the client closed its side
  Clock::time_point deadline;
};

Listener::Listener(ListenerOptions options, Screen screen, Handler handler,
                   ErrorReply error_reply)
    : options_(std::move(options)), screen_(std::move(screen)),
      handler_(std::move(handler)), error_reply_(std::move(error_reply)) {}

Listener::~Listener() {
  if (listen_fd_ >= 0)
    ::close(listen_fd_);
  for (int fd : wake_fds_)
    if (fd >= 0)
      ::close(fd);
}

Status Listener::bind(int *bound_port) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  const std::string port = std::to_string(options_.port);
  if (int rc = getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found))
    return Status::Error("cannot resolve " + options_.host + ": " +
                         gai_strerror(rc));
  std::string why = "no address";
  for (addrinfo *a = found; a && listen_fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (fd >= 0)
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd >= 0 && ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::listen(fd, 1024) == 0) {
      listen_fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0)
    return Status::Error("cannot listen on " + options_.host + ":" + port +
                         ": " + why);
  set_nonblocking(listen_fd_);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr *>(&addr), &len);
  *bound_port = addr.ss_family == AF_INET6
                    ? ntohs(reinterpret_cast<sockaddr_in6 *>(&addr)->sin6_port)
                    : ntohs(reinterpret_cast<sockaddr_in *>(&addr)->sin_port);
  if (::pipe2(wake_fds_, O_NONBLOCK | O_CLOEXEC) != 0)
    return Status::Error(std::string("pipe: ") + std::strerror(errno));
  return Status::Ok();
}

void Listener::wake() {
  const char byte = 0;
  (void)!::write(wake_fds_[1], &byte, 1);
}

void Listener::stop() {
  stopping_ = true;
  wake();
}

void Listener::close(std::unique_ptr<Connection> &c) {
  if (!c)
    return;
  ::close(c->fd);
  c.reset();
  --open_;
}

void Listener::refuse(std::unique_ptr<Connection> &c, int status,
                      const std::string &message) {
  write_now(c->fd, serialize(error_reply_(status, message), false));
  close(c);
}

void Listener::accept_all() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return; // EAGAIN, or a client that left before it was accepted
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->deadline = after(options_.idle_seconds);
    ++open_;
    if (open_.load() > options_.max_connections) {
      refuse(c, 503, "the server has " +
                         std::to_string(options_.max_connections) +
                         " connections open, its limit; try again later");
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    reading_.push_back(std::move(c));
  }
}

void Listener::receive(Connection *c) {
  // Read what the current request can still need, plus room for the start
  // of a pipelined next one; the rest waits in the socket.
  const size_t need =
      c->head_bytes ? c->head_bytes + c->request.content_length
                    : options_.head.max_head_bytes + 4;
  char buf[64 << 10];
  while (c->in.size() < need + sizeof buf) {
    const ssize_t n = ::recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      if (c->in.empty() && c->head_bytes == 0)
        c->deadline = after(options_.request_seconds); // a request began
      c->in.append(buf, size_t(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
      c->eof = true; // a request it sent whole is still answered
    return;
  }
}

void Listener::advance(std::unique_ptr<Connection> &c) {
  if (c->eof && c->in.empty())
    return close(c);
  if (c->head_bytes == 0) {
    int status = 0;
    std::string error;
    switch (parse_head(c->in, options_.head, &c->request, &c->head_bytes,
                       &status, &error)) {
    case HeadStatus::kIncomplete:
      if (c->eof)
        close(c);
      return;
    case HeadStatus::kBad: return refuse(c, status, error);
    case HeadStatus::kComplete: break;
    }
    if (std::optional<Reply> r = screen_(c->request)) {
      write_now(c->fd, serialize(*r, false));
      return close(c);
    }
    if (c->request.content_length > options_.max_body_bytes)
      return refuse(c, 413, "request body of " +
                                std::to_string(c->request.content_length) +
                                " bytes, expected at most " +
                                std::to_string(options_.max_body_bytes) +
                                " (hyc serve --max-body-bytes)");
    if (c->request.expect_continue)
      write_now(c->fd, "HTTP/1.1 100 Continue\r\n\r\n");
  }
  const size_t total = c->head_bytes + c->request.content_length;
  if (c->in.size() < total) {
    if (c->eof)
      close(c);
    return;
  }
  c->request.body = c->in.substr(c->head_bytes, c->request.content_length);
  c->in.erase(0, total);
  c->head_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(c));
  }
  work_cv_.notify_one();
}

void Listener::expire() {
  const auto now = Clock::now();
  for (auto &c : reading_) {
    if (!c || c->deadline > now)
      continue;
    if (c->in.empty() && c->head_bytes == 0)
      close(c); // idle keep-alive: closed quietly
    else
      refuse(c, 408, "the request did not arrive whole within " +
                         std::to_string(int(options_.request_seconds)) + " s");
  }
}

void Listener::take_returned() {
  char drain[256];
  while (::read(wake_fds_[0], drain, sizeof drain) > 0) {
  }
  std::deque<std::unique_ptr<Connection>> back;
  {
    std::lock_guard<std::mutex> lock(mu_);
    back.swap(returned_);
  }
  for (auto &c : back) {
    c->deadline = c->in.empty() ? after(options_.idle_seconds)
                                : after(options_.request_seconds);
    reading_.push_back(std::move(c));
    advance(reading_.back()); // a pipelined request already here
  }
}

void Listener::run() {
  for (size_t i = 0; i < std::max<size_t>(options_.workers, 1); ++i)
    workers_.emplace_back([this] { worker(); });
  std::vector<pollfd> fds;
  while (!stopping_) {
    reading_.erase(std::remove(reading_.begin(), reading_.end(), nullptr),
                   reading_.end());
    fds.assign({{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}});
    auto next = after(1.0);
    for (const auto &c : reading_) {
      fds.push_back({c->fd, POLLIN, 0});
      next = std::min(next, c->deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next - Clock::now());
    if (::poll(fds.data(), fds.size(), int(std::max<int64_t>(wait.count(), 0)) + 1) < 0 &&
        errno != EINTR)
      break;
    const size_t polled = reading_.size();
    for (size_t i = 0; i < polled; ++i)
      if (reading_[i] && (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR))) {
        receive(reading_[i].get());
        advance(reading_[i]);
      }
    if (fds[1].revents & POLLIN)
      take_returned();
    if (fds[0].revents & POLLIN)
      accept_all();
    expire();
  }
  // Stop: no new request starts; those being answered finish.
  ::close(listen_fd_);
  listen_fd_ = -1;
  for (auto &c : reading_)
    close(c);
  reading_.clear();
  work_cv_.notify_all();
  for (std::thread &t : workers_)
    t.join();
  workers_.clear();
  for (auto *q : {&ready_, &returned_})
    for (auto &c : *q)
      close(c);
}

void Listener::worker() {
  while (true) {
    std::unique_ptr<Connection> c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      if (stopping_)
        return; // queued requests are closed unanswered by run()
      c = std::move(ready_.front());
      ready_.pop_front();
    }
    ++c->served;
    const bool keep_alive = c->request.keep_alive &&
                            c->served < options_.max_requests_per_connection;
    Responder responder(c->fd, options_.write_seconds, keep_alive);
    try {
      handler_(c->request, responder);
    } catch (const std::exception &e) {
      responder.send(error_reply_(500, e.what()));
    }
    if (!responder.responded())
      responder.send(error_reply_(500, "the handler gave no response"));
    if (!responder.reusable() || stopping_) {
      close(c);
      continue;
    }
    c->request = Request();
    {
      std::lock_guard<std::mutex> lock(mu_);
      returned_.push_back(std::move(c));
    }
    wake();
  }
}

} // namespace hyrt::http
