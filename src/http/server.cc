#include "http/server.h"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "common/log.h"
#include "common/sanitize.h"
#include "http/client.h"
#include "http/receive_time.h"

namespace ix::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::chrono::steady_clock::time_point to_time_point(int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

constexpr size_t kReadBufferBytes = 64 * 1024;
// Each chunked write reserves this many bytes in front of the payload for the chunk-size line, so
// the frame is completed in place instead of copying the payload behind a header.
constexpr size_t kChunkHeaderReserve = 18;
constexpr size_t kPullBudgetBytes = 16 * 1024;

class Connection;

// One event loop and everything that belongs to its thread.
// `context` is declared last so it is destroyed first: destroying it destroys the handlers that
// still own connections, whose destructors unregister from `connections`.
struct Loop {
  std::vector<char> read_buffer = std::vector<char>(kReadBufferBytes);
  std::unordered_set<Connection*> connections;  // touched on this loop's thread only
  asio::io_context context{1};
};

// Lets Wakers post to a loop without outliving it: the pointer is cleared (under the mutex)
// before the loop is destroyed.
struct LoopHandle {
  std::mutex mutex;
  asio::io_context* context = nullptr;
};

struct Shared {
  Handler handler;
  ServerOptions options;
  std::atomic<size_t> connections{0};
};

std::string make_head(int status, std::string_view content_type, const std::vector<HeaderField>& headers,
                      std::optional<size_t> content_length, bool chunked, bool close, int version_minor) {
  std::string head;
  head.reserve(192);
  fmt::format_to(std::back_inserter(head), "HTTP/1.1 {} {}\r\nserver: ixbench\r\n", status, status_reason(status));
  if (!content_type.empty()) fmt::format_to(std::back_inserter(head), "content-type: {}\r\n", content_type);
  if (content_length) fmt::format_to(std::back_inserter(head), "content-length: {}\r\n", *content_length);
  if (chunked) head += "transfer-encoding: chunked\r\n";
  if (close) {
    head += "connection: close\r\n";
  } else if (version_minor == 0) {
    head += "connection: keep-alive\r\n";
  }
  for (const auto& field : headers) fmt::format_to(std::back_inserter(head), "{}: {}\r\n", field.name, field.value);
  head += "\r\n";
  return head;
}

class Connection final : public std::enable_shared_from_this<Connection>, public RequestContext {
 public:
  Connection(Loop& loop, std::shared_ptr<LoopHandle> loop_handle, Shared& shared, tcp::socket socket)
      : loop_(loop),
        loop_handle_(std::move(loop_handle)),
        shared_(shared),
        socket_(std::move(socket)),
        timer_(loop.context) {
    loop_.connections.insert(this);
    shared_.connections.fetch_add(1, std::memory_order_relaxed);
  }
  ~Connection() override {
    abort_source();
    loop_.connections.erase(this);
    shared_.connections.fetch_sub(1, std::memory_order_relaxed);
  }

  void start() {
    boost::system::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    socket_.non_blocking(true, ec);
    enable_receive_timestamps(socket_.native_handle());
    begin_reading();
  }

  // Server shutdown: close now; pending operations complete with errors and release us.
  void shutdown() { close(); }

  std::shared_ptr<Waker> waker() override;
  std::shared_ptr<Responder> defer() override;

  void on_wake(uint64_t request_seq) {
    if (request_seq != request_seq_ || state_ != State::kStreaming) return;
    if (writing_) {
      wake_pending_ = true;
      return;
    }
    pump();
  }

 private:
  enum class State { kReading, kDeferred, kStreaming, kWritingFinal, kClosed };

  // --- reading -----------------------------------------------------------------------------

  void begin_reading() {
    state_ = State::kReading;
    request_started_ns_ = 0;
    if (!pending_.empty()) {
      request_started_ns_ = steady_now_ns();
      if (process_pending()) return;
    }
    arm_request_timer();
    wait_readable();
  }

  // Idle keep-alive connections get idle_timeout_ms; once a request's first byte is in, the whole
  // request must arrive within request_timeout_ms of it (slow-loris protection).
  void arm_request_timer() {
    int64_t deadline_ns = request_started_ns_ == 0
                              ? steady_now_ns() + shared_.options.idle_timeout_ms * 1'000'000
                              : request_started_ns_ + shared_.options.request_timeout_ms * 1'000'000;
    uint64_t generation = ++timer_generation_;
    timer_.expires_at(to_time_point(deadline_ns));
    timer_.async_wait([self = shared_from_this(), generation](const boost::system::error_code& ec) {
      if (ec || generation != self->timer_generation_ || self->state_ != State::kReading) return;
      if (self->pending_.empty()) {
        self->close();
      } else {
        self->send_error_and_close(408, "request not completed within the request timeout");
      }
    });
  }

  void wait_readable() {
    if (read_waiting_ || state_ == State::kClosed) return;
    read_waiting_ = true;
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
      self->read_waiting_ = false;
      if (ec) {
        if (ec != asio::error::operation_aborted) self->close();
        return;
      }
      self->on_readable();
    });
  }

  // Reads what is available into the loop's buffer and appends it to pending_, noting when the
  // first of those bytes reached the socket (the kernel's receive timestamp; the read time when it
  // has none). Returns false when the peer closed or the socket failed (the connection is closed
  // then).
  bool read_available() {
    while (true) {
      const TimedRead read = receive_timed(socket_.native_handle(), loop_.read_buffer.data(), loop_.read_buffer.size());
      const ssize_t n = read.bytes;
      if (n < 0 && read.error == EINTR) continue;
      if (n < 0 && (read.error == EAGAIN || read.error == EWOULDBLOCK)) return true;
      if (n <= 0) {
        close();
        return false;
      }
      last_arrival_ns_ = read.arrived_ns.value_or(read.read_ns);
      if (pending_.empty()) pending_arrival_ns_ = last_arrival_ns_;
      pending_.append(loop_.read_buffer.data(), static_cast<size_t>(n));
      if (static_cast<size_t>(n) < loop_.read_buffer.size()) return true;
      if (pending_.size() > shared_.options.limits.max_head_bytes + shared_.options.limits.max_body_bytes) return true;
    }
  }

  void on_readable() {
    if (state_ == State::kClosed) return;
    if (state_ != State::kReading) {
      // Mid-response: watch for the peer going away; keep pipelined bytes for later (bounded).
      if (!read_available()) return;
      if (pending_.size() <= shared_.options.limits.max_head_bytes) wait_readable();
      return;
    }
    bool was_idle = pending_.empty();
    if (!read_available()) return;
    if (was_idle && !pending_.empty()) {
      request_started_ns_ = steady_now_ns();
      arm_request_timer();
    }
    if (!process_pending()) wait_readable();
  }

  // Parses pending_; dispatches a complete request. Returns true when a request was dispatched or
  // the connection was closed (the caller must not keep reading).
  bool process_pending() {
    ParseResult parsed = parse_request(pending_, shared_.options.limits, request_);
    if (parsed.state == ParseState::kError) {
      send_error_and_close(parsed.error_status, parsed.error_message);
      return true;
    }
    if (parsed.state == ParseState::kIncomplete) {
      if (parsed.head_complete && parsed.expect_continue && !continue_sent_) {
        continue_sent_ = true;
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        boost::system::error_code ec;
        asio::write(socket_, asio::buffer(kContinue.data(), kContinue.size()), ec);
      }
      return false;
    }
    pending_.erase(0, parsed.consumed);
    if (pending_.empty()) std::string().swap(pending_);  // idle connections keep no buffer
    continue_sent_ = false;
    request_.received_ns = steady_now_ns();
    request_.arrived_ns = std::min(pending_arrival_ns_, request_.received_ns);
    // Pipelined bytes left over arrived with the last read at the latest.
    pending_arrival_ns_ = last_arrival_ns_;
    ++timer_generation_;
    timer_.cancel();
    dispatch();
    return true;
  }

  // --- responding --------------------------------------------------------------------------

  void dispatch() {
    ++request_seq_;
    ServerResponse response = guarded([this] { return shared_.handler(request_, *this); });
    if (response.deferred) {
      if (deferred_self_ == nullptr) {
        respond_with(internal_error("internal error: a handler deferred its response without a Responder"));
        return;
      }
      // Only a peer that goes away is watched for until the answer comes (see on_deferred).
      state_ = State::kDeferred;
      wait_readable();
      return;
    }
    deferred_self_.reset();
    respond_with(std::move(response));
  }

  // What `make` returns, or a 500 naming what it threw.
  template <typename Make>
  ServerResponse guarded(Make&& make) {
    try {
      return make();
    } catch (const std::exception& e) {
      log::error("http handler failed for {} {}: {}", printable(request_.method), printable(request_.path),
                 printable(e.what()));
      return internal_error(std::string("internal error: ") + e.what());
    } catch (...) {
      return internal_error("internal error");
    }
  }

  static ServerResponse internal_error(std::string_view message) {
    ServerResponse response;
    response.status = 500;
    response.body = openai_error_json(500, message, "InternalServerError");
    return response;
  }

  // Sends the response to request_ (the handler's, or a deferred one's).
  void respond_with(ServerResponse response) {
    if (response.drop_connection) {
      close();
      return;
    }
    keep_alive_ = request_.keep_alive && !response.close_connection;
    if (!response.source) {
      write_buf_ = make_head(response.status, response.content_type, response.headers, response.body.size(), false,
                             !keep_alive_, request_.version_minor);
      // A HEAD response has the head GET would have (its Content-Length too) and no body: bytes
      // after it would be read as the next response on a keep-alive connection (RFC 9110 9.3.2).
      if (request_.method != "HEAD") write_buf_ += response.body;
      write_final();
      return;
    }
    start_stream(std::move(response));
  }

  void start_stream(ServerResponse response) {
    // The handler copied what it needs; a long-lived stream should not keep the request around.
    version_minor_ = request_.version_minor;
    request_ = ServerRequest();
    source_ = std::move(response.source);
    buffered_ = response.body_mode == BodyMode::kBuffered;
    chunked_ = !buffered_ && version_minor_ >= 1;
    if (!buffered_ && !chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends at close
    status_ = response.status;
    if (buffered_) {
      content_type_ = std::move(response.content_type);
      extra_headers_ = std::move(response.headers);
      body_.clear();
    } else {
      head_ = make_head(response.status, response.content_type, response.headers, std::nullopt, chunked_, !keep_alive_,
                        version_minor_);
    }
    state_ = State::kStreaming;
    wait_readable();  // notice a peer that goes away mid-stream
    pump();
  }

 public:
  // A deferred answer arrived (Responder::respond, posted to this loop).
  void on_deferred(uint64_t request_seq, const std::function<ServerResponse(RequestContext&)>& make) {
    if (request_seq != request_seq_ || state_ != State::kDeferred) return;
    auto keep = std::move(deferred_self_);
    ServerResponse response = guarded([&] { return make(*this); });
    if (response.deferred) response = internal_error("internal error: a deferred response deferred again");
    respond_with(std::move(response));
  }

 private:
  void pump() {
    if (state_ != State::kStreaming || writing_) return;
    wake_pending_ = false;
    int64_t now = steady_now_ns();
    if (buffered_) {
      PullResult result;
      do {
        result = source_->pull(body_, kPullBudgetBytes, now);
      } while (result.status == PullStatus::kMore);
      if (result.status == PullStatus::kWait) {
        arm_wake_timer(result.wake_at_ns);
        return;
      }
      source_.reset();
      if (result.status == PullStatus::kAbort) {
        close();
        return;
      }
      write_buf_ = make_head(status_, content_type_, extra_headers_, body_.size(), false, !keep_alive_, version_minor_);
      write_buf_ += body_;
      body_ = std::string();
      write_final();
      return;
    }
    chunk_.assign(kChunkHeaderReserve, '\0');
    PullResult result = source_->pull(chunk_, kPullBudgetBytes, now);
    size_t payload = chunk_.size() - kChunkHeaderReserve;
    size_t offset = kChunkHeaderReserve;
    if (payload > 0 && chunked_) {
      char header[kChunkHeaderReserve];
      auto* end = fmt::format_to(header, "{:x}\r\n", payload);
      size_t header_size = static_cast<size_t>(end - header);
      offset = kChunkHeaderReserve - header_size;
      std::copy(header, end, chunk_.data() + offset);
      chunk_ += "\r\n";
    }
    if (result.status == PullStatus::kEnd && chunked_) chunk_ += "0\r\n\r\n";
    last_pull_ = result;
    bool has_bytes = chunk_.size() > offset || !head_sent_;
    if (!has_bytes && result.status == PullStatus::kMore) {
      // A source that claims more but gave nothing: poll again shortly instead of spinning.
      last_pull_ = {PullStatus::kWait, now + 1'000'000};
    }
    if (!has_bytes) {
      after_write();
      return;
    }
    std::array<asio::const_buffer, 2> buffers = {asio::buffer(head_.data(), head_sent_ ? 0 : head_.size()),
                                                 asio::buffer(chunk_.data() + offset, chunk_.size() - offset)};
    head_sent_ = true;
    writing_ = true;
    asio::async_write(socket_, buffers, [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
      self->writing_ = false;
      if (ec) {
        self->close();
        return;
      }
      self->after_write();
    });
  }

  void after_write() {
    if (state_ != State::kStreaming) return;
    switch (last_pull_.status) {
      case PullStatus::kMore: pump(); return;
      case PullStatus::kWait:
        if (wake_pending_) {
          pump();
        } else {
          arm_wake_timer(last_pull_.wake_at_ns);
        }
        return;
      case PullStatus::kEnd:
        source_.reset();
        finish_response();
        return;
      case PullStatus::kAbort:
        source_.reset();
        close();
        return;
    }
  }

  void arm_wake_timer(int64_t wake_at_ns) {
    if (wake_at_ns <= 0) return;
    uint64_t generation = ++timer_generation_;
    timer_.expires_at(to_time_point(wake_at_ns));
    timer_.async_wait([self = shared_from_this(), generation](const boost::system::error_code& ec) {
      if (ec || generation != self->timer_generation_) return;
      if (self->writing_) {
        self->wake_pending_ = true;
        return;
      }
      self->pump();
    });
  }

  void write_final() {
    state_ = State::kWritingFinal;
    writing_ = true;
    asio::async_write(socket_, asio::buffer(write_buf_),
                      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                        self->writing_ = false;
                        if (ec) {
                          self->close();
                          return;
                        }
                        self->finish_response();
                      });
  }

  void finish_response() {
    if (!keep_alive_) {
      boost::system::error_code ec;
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      close();
      return;
    }
    // Idle keep-alive connections keep no large buffers.
    if (write_buf_.capacity() > 4096) write_buf_ = std::string();
    if (chunk_.capacity() > 4096) chunk_ = std::string();
    head_.clear();
    head_sent_ = false;
    request_ = ServerRequest();
    ++timer_generation_;
    begin_reading();
  }

  void send_error_and_close(int status, const std::string& message) {
    keep_alive_ = false;
    std::string body = openai_error_json(status, message, status >= 500 ? "InternalServerError" : "BadRequestError");
    write_buf_ = make_head(status, "application/json", {}, body.size(), false, true, 1);
    write_buf_ += body;
    pending_.clear();
    ++timer_generation_;
    timer_.cancel();
    write_final();
  }

  void abort_source() {
    if (source_) {
      auto source = std::move(source_);
      source->on_abort();
    }
  }

  void close() {
    if (state_ == State::kClosed) return;
    // A deferred request keeps its connection alive until answered; closing ends that (the last
    // reference may go when this function returns).
    auto keep = std::move(deferred_self_);
    state_ = State::kClosed;
    abort_source();
    boost::system::error_code ec;
    socket_.close(ec);
    timer_.cancel();
  }

  Loop& loop_;
  std::shared_ptr<LoopHandle> loop_handle_;
  Shared& shared_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  State state_ = State::kReading;
  std::string pending_;             // received, not yet consumed bytes
  int64_t pending_arrival_ns_ = 0;  // when the first of pending_'s bytes reached the socket
  int64_t last_arrival_ns_ = 0;     // when the bytes of the last read reached the socket
  ServerRequest request_;
  int64_t request_started_ns_ = 0;
  uint64_t timer_generation_ = 0;
  uint64_t request_seq_ = 0;
  bool read_waiting_ = false;
  bool writing_ = false;
  bool wake_pending_ = false;
  bool keep_alive_ = true;
  bool continue_sent_ = false;
  // Response in progress.
  std::unique_ptr<BodySource> source_;
  bool buffered_ = false;
  bool chunked_ = true;
  bool head_sent_ = false;
  int status_ = 200;
  int version_minor_ = 1;
  std::string content_type_;
  std::vector<HeaderField> extra_headers_;
  std::string head_;
  std::string chunk_;
  std::string body_;
  std::string write_buf_;
  PullResult last_pull_;
  // Set while a handler's answer is deferred: the connection owns itself until on_deferred.
  std::shared_ptr<Connection> deferred_self_;
};

