#include "support/scripted_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

namespace ix::testing {

bool read_request(int fd, std::string& carry, std::string* request) {
  size_t searched = 0;  // carry bytes already searched for the end of the head
  size_t end = std::string::npos;
  size_t length = 0;
  while (true) {
    if (end == std::string::npos) {
      end = carry.find("\r\n\r\n", searched > 3 ? searched - 3 : 0);
      searched = carry.size();
      if (end != std::string::npos) {
        const std::string_view head(carry.data(), end);
        const size_t content_length = head.find("Content-Length: ");
        if (content_length != std::string_view::npos) length = std::stoul(carry.substr(content_length + 16, 20));
      }
    }
    if (end != std::string::npos && carry.size() >= end + 4 + length) {
      if (request != nullptr) *request = carry.substr(0, end + 4 + length);
      carry.erase(0, end + 4 + length);
      return true;
    }
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) return false;
    carry.append(buffer, static_cast<size_t>(n));
  }
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

std::string http_chunk(std::string_view bytes) {
  char head[32];
  std::snprintf(head, sizeof(head), "%zx\r\n", bytes.size());
  return std::string(head) + std::string(bytes) + "\r\n";
}

ScriptedServer::ScriptedServer(std::function<void(int, int)> handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  ::listen(listen_fd_, 64);
  acceptor_ = std::thread([this] {
    int number = 0;
    while (true) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard lock(mutex_);
      workers_.emplace_back([this, fd, n = number++] {
        handler_(fd, n);
        ::close(fd);
      });
    }
  });
}

std::function<void(int, int)> ScriptedServer::per_request(std::function<void(int, const std::string&)> respond) {
  return [respond = std::move(respond)](int fd, int) {
    std::string carry, request;
    while (read_request(fd, carry, &request)) respond(fd, request);
  };
}

ScriptedServer::~ScriptedServer() {
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  acceptor_.join();
  std::lock_guard lock(mutex_);
  for (auto& worker : workers_) worker.join();
}

}  // namespace ix::testing
