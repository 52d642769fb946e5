// Capacity and timing accuracy of the `bench serve` client (src/bench + src/http), against
// `ixbench sim serve` over loopback.
//
// Phases (each prints one block; the summary table prints side-by-side ratios):
//   1. ceiling: a raw loopback SSE reader (epoll, non-blocking sockets, one request per
//      connection with Connection: close, counts bytes and "\n\n" event ends, parses nothing) on
//      --threads threads against `sim serve --no-delay`; events/s and bytes/s.
//   2. client: bench::run_serve (the real client: HTTP parsing, SSE decoding, JSON chunk parsing,
//      per-event timestamps, records) with --concurrency streams of --output-len tokens on
//      --threads threads, for --duration-s; content events/s, and its event-loop lag (how late a
//      due timer runs = how long a ready socket can wait before its bytes are stamped: the added
//      timing error).
//   3. accuracy: `sim serve --fixed-ttft-ms 50 --fixed-itl-ms 10` (--accuracy-ttft-ms/-itl-ms) at
//      each --accuracy-concurrency, --accuracy-output-len tokens (100), --accuracy-rounds requests
//      per stream (2): measured TTFT/ITL p50/p99 minus the truth, beside the server's own delivery
//      lateness over the measured window (ixbench:token_delivery_lateness_seconds from its
//      /metrics; for TTFT its first tokens' lateness, ixbench:first_token_delivery_lateness_seconds),
//      so the client's added error is separated from the server's. 10,000 streams at
//      10 ms ask the server for ~1M token events/s; "due" vs "got" shows what it delivered.
//   --raw-variants: beside each raw reader, the raw epoll reader stopping at a short read (one
//   recvmsg per event, as the client reads) and, when built with liburing, an io_uring reader
//   (multishot recvmsg with SO_TIMESTAMPNS from a provided-buffer ring; no system call per read):
//   whether the paced floor is the system calls or the TCP receive path.
//   Failures are printed by kind with an example message; requests still in flight when a
//   window ends are "cancelled", not failures.
//
// The server is spawned from --ixbench (default: the ixbench built beside this program) with
// --server-threads event-loop threads, pinned to --server-cpus if given; the client pins itself
// to --client-cpus if given (e.g. --client-cpus 0,1 for "2 cores"). --server-url uses a running
// server instead (phases 1-2 then need it to be --no-delay). Loads are bounded by --duration-s.
//
// Usage: bench_client_capacity [--threads 2] [--concurrency 10000] [--output-len 1000]
//        [--duration-s 10] [--server-threads 8] [--client-cpus 0,1] [--server-cpus 2-9]
//        [--accuracy-concurrency 256,1024,10000] [--accuracy-itl-ms 10] [--accuracy-ttft-ms 50]
//        [--accuracy-output-len 100] [--accuracy-rounds 2] [--server-url URL] [--ixbench PATH] [--skip-raw]
//        [--raw-variants]
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#if IXBENCH_HAVE_URING
#include <liburing.h>
#endif

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/serve_runner.h"
#include "common/clock.h"
#include "common/json_io.h"
#include "http/client.h"
#include "http/client_response.h"
#include "http/sse.h"
#include "metrics/statistics.h"
#include "openai/backend.h"

namespace {

struct Flags {
  int threads = 2;
  int concurrency = 10000;
  int output_len = 1000;
  double duration_s = 10;
  int server_threads = 8;
  std::string client_cpus;
  std::string server_cpus;
  std::string accuracy = "256,1024,10000";
  double accuracy_ttft_ms = 50;
  double accuracy_itl_ms = 10;
  int accuracy_output_len = 100;
  int accuracy_rounds = 2;  // requests per stream
  std::string server_url;
  std::string ixbench;
  bool skip_raw = false;
  bool raw_variants = false;  // also the raw reader with one read per event, and through io_uring
};

std::vector<int> parse_cpus(const std::string& text) {
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t dash = item.find('-');
    if (dash == std::string::npos) {
      cpus.push_back(std::stoi(item));
    } else {
      for (int c = std::stoi(item.substr(0, dash)); c <= std::stoi(item.substr(dash + 1)); ++c) cpus.push_back(c);
    }
    pos = end + 1;
  }
  return cpus;
}

void pin_to(const std::string& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : parse_cpus(cpus)) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

void raise_fd_limit() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
}

