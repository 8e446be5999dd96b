// HTTP/1.1 request heads from hostile bytes (runtime/serving/http_wire.h):
// every malformed or oversized head is a status naming the problem, never a
// crash, and complete heads parse into what the server routes on.
#include "runtime/serving/http_wire.h"

#include <gtest/gtest.h>

namespace {

using hyrt::http::HeadLimits;
using hyrt::http::HeadStatus;
using hyrt::http::Request;

struct Parsed {
  HeadStatus status;
  Request request;
  size_t head_bytes = 0;
  int code = 0;
  std::string error;
};

Parsed parse(const std::string &bytes, HeadLimits limits = {}) {
  Parsed p;
  p.status = hyrt::http::parse_head(bytes, limits, &p.request, &p.head_bytes,
                                    &p.code, &p.error);
  return p;
}

TEST(HttpWire, CompleteHeadsParse) {
  const std::string head = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\n"
                           "Content-Length: 12\r\nAUTHORIZATION:  Bearer k \r\n\r\n";
  const Parsed p = parse(head + "{\"prompt\":1}GET / HTTP/1.1\r\n");
  ASSERT_EQ(p.status, HeadStatus::kComplete) << p.error;
  EXPECT_EQ(p.head_bytes, head.size());
  EXPECT_EQ(p.request.method, "POST");
  EXPECT_EQ(p.request.path, "/v1/completions");
  EXPECT_EQ(p.request.target, "/v1/completions?x=1");
  EXPECT_EQ(p.request.content_length, 12u);
  EXPECT_EQ(p.request.header("authorization"), "Bearer k");
  EXPECT_TRUE(p.request.keep_alive);
  EXPECT_FALSE(p.request.expect_continue);
  // HTTP/1.0 closes unless it asks; "Connection: close" closes 1.1.
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").request.expect_continue);
  // Lax line ends (LF only) are accepted.
  EXPECT_EQ(parse("GET /health HTTP/1.1\nHost: a\n\n").status, HeadStatus::kComplete);
}

TEST(HttpWire, IncompleteHeadsWait) {
  EXPECT_EQ(parse("").status, HeadStatus::kIncomplete);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n").status, HeadStatus::kIncomplete);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n\r").status, HeadStatus::kIncomplete);
}

TEST(HttpWire, HostileHeadsAreRefusedWithTheirStatus) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / FTP/1.1\r\n\r\n", 505},
      {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
      {"GET\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 12a\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417},
  };
  for (const auto &[bytes, code] : cases) {
    const Parsed p = parse(bytes);
    EXPECT_EQ(p.status, HeadStatus::kBad) << bytes;
    EXPECT_EQ(p.code, code) << bytes << ": " << p.error;
    EXPECT_FALSE(p.error.empty()) << bytes;
  }
  // A claimed 1 TiB body is a length the listener refuses (413), not a
  // parse error: the head itself is fine.
  const Parsed tib = parse("POST / HTTP/1.1\r\nContent-Length: 1099511627776\r\n\r\n");
  EXPECT_EQ(tib.status, HeadStatus::kComplete);
  EXPECT_EQ(tib.request.content_length, 1099511627776u);
}

TEST(HttpWire, HeadSizeAndHeaderCountAreBounded) {
  HeadLimits small;
  small.max_head_bytes = 64;
  small.max_headers = 2;
  // Past the limit without an end: refused before more is read.
  const Parsed endless = parse("GET / HTTP/1.1\r\nX: " + std::string(100, 'a'), small);
  EXPECT_EQ(endless.status, HeadStatus::kBad);
  EXPECT_EQ(endless.code, 431);
  const Parsed many = parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", small);
  EXPECT_EQ(many.code, 431) << many.error;
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", small).status, HeadStatus::kComplete);
}

TEST(HttpWire, ResponsesAndChunks) {
  EXPECT_EQ(hyrt::http::response(404, {{"Content-Type", "application/json"}}, "{}", false),
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
            "Connection: close\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(hyrt::http::chunk("hello, world!!!!!"), "11\r\nhello, world!!!!!\r\n");
  EXPECT_EQ(hyrt::http::chunk(""), "");
  EXPECT_EQ(hyrt::http::last_chunk(), "0\r\n\r\n");
}

} // namespace
