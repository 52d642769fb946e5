// A running `ixbench sim serve` child process for tests.
//
// start() spawns `ixbench sim serve <args> --port 0`, waits for the first stdout line
// `listening on http://127.0.0.1:<port>` to learn the port, and returns the handle. The destructor
// kills the child (SIGTERM, then SIGKILL after a grace period) and reaps it, so a failing test
// never leaks a server. stderr of the child is kept for failure messages (stderr_text()).
//
// Thread-safety: one ServerProcess is used by one test thread; base_url()/port()/pid() are
// immutable after start and may be read from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
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
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // "http://127.0.0.1:<port>" (no trailing slash).
  const std::string& base_url() const { return base_url_; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  // Everything the child wrote to stderr so far (drained without blocking).
  std::string stderr_text();
  // Sends SIGTERM and waits up to `timeout_s` for exit; returns the exit status (or -1 when it had
  // to be killed). Idempotent.
  int stop(double timeout_s = 5.0);

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

}  // namespace ix::testing