// A spawned `ixbench sim serve`, killed on destruction.
class Server {
 public:
  static std::unique_ptr<Server> spawn(const Flags& f, const std::vector<std::string>& mode) {
    std::vector<std::string> args = {f.ixbench, "sim",         "serve",
                                     "--model", "deepseek-r1", "--port",
                                     "0",       "--threads",   std::to_string(f.server_threads)};
    args.insert(args.end(), mode.begin(), mode.end());
    int out[2];
    if (pipe(out) != 0) return nullptr;
    const pid_t pid = fork();
    if (pid == 0) {
      pin_to(f.server_cpus);
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    char c;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    const std::string prefix = "listening on ";
    if (line.rfind(prefix, 0) != 0) {
      fmt::print(stderr, "server did not start: '{}'\n", line);
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return nullptr;
    }
    auto s = std::make_unique<Server>();
    s->pid_ = pid;
    s->fd_ = out[0];
    s->url_ = line.substr(prefix.size());
    return s;
  }
  Server() = default;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  const std::string& url() const { return url_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string url_;
};

std::string request_bytes(const ix::http::Url& url, const std::string& body, bool close_connection) {
  return fmt::format(
      "POST {}/v1/completions HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: "
      "{}\r\n{}\r\n{}",
      url.path, url.host, url.port, body.size(), close_connection ? "Connection: close\r\n" : "", body);
}

// The client's request (continuous_usage_stats on, as bench serve sends it: every chunk then
// carries the running usage, ~90 bytes more per event).
std::string completion_body(int output_len, bool continuous_usage = true) {
  ix::openai::CompletionRequest r{.model = "deepseek-r1",
                                  .prompt = " hello world this is a short prompt",
                                  .max_tokens = output_len,
                                  .ignore_eos = true,
                                  .temperature = 0.0,
                                  .continuous_usage = continuous_usage,
                                  .extra_body = nullptr};
  return ix::openai::build_request_body(ix::openai::Backend::kVllm, r);
}

// Phase 0: CPU cost of the client's per-event path, in process and independent of other load on
// the machine: a real streamed response from the server (HTTP chunked framing re-applied as the
// server sends it) is fed in 8 KiB reads through the same stages the client runs per read:
// HTTP/1.1 response parsing, SSE decoding, JSON chunk decoding, per-event timestamp and token
// bookkeeping. Thread CPU time / events = the ceiling of events per second per core.
struct ParseCost {
  double ns_per_event = 0;
  int64_t events_per_response = 0;
  size_t bytes_per_response = 0;
};

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

ParseCost parse_cost(const ix::http::Url& url, int output_len, bool continuous_usage) {
  ParseCost cost;
  const std::string body = completion_body(output_len, continuous_usage);
  auto response = ix::http::fetch(url, "POST", "/v1/completions", body, {}, 30'000'000'000);
  if (!response || response->status != 200) {
    fmt::print(stderr, "parse-cost: cannot fetch a sample stream\n");
    return cost;
  }
  // Re-frame as chunked: one chunk per SSE event, as the server writes them.
  std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
  size_t pos = 0;
  const std::string& b = response->body;
  while (pos < b.size()) {
    size_t end = b.find("\n\n", pos);
    end = end == std::string::npos ? b.size() : end + 2;
    wire += fmt::format("{:x}\r\n", end - pos) + b.substr(pos, end - pos) + "\r\n";
    pos = end;
  }
  wire += "0\r\n\r\n";
  cost.bytes_per_response = wire.size();
  ix::http::ResponseParser parser;
  ix::http::SseDecoder sse;
  ix::openai::StreamChunkDecoder chunks;
  std::vector<int64_t> event_ns;
  std::vector<int32_t> tokens;
  std::string text;
  int64_t events = 0;
  const int64_t cpu0 = thread_cpu_ns();
  int rounds = 0;
  while (thread_cpu_ns() - cpu0 < 1'000'000'000) {
    parser.reset();
    sse.reset();
    event_ns.clear();
    tokens.clear();
    text.clear();
    int64_t last_usage = 0;
    for (size_t off = 0; off < wire.size(); off += 8192) {
      const int64_t t = ix::SteadyClock().now_ns();
      auto r = parser.feed(std::string_view(wire).substr(off, 8192), [&](std::string_view piece) {
        (void)sse.feed(piece, [&](const ix::http::SseEvent& ev) {
          auto c = chunks.decode(ev.data);
          if (c && c->kind == ix::openai::StreamChunk::Kind::kData && c->has_choices && !c->text.empty()) {
            const int64_t delta = c->completion_tokens >= 0 ? c->completion_tokens - last_usage : 1;
            if (c->completion_tokens >= 0) last_usage = c->completion_tokens;
            event_ns.push_back(t);
            tokens.push_back(static_cast<int32_t>(std::max<int64_t>(delta, 1)));
            text.append(c->text);
          }
          return true;
        });
      });
      (void)r;
    }
    events += static_cast<int64_t>(event_ns.size());
    ++rounds;
  }
  const int64_t cpu = thread_cpu_ns() - cpu0;
  cost.events_per_response = rounds ? events / rounds : 0;
  cost.ns_per_event = events ? static_cast<double>(cpu) / static_cast<double>(events) : 0;
  return cost;
}

struct RawResult {
  double events_per_s = 0;
  double bytes_per_s = 0;
  int64_t streams = 0;
  double cpu_ns_per_event = 0;  // reader threads' CPU / events
};

// Closes with a reset instead of a FIN handshake: thousands of closed streams per second must not
// pile up in TIME_WAIT and exhaust ephemeral ports.
void close_with_reset(int fd) {
  linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  close(fd);
}

// "\n\n" event ends in one read of a stream whose previous read ended with `prev` (updated).
int64_t count_event_ends(const char* p, size_t n, char& prev) {
  const char* end = p + n;
  int64_t events = (prev == '\n' && *p == '\n') ? 1 : 0;
  while ((p = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)))) && p + 1 < end) {
    if (p[1] == '\n') ++events;
    ++p;
  }
  prev = end[-1];
  return events;
}

