// HttpServer conformance over real loopback sockets: keep-alive, framing, streaming with
// backpressure and wake-ups, protocol errors, timeouts, aborts.
#include "http/server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "support/server_process.h"

namespace ix::http {
namespace {

using testing::make_get;
using testing::make_post;
using testing::RawHttpClient;
using testing::RawResponse;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Streams `count` numbered lines, `per_pull` at a time; kWait between pulls when `gap_ms` > 0.
class CountingSource : public BodySource {
 public:
  CountingSource(int count, int per_pull, int64_t gap_ms, std::atomic<int>* aborts)
      : count_(count), per_pull_(per_pull), gap_ms_(gap_ms), aborts_(aborts) {}
  PullResult pull(std::string& out, size_t, int64_t now) override {
    for (int index = 0; index < per_pull_ && sent_ < count_; ++index) out += "line " + std::to_string(sent_++) + "\n";
    if (sent_ == count_) return {PullStatus::kEnd, 0};
    if (gap_ms_ > 0) return {PullStatus::kWait, now + gap_ms_ * 1'000'000};
    return {PullStatus::kMore, 0};
  }
  void on_abort() override {
    if (aborts_) aborts_->fetch_add(1);
  }

 private:
  int count_;
  int per_pull_;
  int64_t gap_ms_;
  int sent_ = 0;
  std::atomic<int>* aborts_;
};

// Sends "tick" each time it is woken (from another thread); ends after `count` ticks.
class WokenSource : public BodySource {
 public:
  explicit WokenSource(std::shared_ptr<std::atomic<int>> ticks, int count) : ticks_(std::move(ticks)), count_(count) {}
  PullResult pull(std::string& out, size_t, int64_t) override {
    int available = ticks_->load();
    while (sent_ < available && sent_ < count_) {
      out += "tick\n";
      ++sent_;
    }
    return sent_ == count_ ? PullResult{PullStatus::kEnd, 0} : PullResult{PullStatus::kWait, 0};
  }

 private:
  std::shared_ptr<std::atomic<int>> ticks_;
  int count_;
  int sent_ = 0;
};

class AbortingSource : public BodySource {
 public:
  PullResult pull(std::string& out, size_t, int64_t) override {
    out += "partial";
    return {PullStatus::kAbort, 0};
  }
};

struct Fixture {
  std::unique_ptr<HttpServer> server;
  std::atomic<int> aborts{0};
  std::atomic<int> requests{0};
  std::mutex parked_mutex;
  std::shared_ptr<Responder> parked;  // /parked's, never answered by the handler

  explicit Fixture(ServerOptions options = {}) {
    options.threads = 2;
    auto started = HttpServer::start(options, [this](ServerRequest& request, RequestContext& context) {
      requests.fetch_add(1);
      return handle(request, context);
    });
    EXPECT_TRUE(started) << started.error().message();
    server = std::move(*started);
  }

  ServerResponse handle(ServerRequest& request, RequestContext& context) {
    ServerResponse response;
    if (request.path == "/echo") {
      response.body = request.method + " " + request.target + " " + request.body;
      response.content_type = "text/plain";
    } else if (request.path == "/stream") {
      response.content_type = "text/event-stream";
      response.source = std::make_unique<CountingSource>(1000, 10, 0, &aborts);
    } else if (request.path == "/slow-stream") {
      response.source = std::make_unique<CountingSource>(5, 1, 40, &aborts);
    } else if (request.path == "/forever") {
      response.source = std::make_unique<CountingSource>(1 << 30, 1, 1000, &aborts);
    } else if (request.path == "/buffered") {
      response.source = std::make_unique<CountingSource>(3, 1, 10, &aborts);
      response.body_mode = BodyMode::kBuffered;
    } else if (request.path == "/woken") {
      auto ticks = std::make_shared<std::atomic<int>>(0);
      std::shared_ptr<Waker> waker = context.waker();
      response.source = std::make_unique<WokenSource>(ticks, 3);
      std::thread([ticks, waker] {
        for (int index = 0; index < 3; ++index) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          ticks->fetch_add(1);
          waker->wake();
        }
      }).detach();
    } else if (request.path == "/abort") {
      response.source = std::make_unique<AbortingSource>();
    } else if (request.path == "/drop") {
      response.drop_connection = true;
    } else if (request.path == "/throw") {
      throw std::runtime_error("handler bug");
    } else if (request.path == "/throw-escapes") {
      throw std::runtime_error("bug \x1b[31m\nfake.yaml:1:1: error");
    } else if (request.path == "/deferred") {
      // Answered from another thread, the way sim serve answers after tokenizing off the loop.
      std::shared_ptr<Responder> responder = context.defer();
      std::string body = request.body;
      std::thread([responder, body] {
        responder->respond([body](RequestContext&) {
          ServerResponse later;
          later.content_type = "text/plain";
          later.body = "later: " + body;
          return later;
        });
      }).detach();
      return ServerResponse::later();
    } else if (request.path == "/parked") {
      std::lock_guard lock(parked_mutex);
      parked = context.defer();
      return ServerResponse::later();
    } else {
      response.status = 404;
      response.body = openai_error_json(404, "no route", "NotFoundError");
    }
    return response;
  }

