// The server's request parser on well-formed, partial and malformed input.
#include "http/server_request.h"

#include <gtest/gtest.h>

#include <string>

namespace ix::http {
namespace {

ParseResult parse(const std::string& data, ServerRequest& request, RequestLimits limits = {}) {
  return parse_request(data, limits, request);
}

TEST(ServerRequestParser, ParsesRequestWithContentLengthBody) {
  ServerRequest request;
  std::string data =
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"
      "{\"a\":1}";
  auto result = parse(data, request);
  ASSERT_EQ(result.state, ParseState::kComplete);
  EXPECT_EQ(result.consumed, data.size());
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/v1/completions");
  EXPECT_EQ(request.query, "x=1");
  EXPECT_EQ(request.body, "{\"a\":1}");
  EXPECT_TRUE(request.keep_alive);
  ASSERT_NE(request.header("content-type"), nullptr);
  EXPECT_EQ(*request.header("content-type"), "application/json");
}

TEST(ServerRequestParser, EveryPrefixIsIncompleteUntilTheLastByte) {
  std::string data = "POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  for (size_t size = 0; size < data.size(); ++size) {
    ServerRequest request;
    auto result = parse(data.substr(0, size), request);
    EXPECT_EQ(result.state, ParseState::kIncomplete) << size;
  }
  ServerRequest request;
  EXPECT_EQ(parse(data, request).state, ParseState::kComplete);
}

TEST(ServerRequestParser, PipelinedRequestsConsumeOnlyTheFirst) {
  std::string first = "GET /a HTTP/1.1\r\n\r\n";
  std::string second = "GET /b HTTP/1.1\r\n\r\n";
  ServerRequest request;
  auto result = parse(first + second, request);
  ASSERT_EQ(result.state, ParseState::kComplete);
  EXPECT_EQ(result.consumed, first.size());
  EXPECT_EQ(request.path, "/a");
}

TEST(ServerRequestParser, DecodesChunkedBodies) {
  std::string data = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\n\r\n";
  ServerRequest request;
  auto result = parse(data, request);
  ASSERT_EQ(result.state, ParseState::kComplete);
  EXPECT_EQ(request.body, "hello!");
  EXPECT_EQ(result.consumed, data.size());
  ServerRequest partial;
  EXPECT_EQ(parse(data.substr(0, data.size() - 3), partial).state, ParseState::kIncomplete);
}

TEST(ServerRequestParser, KeepAliveFollowsVersionAndConnectionHeader) {
  ServerRequest request;
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", request).state, ParseState::kComplete);
  EXPECT_FALSE(request.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\n\r\n", request).state, ParseState::kComplete);
  EXPECT_FALSE(request.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", request).state, ParseState::kComplete);
  EXPECT_TRUE(request.keep_alive);
  EXPECT_EQ(request.version_minor, 0);
}

TEST(ServerRequestParser, ToleratesBareLineFeeds) {
  ServerRequest request;
  auto result = parse("GET /health HTTP/1.1\nHost: x\n\n", request);
  ASSERT_EQ(result.state, ParseState::kComplete);
  EXPECT_EQ(request.path, "/health");
}

TEST(ServerRequestParser, ReportsExpectContinueOnceTheHeadIsIn) {
  ServerRequest request;
  auto result = parse("POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", request);
  EXPECT_EQ(result.state, ParseState::kIncomplete);
  EXPECT_TRUE(result.head_complete);
  EXPECT_TRUE(result.expect_continue);
}

struct MalformedCase {
  const char* name;
  std::string data;
  int status;
};

TEST(ServerRequestParser, MalformedInputGetsTheRightStatus) {
  const MalformedCase cases[] = {
      {"no version", "GET /\r\n\r\n", 400},
      {"extra space", "GET  / HTTP/1.1\r\n\r\n", 400},
      {"bad version", "GET / HTTX/1.1\r\n\r\n", 400},
      {"http2", "GET / HTTP/2.0\r\n\r\n", 505},
      {"bad method char", "G(T / HTTP/1.1\r\n\r\n", 400},
      {"relative target", "GET foo HTTP/1.1\r\n\r\n", 400},
      {"header without colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", 400},
      {"space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
      {"folded header", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400},
      {"bad content length", "POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400},
      {"negative content length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"conflicting lengths", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"length and chunked", "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"unknown coding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      // A list was accepted whenever it named chunked (the gzip coding silently ignored).
      {"gzip then chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"chunked then gzip", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 501},
      {"chunked twice", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"bad chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"binary request line", std::string("GE\0T / HTTP/1.1", 15), 400},
      {"control char in value", "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400},
      {"bad expect", "GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417},
  };
  for (const auto& test_case : cases) {
    ServerRequest request;
    auto result = parse(test_case.data, request);
    EXPECT_EQ(result.state, ParseState::kError) << test_case.name;
    EXPECT_EQ(result.error_status, test_case.status) << test_case.name << ": " << result.error_message;
    EXPECT_FALSE(result.error_message.empty()) << test_case.name;
  }
}

TEST(ServerRequestParser, EnforcesHeadAndBodyLimits) {
  RequestLimits limits;
  limits.max_head_bytes = 1024;
  limits.max_body_bytes = 100;
  ServerRequest request;
  std::string huge_header = "GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n";
  EXPECT_EQ(parse(huge_header, request, limits).error_status, 431);
  // Also before the head is complete: a client that never ends its headers is cut off.
  EXPECT_EQ(parse(huge_header.substr(0, 1500), request, limits).error_status, 431);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", request, limits).error_status, 413);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n", request, limits).error_status, 413);
}

TEST(ServerRequestParser, RandomBytesNeverCrash) {
  // Fuzz-style: mutations of a valid request either parse, wait for more, or fail cleanly.
  const std::string valid = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  int complete = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string data = valid;
    int mutations = 1 + static_cast<int>(next() % 4);
    for (int index = 0; index < mutations; ++index) {
      size_t pos = next() % data.size();
      switch (next() % 3) {
        case 0: data[pos] = static_cast<char>(next() % 256); break;
        case 1: data.erase(pos, 1); break;
        default: data.insert(pos, 1, static_cast<char>(next() % 256)); break;
      }
    }
    ServerRequest request;
    auto result = parse(data, request);
    if (result.state == ParseState::kComplete) {
      ++complete;
      EXPECT_LE(result.consumed, data.size());
    }
    if (result.state == ParseState::kError) {
      EXPECT_GE(result.error_status, 400);
    }
  }
  EXPECT_GT(complete, 0);
}

TEST(ServerRequestParser, StatusReasonsAreKnown) {
  EXPECT_EQ(status_reason(200), "OK");
  EXPECT_EQ(status_reason(404), "Not Found");
  EXPECT_EQ(status_reason(429), "Too Many Requests");
  EXPECT_EQ(status_reason(415), "Unsupported Media Type");
  EXPECT_EQ(status_reason(299), "Success");
}

// Every status sim serve can send has a phrase: --fault-error-codes takes any of 400..599.
TEST(ServerRequestParser, EveryErrorStatusHasAReasonPhrase) {
  for (int status = 400; status <= 599; ++status) {
    EXPECT_NE(status_reason(status), "Unknown") << status;
    EXPECT_FALSE(status_reason(status).empty()) << status;
  }
  EXPECT_EQ(status_reason(499), "Client Error");
  EXPECT_EQ(status_reason(599), "Server Error");
}

}  // namespace
}  // namespace ix::http