// What the raw readers' threads add up.
struct ReaderTotals {
  std::atomic<int64_t> bytes{0}, events{0}, streams{0}, cpu_ns{0};
  std::atomic<bool> stop{false};
};

// Runs worker(connections) on --threads threads for duration_s, then stops them.
RawResult run_reader_threads(const Flags& f, int concurrency, double duration_s, ReaderTotals& totals,
                             const std::function<void(int)>& worker) {
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < f.threads; ++t)
    threads.emplace_back(worker, concurrency / f.threads + (t < concurrency % f.threads));
  std::this_thread::sleep_for(std::chrono::duration<double>(duration_s));
  totals.stop = true;
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto events = static_cast<double>(totals.events);
  return {events / secs, static_cast<double>(totals.bytes) / secs, totals.streams.load(),
          events > 0 ? static_cast<double>(totals.cpu_ns) / events : 0.0};
}

// Phase 1: the ceiling. One request per connection (Connection: close) so the end of a response
// is the EOF and nothing has to be parsed.
// A connection to url that has sent `request` (TCP_NODELAY, blocking connect); -1 when refused.
int open_stream(const ix::http::Url& url, const std::string& request) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(url.port);
  inet_pton(AF_INET, url.host.c_str(), &addr.sin_addr);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  (void)!write(fd, request.data(), request.size());
  return fd;
}

RawResult raw_reader(const ix::http::Url& url, const Flags& f, int concurrency, int output_len, double duration_s,
                     bool short_read_drains = false) {
  const std::string request = request_bytes(url, completion_body(output_len), true);
  ReaderTotals totals;
  auto worker = [&](int conns) {
    const int64_t cpu0 = thread_cpu_ns();
    const int ep = epoll_create1(0);
    std::unordered_map<int, char> open_fds;  // fd -> the last byte read from it
    auto open_one = [&] {
      const int fd = open_stream(url, request);
      if (fd < 0) return;
      fcntl(fd, F_SETFL, O_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
      open_fds[fd] = 0;
    };
    for (int i = 0; i < conns; ++i) open_one();
    std::vector<char> buf(1 << 16);
    std::vector<epoll_event> events(256);
    int64_t bytes = 0, evs = 0;
    while (!totals.stop.load(std::memory_order_relaxed)) {
      const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
      for (int i = 0; i < n; ++i) {
        const int fd = events[static_cast<size_t>(i)].data.fd;
        while (true) {
          const ssize_t r = read(fd, buf.data(), buf.size());
          if (r > 0) {
            bytes += r;
            evs += count_event_ends(buf.data(), static_cast<size_t>(r), open_fds[fd]);
            // Level-triggered: a short read drained the socket (as the client assumes); if more
            // arrived meanwhile, epoll reports it again.
            if (short_read_drains && static_cast<size_t>(r) < buf.size()) break;
            continue;
          }
          if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            close_with_reset(fd);
            open_fds.erase(fd);
            totals.streams.fetch_add(1);
            open_one();
          }
          break;
        }
      }
    }
    totals.bytes += bytes;
    totals.events += evs;
    totals.cpu_ns += thread_cpu_ns() - cpu0;
    // Close the streams still open: left open, they kept --concurrency descriptors in this process
    // and as many stalled streams in the server for the rest of the run, so the client phase ran
    // out of file descriptors (its connects failed) against a server still busy with them.
    for (const auto& [fd, last] : open_fds) close_with_reset(fd);
    close(ep);
  };
  return run_reader_threads(f, concurrency, duration_s, totals, worker);
}

