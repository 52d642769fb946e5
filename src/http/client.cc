#include "http/client.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "common/clock.h"
#include "common/strings.h"
#include "http/client_response.h"
#include "http/receive_time.h"

namespace ix::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::string_view failure_kind_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone: return "none";
    case FailureKind::kConnect: return "connect";
    case FailureKind::kTimeout: return "timeout";
    case FailureKind::kReset: return "reset";
    case FailureKind::kClosed: return "closed";
    case FailureKind::kMalformed: return "malformed";
    case FailureKind::kCancelled: return "cancelled";
  }
  return "unknown";
}

Result<Url> Url::parse(std::string_view text) {
  Url url;
  std::string_view rest;
  if (text.starts_with("http://")) {
    rest = text.substr(7);
  } else if (text.starts_with("https://")) {
    url.tls = true;
    url.port = 443;
    rest = text.substr(8);
  } else {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("URL '{}' must start with http:// or https:// (e.g. http://127.0.0.1:8000)", text));
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return fail(ErrorCode::kInvalidArgument, fmt::format("URL '{}': unterminated IPv6 literal", text));
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return fail(ErrorCode::kInvalidArgument, fmt::format("URL '{}': bad port", text));
      port = authority.substr(close + 2);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return fail(ErrorCode::kInvalidArgument, fmt::format("URL '{}' has no host", text));
  if (!port.empty()) {
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535) {
      return fail(ErrorCode::kInvalidArgument, fmt::format("URL '{}': port must be 1..65535", text));
    }
    url.port = static_cast<uint16_t>(value);
  }
  url.host = std::string(host);
  url.path = std::string(path);
  return url;
}

std::string Url::origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", tls ? "https" : "http", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

namespace {

using TimePoint = std::chrono::steady_clock::time_point;
TimePoint to_time_point(int64_t t_ns) {
  return TimePoint(std::chrono::nanoseconds(t_ns));
}

struct Connection;
struct Exchange;

// The plain-TCP data path. Once connected, a plain socket leaves asio's reactor (released) and is
// watched by this edge-triggered epoll set, which the loop's io_context watches as one
// descriptor: a batch of ready sockets costs one wake-up and one epoll_wait, and each ready socket
// one recvmsg. (Asio re-arms a descriptor with an epoll_ctl on every async_wait and runs each wait
// as a queued operation; at one SSE event per read that was a fifth of the client's CPU.)
// Keys carry a generation, so an event queued for a socket closed meanwhile finds nothing.
class DataPoller {
 public:
  void set_fd(int epoll_fd) { fd_ = epoll_fd; }
  int fd() const { return fd_; }
  // Registers a connected socket. Returns its key, or 0 with errno set.
  uint64_t add(int socket_fd, Connection* conn) {
    if (fd_ < 0) {
      errno = EBADF;
      return 0;
    }
    uint32_t index = 0;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    slots_[index].conn = conn;
    const uint64_t key = (uint64_t{slots_[index].gen} << 32) | index;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = key;
    if (::epoll_ctl(fd_, EPOLL_CTL_ADD, socket_fd, &ev) != 0) {
      const int saved = errno;
      release(index);
      errno = saved;
      return 0;
    }
    return key;
  }
  // Forgets a key; the socket is about to be closed (which drops it from the epoll set).
  void remove(uint64_t key) {
    if (find(key)) release(static_cast<uint32_t>(key));
  }
  Connection* find(uint64_t key) const {
    const auto index = static_cast<uint32_t>(key);
    if (index >= slots_.size() || slots_[index].gen != static_cast<uint32_t>(key >> 32)) return nullptr;
    return slots_[index].conn;
  }