class ConnectionWaker final : public Waker, public std::enable_shared_from_this<ConnectionWaker> {
 public:
  ConnectionWaker(std::shared_ptr<LoopHandle> loop, std::weak_ptr<Connection> connection, uint64_t request_seq)
      : loop_(std::move(loop)), connection_(std::move(connection)), request_seq_(request_seq) {}

  void wake() override {
    if (queued_.exchange(true, std::memory_order_acq_rel)) return;
    std::lock_guard lock(loop_->mutex);
    if (loop_->context == nullptr) return;
    asio::post(*loop_->context, [self = shared_from_this()] {
      self->queued_.store(false, std::memory_order_release);
      if (auto connection = self->connection_.lock()) connection->on_wake(self->request_seq_);
    });
  }

 private:
  std::shared_ptr<LoopHandle> loop_;
  std::weak_ptr<Connection> connection_;
  uint64_t request_seq_;
  std::atomic<bool> queued_{false};
};

std::shared_ptr<Waker> Connection::waker() {
  return std::make_shared<ConnectionWaker>(loop_handle_, weak_from_this(), request_seq_);
}

class ConnectionResponder final : public Responder {
 public:
  ConnectionResponder(std::shared_ptr<LoopHandle> loop, std::weak_ptr<Connection> connection, uint64_t request_seq)
      : loop_(std::move(loop)), connection_(std::move(connection)), request_seq_(request_seq) {}