#if IXBENCH_HAVE_URING
// Phase 1 and paced ceilings through io_uring instead of epoll: each connection has one multishot
// recvmsg (SO_TIMESTAMPNS cmsg, as the client would need) drawing from a provided-buffer ring, so
// a batch of arrivals costs one io_uring_enter instead of an epoll_wait plus one recvmsg each.
// Counts bytes and "\n\n" event ends like raw_reader(); prints why when io_uring is unavailable.
RawResult raw_reader_uring(const ix::http::Url& url, const Flags& f, int concurrency, int output_len,
                           double duration_s) {
  const std::string request = request_bytes(url, completion_body(output_len), true);
  ReaderTotals totals;
  std::atomic<bool> failed{false};
  auto worker = [&](int conns) {
    const int64_t cpu0 = thread_cpu_ns();
    io_uring ring{};
    io_uring_params params{};
    params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    params.cq_entries = 65536;
    int rc = io_uring_queue_init_params(4096, &ring, &params);
    if (rc < 0) {
      params = {};
      params.flags = IORING_SETUP_CQSIZE;
      params.cq_entries = 65536;
      rc = io_uring_queue_init_params(4096, &ring, &params);
    }
    if (rc < 0) {
      fmt::print(stderr, "io_uring unavailable: {}\n", std::strerror(-rc));
      failed = true;
      return;
    }
    constexpr unsigned kBufs = 4096;
    constexpr size_t kBufSize = 8192;
    std::vector<char> storage(kBufs * kBufSize);
    void* br_mem = nullptr;
    const size_t br_size = kBufs * sizeof(io_uring_buf);
    if (posix_memalign(&br_mem, 4096, br_size) != 0) {
      fmt::print(stderr, "io_uring reader: cannot allocate the buffer ring\n");
      failed = true;
      io_uring_queue_exit(&ring);
      return;
    }
    auto* br = static_cast<io_uring_buf_ring*>(br_mem);
    io_uring_buf_ring_init(br);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uint64_t>(br);
    reg.ring_entries = kBufs;
    reg.bgid = 0;
    rc = io_uring_register_buf_ring(&ring, &reg, 0);
    if (rc < 0) {
      fmt::print(stderr, "io_uring provided buffers unavailable: {}\n", std::strerror(-rc));
      failed = true;
      io_uring_queue_exit(&ring);
      free(br_mem);
      return;
    }
    const int mask = io_uring_buf_ring_mask(kBufs);
    for (unsigned i = 0; i < kBufs; ++i) io_uring_buf_ring_add(br, storage.data() + i * kBufSize, kBufSize, i, mask, i);
    io_uring_buf_ring_advance(br, kBufs);
    msghdr templ{};
    templ.msg_controllen = CMSG_SPACE(sizeof(timespec));
    std::unordered_map<int, char> open_fds;  // fd -> last byte seen
    auto get_sqe = [&] {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (!sqe) {
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
      }
      return sqe;
    };
    auto arm = [&](int fd) {
      io_uring_sqe* sqe = get_sqe();
      io_uring_prep_recvmsg_multishot(sqe, fd, &templ, 0);
      sqe->flags |= IOSQE_BUFFER_SELECT;
      sqe->buf_group = 0;
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(fd));
    };
    auto open_one = [&] {
      const int fd = open_stream(url, request);
      if (fd < 0) return;
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
      open_fds[fd] = 0;
      arm(fd);
    };
    for (int i = 0; i < conns; ++i) open_one();
    int64_t bytes = 0, evs = 0;
    while (!totals.stop.load(std::memory_order_relaxed)) {
      __kernel_timespec ts{0, 100'000'000};
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, nullptr);
      if (rc < 0 && rc != -ETIME && rc != -EINTR) {
        fmt::print(stderr, "io_uring wait: {}\n", std::strerror(-rc));
        failed = true;
        break;
      }
      unsigned head, seen = 0, recycled = 0;
      io_uring_for_each_cqe(&ring, head, cqe) {
        ++seen;
        const int fd = static_cast<int>(cqe->user_data);
        const bool more = cqe->flags & IORING_CQE_F_MORE;
        if (cqe->res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
          const unsigned id = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
          char* buf = storage.data() + id * kBufSize;
          msghdr m = templ;
          auto* out = io_uring_recvmsg_validate(buf, cqe->res, &m);
          if (out) {
            // Walk the control messages as a client would to take the kernel's receive time.
            for (cmsghdr* cm = io_uring_recvmsg_cmsg_firsthdr(out, &m); cm;
                 cm = io_uring_recvmsg_cmsg_nexthdr(out, &m, cm)) {
              if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) break;
            }
            const auto n = io_uring_recvmsg_payload_length(out, cqe->res, &m);
            if (n > 0) {  // 0: EOF, which also ends the multishot request
              bytes += n;
              evs += count_event_ends(static_cast<const char*>(io_uring_recvmsg_payload(out, &m)), n, open_fds[fd]);
            }
          }
          io_uring_buf_ring_add(br, buf, kBufSize, static_cast<unsigned short>(id), mask, static_cast<int>(recycled));
          ++recycled;
        }
        if (!more && open_fds.count(fd)) {
          if (cqe->res == -ENOBUFS) {
            arm(fd);
          } else {
            close_with_reset(fd);
            open_fds.erase(fd);
            totals.streams.fetch_add(1);
            open_one();
          }
        }
      }
      if (recycled) io_uring_buf_ring_advance(br, static_cast<int>(recycled));
      io_uring_cq_advance(&ring, seen);
    }
    totals.bytes += bytes;
    totals.events += evs;
    totals.cpu_ns += thread_cpu_ns() - cpu0;
    for (const auto& [fd, last] : open_fds) close_with_reset(fd);
    io_uring_queue_exit(&ring);
    free(br_mem);
  };
  const RawResult result = run_reader_threads(f, concurrency, duration_s, totals, worker);
  return failed ? RawResult{} : result;
}
#endif

