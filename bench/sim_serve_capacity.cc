// Capacity of the `ixbench sim serve` HTTP front: how many concurrent SSE streams and streamed
// token events per second it sustains over loopback with the cost model switched off
// (NoDelayEngine: every token is ready at once), and how much memory an idle stream costs.
//
// The server runs in a forked child (its own process, so its CPU time and RSS are its own); the
// parent is a minimal load generator: one epoll loop on raw non-blocking sockets, each connection
// sending a streaming completion request and counting SSE events ("\n\n") without parsing JSON,
// then sending the next request on the same keep-alive connection when [DONE] arrived.
//
// Phases:
//   1. throughput: --connections streams, each request --max-tokens tokens, for --duration-s after
//      --warmup-s; prints token events/s, completed requests/s, and both processes' CPU use.
//   2. idle memory: a fresh server with a fixed schedule whose first token is hours away;
//      --idle-connections streams are opened and wait; server RSS delta / streams.
//
// Usage: bench_sim_serve_capacity [--connections 10000] [--max-tokens 2000] [--duration-s 10]
//        [--warmup-s 2] [--server-threads 1] [--idle-connections 10000] [--fixed-itl-ms X]
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "http/server.h"
#include "serve/schedule_engines.h"
#include "serve/sim_server.h"
#include "serve/text_codec.h"

namespace {

struct Options {
  int connections = 10000;
  int max_tokens = 2000;
  double duration_s = 10.0;
  double warmup_s = 2.0;
  int server_threads = 1;
  int idle_connections = 10000;
  // > 0: the throughput phase uses a fixed schedule (first token after one ITL, then one every
  // ITL) instead of no-delay, to check that the engine-driven path keeps up with a schedule.
  double fixed_itl_ms = 0;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- the server child --------------------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  uint16_t port = 0;
};

// Forks a server; the child writes its port to a pipe and serves until SIGTERM.
Child fork_server(const Options& options, bool idle_mode) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);
    ix::http::raise_open_file_limit();
    const ix::Clock& clock = ix::steady_clock_instance();
    std::unique_ptr<ix::sim::LiveEngine> engine;
    if (idle_mode) {
      engine = std::make_unique<ix::serve::FixedScheduleEngine>(3.6e6, 1000.0, 131072, clock);
    } else if (options.fixed_itl_ms > 0) {
      engine =
          std::make_unique<ix::serve::FixedScheduleEngine>(options.fixed_itl_ms, options.fixed_itl_ms, 1 << 30, clock);
    } else {
      engine = std::make_unique<ix::serve::NoDelayEngine>(1 << 30, clock);
    }
    ix::serve::SimServeOptions serve_options;
    serve_options.port = 0;
    serve_options.threads = options.server_threads;
    serve_options.model_name = "bench";
    auto server = ix::serve::SimServer::start(serve_options, std::move(engine), ix::serve::make_fallback_codec());
    if (!server) {
      fmt::print(stderr, "server failed: {}\n", server.error().message());
      _exit(1);
    }
    uint16_t port = (*server)->port();
    if (write(fds[1], &port, sizeof port) != sizeof port) _exit(1);
    close(fds[1]);
    int received = 0;
    sigwait(&signals, &received);
    (*server)->stop();
    _exit(0);
  }
  close(fds[1]);
  Child child;
  child.pid = pid;
  if (read(fds[0], &child.port, sizeof child.port) != sizeof child.port) {
    fmt::print(stderr, "server child did not start\n");
    std::exit(1);
  }
  close(fds[0]);
  return child;
}

void stop_child(const Child& child) {
  kill(child.pid, SIGTERM);
  int status = 0;
  waitpid(child.pid, &status, 0);
}

// Resident set size of a process, bytes (from /proc/<pid>/status VmRSS).
int64_t rss_bytes(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return -1;
}

// utime + stime of a process, seconds.
double cpu_seconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::vector<std::string> fields;
  size_t pos = close_paren + 2;
  while (pos < text.size()) {
    size_t space = text.find(' ', pos);
    fields.push_back(text.substr(pos, space - pos));
    if (space == std::string::npos) break;
    pos = space + 1;
  }
  // fields[0] is state (field 3); utime is field 14, stime 15.
  if (fields.size() < 13) return 0;
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) / ticks;
}

double self_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// ---- the load generator ------------------------------------------------------------------------

struct Conn {
  int fd = -1;
  bool connected = false;
  bool headers_seen = false;  // idle phase: the response head arrived
  bool last_was_newline = false;
  int64_t events_this_response = 0;
};

