// HTTP/1.1 load-generating client: one event loop per thread, keep-alive connection pool,
// http and https targets. Asio lives only in client.cc (pimpl).
//
// Model (h2load / wrk2 style): a ClientLoop is a shared-nothing worker. It owns one io_context,
// its own connections to one target, its timers, and runs on exactly one thread (run()). Callers
// drive it from callbacks on that thread: submit() starts an exchange, call_at() schedules work
// at an absolute steady-clock time. Nothing is shared between loops; a benchmark runs one loop
// per core and merges per-loop results at the end.
//
// Timing: every callback receives the steady-clock time (ix::SteadyClock epoch, ns) taken when
// the event happened on the socket: on_send just before the request bytes are written, on_head
// and on_body when the bytes arrived — the kernel's receive timestamp of the read on plain TCP
// (see LoopOptions::kernel_timestamps), else the time the read completed — before any parsing by
// the caller. Timer threads run with 1 ns timer slack so call_at() wakes within microseconds.
//
// Failures of the server are reported to the sink as data (FailureKind + message), never thrown.
// A keep-alive connection the server closed while idle is detected when the first write/read of
// a new exchange fails before any response byte; the exchange is then retried once on a fresh
// connection (no request byte has been processed: this is connection reuse, not a retry).
//
// Thread-safety: post() and stop() may be called from any thread. Everything else must be called
// on the loop's thread (from inside a callback) or before run() starts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace ix::http {

struct Url {
  bool tls = false;
  std::string host;
  uint16_t port = 80;
  std::string path;  // base path without trailing '/', e.g. "" or "/proxy"

  // "http://host[:port][/path]" or "https://...". IPv6 literals in brackets.
  static Result<Url> parse(std::string_view text);
  std::string origin() const;  // "http://host:port"
};

enum class FailureKind {
  kNone,
  kConnect,    // resolve/connect/TLS handshake failed
  kTimeout,    // request timeout expired
  kReset,      // connection reset (RST) or another socket error mid-exchange
  kClosed,     // the server closed the connection before the response was complete
  kMalformed,  // bytes that are not valid HTTP/1.1
  kCancelled,  // cancel_all(), stop(), or the sink asked to abort
};
std::string_view failure_kind_name(FailureKind kind);

struct Header {
  std::string name;
  std::string value;
};

struct Request {
  std::string method = "POST";
  std::string target;  // origin-form, e.g. "/v1/completions" (the Url's base path is prepended)
  std::string body;
  std::string content_type = "application/json";
  std::vector<Header> headers;
  int64_t timeout_ns = 0;  // whole exchange, counted from the send; 0 = none
};

// A response's status line and the headers a client acts on.
struct ResponseHead {
  int status = 0;
  std::string_view content_type;  // lowercased
  std::string_view retry_after;   // the Retry-After header as sent (empty when absent)
};

// Receives one exchange's events, on the loop thread. Must outlive the exchange (until on_done).
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // A connection is ready and the request is about to be written.
  virtual void on_send(int64_t t_ns) = 0;
  // Status line and headers received; first_byte_ns: the read that brought the first bytes. The
  // views are valid during the call.
  virtual void on_head(const ResponseHead& head, int64_t first_byte_ns) = 0;
  // A piece of the (de-chunked) body, read at t_ns. Return false to abort the exchange: the
  // connection is closed and on_done(kCancelled) follows.
  virtual bool on_body(std::string_view bytes, int64_t t_ns) = 0;
  // Exactly once per submit(). kNone: the complete response was received.
  virtual void on_done(FailureKind kind, std::string_view message, int64_t t_ns) = 0;
};

struct LoopOptions {
  Url target;
  int64_t connect_timeout_ns = 10'000'000'000;
  size_t read_buffer_bytes = 16 * 1024;  // per connection
  bool verify_tls = true;
  // Idle keep-alive connections kept per loop (more are closed).
  size_t max_idle_connections = 1 << 20;
  // Plain TCP: stamp bytes with the kernel's receive time (SO_TIMESTAMPNS, mapped onto the
  // steady clock) instead of the time the loop got to them, so event-loop lag does not leak
  // into measured latencies. https always uses the read time.
  bool kernel_timestamps = true;
};

struct LoopCounters {
  int64_t connections_opened = 0;
  int64_t connections_reused = 0;
  int64_t stale_retries = 0;
  int64_t bytes_read = 0;
  int64_t reads = 0;
  // Reads stamped by the kernel, and how much later the loop read them (the delay the kernel
  // stamp removed).
  int64_t kernel_timestamps = 0;
  int64_t stamp_delay_sum_ns = 0;
  int64_t stamp_delay_max_ns = 0;
};

class ClientLoop {
 public:
  explicit ClientLoop(LoopOptions options);
  ~ClientLoop();
  ClientLoop(const ClientLoop&) = delete;
  ClientLoop& operator=(const ClientLoop&) = delete;

  // Resolves the target host (blocking; call before run()). Errors: kUnavailable.
  Result<void> prepare();

  // Starts an exchange on an idle keep-alive connection, or a new one.
  void submit(Request request, ResponseSink* sink);
  // Runs fn on the loop at steady time t_ns (immediately, via post, if t_ns is past).
  void call_at(int64_t t_ns, std::function<void()> fn);
  // Fails every exchange in flight with kCancelled and closes all connections.
  void cancel_all();
  int64_t now_ns() const;
  const LoopCounters& counters() const;
  size_t in_flight() const;

  // Any thread.
  void post(std::function<void()> fn);
  void stop();
  // Runs the loop on the calling thread until stop(); idle loops keep running (work guard).
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct SimpleResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// One blocking request on its own loop (control endpoints: /metrics, /health, /start_profile).
// A failed exchange is an Error (kUnavailable / kTimeout / kParse), unlike the load path.
Result<SimpleResponse> fetch(const Url& base, std::string_view method, std::string_view target,
                             std::string_view body = {}, std::span<const Header> headers = {},
                             int64_t timeout_ns = 10'000'000'000, bool verify_tls = true);

}  // namespace ix::http