  uint16_t port() const { return server->port(); }
};

RawHttpClient connect(uint16_t port) {
  auto client = RawHttpClient::connect(port);
  EXPECT_TRUE(client) << client.error().message();
  return std::move(*client);
}

TEST(HttpServer, KeepAliveServesManyRequestsOnOneConnection) {
  Fixture fixture;
  auto client = connect(fixture.port());
  for (int index = 0; index < 20; ++index) {
    ASSERT_TRUE(client.send(make_post("/echo", "body" + std::to_string(index))));
    auto response = client.read_response();
    ASSERT_TRUE(response) << response.error().message();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->header("content-length"), std::to_string(response->body.size()));
    EXPECT_EQ(response->body, "POST /echo body" + std::to_string(index));
    EXPECT_TRUE(response->header("connection").empty());
  }
  EXPECT_EQ(fixture.requests.load(), 20);
}

TEST(HttpServer, ListensOnAHostNameAndNamesAnUnknownOne) {
  ServerOptions options;
  options.host = "localhost";
  Fixture fixture(options);
  ASSERT_TRUE(fixture.server);
  auto client = connect(fixture.port());  // 127.0.0.1
  ASSERT_TRUE(client.send(make_post("/echo", "hi")));
  auto response = client.read_response();
  ASSERT_TRUE(response) << response.error().message();
  EXPECT_EQ(response->body, "POST /echo hi");

  options.host = "no-such-host.invalid";
  auto failed = HttpServer::start(options, [](ServerRequest&, RequestContext&) { return ServerResponse{}; });
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("cannot listen on http://no-such-host.invalid:0"), std::string::npos)
      << failed.error().message();
}

// An IPv6 address is named in brackets (it read "cannot listen on ::1:PORT").
TEST(HttpServer, AnAddressInUseIsNamedAsAUrl) {
  ServerOptions options;
  options.host = "::1";
  auto first = HttpServer::start(options, [](ServerRequest&, RequestContext&) { return ServerResponse{}; });
  if (!first) GTEST_SKIP() << "no IPv6 loopback here: " << first.error().message();
  options.port = (*first)->port();
  auto second = HttpServer::start(options, [](ServerRequest&, RequestContext&) { return ServerResponse{}; });
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("cannot listen on http://[::1]:" + std::to_string(options.port) + ": "),
            std::string::npos)
      << second.error().message();
}