 private:
  void release(uint32_t index) {
    slots_[index].conn = nullptr;
    if (++slots_[index].gen == 0) slots_[index].gen = 1;
    free_.push_back(index);
  }
  struct Slot {
    Connection* conn = nullptr;
    uint32_t gen = 1;
  };
  int fd_ = -1;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  tcp::socket socket;  // while connecting, and for TLS
  std::optional<asio::ssl::stream<tcp::socket&>> tls;
  // Plain TCP once connected: the descriptor released from asio, polled by the DataPoller.
  int fd = -1;
  uint64_t key = 0;
  DataPoller* poller = nullptr;
  Exchange* reader = nullptr;  // the exchange using the connection (plain TCP)
  bool readable = false;       // readiness reported while no exchange was reading
  bool peer_closed = false;    // the server closed or reset it (EPOLLRDHUP/HUP/ERR)
  std::vector<char> buffer;
  bool reused = false;

  void close() {
    reader = nullptr;
    if (fd >= 0) {
      if (poller) poller->remove(key);
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      fd = -1;
      return;
    }
    boost::system::error_code ignored;
    if (!socket.is_open()) return;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }
};

enum class Phase { kConnecting, kExchanging };

struct Exchange {
  explicit Exchange(asio::io_context& io) : timer(io) {}
  Request request;
  std::string wire;
  ResponseSink* sink = nullptr;
  std::shared_ptr<Connection> conn;
  asio::steady_timer timer;
  ResponseParser parser;
  Phase phase = Phase::kConnecting;
  bool timed_out = false;
  bool cancelled = false;
  bool done = false;
  bool got_bytes = false;
  bool head_reported = false;
  int attempts = 0;
  int64_t first_byte_ns = 0;
  size_t write_offset = 0;  // plain TCP: request bytes written so far
};

bool is_eof_like(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
}

}  // namespace

