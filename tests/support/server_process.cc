#include "support/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "support/subprocess.h"

extern char** environ;

namespace ix::testing {
namespace {

// The child's stdout and stderr go to temporary files, not pipes: a pipe nobody drains fills up
// (64 KiB) and would block a chatty server in the middle of a test.
int make_temp_file(std::string& path) {
  std::string pattern = (std::filesystem::temp_directory_path() / "ixbench-serve-XXXXXX").string();
  int fd = mkstemp(pattern.data());
  path = pattern;
  return fd;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

constexpr std::string_view kListening = "listening on http://";

}  // namespace

Result<std::unique_ptr<ServerProcess>> ServerProcess::start(const std::vector<std::string>& args,
                                                            double startup_timeout_s) {
  std::vector<std::string> command = {"sim", "serve"};
  command.insert(command.end(), args.begin(), args.end());
  return start_command(command, startup_timeout_s);
}

Result<std::unique_ptr<ServerProcess>> ServerProcess::start_command(const std::vector<std::string>& command,
                                                                    double startup_timeout_s) {
  const std::string name = "ixbench " + (command.empty() ? std::string() : command.front());
  std::unique_ptr<ServerProcess> server(new ServerProcess());
  std::string out_path, err_path;
  int out_fd = make_temp_file(out_path);
  int err_fd = make_temp_file(err_path);
  if (out_fd < 0 || err_fd < 0) return fail(ErrorCode::kIo, "cannot create temporary files for the server's output");
  // The files are unlinked at once; the open descriptors keep them readable via /proc/self/fd.
  std::vector<std::string> argv = {ixbench_binary()};
  argv.insert(argv.end(), command.begin(), command.end());
  argv.push_back("--port");
  argv.push_back("0");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  std::vector<char*> raw;
  for (auto& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  server->stdout_fd_ = out_fd;
  server->stderr_fd_ = err_fd;
  if (rc != 0) return fail(ErrorCode::kIo, "posix_spawn failed for " + argv[0]);
  server->pid_ = pid;

  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(startup_timeout_s);
  const std::string out_file = "/proc/self/fd/" + std::to_string(out_fd);
  while (true) {
    std::string out = read_all(out_file);
    if (auto newline = out.find('\n'); newline != std::string::npos) {
      std::string line = out.substr(0, newline);
      // "listening on http://HOST:PORT", HOST in brackets when it is an IPv6 address.
      const size_t colon = line.rfind(':');
      if (line.rfind(kListening, 0) == 0 && colon != std::string::npos) {
        int port = std::atoi(line.c_str() + colon + 1);
        if (port > 0 && port < 65536) {
          server->port_ = static_cast<uint16_t>(port);
          server->base_url_ = line.substr(kListening.size() - std::string_view("http://").size());
          return server;
        }
      }
      return fail(ErrorCode::kInternal,
                  "unexpected first stdout line from " + name + ": '" + line + "'; stderr: " + server->stderr_text());
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->reaped_ = true;
      server->exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return fail(ErrorCode::kUnavailable, name + " exited with status " + std::to_string(server->exit_status_) +
                                               " before listening: " + server->stderr_text());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return fail(ErrorCode::kTimeout,
                  name + " printed no 'listening on' line in time; stderr: " + server->stderr_text());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string ServerProcess::stderr_text() {
  if (stderr_fd_ < 0) return stderr_;
  return read_all("/proc/self/fd/" + std::to_string(stderr_fd_));
}

int ServerProcess::stop(double timeout_s, int signal) {
  if (pid_ <= 0 || reaped_) return exit_status_;
  kill(pid_, signal);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return exit_status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  reaped_ = true;
  exit_status_ = -1;
  return exit_status_;
}

ServerProcess::~ServerProcess() {
  stop();
  if (stderr_fd_ >= 0) {
    stderr_ = stderr_text();
    close(stderr_fd_);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::string RawResponse::header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "";
}

Result<RawHttpClient> RawHttpClient::connect(uint16_t port, double timeout_s) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ErrorCode::kIo, "socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{static_cast<time_t>(timeout_s),
             static_cast<suseconds_t>((timeout_s - static_cast<int64_t>(timeout_s)) * 1e6)};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return fail(ErrorCode::kUnavailable, "connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return RawHttpClient(fd);
}

RawHttpClient::RawHttpClient(RawHttpClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)), eof_(other.eof_) {}

RawHttpClient& RawHttpClient::operator=(RawHttpClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    buffer_ = std::move(other.buffer_);
    eof_ = other.eof_;
  }
  return *this;
}

RawHttpClient::~RawHttpClient() {
  if (fd_ >= 0) close(fd_);
}

bool RawHttpClient::send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawHttpClient::fill(size_t size, int64_t deadline_ns) {
  char chunk[65536];
  while (buffer_.size() < size) {
    if (eof_) return false;
    int64_t remaining_ms = (deadline_ns - now_ns()) / 1'000'000;
    if (remaining_ms <= 0) return false;
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(remaining_ms)) <= 0) continue;
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  return true;
}

bool RawHttpClient::read_line(std::string& line, int64_t deadline_ns) {
  while (true) {
    size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      line = buffer_.substr(0, newline);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      buffer_.erase(0, newline + 1);
      return true;
    }
    if (!fill(buffer_.size() + 1, deadline_ns)) return false;
  }
}

Result<RawResponse> RawHttpClient::read_response(double timeout_s) {
  int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  RawResponse response;
  std::string line;
  // Skip interim 1xx responses.
  while (true) {
    if (!read_line(line, deadline)) return fail(ErrorCode::kUnavailable, "no HTTP status line received");
    if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) return fail(ErrorCode::kParse, "bad status line: " + line);
    response.status = std::atoi(line.c_str() + 9);
    response.headers.clear();
    while (true) {
      if (!read_line(line, deadline)) return fail(ErrorCode::kUnavailable, "connection ended inside headers");
      if (line.empty()) break;
      size_t colon = line.find(':');
      std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      response.headers.emplace_back(lower(line.substr(0, colon)), value);
    }
    if (response.status >= 200) break;
  }
  response.chunked = lower(response.header("transfer-encoding")).find("chunked") != std::string::npos;
  if (response.chunked) {
    while (true) {
      if (!read_line(line, deadline)) return response;
      size_t size = std::strtoul(line.c_str(), nullptr, 16);
      if (size == 0) {
        read_line(line, deadline);  // the blank line after the last chunk
        response.complete = true;
        return response;
      }
      if (!fill(size + 2, deadline)) return response;
      response.chunks.push_back(buffer_.substr(0, size));
      response.chunk_times_ns.push_back(now_ns());
      response.body += response.chunks.back();
      buffer_.erase(0, size + 2);
    }
  }
  std::string length = response.header("content-length");
  if (!length.empty()) {
    size_t size = std::strtoul(length.c_str(), nullptr, 10);
    if (!fill(size, deadline)) {
      response.body = buffer_;
      buffer_.clear();
      return response;
    }
    response.body = buffer_.substr(0, size);
    buffer_.erase(0, size);
    response.complete = true;
    return response;
  }
  // Neither: the body runs to the close.
  while (fill(buffer_.size() + 1, deadline)) {
  }
  response.body = std::move(buffer_);
  buffer_.clear();
  response.complete = eof_;
  return response;
}

bool RawHttpClient::wait_closed(double timeout_s) {
  int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  while (fill(buffer_.size() + 1, deadline)) {
  }
  return eof_;
}

std::string make_post(const std::string& path, const std::string& json_body, const std::string& extra_headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(json_body.size()) + "\r\n" + extra_headers + "\r\n" + json_body;
}

std::string make_get(const std::string& path, const std::string& extra_headers) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n";
}

std::vector<std::string> sse_data_lines(const std::string& body) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + pos, end - pos);
    if (line.rfind("data: ", 0) == 0) lines.emplace_back(line.substr(6));
    pos = end + 1;
  }
  return lines;
}

}  // namespace ix::testing
