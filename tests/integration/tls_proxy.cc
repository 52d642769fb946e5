#include "tls_proxy.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <thread>

namespace ix::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// A self-signed certificate and its key, PEM-encoded.
bool make_certificate(std::string& cert_pem, std::string& key_pem) {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* cert = X509_new();
  bool ok = key && cert;
  if (ok) {
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1,
                               0);
    X509_set_issuer_name(cert, name);
    ok = X509_sign(cert, key, EVP_sha256()) > 0;
  }
  auto to_pem = [](auto write) {
    BIO* bio = BIO_new(BIO_s_mem());
    write(bio);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<size_t>(size));
    BIO_free(bio);
    return out;
  };
  if (ok) {
    cert_pem = to_pem([&](BIO* bio) { PEM_write_bio_X509(bio, cert); });
    key_pem = to_pem([&](BIO* bio) { PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr); });
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return ok && !cert_pem.empty() && !key_pem.empty();
}

// One relayed connection: TLS on the client side, plain TCP upstream.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket client, asio::ssl::context& tls, uint16_t upstream_port)
      : tls_(std::move(client), tls), upstream_(tls_.get_executor()), upstream_port_(upstream_port) {}

  void start() {
    auto self = shared_from_this();
    // No Nagle on either hop: a small write behind unacknowledged bytes would wait for the
    // peer's delayed ACK (up to 40 ms), as a first token after the response head did.
    boost::system::error_code ignored;
    tls_.lowest_layer().set_option(tcp::no_delay(true), ignored);
    tls_.async_handshake(asio::ssl::stream_base::server, [self](boost::system::error_code ec) {
      if (ec) return;
      const tcp::endpoint target(asio::ip::make_address("127.0.0.1"), self->upstream_port_);
      self->upstream_.async_connect(target, [self](boost::system::error_code ec2) {
        if (ec2) return self->close();
        boost::system::error_code ignored;
        self->upstream_.set_option(tcp::no_delay(true), ignored);
        self->relay(self->tls_, self->upstream_, self->from_client_);
        self->relay(self->upstream_, self->tls_, self->from_upstream_);
      });
    });
  }

 private:
  // Reads what `from` has, writes it all to `to`, and again, until either side closes.
  template <typename From, typename To>
  void relay(From& from, To& to, std::array<char, 16384>& buffer) {
    auto self = shared_from_this();
    from.async_read_some(asio::buffer(buffer), [self, &from, &to, &buffer](boost::system::error_code ec, size_t n) {
      if (ec) return self->close();
      asio::async_write(to, asio::buffer(buffer, n),
                        [self, &from, &to, &buffer](boost::system::error_code ec2, size_t) {
                          if (ec2) return self->close();
                          self->relay(from, to, buffer);
                        });
    });
  }
  void close() {
    boost::system::error_code ignored;
    upstream_.close(ignored);
    tls_.lowest_layer().close(ignored);
  }

  asio::ssl::stream<tcp::socket> tls_;
  tcp::socket upstream_;
  uint16_t upstream_port_;
  std::array<char, 16384> from_client_{};
  std::array<char, 16384> from_upstream_{};
};

}  // namespace

struct TlsProxy::Impl {
  asio::io_context io;
  asio::ssl::context tls{asio::ssl::context::tls_server};
  tcp::acceptor acceptor{io};
  uint16_t upstream_port = 0;
  std::thread thread;

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec) return;
      std::make_shared<Session>(std::move(socket), tls, upstream_port)->start();
      accept();
    });
  }
};

std::unique_ptr<TlsProxy> TlsProxy::start(uint16_t upstream_port, std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->upstream_port = upstream_port;
  std::string cert, key;
  if (!make_certificate(cert, key)) {
    *error = "cannot make a self-signed certificate";
    return nullptr;
  }
  boost::system::error_code ec;
  impl->tls.use_certificate_chain(asio::buffer(cert), ec);
  if (!ec) impl->tls.use_private_key(asio::buffer(key), asio::ssl::context::pem, ec);
  const tcp::endpoint listen(asio::ip::make_address("127.0.0.1"), 0);
  if (!ec) impl->acceptor.open(listen.protocol(), ec);
  if (!ec) impl->acceptor.bind(listen, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = ec.message();
    return nullptr;
  }
  impl->accept();
  impl->thread = std::thread([io = &impl->io] { io->run(); });
  return std::unique_ptr<TlsProxy>(new TlsProxy(std::move(impl)));
}

TlsProxy::TlsProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TlsProxy::~TlsProxy() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t TlsProxy::port() const {
  return impl_->acceptor.local_endpoint().port();
}

}  // namespace ix::testing