struct ClientLoop::Impl {
  explicit Impl(LoopOptions opts) : options(std::move(opts)), ssl_ctx(asio::ssl::context::tls_client) {
    if (options.target.tls) {
      boost::system::error_code ignored;
      ssl_ctx.set_default_verify_paths(ignored);
      ssl_ctx.set_verify_mode(options.verify_tls ? asio::ssl::verify_peer : asio::ssl::verify_none);
    } else if (const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC); epoll_fd >= 0) {
      boost::system::error_code ec;
      data_events.assign(epoll_fd, ec);  // owns and closes it
      if (ec) {
        ::close(epoll_fd);
      } else {
        poller.set_fd(epoll_fd);
      }
    }
  }

  LoopOptions options;
  // Declared before io: connections held by handlers still queued in io unregister on destruction.
  DataPoller poller;
  asio::io_context io{1};
  asio::posix::stream_descriptor data_events{io};  // the poller's epoll set, watched by io
  bool data_armed = false;
  asio::ssl::context ssl_ctx;
  std::optional<tcp::resolver::results_type> endpoints;
  std::vector<std::shared_ptr<Connection>> idle;
  std::unordered_map<Exchange*, std::shared_ptr<Exchange>> active;
  LoopCounters counters;
  std::string host_header;

  int64_t now() const { return SteadyClock().now_ns(); }

  Result<void> resolve() {
    if (endpoints) return {};
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    auto results = resolver.resolve(options.target.host, std::to_string(options.target.port), ec);
    if (ec || results.empty()) {
      return fail(ErrorCode::kUnavailable,
                  fmt::format("cannot resolve {}: {}", options.target.origin(), ec ? ec.message() : "no addresses"));
    }
    endpoints = std::move(results);
    host_header = options.target.host.find(':') != std::string::npos
                      ? fmt::format("[{}]:{}", options.target.host, options.target.port)
                      : fmt::format("{}:{}", options.target.host, options.target.port);
    return {};
  }

  void serialize(Exchange& ex) {
    const Request& r = ex.request;
    std::string& w = ex.wire;
    w.clear();
    w.reserve(256 + r.body.size());
    fmt::format_to(std::back_inserter(w), "{} {}{} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ixbench\r\n", r.method,
                   options.target.path, r.target, host_header);
    // One Accept header: the caller's (an SSE request asks for text/event-stream), else */*.
    const bool has_accept = std::any_of(r.headers.begin(), r.headers.end(),
                                        [](const Header& h) { return ascii_iequals(h.name, "Accept"); });
    if (!has_accept) w += "Accept: */*\r\n";
    if (!r.body.empty() || r.method == "POST" || r.method == "PUT") {
      fmt::format_to(std::back_inserter(w), "Content-Type: {}\r\nContent-Length: {}\r\n", r.content_type,
                     r.body.size());
    }
    for (const Header& h : r.headers) fmt::format_to(std::back_inserter(w), "{}: {}\r\n", h.name, h.value);
    w += "\r\n";
    w += r.body;
  }

  void submit(Request request, ResponseSink* sink) {
    auto ex = std::make_shared<Exchange>(io);
    ex->request = std::move(request);
    ex->sink = sink;
    active.emplace(ex.get(), ex);
    if (auto ok = resolve(); !ok) {
      finish(ex, FailureKind::kConnect, ok.error().message(), now(), false);
      return;
    }
    serialize(*ex);
    acquire(ex);
  }

  void acquire(const std::shared_ptr<Exchange>& ex) {
    if (!idle.empty()) {
      auto conn = std::move(idle.back());
      idle.pop_back();
      conn->reused = true;
      ++counters.connections_reused;
      start_exchange(ex, std::move(conn));
      return;
    }
    open_connection(ex);
  }

  void open_connection(const std::shared_ptr<Exchange>& ex) {
    auto conn = std::make_shared<Connection>(io);
    conn->buffer.resize(options.read_buffer_bytes);
    ++counters.connections_opened;
    ex->conn = conn;
    ex->phase = Phase::kConnecting;
    ex->timer.expires_at(to_time_point(now() + options.connect_timeout_ns));
    ex->timer.async_wait([this, ex](const boost::system::error_code& ec) {
      if (ec || ex->done || ex->phase != Phase::kConnecting) return;
      ex->timed_out = true;
      if (ex->conn) ex->conn->close();
    });
    connect_to(ex, conn, endpoints->begin());
  }

  // Tries the resolved endpoints in order. The socket is opened here rather than by asio's range
  // connect, which reports a socket that could not be opened (EMFILE: out of file descriptors) as
  // "Operation canceled"; the real reason and its fix are reported instead.
  void connect_to(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<Connection>& conn,
                  tcp::resolver::results_type::const_iterator it) {
    boost::system::error_code open_ec;
    if (conn->socket.is_open()) conn->socket.close(open_ec);
    conn->socket.open(it->endpoint().protocol(), open_ec);
    if (open_ec) {
      finish(ex, FailureKind::kConnect,
             fmt::format("cannot open a socket to connect to {}: {}{}", options.target.origin(), open_ec.message(),
                         open_ec == boost::system::errc::too_many_files_open ? open_files_hint() : ""),
             now(), false);
      return;
    }
    conn->socket.async_connect(it->endpoint(), [this, ex, conn, it](const boost::system::error_code& ec) {
      if (ex->done || ex->conn != conn) return;
      if (ec && !ex->timed_out && !ex->cancelled && std::next(it) != endpoints->end()) {
        connect_to(ex, conn, std::next(it));
        return;
      }
      if (ec) {
        const std::string why = ex->timed_out ? "connect timed out" : ec.message();
        finish(ex, ex->cancelled ? FailureKind::kCancelled : FailureKind::kConnect,
               fmt::format("cannot connect to {}: {}", options.target.origin(), why), now(), false);
        return;
      }
      boost::system::error_code ignored;
      conn->socket.set_option(tcp::no_delay(true), ignored);
      if (options.kernel_timestamps && !options.target.tls) enable_receive_timestamps(conn->socket.native_handle());

      if (!options.target.tls) {
        if (auto adopted = adopt(*conn); !adopted) {
          finish(ex, FailureKind::kConnect, adopted.error().message(), now(), false);
          return;
        }
        start_exchange(ex, conn);
        return;
      }
      conn->tls.emplace(conn->socket, ssl_ctx);
      SSL_set_tlsext_host_name(conn->tls->native_handle(), options.target.host.c_str());
      if (options.verify_tls) conn->tls->set_verify_callback(asio::ssl::host_name_verification(options.target.host));
      conn->tls->async_handshake(asio::ssl::stream_base::client, [this, ex,
                                                                  conn](const boost::system::error_code& hec) {
        if (ex->done || ex->conn != conn) return;
        if (hec) {
          finish(ex, ex->cancelled ? FailureKind::kCancelled : FailureKind::kConnect,
                 fmt::format("TLS handshake with {} failed: {}", options.target.origin(), hec.message()), now(), false);
          return;
        }
        start_exchange(ex, conn);
      });
    });
  }

  // Moves a connected plain socket from asio to the poller.
  Result<void> adopt(Connection& conn) {
    boost::system::error_code ec;
    const int fd = conn.socket.release(ec);
    if (ec) return fail(ErrorCode::kUnavailable, fmt::format("cannot take over the socket: {}", ec.message()));
    const uint64_t key = poller.add(fd, &conn);
    if (key == 0) {
      const int saved = errno;
      ::close(fd);
      return fail(ErrorCode::kUnavailable,
                  fmt::format("cannot poll the connection to {}: {}", options.target.origin(), std::strerror(saved)));
    }
    conn.fd = fd;
    conn.key = key;
    conn.poller = &poller;
    arm_data();
    return {};
  }

  void arm_data() {
    if (data_armed || !data_events.is_open()) return;
    data_armed = true;
    data_events.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
      data_armed = false;
      if (!ec) poll_data();
    });
  }

  // Handles the poller's ready sockets, a bounded batch at a time so timers are not starved.
  void poll_data() {
    constexpr int kBatch = 256;
    epoll_event events[kBatch];
    const int n = ::epoll_wait(poller.fd(), events, kBatch, 0);
    for (int i = 0; i < n; ++i) on_data_event(events[i].data.u64, events[i].events);
    if (n == kBatch) {
      asio::post(io, [this] { poll_data(); });
    } else {
      arm_data();
    }
  }

  void on_data_event(uint64_t key, uint32_t mask) {
    Connection* c = poller.find(key);
    if (!c) return;  // closed after the event was queued
    constexpr uint32_t kClosed = EPOLLRDHUP | EPOLLHUP | EPOLLERR;
    if (mask & kClosed) c->peer_closed = true;
    const bool readable = (mask & (EPOLLIN | kClosed)) != 0;
    const auto it = c->reader ? active.find(c->reader) : active.end();
    if (it == active.end()) {
      if (readable) c->readable = true;
      return;
    }
    const std::shared_ptr<Exchange> ex = it->second;
    if ((mask & (EPOLLOUT | kClosed)) && ex->write_offset < ex->wire.size()) {
      if (!write_plain(ex) || ex->conn.get() != c) return;
    }
    if (readable) read_available(ex);
  }

  // Writes what the socket takes; the poller reports when it takes more. False when the exchange
  // failed (or moved to a fresh connection).
  bool write_plain(const std::shared_ptr<Exchange>& ex) {
    const int fd = ex->conn->fd;
    while (ex->write_offset < ex->wire.size()) {
      const ssize_t n = ::send(fd, ex->wire.data() + ex->write_offset, ex->wire.size() - ex->write_offset,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) {
        ex->write_offset += static_cast<size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      io_error(ex, boost::system::error_code(errno, boost::system::system_category()), now());
      return false;
    }
    return true;
  }

  // Stops an exchange whose connection must go (timeout, cancel). Asio-owned sockets (connecting,
  // TLS) report through their pending handler once closed; the poller's have none, so the failure
  // is posted here the same way.
  void abort(const std::shared_ptr<Exchange>& ex) {
    if (!ex->conn) return;
    const bool polled = ex->conn->fd >= 0;
    ex->conn->close();
    if (!polled) return;
    const int64_t t = now();
    asio::post(io, [this, ex, t] {
      if (!ex->done) io_error(ex, asio::error::operation_aborted, t);
    });
  }

  static std::string open_files_hint() {
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    return fmt::format(" (open-file limit {}: raise `ulimit -n`, or use fewer connections)", lim.rlim_cur);
  }

  void start_exchange(const std::shared_ptr<Exchange>& ex, std::shared_ptr<Connection> conn) {
    ex->conn = std::move(conn);
    ex->phase = Phase::kExchanging;
    ex->parser.reset(ex->request.method == "HEAD");
    ex->got_bytes = false;
    ex->head_reported = false;
    const int64_t t = now();
    ex->timer.cancel();
    if (ex->request.timeout_ns > 0) {
      ex->timer.expires_at(to_time_point(t + ex->request.timeout_ns));
      ex->timer.async_wait([this, ex](const boost::system::error_code& ec) {
        if (ec || ex->done) return;
        ex->timed_out = true;
        abort(ex);
      });
    }
    ex->sink->on_send(t);
    if (Connection* c = ex->conn.get(); c->fd >= 0) {
      c->reader = ex.get();
      ex->write_offset = 0;
      if (!write_plain(ex) || ex->conn.get() != c) return;
      // Bytes (or the close of a stale keep-alive connection) that arrived while it was idle.
      if (c->readable || c->peer_closed) read_available(ex);
      return;
    }
    // TLS. Handlers of a connection the exchange has left (stale keep-alive replaced) are ignored.
    auto on_written = [this, ex, conn = ex->conn](const boost::system::error_code& ec, size_t) {
      if (ex->done || ex->conn != conn) return;
      if (ec) {
        io_error(ex, ec, now());
        return;
      }
    };
    // Write and read concurrently: a server may answer (e.g. 413, 503) before reading the body.
    asio::async_write(*ex->conn->tls, asio::buffer(ex->wire), on_written);
    read_more(ex);
  }

  // TLS: asio reads and decrypts.
  void read_more(const std::shared_ptr<Exchange>& ex) {
    Connection& c = *ex->conn;
    c.tls->async_read_some(asio::buffer(c.buffer),
                           [this, ex, conn = ex->conn](const boost::system::error_code& ec, size_t n) {
                             const int64_t t = now();
                             if (ex->done || ex->conn != conn) return;
                             if (ec) {
                               io_error(ex, ec, t);
                               return;
                             }
                             if (on_bytes(ex, n, t)) read_more(ex);
                           });
  }

  // Plain TCP, when the poller reports the socket readable: recvmsg() ourselves to get the
  // kernel's receive timestamp of the bytes (SO_TIMESTAMPNS), so a busy loop does not delay the
  // stamps. Edge-triggered: reads until a short read (drained; the next arrival is a new edge), or
  // to EAGAIN/EOF once the server has closed; after four full buffers it yields to other sockets
  // and continues from the queue.
  void read_available(const std::shared_ptr<Exchange>& ex) {
    // The exchange keeps the connection while on_bytes() wants more; once it does not, the loop
    // returns without touching it again.
    Connection& c = *ex->conn;
    const bool to_end = c.peer_closed;
    for (int round = 0; round < 4; ++round) {
      const TimedRead read = receive_timed(c.fd, c.buffer.data(), c.buffer.size());
      const ssize_t n = read.bytes;
      if (n < 0 && read.error == EINTR) continue;
      if (n < 0 && (read.error == EAGAIN || read.error == EWOULDBLOCK)) {
        c.readable = false;
        return;
      }
      if (n < 0) {
        io_error(ex, boost::system::error_code(read.error, boost::system::system_category()), read.read_ns);
        return;
      }
      if (n == 0) {
        io_error(ex, asio::error::eof, read.read_ns);
        return;
      }
      const int64_t t = kernel_time(read);
      if (!on_bytes(ex, static_cast<size_t>(n), t)) return;
      if (static_cast<size_t>(n) < c.buffer.size() && !to_end) {
        c.readable = false;
        return;
      }
    }
    asio::post(io, [this, ex, conn = ex->conn] {
      if (!ex->done && ex->conn == conn) read_available(ex);
    });
  }

  // The receive time the kernel recorded for a read's bytes; the read time when it gave none or
  // kernel timestamps are off. Never later than the read.
  int64_t kernel_time(const TimedRead& read) {
    if (!options.kernel_timestamps || !read.arrived_ns) return read.read_ns;
    const int64_t delay = read.read_ns - *read.arrived_ns;
    ++counters.kernel_timestamps;
    counters.stamp_delay_sum_ns += delay;
    counters.stamp_delay_max_ns = std::max(counters.stamp_delay_max_ns, delay);
    return *read.arrived_ns;
  }

  void report_head(Exchange& ex) {
    ex.head_reported = true;
    ex.sink->on_head({.status = ex.parser.status(),
                      .content_type = ex.parser.content_type(),
                      .retry_after = ex.parser.retry_after()},
                     ex.first_byte_ns);
  }

  // Feeds one read to the parser and the sink. Returns true when the exchange wants more bytes.
  bool on_bytes(const std::shared_ptr<Exchange>& ex, size_t n, int64_t t) {
    ++counters.reads;
    counters.bytes_read += static_cast<int64_t>(n);
    if (!ex->got_bytes) {
      ex->got_bytes = true;
      ex->first_byte_ns = t;
    }
    bool aborted = false;
    const std::string_view bytes(ex->conn->buffer.data(), n);
    auto consumed = ex->parser.feed(bytes, [&](std::string_view body) {
      if (aborted) return;
      if (!ex->head_reported) report_head(*ex);
      if (!ex->sink->on_body(body, t)) aborted = true;
    });
    if (!consumed) {
      finish(ex, FailureKind::kMalformed, consumed.error().message(), t, false);
      return false;
    }
    if (aborted) {
      finish(ex, FailureKind::kCancelled, "aborted by the response consumer", t, false);
      return false;
    }
    if (ex->parser.head_done() && !ex->head_reported) report_head(*ex);
    if (ex->parser.done()) {
      finish(ex, FailureKind::kNone, "", t, ex->parser.keep_alive() && *consumed == n);
      return false;
    }
    return true;
  }

  void io_error(const std::shared_ptr<Exchange>& ex, const boost::system::error_code& ec, int64_t t) {
    if (ex->timed_out) {
      finish(ex, FailureKind::kTimeout,
             fmt::format("request timed out after {} ms ({})", ex->request.timeout_ns / 1'000'000,
                         ex->parser.head_done() ? fmt::format("{} body bytes received", ex->parser.body_bytes())
                                                : received_so_far(*ex)),
             t, false);
      return;
    }
    if (ex->cancelled) {
      finish(ex, FailureKind::kCancelled, "cancelled by the client", t, false);
      return;
    }
    // A reused keep-alive connection that the server had already closed: nothing of this request
    // was processed, so it is sent again on a fresh connection (once).
    if (!ex->got_bytes && ex->conn && ex->conn->reused && ex->attempts == 0) {
      ++ex->attempts;
      ++counters.stale_retries;
      ex->conn->close();
      ex->conn.reset();
      open_connection(ex);
      return;
    }
    if (is_eof_like(ec) && ex->parser.on_eof()) {
      finish(ex, FailureKind::kNone, "", t, false);
      return;
    }
    const std::string what = is_eof_like(ec) ? std::string("connection closed by the server") : ec.message();
    finish(ex, is_eof_like(ec) ? FailureKind::kClosed : FailureKind::kReset,
           fmt::format("{} {}", what, received_so_far(*ex)), t, false);
  }

  // How far the response got when the exchange ended early, for its failure message.
  static std::string received_so_far(const Exchange& ex) {
    if (!ex.got_bytes) return "before any response byte";
    if (!ex.parser.head_done()) return "before the response headers were complete";
    return fmt::format("after {} body bytes of an HTTP {} response, before the response was complete",
                       ex.parser.body_bytes(), ex.parser.status());
  }

  void finish(const std::shared_ptr<Exchange>& ex, FailureKind kind, std::string_view message, int64_t t, bool keep) {
    if (ex->done) return;
    ex->done = true;
    ex->timer.cancel();
    if (ex->conn) {
      ex->conn->reader = nullptr;
      if (keep && idle.size() < options.max_idle_connections) {
        idle.push_back(std::move(ex->conn));
      } else {
        ex->conn->close();
      }
      ex->conn.reset();
    }
    auto keep_alive = ex;  // the map holds the last owner besides this reference
    active.erase(ex.get());
    ex->sink->on_done(kind, message, t);
  }

  void cancel_all() {
    std::vector<std::shared_ptr<Exchange>> all;
    all.reserve(active.size());
    for (auto& [ptr, ex] : active) all.push_back(ex);
    for (auto& ex : all) {
      ex->cancelled = true;
      abort(ex);
    }
    for (auto& conn : idle) conn->close();
    idle.clear();
  }
};

