// HTTP/1.1 server: keep-alive, streamed (chunked) and buffered responses, on an event loop.
//
// N threads, each running its own event loop; one acceptor hands new connections round-robin to
// the loops, and a connection stays on its loop for life (no locks on the connection path).
// Thousands of idle streams cost a socket, a timer and a few hundred bytes each, not a thread:
// idle connections hold no read buffer (readiness wait, then a read into a per-thread buffer).
// Asio lives only in server.cc (pimpl); this header is cheap to include.
//
// Requests are parsed by parse_request() (server_request.h). Protocol errors (malformed request
// line/headers, oversized head/body, unsupported version, a request not complete within
// `request_timeout_ms`) are answered by the server itself with an OpenAI-shaped JSON error
// ({"error":{"message","type","param","code"}}) and the connection is closed. Everything else is
// the handler's: it runs on the connection's loop thread, must not block, and returns a
// ServerResponse, or hands slow work elsewhere and answers later (Responder). A handler that throws gets a 500 with the
// same JSON shape; it never takes the server down.
//
// Streamed bodies: a response with a BodySource is sent with Transfer-Encoding: chunked (or, with
// BodyMode::kBuffered, collected and sent with Content-Length). The server pulls the source on
// the loop thread whenever the socket can take more bytes, so a fast source is paced by the peer
// (backpressure) and everything a source returns in one pull goes out in one write. A source that
// has nothing to send returns kWait, optionally with a time to be pulled again; anyone may call
// the request's Waker (any thread) to have it pulled earlier. A kWait with a time is served by the
// connection's timer on its own loop (every loop keeps the due times of its connections in one
// timer queue); loop threads run with 1 ns timer slack, so the pull comes when due, never before.
//
// Thread-safety: HttpServer's methods are thread-safe. BodySource methods are called on one loop
// thread only. Waker::wake() may be called from any thread at any time, also after the
// connection or the server is gone (then it does nothing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "http/server_request.h"

namespace ix::http {

enum class PullStatus {
  kMore,   // appended bytes; more is ready now (pull again once this is written)
  kWait,   // appended what there was (maybe nothing); pull again at wake_at_ns or on wake()
  kEnd,    // appended the last bytes of the body
  kAbort,  // drop the connection after writing what was appended (no terminating chunk)
};

struct PullResult {
  PullStatus status = PullStatus::kWait;
  int64_t wake_at_ns = 0;  // with kWait: steady-clock ns to pull again; 0 = only on wake()
};

class BodySource {
 public:
  virtual ~BodySource() = default;
  // Append body bytes (not chunk framing) to `out`; aim for at most `budget_bytes` per pull.
  virtual PullResult pull(std::string& out, size_t budget_bytes, int64_t now_ns) = 0;
  // The connection ended before kEnd/kAbort was returned (peer closed, write failed, server
  // stopping). Called at most once; the source is destroyed after it.
  virtual void on_abort() {}
};

class Waker {
 public:
  virtual ~Waker() = default;
  // Have the request's BodySource pulled soon. Cheap, coalescing, callable from any thread.
  virtual void wake() = 0;
};

enum class BodyMode {
  kChunked,   // Transfer-Encoding: chunked, each pull's bytes as one chunk
  kBuffered,  // collect until kEnd, then send with Content-Length (kAbort closes without a response)
};

struct ServerResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<HeaderField> headers;  // extra headers, sent as given
  std::string body;                  // the body when `source` is null
  std::unique_ptr<BodySource> source;
  BodyMode body_mode = BodyMode::kChunked;
  bool close_connection = false;  // close after this response
  bool drop_connection = false;   // close at once without sending anything (fault injection)
  bool deferred = false;          // the answer comes through context.defer() (see Responder)

  static ServerResponse later() {
    ServerResponse response;
    response.deferred = true;
    return response;
  }
};

class RequestContext;

// A response given later: a handler whose work must not run on the loop (tokenizing a big prompt)
// calls RequestContext::defer(), hands the Responder to the work and returns
// ServerResponse::later(). The connection keeps reading only to notice a peer that goes away.
class Responder {
 public:
  virtual ~Responder() = default;
  // Runs `make` on the connection's loop thread and sends what it returns, as if the handler had
  // returned it (a throw is a 500; `make` may not defer again). Callable from any thread, once;
  // does nothing when the connection or the server is gone.
  virtual void respond(std::function<ServerResponse(RequestContext&)> make) = 0;
  // True once the connection is gone: the work may skip itself. Any thread.
  virtual bool abandoned() const = 0;
};

// What a handler may ask of the connection it runs on.
class RequestContext {
 public:
  virtual ~RequestContext() = default;
  // The wake handle of this request's BodySource (one per request).
  virtual std::shared_ptr<Waker> waker() = 0;
  // The handle that answers this request later (see Responder).
  virtual std::shared_ptr<Responder> defer() = 0;
};

using Handler = std::function<ServerResponse(ServerRequest& request, RequestContext& context)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 = any free port; see HttpServer::port()
  int threads = 0;    // event-loop threads; 0 = hardware concurrency
  RequestLimits limits;
  int64_t request_timeout_ms = 30000;  // first byte of a request -> request complete
  int64_t idle_timeout_ms = 300000;    // keep-alive connection with no request in progress
  int backlog = 4096;
};

class HttpServer {
 public:
  // Binds, listens and starts the loop threads. Fails when the address cannot be bound.
  static Result<std::unique_ptr<HttpServer>> start(const ServerOptions& options, Handler handler);
  ~HttpServer();  // stop() + join
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  int threads() const;
  // Open connections right now.
  size_t connection_count() const;
  // Closes the listener and every connection (sources get on_abort()), stops and joins the loop
  // threads. Idempotent; must not be called from a loop thread.
  void stop();
  // Blocks until stop() is called (from another thread or a signal handler thread).
  void wait();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Raises the soft RLIMIT_NOFILE to the hard limit (thousands of sockets need it). Returns the new
// soft limit.
int64_t raise_open_file_limit();

// {"error":{"message":...,"type":...,"param":null,"code":<status>}} — the OpenAI error shape.
std::string openai_error_json(int status, std::string_view message, std::string_view type);

}  // namespace ix::http
