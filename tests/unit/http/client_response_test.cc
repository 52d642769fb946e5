#include "http/client_response.h"

#include <gtest/gtest.h>

#include <string>

#include "http/client.h"

namespace ix::http {
namespace {

struct Parsed {
  bool ok = false;
  bool done = false;
  int status = 0;
  bool keep_alive = false;
  std::string body;
  std::string error;
};

Parsed parse_in_pieces(const std::string& wire, size_t cut, bool eof = false) {
  ResponseParser p;
  p.reset();
  Parsed out;
  auto on_body = [&](std::string_view b) { out.body.append(b); };
  for (std::string_view piece : {std::string_view(wire).substr(0, cut), std::string_view(wire).substr(cut)}) {
    auto r = p.feed(piece, on_body);
    if (!r) {
      out.error = r.error().message();
      return out;
    }
  }
  if (eof) p.on_eof();
  out.ok = true;
  out.done = p.done();
  out.status = p.status();
  out.keep_alive = p.keep_alive();
  return out;
}

TEST(ClientResponseParser, ChunkedBodyAtEverySplit) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "9\r\ndata: a\n\n\r\n2\r\n\r\n\r\n"
      "7;ext=1\r\ndata: b\r\n"
      "0\r\nX-Trailer: 1\r\n\r\n";
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    Parsed p = parse_in_pieces(wire, cut);
    ASSERT_TRUE(p.ok) << cut << ": " << p.error;
    EXPECT_TRUE(p.done) << cut;
    EXPECT_EQ(p.status, 200);
    EXPECT_TRUE(p.keep_alive);
    EXPECT_EQ(p.body, "data: a\n\n\r\ndata: b") << cut;
  }
}

TEST(ClientResponseParser, ContentLengthAndCloseDelimitedBodies) {
  Parsed p =
      parse_in_pieces("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy!", 20);
  ASSERT_TRUE(p.ok);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.status, 503);
  EXPECT_FALSE(p.keep_alive);
  EXPECT_EQ(p.body, "busy!");
  Parsed q = parse_in_pieces("HTTP/1.0 200 OK\r\n\r\nuntil close", 5, /*eof=*/true);
  ASSERT_TRUE(q.ok);
  EXPECT_TRUE(q.done);
  EXPECT_EQ(q.body, "until close");
  Parsed r = parse_in_pieces("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 30);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(r.done);
}

TEST(ClientResponseParser, TruncatedResponsesAreNotDone) {
  ResponseParser p;
  p.reset();
  auto r = p.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345", [](std::string_view) {});
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(p.done());
  EXPECT_FALSE(p.on_eof());
}

TEST(ClientResponseParser, MalformedInputIsAParseError) {
  for (const char* bad : {"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "garbage\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n"}) {
    Parsed p = parse_in_pieces(bad, 0);
    EXPECT_FALSE(p.ok) << bad;
  }
  ResponseParser p;
  p.reset();
  auto r = p.feed("HTTP/1.1 200 OK\r\n" + std::string(70000, 'a'), [](std::string_view) {});
  EXPECT_FALSE(r.has_value());
}

TEST(ClientUrl, ParsesSchemesPortsAndPaths) {
  auto a = Url::parse("http://127.0.0.1:8000");
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->tls);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8000);
  EXPECT_EQ(a->path, "");
  auto b = Url::parse("https://api.example.com/proxy/");
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->tls);
  EXPECT_EQ(b->port, 443);
  EXPECT_EQ(b->path, "/proxy");
  auto c = Url::parse("http://[::1]:9/");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->origin(), "http://[::1]:9");
  EXPECT_FALSE(Url::parse("ftp://x").has_value());
  EXPECT_FALSE(Url::parse("http://x:0").has_value());
  EXPECT_FALSE(Url::parse("http://:80").has_value());
  EXPECT_FALSE(Url::parse("http://x:99999").has_value());
}

}  // namespace
}  // namespace ix::http