ClientLoop::ClientLoop(LoopOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
ClientLoop::~ClientLoop() = default;

Result<void> ClientLoop::prepare() {
  return impl_->resolve();
}
void ClientLoop::submit(Request request, ResponseSink* sink) {
  impl_->submit(std::move(request), sink);
}

void ClientLoop::call_at(int64_t t_ns, std::function<void()> fn) {
  if (t_ns <= impl_->now()) {
    asio::post(impl_->io, std::move(fn));
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(impl_->io, to_time_point(t_ns));
  timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec) fn();
  });
}

void ClientLoop::cancel_all() {
  impl_->cancel_all();
}
int64_t ClientLoop::now_ns() const {
  return impl_->now();
}
const LoopCounters& ClientLoop::counters() const {
  return impl_->counters;
}
size_t ClientLoop::in_flight() const {
  return impl_->active.size();
}
void ClientLoop::post(std::function<void()> fn) {
  asio::post(impl_->io, std::move(fn));
}
void ClientLoop::stop() {
  impl_->io.stop();
}

void ClientLoop::run() {
  // Timer wake-ups within ~µs instead of the default 50 µs slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  auto guard = asio::make_work_guard(impl_->io);
  impl_->io.restart();
  impl_->io.run();
}

namespace {

class CollectSink final : public ResponseSink {
 public:
  explicit CollectSink(ClientLoop& loop) : loop_(loop) {}
  void on_send(int64_t) override {}
  void on_head(const ResponseHead& head, int64_t) override {
    response.status = head.status;
    response.content_type = std::string(head.content_type);
  }
  bool on_body(std::string_view bytes, int64_t) override {
    response.body.append(bytes);
    return true;
  }
  void on_done(FailureKind k, std::string_view m, int64_t) override {
    kind = k;
    message = std::string(m);
    loop_.stop();
  }
  SimpleResponse response;
  FailureKind kind = FailureKind::kNone;
  std::string message;

