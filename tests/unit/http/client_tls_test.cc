// https targets: the client against `openssl s_server` with a throwaway self-signed certificate.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "http/client.h"

namespace ix::http {
namespace {

uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(ClientTls, HttpsTargetWithAndWithoutCertificateVerification) {
  if (std::system("command -v openssl > /dev/null 2>&1") != 0) GTEST_SKIP() << "openssl command not installed";
  const auto dir = std::filesystem::temp_directory_path() / ("ixbench_tls_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string key = (dir / "key.pem").string(), cert = (dir / "cert.pem").string();
  const std::string make_cert = "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + key + " -out " + cert +
                                " -days 1 -subj /CN=127.0.0.1 > /dev/null 2>&1";
  ASSERT_EQ(std::system(make_cert.c_str()), 0);
  const uint16_t port = free_port();
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    const std::string accept = std::to_string(port);
    execlp("openssl", "openssl", "s_server", "-quiet", "-key", key.c_str(), "-cert", cert.c_str(), "-accept",
           accept.c_str(), "-www", static_cast<char*>(nullptr));
    _exit(127);
  }
  const Url url = *Url::parse("https://127.0.0.1:" + std::to_string(port));
  Result<SimpleResponse> insecure = fail(ErrorCode::kUnavailable, "not started");
  for (int attempt = 0; attempt < 50 && !insecure; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    insecure = fetch(url, "GET", "/", {}, {}, 5'000'000'000, /*verify_tls=*/false);
  }
  ASSERT_TRUE(insecure.has_value()) << insecure.error().to_string();
  EXPECT_EQ(insecure->status, 200);
  EXPECT_FALSE(insecure->body.empty());
  // A self-signed certificate fails verification: a connect-level error naming TLS.
  auto verified = fetch(url, "GET", "/", {}, {}, 5'000'000'000, /*verify_tls=*/true);
  ASSERT_FALSE(verified.has_value());
  EXPECT_NE(verified.error().message().find("TLS handshake"), std::string::npos) << verified.error().message();
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ix::http