class LoadGenerator {
 public:
  LoadGenerator(uint16_t port, int max_tokens) : port_(port), max_tokens_(max_tokens) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    request_ = fmt::format(
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
        "{}\r\n\r\n{}",
        body().size(), body());
    buffer_.resize(256 * 1024);
  }
  ~LoadGenerator() {
    for (auto& conn : conns_) {
      if (conn.fd >= 0) close(conn.fd);
    }
    close(epoll_);
  }

  std::string body() const {
    return fmt::format(R"({{"model":"bench","prompt":[1,2,3,4],"max_tokens":{},"stream":true,"ignore_eos":true}})",
                       max_tokens_);
  }

  // Opens `count` connections (in batches, so the listen backlog is not overrun). Returns the
  // number established.
  int open(int count) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port_);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    conns_.resize(static_cast<size_t>(count));
    int established = 0;
    const int kBatch = 500;
    for (int start = 0; start < count; start += kBatch) {
      int end = std::min(count, start + kBatch);
      for (int index = start; index < end; ++index) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
          fmt::print(stderr, "socket() failed at connection {}: {}\n", index, std::strerror(errno));
          return established;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
        conns_[static_cast<size_t>(index)].fd = fd;
        epoll_event event{};
        event.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
        event.data.u32 = static_cast<uint32_t>(index);
        epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
      }
      // Wait for this batch to connect.
      double deadline = now_s() + 10.0;
      int batch_connected = 0;
      while (batch_connected < end - start && now_s() < deadline) {
        epoll_event events[1024];
        int n = epoll_wait(epoll_, events, 1024, 100);
        for (int index = 0; index < n; ++index) {
          Conn& conn = conns_[events[index].data.u32];
          if (!conn.connected && (events[index].events & EPOLLOUT)) {
            int error = 0;
            socklen_t length = sizeof error;
            getsockopt(conn.fd, SOL_SOCKET, SO_ERROR, &error, &length);
            if (error != 0) continue;
            conn.connected = true;
            ++batch_connected;
            epoll_event event{};
            event.events = EPOLLIN | EPOLLRDHUP;
            event.data.u32 = events[index].data.u32;
            epoll_ctl(epoll_, EPOLL_CTL_MOD, conn.fd, &event);
          } else if (events[index].events & EPOLLIN) {
            on_readable(conn);
          }
        }
      }
      established += batch_connected;
    }
    return established;
  }

  // Sends the first request on every open connection.
  void start_streams() {
    for (auto& conn : conns_) {
      if (conn.fd >= 0 && conn.connected) send_request(conn);
    }
  }

  // Runs the loop until `until_s`; counts events only after `count_from_s`.
  void run(double count_from_s, double until_s) {
    epoll_event events[1024];
    while (true) {
      double now = now_s();
      if (now >= until_s) break;
      counting_ = now >= count_from_s;
      int n = epoll_wait(epoll_, events, 1024, 50);
      for (int index = 0; index < n; ++index) {
        Conn& conn = conns_[events[index].data.u32];
        if (events[index].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_readable(conn);
      }
    }
  }

  int64_t token_events() const { return token_events_; }
  int64_t completed() const { return completed_; }
  int64_t errors() const { return errors_; }
  int64_t framing_errors() const { return framing_errors_; }
  int64_t bytes() const { return bytes_; }
  int64_t streams_with_headers() const {
    int64_t count = 0;
    for (const auto& conn : conns_) count += conn.headers_seen;
    return count;
  }
  int64_t open_connections() const {
    int64_t count = 0;
    for (const auto& conn : conns_) count += conn.fd >= 0 && conn.connected;
    return count;
  }

 private:
  void send_request(Conn& conn) {
    ssize_t n = ::send(conn.fd, request_.data(), request_.size(), MSG_NOSIGNAL);
    if (n != static_cast<ssize_t>(request_.size())) ++errors_;
    conn.events_this_response = 0;
  }

  void on_readable(Conn& conn) {
    while (true) {
      ssize_t n = recv(conn.fd, buffer_.data(), buffer_.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        ++errors_;
        epoll_ctl(epoll_, EPOLL_CTL_DEL, conn.fd, nullptr);
        close(conn.fd);
        conn.fd = -1;
        return;
      }
      if (n < 0) return;
      conn.headers_seen = true;
      if (counting_) bytes_ += n;
      // Count "\n\n": each SSE event ends with one; headers (CRLF) and chunk framing have none.
      const char* data = buffer_.data();
      const char* end = data + n;
      const char* pos = data;
      if (conn.last_was_newline && *data == '\n') {
        count_event(conn);
        pos = data + 1;
      }
      while (pos < end) {
        const char* newline = static_cast<const char*>(std::memchr(pos, '\n', static_cast<size_t>(end - pos)));
        if (newline == nullptr) break;
        if (newline + 1 < end && newline[1] == '\n') {
          // Self-check: the event after max_tokens token events must be [DONE].
          if (conn.events_this_response == max_tokens_ && newline - 6 >= data &&
              std::memcmp(newline - 6, "[DONE]", 6) != 0) {
            ++framing_errors_;
          }
          count_event(conn);
          pos = newline + 2;
        } else {
          pos = newline + 1;
        }
      }
      conn.last_was_newline = end[-1] == '\n' && !(n >= 2 && end[-2] == '\n');
      if (static_cast<size_t>(n) < buffer_.size()) return;
    }
  }

  void count_event(Conn& conn) {
    ++conn.events_this_response;
    // max_tokens token events, then [DONE].
    if (conn.events_this_response <= max_tokens_) {
      if (counting_) ++token_events_;
      return;
    }
    if (counting_) ++completed_;
    send_request(conn);
  }

  uint16_t port_;
  int64_t max_tokens_;
  int epoll_ = -1;
  std::string request_;
  std::vector<char> buffer_;
  std::vector<Conn> conns_;
  bool counting_ = false;
  int64_t token_events_ = 0;
  int64_t completed_ = 0;
  int64_t errors_ = 0;
  int64_t framing_errors_ = 0;
  int64_t bytes_ = 0;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int index = 1; index + 1 < argc; index += 2) {
    std::string flag = argv[index];
    double value = std::atof(argv[index + 1]);
    if (flag == "--connections")
      options.connections = static_cast<int>(value);
    else if (flag == "--max-tokens")
      options.max_tokens = static_cast<int>(value);
    else if (flag == "--duration-s")
      options.duration_s = value;
    else if (flag == "--warmup-s")
      options.warmup_s = value;
    else if (flag == "--server-threads")
      options.server_threads = static_cast<int>(value);
    else if (flag == "--idle-connections")
      options.idle_connections = static_cast<int>(value);
    else if (flag == "--fixed-itl-ms")
      options.fixed_itl_ms = value;
    else {
      fmt::print(stderr, "unknown flag {}\n", flag);
      std::exit(2);
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  int64_t fd_limit = ix::http::raise_open_file_limit();
  fmt::print("sim serve capacity: {} cores, open-file limit {}, server threads {}\n",
             std::thread::hardware_concurrency(), fd_limit, options.server_threads);

  // Phase 1: throughput.
  {
    Child server = fork_server(options, false);
    LoadGenerator load(server.port, options.max_tokens);
    double open_start = now_s();
    int established = load.open(options.connections);
    fmt::print("connections: {} of {} established in {:.2f} s\n", established, options.connections,
               now_s() - open_start);
    load.start_streams();
    double start = now_s();
    double server_cpu_start = 0;
    double client_cpu_start = 0;
    load.run(start + options.warmup_s, start + options.warmup_s);
    server_cpu_start = cpu_seconds(server.pid);
    client_cpu_start = self_cpu_seconds();
    double measure_start = now_s();
    load.run(measure_start, measure_start + options.duration_s);
    double elapsed = now_s() - measure_start;
    double server_cpu = cpu_seconds(server.pid) - server_cpu_start;
    double client_cpu = self_cpu_seconds() - client_cpu_start;
    int64_t open_now = load.open_connections();
    fmt::print(
        "throughput: {} concurrent streams (open at end: {}), max_tokens {}: {:.0f} token events/s, {:.0f} "
        "requests/s, {:.0f} MB/s received; errors {}, framing errors {}\n",
        established, open_now, options.max_tokens, static_cast<double>(load.token_events()) / elapsed,
        static_cast<double>(load.completed()) / elapsed, static_cast<double>(load.bytes()) / elapsed / 1e6,
        load.errors(), load.framing_errors());
    double events_per_s = static_cast<double>(load.token_events()) / elapsed;
    fmt::print("vs targets: {:.2f}x the 10,000 concurrent streams, {:.2f}x the 1,000,000 token events/s\n",
               established / 10000.0, events_per_s / 1e6);
    if (options.fixed_itl_ms > 0) {
      // Each stream is due one event per ITL (requests restart at once, so a new request's first
      // token, one ITL later, keeps the pace): the schedule asks for connections / ITL events/s.
      double scheduled = established * 1000.0 / options.fixed_itl_ms;
      fmt::print("fixed schedule: {:.0f} token events/s due, {:.0f} delivered ({:.1f}%)\n", scheduled, events_per_s,
                 100.0 * events_per_s / scheduled);
    }
    fmt::print("cpu: server {:.2f} cores, load generator {:.2f} cores; server RSS {:.1f} MiB\n", server_cpu / elapsed,
               client_cpu / elapsed, static_cast<double>(rss_bytes(server.pid)) / (1 << 20));
    std::ifstream loadavg("/proc/loadavg");
    std::string load_1min;
    loadavg >> load_1min;
    fmt::print("machine load average (1 min) during the run: {} (other processes share these cores)\n", load_1min);
    stop_child(server);
  }

  // Phase 2: memory per idle stream.
  if (options.idle_connections > 0) {
    Child server = fork_server(options, true);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    int64_t rss_before = rss_bytes(server.pid);
    LoadGenerator load(server.port, 1);
    int established = load.open(options.idle_connections);
    load.start_streams();
    double deadline = now_s() + 20.0;
    while (load.streams_with_headers() < established && now_s() < deadline) load.run(0, now_s() + 0.2);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    int64_t rss_after = rss_bytes(server.pid);
    int64_t streams = load.streams_with_headers();
    fmt::print(
        "idle streams: {} open (response head received, first token an hour away); server RSS {:.1f} -> {:.1f} "
        "MiB: {:.0f} bytes per idle stream\n",
        streams, static_cast<double>(rss_before) / (1 << 20), static_cast<double>(rss_after) / (1 << 20),
        streams > 0 ? static_cast<double>(rss_after - rss_before) / static_cast<double>(streams) : 0.0);
    stop_child(server);
  }
  return 0;
}