struct ClientResult {
  double events_per_s = 0;
  double tokens_per_s = 0;
  int64_t peak_streams = 0;
  ix::metrics::ClientHealth health;
  int64_t failed = 0;
  ix::metrics::Summary ttft_ms, itl_ms;
  double read_delay_mean_us = 0;
  double read_delay_max_us = 0;
  double kernel_stamped_fraction = 0;
  double cpu_ns_per_event = 0;
  double coalesced_fraction = 0;  // ITL gaps of exactly 0: two events stamped by one read
  double events_per_read = 0;
  int64_t cancelled = 0;  // in flight when the window ended (not failures)
  int64_t warmup_failed = 0;
  std::map<std::string, std::pair<int64_t, std::string>> failures;  // kind -> count, example
};

std::string failures_text(const ClientResult& r) {
  std::string s;
  for (const auto& [kind, v] : r.failures) s += fmt::format("\n    {} x{}: {}", kind, v.first, v.second);
  if (r.warmup_failed > 0) s += fmt::format("\n    (and {} failed warmup requests)", r.warmup_failed);
  return s;
}

// Phases 2 and 3: the real client.
ClientResult run_client(const ix::http::Url& url, const Flags& f, int concurrency, int output_len, int64_t prompts,
                        double duration_s, const std::function<void()>& on_measured_start = {}) {
  static const std::string prompt = " hello world this is a short prompt";
  ix::bench::ServeRunnerOptions o;
  o.base = url;
  o.model = "deepseek-r1";
  o.threads = f.threads;
  o.max_concurrency = concurrency;
  o.warmups.assign(static_cast<size_t>(concurrency), {8, 4});
  o.measured.assign(static_cast<size_t>(prompts), {8, output_len});
  o.prompt = [](size_t, int64_t* waited) -> ix::Result<std::string> {
    *waited = 0;
    return prompt;
  };
  o.scrape_server_metrics = false;
  o.request_timeout_ns = 600'000'000'000;
  std::atomic<bool> interrupt{false};
  o.interrupt = &interrupt;
  std::thread timer([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(duration_s + 30);
    while (!interrupt && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  // The measured window is bounded by time: stop after duration_s of measured load.
  bool measuring = false;
  o.on_progress = [&](const ix::bench::ServeProgress& p) {
    if (!p.warmup && !measuring) {
      measuring = true;
      if (on_measured_start) on_measured_start();
    }
    if (!p.warmup && p.elapsed_s >= duration_s) interrupt = true;
  };
  o.progress_interval_ms = 50;
  auto out = ix::bench::run_serve(o);
  interrupt = true;
  timer.join();
  ClientResult r;
  if (!out) {
    fmt::print(stderr, "client run failed: {}\n", out.error().to_string());
    return r;
  }
  int64_t events = 0, tokens = 0, last_ns = out->start_ns, coalesced = 0;
  std::vector<double> ttft, itl;
  for (const auto& rec : out->records) {
    events += static_cast<int64_t>(rec.content_event_ns.size());
    for (int32_t k : rec.tokens_per_event) tokens += k;
    if (!rec.content_event_ns.empty()) last_ns = std::max(last_ns, rec.content_event_ns.back());
    if (!rec.success && rec.error_kind == ix::metrics::ErrorKind::kCancelled) ++r.cancelled;
    if (!rec.success && rec.error_kind != ix::metrics::ErrorKind::kCancelled) {
      ++r.failed;
      auto& slot = r.failures[std::string(ix::metrics::error_kind_name(rec.error_kind))];
      if (slot.first++ == 0) slot.second = rec.error_message;
    }
    if (rec.first_token_ns) ttft.push_back(static_cast<double>(rec.first_token_ns - rec.send_ns) / 1e9);
    for (size_t i = 1; i < rec.content_event_ns.size(); ++i) {
      itl.push_back(static_cast<double>(rec.content_event_ns[i] - rec.content_event_ns[i - 1]) / 1e9);
      if (rec.content_event_ns[i] == rec.content_event_ns[i - 1]) ++coalesced;
    }
  }
  const double secs = static_cast<double>(last_ns - out->start_ns) / 1e9;
  r.cpu_ns_per_event = events ? out->extra.at("client_loop_cpu_s").as_double() * 1e9 / static_cast<double>(events) : 0;
  r.events_per_s = secs > 0 ? static_cast<double>(events) / secs : 0;
  r.tokens_per_s = secs > 0 ? static_cast<double>(tokens) / secs : 0;
  r.peak_streams = concurrency;
  r.warmup_failed = out->warmup_failed;
  r.health = out->client;
  const auto& conns = out->extra.at("client_connections").as_object();
  r.read_delay_mean_us = conns.at("read_delay_mean_us").as_double();
  r.read_delay_max_us = conns.at("read_delay_max_us").as_double();
  const auto reads = conns.at("reads").as_int64();
  r.events_per_read = reads ? static_cast<double>(events) / static_cast<double>(reads) : 0.0;
  r.kernel_stamped_fraction =
      reads ? static_cast<double>(conns.at("kernel_timestamped_reads").as_int64()) / static_cast<double>(reads) : 0.0;
  const std::vector<double> ps = {50, 99};
  r.coalesced_fraction = itl.empty() ? 0.0 : static_cast<double>(coalesced) / static_cast<double>(itl.size());
  r.ttft_ms = ix::metrics::summarize(ttft, ps, 1000.0);
  r.itl_ms = ix::metrics::summarize(itl, ps, 1000.0);
  return r;
}

// The server's own timing error: `sim serve` counts, per token event, when it handed the event to
// the socket minus its scheduled time (ixbench:token_delivery_lateness_seconds, cumulative
// buckets), and the same for each stream's first token (ixbench:first_token_delivery_lateness_
// seconds: what the server adds to a TTFT). Two scrapes bracket the measured window.
struct LatenessScrape {
  bool ok = false;
  std::vector<std::pair<double, double>> buckets;  // (upper bound s, cumulative count)
  double sum_s = 0;
  double count = 0;
};

struct LatenessScrapes {
  LatenessScrape tokens;  // every token event
  LatenessScrape first;   // each stream's first token
};

LatenessScrape parse_lateness(const std::string& text, std::string_view name) {
  LatenessScrape s;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (!line.starts_with(name)) continue;
    const size_t space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    const double value = std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
    const std::string_view rest = line.substr(name.size());
    if (rest.starts_with("_bucket")) {
      const size_t le = line.find("le=\"");
      if (le == std::string_view::npos) continue;
      const std::string bound(line.substr(le + 4, line.find('"', le + 4) - (le + 4)));
      s.buckets.emplace_back(bound == "+Inf" ? 1e300 : std::strtod(bound.c_str(), nullptr), value);
    } else if (rest.starts_with("_sum")) {
      s.sum_s = value;
    } else if (rest.starts_with("_count")) {
      s.count = value;
      s.ok = true;
    }
  }
  return s;
}

LatenessScrapes scrape_lateness(const ix::http::Url& url) {
  auto r = ix::http::fetch(url, "GET", "/metrics", {}, {}, 5'000'000'000);
  if (!r || r->status != 200) return {};
  return {parse_lateness(r->body, "ixbench:token_delivery_lateness_seconds"),
          parse_lateness(r->body, "ixbench:first_token_delivery_lateness_seconds")};
}

struct Lateness {
  bool known = false;
  double events = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0;
};

// Percentiles of the window's histogram (after - before), linear within a bucket.
Lateness lateness_between(const LatenessScrape& before, const LatenessScrape& after) {
  Lateness l;
  if (!before.ok || !after.ok || before.buckets.size() != after.buckets.size()) return l;
  l.events = after.count - before.count;
  if (l.events <= 0) return l;
  l.known = true;
  l.mean_us = (after.sum_s - before.sum_s) / l.events * 1e6;
  auto quantile = [&](double q) {
    const double target = q * l.events;
    double lower = 0;
    double prev = 0;
    for (size_t i = 0; i < after.buckets.size(); ++i) {
      const double cum = after.buckets[i].second - before.buckets[i].second;
      const double upper = after.buckets[i].first;
      if (cum >= target) {
        if (upper > 1e299) return lower * 1e6;
        const double in_bucket = cum - prev;
        const double frac = in_bucket > 0 ? (target - prev) / in_bucket : 1.0;
        return (lower + frac * (upper - lower)) * 1e6;
      }
      prev = cum;
      lower = upper;
    }
    return lower * 1e6;
  };
  l.p50_us = quantile(0.5);
  l.p99_us = quantile(0.99);
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads")
      f.threads = std::stoi(next());
    else if (a == "--concurrency")
      f.concurrency = std::stoi(next());
    else if (a == "--output-len")
      f.output_len = std::stoi(next());
    else if (a == "--duration-s")
      f.duration_s = std::stod(next());
    else if (a == "--server-threads")
      f.server_threads = std::stoi(next());
    else if (a == "--client-cpus")
      f.client_cpus = next();
    else if (a == "--server-cpus")
      f.server_cpus = next();
    else if (a == "--accuracy-concurrency")
      f.accuracy = next();
    else if (a == "--accuracy-ttft-ms")
      f.accuracy_ttft_ms = std::stod(next());
    else if (a == "--accuracy-itl-ms")
      f.accuracy_itl_ms = std::stod(next());
    else if (a == "--accuracy-output-len")
      f.accuracy_output_len = std::stoi(next());
    else if (a == "--accuracy-rounds")
      f.accuracy_rounds = std::stoi(next());
    else if (a == "--server-url")
      f.server_url = next();
    else if (a == "--ixbench")
      f.ixbench = next();
    else if (a == "--skip-raw")
      f.skip_raw = true;
    else if (a == "--raw-variants")
      f.raw_variants = true;
    else {
      fmt::print(stderr, "unknown flag {} (see the header of bench/client_capacity.cc)\n", a);
      return 2;
    }
  }
  if (f.ixbench.empty()) {
    f.ixbench = (std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() / "src/cli/ixbench").string();
  }
  raise_fd_limit();
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<Server> server;
  std::string url_text = f.server_url;
  if (url_text.empty()) {
    server = Server::spawn(f, {"--no-delay"});
    if (!server) return 1;
    url_text = server->url();
  }
  pin_to(f.client_cpus);
  const auto url = *ix::http::Url::parse(url_text);
  fmt::print("client_capacity: {} client threads{}, {} streams x {} tokens, {} s per phase, server {}\n", f.threads,
             f.client_cpus.empty() ? "" : " on cpus " + f.client_cpus, f.concurrency, f.output_len, f.duration_s,
             url_text);

  // Side by side: chunks with the running usage (what bench serve asks for) and without.
  for (const bool continuous : {true, false}) {
    const ParseCost pc = parse_cost(url, f.output_len, continuous);
    fmt::print(
        "client per-event CPU (parse+decode+stamp, 8 KiB reads, {} events/response, {} B/response, usage in every "
        "chunk: {}): {:.0f} ns -> {:.2f} M events/s per core\n",
        pc.events_per_response, pc.bytes_per_response, continuous ? "yes" : "no", pc.ns_per_event,
        pc.ns_per_event > 0 ? 1e3 / pc.ns_per_event : 0.0);
  }
  RawResult raw;
  if (!f.skip_raw) {
    raw = raw_reader(url, f, f.concurrency, f.output_len, f.duration_s);
#if IXBENCH_HAVE_URING
    if (f.raw_variants) {
      const RawResult ur = raw_reader_uring(url, f, f.concurrency, f.output_len, f.duration_s);
      fmt::print("ceiling through io_uring: {:.0f} events/s, {:.0f} ns CPU per event\n", ur.events_per_s,
                 ur.cpu_ns_per_event);
    }
#endif
    fmt::print(
        "ceiling (raw reader, no parsing): {:.0f} events/s, {:.1f} MB/s, {} streams completed, {:.0f} ns CPU per "
        "event\n",
        raw.events_per_s, raw.bytes_per_s / 1e6, raw.streams, raw.cpu_ns_per_event);
  }
  const int64_t prompts = static_cast<int64_t>(f.concurrency) * 1000;
  ClientResult client = run_client(url, f, f.concurrency, f.output_len, prompts, f.duration_s);
  fmt::print(
      "ixbench client: {:.0f} content events/s ({:.0f} tokens/s), {} concurrent streams, {} failures, {} cancelled at "
      "the end of the window, event-loop lag p50 {:.1f} us p99 {:.1f} us max {:.1f} us, busiest thread {:.0f}% "
      "CPU{}\n",
      client.events_per_s, client.tokens_per_s, client.peak_streams, client.failed, client.cancelled,
      client.health.event_loop_lag_p50_ms * 1e3, client.health.event_loop_lag_p99_ms * 1e3,
      client.health.event_loop_lag_max_ms * 1e3, client.health.cpu_utilization * 100, failures_text(client));
  fmt::print(
      "  client loop CPU per content event (sockets, HTTP, SSE, JSON, records): {:.0f} ns -> {:.2f} M events/s per "
      "fully used core\n",
      client.cpu_ns_per_event, client.cpu_ns_per_event > 0 ? 1e3 / client.cpu_ns_per_event : 0.0);
  fmt::print(
      "  read delay after kernel receive (removed from stamps): mean {:.1f} us, max {:.1f} us, {:.0f}% of reads "
      "kernel-stamped\n",
      client.read_delay_mean_us, client.read_delay_max_us, client.kernel_stamped_fraction * 100);
  if (raw.events_per_s > 0) {
    fmt::print("ratio ixbench / raw ceiling: {:.2f}\n", client.events_per_s / raw.events_per_s);
  }
  server.reset();

  // Phase 3: accuracy against an exact schedule. Errors are measured minus truth; the server's own
  // delivery lateness (its /metrics histogram over the measured window) is printed beside them:
  // what the client adds is the measured error minus the server's.
  const double ttft_ms = f.accuracy_ttft_ms, itl_ms = f.accuracy_itl_ms;
  const int acc_len = f.accuracy_output_len;
  fmt::print(
      "\naccuracy vs sim serve --fixed-ttft-ms {} --fixed-itl-ms {}, {} tokens per request (truth: TTFT {} ms, ITL {} "
      "ms); errors in us = measured - truth\n",
      ttft_ms, itl_ms, acc_len, ttft_ms, itl_ms);
  fmt::print(
      "{:>7} {:>9} {:>9} | {:>8} {:>8} {:>8} {:>8} | {:>8} {:>8} {:>8} {:>8} {:>8} | {:>8} {:>8} {:>6} {:>5} {:>6} "
      "{:>6} {:>5}\n",
      "streams", "due ev/s", "got ev/s", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "srv p50", "srv p99", "srv mean",
      "1st p50", "1st p99", "lag p99", "rd dly", "coal%", "ev/rd", "ns/ev", "fail", "sat");
  size_t pos = 0;
  while (pos < f.accuracy.size()) {
    size_t end = f.accuracy.find(',', pos);
    if (end == std::string::npos) end = f.accuracy.size();
    const int c = std::stoi(f.accuracy.substr(pos, end - pos));
    pos = end + 1;
    std::unique_ptr<Server> fixed;
    std::string fixed_url = f.server_url;
    if (fixed_url.empty()) {
      fixed = Server::spawn(
          f, {"--fixed-ttft-ms", fmt::format("{}", ttft_ms), "--fixed-itl-ms", fmt::format("{}", itl_ms)});
      if (!fixed) return 1;
      fixed_url = fixed->url();
    }
    const auto acc_url = *ix::http::Url::parse(fixed_url);
    // The paced ceiling: the raw reader (no parsing, no stamps) against the same schedule, for as
    // long as the client's window; its CPU per event is what the kernel's loopback path costs.
    RawResult paced_raw;
    if (!f.skip_raw) {
      const double window_s = f.accuracy_rounds * (ttft_ms + (acc_len - 1) * itl_ms) / 1e3;
      paced_raw = raw_reader(acc_url, f, c, acc_len, window_s);
      if (f.raw_variants) {
        const RawResult shortr = raw_reader(acc_url, f, c, acc_len, window_s, true);
        fmt::print("{:>7} raw epoll, one read per event (short read = drained): {:.0f} ev/s, {:.0f} ns CPU per event\n",
                   c, shortr.events_per_s, shortr.cpu_ns_per_event);
#if IXBENCH_HAVE_URING
        const RawResult ur = raw_reader_uring(acc_url, f, c, acc_len, window_s);
        fmt::print("{:>7} raw io_uring multishot recvmsg + timestamps: {:.0f} ev/s, {:.0f} ns CPU per event\n", c,
                   ur.events_per_s, ur.cpu_ns_per_event);
#endif
      }
    }
    LatenessScrapes before;
    ClientResult acc = run_client(acc_url, f, c, acc_len, int64_t{f.accuracy_rounds} * c, 1e9,
                                  [&] { before = scrape_lateness(acc_url); });
    const LatenessScrapes after = scrape_lateness(acc_url);
    const Lateness srv = lateness_between(before.tokens, after.tokens);
    const Lateness srv_first = lateness_between(before.first, after.first);
    // A closed loop at c streams: each request streams acc_len events over ttft + (len-1) itl.
    const double due = c * acc_len / ((ttft_ms + (acc_len - 1) * itl_ms) / 1e3);
    auto us = [](double measured_ms, double truth_ms) { return (measured_ms - truth_ms) * 1e3; };
    auto srv_us = [](const Lateness& l, double v) { return l.known ? fmt::format("{:.0f}", v) : std::string("n/a"); };
    fmt::print(
        "{:>7} {:>9.0f} {:>9.0f} | {:>8.0f} {:>8.0f} {:>8.0f} {:>8.0f} | {:>8} {:>8} {:>8} {:>8} {:>8} | {:>8.0f} "
        "{:>8.0f} {:>6.2f} {:>5.2f} {:>6.0f} {:>6} {:>5}\n",
        c, due, acc.events_per_s, us(acc.ttft_ms.percentiles[0].second, ttft_ms),
        us(acc.ttft_ms.percentiles[1].second, ttft_ms), us(acc.itl_ms.percentiles[0].second, itl_ms),
        us(acc.itl_ms.percentiles[1].second, itl_ms), srv_us(srv, srv.p50_us), srv_us(srv, srv.p99_us),
        srv_us(srv, srv.mean_us), srv_us(srv_first, srv_first.p50_us), srv_us(srv_first, srv_first.p99_us),
        acc.health.event_loop_lag_p99_ms * 1e3, acc.read_delay_mean_us, acc.coalesced_fraction * 100,
        acc.events_per_read, acc.cpu_ns_per_event, acc.failed, acc.health.saturated ? "yes" : "no");
    if (acc.failed > 0 || acc.warmup_failed > 0) fmt::print("{}\n", failures_text(acc).substr(1));
    if (!f.skip_raw) {
      fmt::print(
          "{:>7} {:>9} {:>9.0f} |   raw reader, same schedule: {:.0f} ns CPU per event; client / raw CPU per event "
          "{:.2f}\n",
          "", "", paced_raw.events_per_s, paced_raw.cpu_ns_per_event,
          paced_raw.cpu_ns_per_event > 0 ? acc.cpu_ns_per_event / paced_raw.cpu_ns_per_event : 0.0);
    }
  }
  fmt::print(
      "  due/got ev/s: token events per second the schedule asks for / the client received; TTFT, ITL: client-measured "
      "minus truth; srv: the server's delivery lateness (socket write minus schedule); 1st: the same for each stream's "
      "first token (the server's share of the TTFT error); lag p99: client "
      "event-loop lag; rd dly: mean delay of reads after the kernel stamped them (removed from the stamps); coal%: ITL "
      "gaps of 0 (two events in one read: the earlier one is stamped late); ev/rd: content events per socket read; "
      "ns/ev: client loop CPU per content event; sat: the client marked itself saturated\n");
  return 0;
}