  void respond(std::function<ServerResponse(RequestContext&)> make) override {
    std::lock_guard lock(loop_->mutex);
    if (loop_->context == nullptr) return;
    asio::post(*loop_->context, [connection = connection_, seq = request_seq_, make = std::move(make)] {
      if (auto alive = connection.lock()) alive->on_deferred(seq, make);
    });
  }

  bool abandoned() const override { return connection_.expired(); }

 private:
  std::shared_ptr<LoopHandle> loop_;
  std::weak_ptr<Connection> connection_;
  uint64_t request_seq_;
};

std::shared_ptr<Responder> Connection::defer() {
  deferred_self_ = shared_from_this();
  return std::make_shared<ConnectionResponder>(loop_handle_, weak_from_this(), request_seq_);
}

}  // namespace

struct HttpServer::Impl {
  Shared shared;
  std::vector<std::unique_ptr<Loop>> loops;
  std::vector<std::shared_ptr<LoopHandle>> handles;
  std::vector<std::thread> threads;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> accept_retry;
  size_t next_loop = 0;
  uint16_t port = 0;
  std::mutex stop_mutex;
  std::condition_variable stopped_cv;
  bool stopped = false;
  int64_t last_accept_warning_ns = 0;

  void hand_over(Loop& target, std::shared_ptr<LoopHandle> handle, tcp::socket socket) {
    asio::post(target.context, [this, &target, handle = std::move(handle), socket = std::move(socket)]() mutable {
      auto connection = std::make_shared<Connection>(target, handle, shared, std::move(socket));
      connection->start();
    });
  }

