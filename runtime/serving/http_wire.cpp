// HTTP/1.1 request heads and responses (http_wire.h).
#include "http_wire.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace hyrt::http {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char &c : r)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

/// RFC 9110 token characters (method and header names).
bool is_token(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 32 || u >= 127 || std::string_view("()<>@,;:\\\"/[]?={}").find(c) !=
                                   std::string_view::npos)
      return false;
  }
  return true;
}

HeadStatus bad(int code, std::string message, int *status, std::string *error) {
  *status = code;
  *error = std::move(message);
  return HeadStatus::kBad;
}

/// The end of the head ("\r\n\r\n", or "\n\n" from lax clients) within
/// `bytes`: the offset of the body, or npos.
size_t head_end(std::string_view bytes) {
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (bytes[i] != '\n')
      continue;
    if (bytes[i + 1] == '\n')
      return i + 2;
    if (bytes[i + 1] == '\r' && i + 2 < bytes.size() && bytes[i + 2] == '\n')
      return i + 3;
  }
  return std::string_view::npos;
}

/// Request line: METHOD SP TARGET SP HTTP/1.x
HeadStatus parse_request_line(std::string_view line, Request *out, int *status,
                              std::string *error) {
  const size_t a = line.find(' '), b = line.rfind(' ');
  if (a == std::string_view::npos || a == b)
    return bad(400, "malformed request line", status, error);
  const std::string_view method = line.substr(0, a),
                         target = line.substr(a + 1, b - a - 1),
                         version = line.substr(b + 1);
  if (!is_token(method))
    return bad(400, "malformed method", status, error);
  if (target.empty() || target.front() != '/' ||
      target.find_first_of(" \t") != std::string_view::npos)
    return bad(400, "the request target must be a path starting with '/'",
               status, error);
  if (version.size() != 8 || version.substr(0, 7) != "HTTP/1." ||
      (version[7] != '0' && version[7] != '1'))
    return bad(505, "expected HTTP/1.0 or HTTP/1.1, found '" +
                        std::string(version.substr(0, 16)) + "'",
               status, error);
  out->method = std::string(method);
  out->target = std::string(target);
  out->path = std::string(target.substr(0, target.find('?')));
  out->minor_version = version[7] - '0';
  out->keep_alive = out->minor_version == 1;
  return HeadStatus::kComplete;
}

/// Content-Length: digits only, no sign, at most 19 of them (fits uint64).
bool parse_length(std::string_view v, uint64_t *n) {
  if (v.empty() || v.size() > 19)
    return false;
  uint64_t r = 0;
  for (char c : v) {
    if (c < '0' || c > '9')
      return false;
    r = r * 10 + uint64_t(c - '0');
  }
  *n = r;
  return true;
}

/// The framing headers: length, connection, expectations; a request body
/// must have a Content-Length (no chunked uploads: their size is unknown
/// until they have been read).
HeadStatus check_framing(Request *r, int *status, std::string *error) {
  if (r->has_header("transfer-encoding"))
    return bad(411, "request bodies must carry a Content-Length (found "
                    "Transfer-Encoding: " +
                        r->header("transfer-encoding").substr(0, 64) + ")",
               status, error);
  bool seen_length = false;
  for (const auto &[name, value] : r->headers) {
    if (name != "content-length")
      continue;
    uint64_t n = 0;
    if (!parse_length(value, &n) || (seen_length && n != r->content_length))
      return bad(400, "malformed Content-Length '" + value.substr(0, 32) + "'",
                 status, error);
    r->content_length = n;
    seen_length = true;
  }
  const std::string connection = lower(r->header("connection"));
  if (connection.find("close") != std::string::npos)
    r->keep_alive = false;
  else if (connection.find("keep-alive") != std::string::npos)
    r->keep_alive = true;
  const std::string expect = lower(r->header("expect"));
  if (!expect.empty() && expect != "100-continue")
    return bad(417, "unsupported Expect: " + expect.substr(0, 32), status, error);
  r->expect_continue = !expect.empty();
  return HeadStatus::kComplete;
}

} // namespace

const std::string &Request::header(std::string_view lower_name) const {
  static const std::string kNone;
  for (const auto &[name, value] : headers)
    if (name == lower_name)
      return value;
  return kNone;
}

bool Request::has_header(std::string_view lower_name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto &h) { return h.first == lower_name; });
}

HeadStatus parse_head(std::string_view bytes, const HeadLimits &limits,
                      Request *out, size_t *head_bytes, int *status,
                      std::string *error) {
  const size_t end = head_end(bytes.substr(0, limits.max_head_bytes + 4));
  if (end == std::string_view::npos)
    return bytes.size() > limits.max_head_bytes
               ? bad(431, "request head over " +
                              std::to_string(limits.max_head_bytes) + " bytes",
                     status, error)
               : HeadStatus::kIncomplete;
  Request r;
  std::string_view head = bytes.substr(0, end);
  size_t pos = 0;
  bool first = true;
  while (pos < head.size()) {
    const size_t nl = head.find('\n', pos);
    std::string_view line = trim(head.substr(pos, nl - pos));
    pos = nl + 1;
    if (first) {
      first = false;
      if (line.empty())
        return bad(400, "empty request line", status, error);
      if (HeadStatus s = parse_request_line(line, &r, status, error);
          s != HeadStatus::kComplete)
        return s;
      continue;
    }
    if (line.empty())
      break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return bad(400, "malformed header line", status, error);
    if (r.headers.size() == limits.max_headers)
      return bad(431, "more than " + std::to_string(limits.max_headers) +
                          " headers",
                 status, error);
    r.headers.emplace_back(lower(line.substr(0, colon)),
                           std::string(trim(line.substr(colon + 1))));
  }
  if (HeadStatus s = check_framing(&r, status, error); s != HeadStatus::kComplete)
    return s;
  *out = std::move(r);
  *head_bytes = end;
  return HeadStatus::kComplete;
}

const char *reason_phrase(int status) {
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 411: return "Length Required";
  case 413: return "Content Too Large";
  case 417: return "Expectation Failed";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

namespace {

std::string status_and_headers(int status, const Headers &headers,
                               bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " +
                    reason_phrase(status) + "\r\n";
  for (const auto &[name, value] : headers)
    out += name + ": " + value + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  return out;
}

} // namespace

std::string response(int status, const Headers &headers, std::string_view body,
                     bool keep_alive) {
  std::string out = status_and_headers(status, headers, keep_alive);
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

std::string chunked_head(int status, const Headers &headers, bool keep_alive) {
  return status_and_headers(status, headers, keep_alive) +
         "Transfer-Encoding: chunked\r\n\r\n";
}

std::string chunk(std::string_view data) {
  if (data.empty())
    return {};
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out = size;
  out.append(data);
  out += "\r\n";
  return out;
}

std::string last_chunk() { return "0\r\n\r\n"; }

} // namespace hyrt::http
