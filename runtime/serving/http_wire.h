// HTTP/1.1 on the wire, as `hyc serve` speaks it: parsing a request head
// from bytes a client sent (every size bounded, every field checked) and
// writing responses. Pure functions over strings, so that a fuzzer and the
// unit tests drive exactly the code the server runs; the sockets are
// http_listener.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hyrt::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

/// One request: its head as parsed, then its body once it has arrived.
struct Request {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< as sent: "/v1/models?x=1"
  std::string path;    ///< the target up to '?'
  int minor_version = 1; ///< HTTP/1.<minor>
  Headers headers;     ///< names lower-cased, values trimmed
  uint64_t content_length = 0;
  bool keep_alive = true; ///< HTTP/1.1 unless "Connection: close" (1.0: opt-in)
  bool expect_continue = false; ///< "Expect: 100-continue"
  std::string body;

  /// The first value of header `lower_name`, or "".
  const std::string &header(std::string_view lower_name) const;
  bool has_header(std::string_view lower_name) const;
};

/// What a request head may cost.
struct HeadLimits {
  size_t max_head_bytes = 16 << 10; ///< request line and headers together
  size_t max_headers = 64;
};

enum class HeadStatus { kIncomplete, kComplete, kBad };

/// Parses the head at the start of `bytes`. kComplete: `*out` holds it and
/// `*head_bytes` its length (the body starts there). kIncomplete: more bytes
/// are needed (and allowed). kBad: `*status` (400, 405, 411, 413, 414, 431,
/// 501, 505) and `*error` say why; the connection must then close.
HeadStatus parse_head(std::string_view bytes, const HeadLimits &limits,
                      Request *out, size_t *head_bytes, int *status,
                      std::string *error);

/// "OK", "Not Found", ... ("Unknown" for codes this server does not send).
const char *reason_phrase(int status);

/// A whole response: status line, headers (Content-Length and Connection
/// added), body.
std::string response(int status, const Headers &headers, std::string_view body,
                     bool keep_alive);

/// The head of a chunked response (Transfer-Encoding: chunked).
std::string chunked_head(int status, const Headers &headers, bool keep_alive);
/// One chunk of a chunked body (empty data gives nothing: use last_chunk).
std::string chunk(std::string_view data);
/// The chunk that ends a chunked body.
std::string last_chunk();

} // namespace hyrt::http