// A request's arrival is when its first bytes reached the socket (the kernel's receive
// timestamp), not when the loop got to read them nor when its last byte came.
TEST(HttpServer, ARequestArrivesWhenItsFirstBytesReachTheSocketEvenWhileTheLoopIsBusy) {
  ServerOptions options;
  options.threads = 1;  // one loop: a blocking handler keeps every connection waiting
  auto started = HttpServer::start(options, [](ServerRequest& request, RequestContext&) {
    ServerResponse response;
    if (request.path == "/block") std::this_thread::sleep_for(std::chrono::milliseconds(80));
    response.body = std::to_string(request.arrived_ns) + " " + std::to_string(request.received_ns);
    return response;
  });
  ASSERT_TRUE(started) << started.error().message();
  auto server = std::move(*started);
  auto times = [](const RawResponse& response) {
    const auto space = response.body.find(' ');
    return std::pair<int64_t, int64_t>{std::stoll(response.body.substr(0, space)),
                                       std::stoll(response.body.substr(space + 1))};
  };

  // Sent in two parts 50 ms apart: arrived with the first, received with the second.
  auto split = connect(server->port());
  const std::string request = make_get("/times");
  const int64_t first_sent = now_ns();
  ASSERT_TRUE(split.send(request.substr(0, 10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t second_sent = now_ns();
  ASSERT_TRUE(split.send(request.substr(10)));
  auto response = split.read_response();
  ASSERT_TRUE(response) << response.error().message();
  auto [arrived, received] = times(*response);
  EXPECT_GE(arrived, first_sent);
  EXPECT_LT(arrived, first_sent + 20'000'000);
  EXPECT_GE(received, second_sent);

  // While the only loop sleeps in a handler, another request's bytes wait in its socket: the
  // loop reads them ~70 ms later, but they arrived when they were sent.
  auto blocker = connect(server->port());
  auto waiting = connect(server->port());
  ASSERT_TRUE(blocker.send(make_get("/block")));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int64_t sent = now_ns();
  ASSERT_TRUE(waiting.send(make_get("/times")));
  auto late = waiting.read_response();
  ASSERT_TRUE(late) << late.error().message();
  auto [late_arrived, late_received] = times(*late);
  EXPECT_GE(late_arrived, sent);
  EXPECT_LT(late_arrived, sent + 20'000'000) << "stamped by the kernel, not by the blocked loop";
  EXPECT_GE(late_received, sent + 40'000'000) << "the loop was blocked: the test did not test anything";
  ASSERT_TRUE(blocker.read_response());
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/echo?a") + make_get("/stream") + make_get("/echo?b")));
  auto first = client.read_response();
  auto second = client.read_response();
  auto third = client.read_response();
  ASSERT_TRUE(first && second && third);
  EXPECT_EQ(first->body, "GET /echo?a ");
  EXPECT_TRUE(second->chunked);
  EXPECT_TRUE(second->complete);
  EXPECT_EQ(third->body, "GET /echo?b ");
}

TEST(HttpServer, StreamsChunkedBodiesCompletely) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/stream")));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("content-type"), "text/event-stream");
  EXPECT_TRUE(response->chunked);
  ASSERT_TRUE(response->complete);
  EXPECT_TRUE(response->header("content-length").empty());
  EXPECT_EQ(response->body.find("line 0\n"), 0u);
  EXPECT_NE(response->body.find("line 999\n"), std::string::npos);
  // The connection stays usable after a streamed response.
  ASSERT_TRUE(client.send(make_get("/echo")));
  auto next = client.read_response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

TEST(HttpServer, TimedPullsArriveAsSeparateChunksOnSchedule) {
  Fixture fixture;
  auto client = connect(fixture.port());
  int64_t sent = now_ns();
  ASSERT_TRUE(client.send(make_get("/slow-stream")));
  auto response = client.read_response();
  ASSERT_TRUE(response && response->complete);
  ASSERT_EQ(response->chunks.size(), 5u);
  // Four 40 ms waits between five pulls.
  double elapsed_ms = static_cast<double>(response->chunk_times_ns.back() - sent) / 1e6;
  EXPECT_GE(elapsed_ms, 150.0);
  EXPECT_LT(elapsed_ms, 2000.0);
}

TEST(HttpServer, WakerFromAnotherThreadDrivesTheStream) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/woken")));
  auto response = client.read_response();
  ASSERT_TRUE(response && response->complete);
  EXPECT_EQ(response->body, "tick\ntick\ntick\n");
}

TEST(HttpServer, BufferedBodiesGetContentLength) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/buffered")));
  auto response = client.read_response();
  ASSERT_TRUE(response && response->complete);
  EXPECT_FALSE(response->chunked);
  EXPECT_EQ(response->header("content-length"), "21");
  EXPECT_EQ(response->body, "line 0\nline 1\nline 2\n");
}

// Everything the peer sends until it closes the connection (or `timeout_s` passes).
std::string read_until_close(RawHttpClient& client, double timeout_s = 5.0) {
  std::string bytes;
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  char buffer[4096];
  while (now_ns() < deadline) {
    pollfd poll_fd{client.fd(), POLLIN, 0};
    if (::poll(&poll_fd, 1, 50) <= 0) continue;
    const ssize_t got = ::recv(client.fd(), buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    bytes.append(buffer, static_cast<size_t>(got));
  }
  return bytes;
}

TEST(HttpServer, HeadGetsTheHeadWithoutTheBodyAndKeepsTheConnectionInStep) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(
      client.send("HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n"
                  "HEAD /nothing HTTP/1.1\r\nHost: x\r\n\r\n"
                  "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string bytes = read_until_close(client);
  // Content-Length is what GET would send ("HEAD /echo " is 11 bytes), but no body follows: the
  // next response starts right after the blank line.
  const size_t first_end = bytes.find("\r\n\r\n");
  ASSERT_NE(first_end, std::string::npos) << bytes;
  EXPECT_NE(bytes.substr(0, first_end).find("content-length: 11"), std::string::npos) << bytes;
  EXPECT_EQ(bytes.compare(first_end + 4, 13, "HTTP/1.1 404 "), 0) << bytes;
  const size_t second_end = bytes.find("\r\n\r\n", first_end + 4);
  ASSERT_NE(second_end, std::string::npos) << bytes;
  EXPECT_EQ(bytes.compare(second_end + 4, 13, "HTTP/1.1 200 "), 0) << bytes;
  EXPECT_TRUE(bytes.ends_with("\r\n\r\nGET /echo ")) << bytes;
}

TEST(HttpServer, Http10StreamEndsAtClose) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send("GET /slow-stream HTTP/1.0\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_FALSE(response->chunked);
  EXPECT_TRUE(response->complete);
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_EQ(response->body, "line 0\nline 1\nline 2\nline 3\nline 4\n");
}

TEST(HttpServer, ConnectionCloseIsHonoured) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send("GET /echo HTTP/1.1\r\nConnection: close\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(client.wait_closed(2.0));
}

TEST(HttpServer, MalformedRequestGets400JsonAndClose) {
  Fixture fixture;
  for (const std::string& bad : {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/1.1\r\nNoColon\r\n\r\n"),
                                 std::string("GET / HTTP/9.9\r\n\r\n")}) {
    auto client = connect(fixture.port());
    ASSERT_TRUE(client.send(bad));
    auto response = client.read_response();
    ASSERT_TRUE(response) << bad;
    EXPECT_GE(response->status, 400) << bad;
    EXPECT_NE(response->body.find("\"error\""), std::string::npos) << response->body;
    EXPECT_EQ(response->header("content-type"), "application/json");
    EXPECT_TRUE(client.wait_closed(2.0));
  }
  EXPECT_EQ(fixture.requests.load(), 0);
}

TEST(HttpServer, HugeHeadersGet431) {
  Fixture fixture;
  auto client = connect(fixture.port());
  std::string request = "GET /echo HTTP/1.1\r\n";
  for (int index = 0; index < 2000; ++index)
    request += "X-Filler-" + std::to_string(index) + ": " + std::string(40, 'x') + "\r\n";
  request += "\r\n";
  client.send(request);
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 431);
  EXPECT_TRUE(client.wait_closed(2.0));
}

TEST(HttpServer, SlowPartialRequestTimesOutWith408) {
  ServerOptions options;
  options.request_timeout_ms = 300;
  Fixture fixture(options);
  auto client = connect(fixture.port());
  int64_t start = now_ns();
  ASSERT_TRUE(client.send("POST /echo HTTP/1.1\r\nContent-Length: 100\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(client.send("X-Slow: 1\r\n"));  // trickling bytes does not extend the deadline
  auto response = client.read_response(5.0);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 408);
  double elapsed_ms = static_cast<double>(now_ns() - start) / 1e6;
  EXPECT_GE(elapsed_ms, 250.0);
  EXPECT_LT(elapsed_ms, 3000.0);
  EXPECT_TRUE(client.wait_closed(2.0));
}

TEST(HttpServer, IdleKeepAliveConnectionIsClosed) {
  ServerOptions options;
  options.idle_timeout_ms = 200;
  Fixture fixture(options);
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/echo")));
  ASSERT_TRUE(client.read_response());
  EXPECT_TRUE(client.wait_closed(3.0));
}

TEST(HttpServer, ExpectContinueGetsInterimResponse) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send("POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(client.send("data"));
  auto response = client.read_response();  // skips the 100
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "POST /echo data");
}

TEST(HttpServer, ThrowingHandlerGets500AndServerSurvives) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/throw")));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 500);
  EXPECT_NE(response->body.find("handler bug"), std::string::npos);
  ASSERT_TRUE(client.send(make_get("/echo")));
  auto next = client.read_response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

// A handler's exception is logged with the request's path and the message escaped: raw control
// characters (an ESC, a newline forging a diagnostic line) never reach stderr.
TEST(HttpServer, ThrowingHandlerIsLoggedEscaped) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(client.send(make_get("/throw-escapes?\xc2\x9b")));
  auto response = client.read_response();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 500);
  EXPECT_NE(err.find("bug \\x1b[31m\\nfake.yaml:1:1: error"), std::string::npos) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;  // one line
}

