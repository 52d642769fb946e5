// A running `ixbench sim serve` child process for tests.
//
// start() spawns `ixbench sim serve <args> --port 0`, waits for the first stdout line
// `listening on http://<host>:<port>` to learn the port, and returns the handle. The destructor
// kills the child (SIGTERM, then SIGKILL after a grace period) and reaps it, so a failing test
// never leaks a server. stderr of the child is kept for failure messages (stderr_text()).
//
// Thread-safety: one ServerProcess is used by one test thread; base_url()/port()/pid() are
// immutable after start and may be read from any thread.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ix::testing {

class ServerProcess {
 public:
  // `args` follow `ixbench sim serve` (e.g. {"--no-delay"} or {"--fixed-ttft-ms", "50", ...});
  // `--port 0` is appended. Fails (with the child's stderr in the message) when the child exits
  // or prints nothing within `startup_timeout_s`.
  static Result<std::unique_ptr<ServerProcess>> start(const std::vector<std::string>& args,
                                                      double startup_timeout_s = 30.0);
  // Any ixbench server command that prints "listening on http://..." first (`dashboard --db X`).
  static Result<std::unique_ptr<ServerProcess>> start_command(const std::vector<std::string>& command,
                                                              double startup_timeout_s = 30.0);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // The URL the server printed, "http://127.0.0.1:<port>" by default (no trailing slash).
  const std::string& base_url() const { return base_url_; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  // Everything the child wrote to stderr so far (drained without blocking).
  std::string stderr_text();
  // Sends `signal` (SIGTERM by default) and waits up to `timeout_s` for exit; returns the exit
  // status (or -1 when it had to be killed). Idempotent.
  int stop(double timeout_s = 5.0, int signal = SIGTERM);

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  uint16_t port_ = 0;
  int exit_status_ = -1;
  bool reaped_ = false;
  std::string base_url_;
  std::string stderr_;
};

// A blocking loopback HTTP/1.1 client on a raw socket, for server conformance tests: it sends
// exactly the bytes given (so tests can send malformed or partial requests) and parses responses
// itself (Content-Length, chunked, or until close), recording when each chunk arrived.
struct RawResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;                                          // de-chunked
  bool chunked = false;
  std::vector<std::string> chunks;      // chunk payloads as framed by the server
  std::vector<int64_t> chunk_times_ns;  // steady-clock arrival time of each chunk
  bool complete = false;                // false: the connection ended before the body did

  // Header value (first match, name lower-case), or "" when absent.
  std::string header(const std::string& name) const;
};

class RawHttpClient {
 public:
  static Result<RawHttpClient> connect(uint16_t port, double timeout_s = 5.0);
  RawHttpClient(RawHttpClient&& other) noexcept;
  RawHttpClient& operator=(RawHttpClient&& other) noexcept;
  ~RawHttpClient();

  bool send(std::string_view bytes);
  // Reads one response. A connection that closes mid-body gives complete = false (not an error);
  // no status line within the timeout, or a close before it, is an error.
  Result<RawResponse> read_response(double timeout_s = 10.0);
  // True when the peer closes the connection (EOF or reset) within the timeout; bytes that arrive
  // meanwhile are kept for read_response.
  bool wait_closed(double timeout_s);
  int fd() const { return fd_; }

 private:
  explicit RawHttpClient(int fd) : fd_(fd) {}
  // Ensures at least `size` buffered bytes; false on close/timeout.
  bool fill(size_t size, int64_t deadline_ns);
  bool read_line(std::string& line, int64_t deadline_ns);
  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

// "POST <path> HTTP/1.1" with Host, Content-Type: application/json and Content-Length.
std::string make_post(const std::string& path, const std::string& json_body, const std::string& extra_headers = "");
std::string make_get(const std::string& path, const std::string& extra_headers = "");
// The payloads of the `data: ` lines of an SSE body, in order.
std::vector<std::string> sse_data_lines(const std::string& body);

}  // namespace ix::testing