  void accept() {
    Loop& target = *loops[next_loop];
    auto handle = handles[next_loop];
    next_loop = (next_loop + 1) % loops.size();
    acceptor->async_accept(target.context,
                           [this, &target, handle](const boost::system::error_code& ec, tcp::socket socket) mutable {
                             if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
                             if (ec) {
                               // Typically EMFILE: back off briefly instead of spinning on a failing accept.
                               int64_t now = steady_now_ns();
                               if (now - last_accept_warning_ns > 1'000'000'000) {
                                 last_accept_warning_ns = now;
                                 log::warn("http server: accept failed: {}", ec.message());
                               }
                               accept_retry->expires_after(std::chrono::milliseconds(20));
                               accept_retry->async_wait([this](const boost::system::error_code& wait_ec) {
                                 if (!wait_ec) accept();
                               });
                               return;
                             }
                             hand_over(target, handle, std::move(socket));
                             // Drain what else is queued without a loop turn per connection: a busy loop accepting
                             // one connection per turn lets the listen backlog overflow under a connection storm.
                             for (int drained = 0; drained < 256; ++drained) {
                               Loop& next = *loops[next_loop];
                               boost::system::error_code accept_ec;
                               tcp::socket extra(next.context);
                               acceptor->accept(extra, accept_ec);
                               if (accept_ec) break;
                               hand_over(next, handles[next_loop], std::move(extra));
                               next_loop = (next_loop + 1) % loops.size();
                             }
                             accept();
                           });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const ServerOptions& options, Handler handler) {
  auto impl = std::make_unique<Impl>();
  impl->shared.handler = std::move(handler);
  impl->shared.options = options;
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(threads, 1);
  for (int index = 0; index < threads; ++index) {
    impl->loops.push_back(std::make_unique<Loop>());
    auto handle = std::make_shared<LoopHandle>();
    handle->context = &impl->loops.back()->context;
    impl->handles.push_back(std::move(handle));
  }
  try {
    // An IP literal, or a name such as localhost (its first IPv4 address, else the first one).
    boost::system::error_code literal_error;
    const auto literal = asio::ip::make_address(options.host, literal_error);
    tcp::endpoint endpoint;
    if (!literal_error) {
      endpoint = tcp::endpoint(literal, options.port);
    } else {
      tcp::resolver resolver(impl->loops[0]->context);
      const auto results = resolver.resolve(options.host, std::to_string(options.port),
                                            tcp::resolver::passive | tcp::resolver::numeric_service);
      endpoint = results.begin()->endpoint();
      for (const auto& entry : results)
        if (entry.endpoint().address().is_v4()) {
          endpoint = entry.endpoint();
          break;
        }
    }
    impl->acceptor = std::make_unique<tcp::acceptor>(impl->loops[0]->context);
    impl->acceptor->open(endpoint.protocol());
    impl->acceptor->set_option(tcp::acceptor::reuse_address(true));
    impl->acceptor->bind(endpoint);
    impl->acceptor->listen(options.backlog);
    impl->acceptor->non_blocking(true);
    impl->port = impl->acceptor->local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    return fail(ErrorCode::kUnavailable,
                fmt::format("cannot listen on {}: {} (pick another --port or --host)",
                            printable(Url{.host = options.host, .port = options.port, .path = {}}.origin()),
                            e.code().message()));
  }
  impl->accept_retry = std::make_unique<asio::steady_timer>(impl->loops[0]->context);
  Impl* raw = impl.get();
  asio::post(impl->loops[0]->context, [raw] { raw->accept(); });
  for (auto& loop : impl->loops) {
    asio::io_context* context = &loop->context;
    impl->threads.emplace_back([context] {
      // Timers fire when due, not up to the default 50 us later (the kernel's timer slack lets it
      // batch wake-ups): streams paced by these timers measure clients' timing accuracy.
      prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
      auto guard = asio::make_work_guard(*context);
      context->run();
    });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() {
  stop();
}

uint16_t HttpServer::port() const {
  return impl_->port;
}
int HttpServer::threads() const {
  return static_cast<int>(impl_->loops.size());
}
size_t HttpServer::connection_count() const {
  return impl_->shared.connections.load(std::memory_order_relaxed);
}

void HttpServer::stop() {
  {
    std::lock_guard lock(impl_->stop_mutex);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  // Close the listener and every connection on their own threads, then stop the loops.
  Impl* impl = impl_.get();
  asio::post(impl->loops[0]->context, [impl] {
    boost::system::error_code ec;
    impl->acceptor->close(ec);
    impl->accept_retry->cancel();
  });
  for (auto& loop : impl->loops) {
    Loop* raw = loop.get();
    asio::post(raw->context, [raw] {
      std::vector<Connection*> open(raw->connections.begin(), raw->connections.end());
      for (Connection* connection : open) connection->shutdown();
    });
  }
  // Give the close handlers a moment to run, then stop regardless.
  for (auto& loop : impl->loops) {
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    asio::post(loop->context, [done] { done->set_value(); });
    future.wait_for(std::chrono::seconds(2));
  }
  for (auto& handle : impl->handles) {
    std::lock_guard lock(handle->mutex);
    handle->context = nullptr;
  }
  for (auto& loop : impl->loops) loop->context.stop();
  for (auto& thread : impl->threads) thread.join();
  impl->threads.clear();
  impl->accept_retry.reset();
  impl->acceptor.reset();
  {
    std::lock_guard lock(impl_->stop_mutex);
    impl_->stopped_cv.notify_all();
  }
}

void HttpServer::wait() {
  std::unique_lock lock(impl_->stop_mutex);
  impl_->stopped_cv.wait(lock, [this] { return impl_->stopped && impl_->threads.empty(); });
}

int64_t raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return static_cast<int64_t>(limit.rlim_cur);
}

std::string openai_error_json(int status, std::string_view message, std::string_view type) {
  return fmt::format(R"({{"error":{{"message":{},"type":{},"param":null,"code":{}}}}})",
                     boost::json::serialize(boost::json::string(message)),
                     boost::json::serialize(boost::json::string(type)), status);
}

}  // namespace ix::http
