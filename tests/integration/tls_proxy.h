// A TLS-terminating proxy for tests: accepts https on 127.0.0.1 with a throwaway self-signed
// certificate (made in memory with OpenSSL; CN 127.0.0.1) and relays each connection's bytes both
// ways to a plain-TCP upstream on 127.0.0.1, so https clients can be tested against the real
// `ixbench sim serve`. One event-loop thread; stops on destruction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ix::testing {

class TlsProxy {
 public:
  // Listens on a free port; nullptr (with `error` set) when the certificate or listener fails.
  static std::unique_ptr<TlsProxy> start(uint16_t upstream_port, std::string* error);
  ~TlsProxy();
  TlsProxy(const TlsProxy&) = delete;
  TlsProxy& operator=(const TlsProxy&) = delete;
  uint16_t port() const;
  std::string base_url() const { return "https://127.0.0.1:" + std::to_string(port()); }

 private:
  struct Impl;
  explicit TlsProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ix::testing