TEST(HttpServer, DeferredResponseIsSentWhenGivenAndTheConnectionGoesOn) {
  Fixture fixture;
  auto client = connect(fixture.port());
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(client.send(make_post("/deferred", "abc")));
    auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "later: abc");
  }
  ASSERT_TRUE(client.send(make_get("/echo")));
  auto next = client.read_response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

// A client that goes away while its answer is deferred: the Responder says so, and answering then
// does nothing (no crash, no write to a reused connection).
TEST(HttpServer, DeferredResponseAfterThePeerLeftIsDropped) {
  Fixture fixture;
  {
    auto client = connect(fixture.port());
    ASSERT_TRUE(client.send(make_get("/parked")));
    while (fixture.requests.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::shared_ptr<Responder> parked;
  for (int wait = 0; wait < 10000 && parked == nullptr; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard lock(fixture.parked_mutex);
    parked = fixture.parked;
  }
  ASSERT_NE(parked, nullptr);
  for (int wait = 0; wait < 10000 && !parked->abandoned(); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(parked->abandoned());
  bool made = false;
  parked->respond([&made](RequestContext&) {
    made = true;
    return ServerResponse();
  });
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/echo")));
  auto next = client.read_response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
  EXPECT_FALSE(made);
}

TEST(HttpServer, AbortingSourceDropsConnectionMidBody) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/abort")));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_FALSE(response->complete);
  EXPECT_EQ(response->body, "partial");
}

TEST(HttpServer, DropConnectionSendsNothing) {
  Fixture fixture;
  auto client = connect(fixture.port());
  ASSERT_TRUE(client.send(make_get("/drop")));
  EXPECT_FALSE(client.read_response(2.0));
}

TEST(HttpServer, PeerDisconnectMidStreamAbortsTheSource) {
  Fixture fixture;
  {
    auto client = connect(fixture.port());
    ASSERT_TRUE(client.send(make_get("/forever")));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int attempt = 0; attempt < 100 && fixture.aborts.load() == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(fixture.aborts.load(), 1);
  for (int attempt = 0; attempt < 100 && fixture.server->connection_count() != 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(fixture.server->connection_count(), 0u);
}

TEST(HttpServer, StopClosesOpenStreams) {
  auto fixture = std::make_unique<Fixture>();
  std::vector<RawHttpClient> clients;
  for (int index = 0; index < 10; ++index) {
    clients.push_back(connect(fixture->port()));
    ASSERT_TRUE(clients.back().send(make_get("/forever")));
  }
  for (int attempt = 0; attempt < 200 && fixture->requests.load() < 10; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  fixture->server->stop();
  EXPECT_EQ(fixture->aborts.load(), 10);
  for (auto& client : clients) EXPECT_TRUE(client.wait_closed(2.0));
}

TEST(HttpServer, ServesHundredsOfConcurrentConnections) {
  raise_open_file_limit();
  Fixture fixture;
  std::vector<RawHttpClient> clients;
  for (int index = 0; index < 300; ++index) {
    clients.push_back(connect(fixture.port()));
    ASSERT_TRUE(clients.back().send(make_get("/slow-stream")));
  }
  for (auto& client : clients) {
    auto response = client.read_response();
    ASSERT_TRUE(response && response->complete);
    EXPECT_EQ(response->chunks.size(), 5u);
  }
}

TEST(HttpServer, BindFailureIsAnError) {
  Fixture fixture;
  ServerOptions options;
  options.port = fixture.port();
  auto second = HttpServer::start(options, [](ServerRequest&, RequestContext&) { return ServerResponse(); });
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("cannot listen"), std::string::npos);
}

TEST(HttpServer, OpenAiErrorJsonIsEscaped) {
  EXPECT_EQ(openai_error_json(400, "bad \"x\"", "BadRequestError"),
            R"({"error":{"message":"bad \"x\"","type":"BadRequestError","param":null,"code":400}})");
}

}  // namespace
}  // namespace ix::http