 private:
  ClientLoop& loop_;
};

}  // namespace

Result<SimpleResponse> fetch(const Url& base, std::string_view method, std::string_view target, std::string_view body,
                             std::span<const Header> headers, int64_t timeout_ns, bool verify_tls) {
  LoopOptions options;
  options.target = base;
  options.verify_tls = verify_tls;
  options.connect_timeout_ns = timeout_ns;
  ClientLoop loop(options);
  if (auto ok = loop.prepare(); !ok) return std::unexpected(ok.error());
  CollectSink sink(loop);
  Request request;
  request.method = std::string(method);
  request.target = std::string(target);
  request.body = std::string(body);
  request.headers.assign(headers.begin(), headers.end());
  request.timeout_ns = timeout_ns;
  loop.submit(std::move(request), &sink);
  loop.run();
  switch (sink.kind) {
    case FailureKind::kNone: return std::move(sink.response);
    case FailureKind::kTimeout:
      return fail(ErrorCode::kTimeout, fmt::format("{}{}: {}", base.origin(), target, sink.message));
    case FailureKind::kMalformed:
      return fail(ErrorCode::kParse, fmt::format("{}{}: {}", base.origin(), target, sink.message));
    default: return fail(ErrorCode::kUnavailable, fmt::format("{}{}: {}", base.origin(), target, sink.message));
  }
}

}  // namespace ix::http
