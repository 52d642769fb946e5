// A scripted loopback HTTP peer for client tests: a real socket server whose per-connection
// behaviour is a test-supplied function, so tests can send exactly the bytes (and timing,
// truncation, malformed frames) a case needs. One thread per connection: for tests only.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ix::testing {

// Response head of a chunked SSE stream.
inline constexpr std::string_view kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

// Reads one request (head + Content-Length body) from `fd`, buffering extra bytes in `carry`;
// stores it in `*request` when given. Returns false on EOF or error.
bool read_request(int fd, std::string& carry, std::string* request = nullptr);
// Writes all of `bytes` (MSG_NOSIGNAL); stops silently when the peer is gone.
void write_all(int fd, std::string_view bytes);
// One HTTP/1.1 chunk: "<hex size>\r\n<bytes>\r\n".
std::string http_chunk(std::string_view bytes);

class ScriptedServer {
 public:
  // handler(fd, connection_number) serves one accepted connection; the socket is closed when it
  // returns. Listens on 127.0.0.1 on a free port.
  explicit ScriptedServer(std::function<void(int fd, int connection_number)> handler);
  // Serves each request of a keep-alive connection with respond(fd, request).
  static std::function<void(int, int)> per_request(std::function<void(int fd, const std::string& request)> respond);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  uint16_t port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::function<void(int, int)> handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> workers_;
};

}  // namespace ix::testing
