#include "bench/serve_runner.h"

#include <fmt/format.h>
#include <signal.h>
#include <time.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/rng.h"
#include "common/sanitize.h"
#include "common/strings.h"
#include "http/client_retry.h"
#include "http/sse.h"
#include "metrics/prometheus.h"
#include "metrics/statistics.h"
#include "workload/arrivals.h"

namespace ix::bench {

bool process_alive(pid_t pid) {
  if (pid <= 0) return true;
  if (::kill(pid, 0) != 0) return errno == EPERM;
  // A dead child not yet reaped by its parent still answers kill(); its state is Z.
  std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (!f) return true;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* paren = std::strrchr(buf, ')');
  return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

namespace {

using metrics::ErrorKind;
using metrics::RequestRecord;

constexpr int64_t kProbePeriodNs = 1'000'000;

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

class Worker;

// What one phase (warmup or measured) asks of the workers. Written by the main thread before the
// phase starts (posted to each loop, which orders it), read by workers.
struct Phase {
  bool warmup = false;
  size_t begin = 0;  // send positions [begin, end)
  size_t end = 0;
  bool open_loop = false;
  std::vector<int64_t> due_ns;  // open loop: absolute due time per position - begin
  int64_t t0 = 0;
  std::atomic<size_t> next{0};  // closed loop: next position to send
  std::atomic<int> workers_done{0};
  std::atomic<bool> stopping{false};
  // Open loop: one concurrency limit over all workers, as vLLM's semaphore. A request that
  // arrives while `cap` are in flight waits here in arrival order; the worker whose request
  // finishes next sends it (any worker can send any position).
  int64_t cap = 0;
  std::mutex queue_mutex;
  int64_t in_flight = 0;         // guarded by queue_mutex
  std::deque<size_t> queued;     // guarded by queue_mutex
  std::vector<Worker*> waiters;  // guarded by queue_mutex: idle workers waiting for the queue to drain
};

struct Shared {
  const ServeRunnerOptions* options = nullptr;
  std::vector<std::string> headers_auth;
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> output_tokens{0};
  std::atomic<int64_t> prompt_waits{0};
  std::atomic<int64_t> prompt_wait_max_ns{0};
  RetryBudget retries;  // retries allowed over the whole run (retry_budget())
  std::mutex error_mutex;
  std::optional<Error> fatal;              // a client-side error (prompt synthesis) that ends the run
  std::optional<std::string> server_gone;  // the watched server refused connections while alive
  std::vector<Worker*> workers;            // set before the loops start
};

class Worker final : public ExchangeOwner {
 public:
  Worker(int id, int count, Shared& shared, http::LoopOptions loop_options)
      : id_(id),
        count_(count),
        shared_(shared),
        loop_(std::move(loop_options)),
        headers_(server_headers(*shared.options, {{"Accept", "text/event-stream"}})) {}

  http::ClientLoop& loop() { return loop_; }
  const ServeRunnerOptions& options() const { return *shared_.options; }
  // Tokens streamed so far in the measured phase; written by this worker only, read by the
  // progress line.
  void count_streamed(int64_t tokens) override {
    if (measuring_)
      streamed_tokens_.store(streamed_tokens_.load(std::memory_order_relaxed) + tokens, std::memory_order_relaxed);
  }
  int64_t streamed_tokens() const { return streamed_tokens_.load(std::memory_order_relaxed); }
  openai::StreamChunkDecoder& chunk_decoder() override { return chunk_decoder_; }

  // Loop thread.
  void start_phase(Phase* phase, int64_t slots) {
    phase_ = phase;
    slots_ = std::max<int64_t>(slots, 0);
    in_flight_ = 0;
    done_reported_ = false;
    cursor_ = phase->begin + static_cast<size_t>(id_);
    if (!phase->warmup) {
      measuring_ = true;
      cpu_start_ns_ = thread_cpu_ns();
      wall_start_ns_ = loop_.now_ns();
    }
    if (phase->open_loop) {
      schedule_next_arrival();
      check_done();
      return;
    }
    // Closed loop: every worker starts its slots at the common start time t0.
    loop_.call_at(phase->t0, [this] {
      for (int64_t i = 0; i < slots_; ++i) {
        if (!launch_closed(phase_->t0)) break;
      }
      check_done();
    });
  }

  void start_probe() {
    probe_due_ns_ = loop_.now_ns() + kProbePeriodNs;
    loop_.call_at(probe_due_ns_, [this] { probe(); });
  }

  void complete(Exchange& exchange) override {
    Exchange* f = &exchange;
    --in_flight_;
    const bool ok = f->rec.success;
    const bool refused = !ok && f->rec.error_kind == ErrorKind::kConnect;
    if (!f->rec.warmup) {
      (ok ? shared_.completed : shared_.failed).fetch_add(1, std::memory_order_relaxed);
      shared_.output_tokens.fetch_add(std::max<int64_t>(f->rec.output_len, 0), std::memory_order_relaxed);
      f->rec.index = static_cast<int64_t>(f->tag - options().warmups.size());
      texts_.push_back(std::move(f->text));
      records_.push_back(std::move(f->rec));
    } else {
      ++warmup_done_;
      if (!ok) ++warmup_failed_;
    }
    exchanges_.release(f);
    if (!ok && options().server_pid > 0 && !phase_->stopping.load(std::memory_order_relaxed)) {
      // The server died, or refuses connections while it shuts down (its listener closes before
      // its process exits): stop at once instead of burning the remaining requests on refused
      // connections (the main thread records why and stops the other workers).
      const bool alive = process_alive(options().server_pid);
      if (!alive || refused) {
        if (alive) {
          std::lock_guard lock(shared_.error_mutex);
          if (!shared_.server_gone)
            shared_.server_gone =
                fmt::format("server process {} refused connections (shutting down)", options().server_pid);
        }
        phase_->stopping.store(true);
        loop_.cancel_all();
      }
    }
    if (phase_->open_loop) {
      release_open_slot();
    } else if (!phase_->stopping.load(std::memory_order_relaxed)) {
      launch_closed(loop_.now_ns());
    }
    check_done();
  }

  // Stops this worker's part of the phase now (Ctrl-C, a dead server): cancels what is in flight
  // and reports done without waiting for the next scheduled arrival.
  void stop_now() {
    loop_.cancel_all();
    finish_pending_retries();
    check_done();
  }

  // Schedules a resend of a failed request after its backoff (or the server's Retry-After), when
  // it has attempts left, the run's retry budget is not spent and the phase is not stopping.
  bool resend(Exchange& f) override {
    if (phase_->stopping.load(std::memory_order_relaxed)) return false;
    return schedule_resend(loop_, f, options().max_retries, shared_.retries, jitter_,
                           [this](const Exchange& e) { return make_request(e); });
  }

  // Main thread, after the loops stopped.
  std::vector<RequestRecord>& records() { return records_; }
  std::vector<std::string>& texts() { return texts_; }
  const metrics::LogHistogram& lag() const { return lag_; }
  int64_t warmup_failed() const { return warmup_failed_; }
  int64_t warmup_done() const { return warmup_done_; }
  int64_t cpu_ns() const { return cpu_end_ns_ - cpu_start_ns_; }
  double busy_fraction() const {
    const int64_t wall = wall_end_ns_ - wall_start_ns_;
    return wall > 0 ? static_cast<double>(cpu_end_ns_ - cpu_start_ns_) / static_cast<double>(wall) : 0.0;
  }
  void stop_measuring() {
    measuring_ = false;
    cpu_end_ns_ = thread_cpu_ns();
    wall_end_ns_ = loop_.now_ns();
  }

 private:
  bool launch_closed(int64_t scheduled_ns) {
    const size_t p = phase_->next.fetch_add(1, std::memory_order_relaxed);
    if (p >= phase_->end) return false;
    send(p, scheduled_ns);
    return true;
  }

  void schedule_next_arrival() {
    if (cursor_ >= phase_->end) return;
    loop_.call_at(phase_->due_ns[cursor_ - phase_->begin], [this] { arrive(); });
  }

  void arrive() {
    if (phase_->stopping.load(std::memory_order_relaxed)) {
      check_done();
      return;
    }
    const size_t p = cursor_;
    cursor_ += static_cast<size_t>(count_);
    bool send_now = false;
    {
      std::lock_guard lock(phase_->queue_mutex);
      if (phase_->in_flight < phase_->cap) {
        ++phase_->in_flight;
        send_now = true;
      } else {
        phase_->queued.push_back(p);
      }
    }
    if (send_now) send(p, phase_->due_ns[p - phase_->begin]);
    schedule_next_arrival();
    check_done();
  }

  // An open-loop request finished: its slot goes to the longest-waiting queued request (sent from
  // this worker), or back to the pool. Workers that only waited for the queue to drain are told
  // to check again when it does.
  void release_open_slot() {
    std::optional<size_t> next;
    std::vector<Worker*> wake;
    {
      std::lock_guard lock(phase_->queue_mutex);
      if (!phase_->queued.empty() && !phase_->stopping.load(std::memory_order_relaxed)) {
        next = phase_->queued.front();
        phase_->queued.pop_front();
      } else {
        --phase_->in_flight;
      }
      if (phase_->queued.empty()) wake.swap(phase_->waiters);
    }
    if (next) send(*next, phase_->due_ns[*next - phase_->begin]);
    for (Worker* other : wake) other->loop().post([other] { other->check_done(); });
  }

  // Open loop: nothing left to send from this worker's arrivals and none of its requests in
  // flight, but requests still queued for a slot — another worker will send them; register to be
  // told when the queue drains. Returns true when the queue is empty.
  bool queue_drained() {
    std::lock_guard lock(phase_->queue_mutex);
    if (phase_->queued.empty()) return true;
    phase_->waiters.push_back(this);
    return false;
  }

  http::Request make_request(const Exchange& f) {
    http::Request request;
    request.target = options().endpoint;
    request.timeout_ns = options().request_timeout_ns;
    request.headers = headers_;
    if (!options().request_id_prefix.empty() && !f.rec.warmup) {
      // vLLM's request ids: the prefix and the measured request's index (the server's logs and
      // traces can then be joined with the per-request records).
      request.headers.push_back(
          {"x-request-id", options().request_id_prefix + std::to_string(f.tag - options().warmups.size())});
    }
    request.body = f.body;
    return request;
  }

  void send(size_t p, int64_t scheduled_ns) {
    const ServeRunnerOptions& o = options();
    const bool warmup = p < o.warmups.size();
    const workload::RequestShape& shape = warmup ? o.warmups[p] : o.measured[p - o.warmups.size()];
    int64_t waited_ns = 0;
    auto prompt = o.prompt(p, &waited_ns);
    if (!prompt) {
      std::lock_guard lock(shared_.error_mutex);
      if (!shared_.fatal) shared_.fatal = prompt.error();
      phase_->stopping.store(true);
      return;
    }
    if (waited_ns > 0 && !warmup) {
      shared_.prompt_waits.fetch_add(1, std::memory_order_relaxed);
      int64_t prev = shared_.prompt_wait_max_ns.load(std::memory_order_relaxed);
      while (waited_ns > prev && !shared_.prompt_wait_max_ns.compare_exchange_weak(prev, waited_ns)) {
      }
    }
    const std::string& model =
        !warmup && !o.lora_modules.empty() ? o.lora_modules[o.lora_choice[p - o.warmups.size()]] : o.model;
    openai::CompletionRequest cr{.model = model,
                                 .prompt = std::move(*prompt),
                                 .max_tokens = shape.output_len,
                                 .ignore_eos = o.ignore_eos,
                                 .temperature = 0.0,
                                 .continuous_usage = o.continuous_usage && openai::supports_continuous_usage(o.backend),
                                 .logprobs = o.logprobs,
                                 .extra_body = &o.extra_body};
    Exchange* f = exchanges_.acquire();
    f->reset(p, scheduled_ns, shape.prompt_len, shape.output_len, warmup);
    f->body = openai::build_request_body(o.backend, cr);
    ++in_flight_;
    loop_.submit(make_request(*f), f);
  }

  void check_done() {
    if (done_reported_ || in_flight_ > 0) return;
    const bool stopping = phase_->stopping.load(std::memory_order_relaxed);
    bool nothing_left;
    if (phase_->open_loop) {
      nothing_left = stopping || (cursor_ >= phase_->end && queue_drained());
    } else {
      nothing_left = stopping || phase_->next.load(std::memory_order_relaxed) >= phase_->end;
    }
    if (!nothing_left) return;
    done_reported_ = true;
    phase_->workers_done.fetch_add(1, std::memory_order_acq_rel);
  }

  // A stop: requests waiting for their resend end now with the failure that made them wait.
  void finish_pending_retries() {
    for (const auto& f : exchanges_.all()) {
      if (!f->retry_pending) continue;
      f->retry_pending = false;
      f->rec.output_len = 0;
      complete(*f);
    }
  }

  void probe() {
    const int64_t now = loop_.now_ns();
    if (measuring_) lag_.add(now - probe_due_ns_);
    probe_due_ns_ += kProbePeriodNs;
    if (probe_due_ns_ <= now) probe_due_ns_ = now + kProbePeriodNs;
    loop_.call_at(probe_due_ns_, [this] { probe(); });
  }

  int id_;
  int count_;
  Shared& shared_;
  http::ClientLoop loop_;
  openai::StreamChunkDecoder chunk_decoder_;
  Rng jitter_ = Rng::stream(static_cast<uint64_t>(id_), "retry-jitter");
  std::vector<http::Header> headers_;  // of every request (built once)
  Phase* phase_ = nullptr;
  int64_t slots_ = 0;
  int64_t in_flight_ = 0;
  bool done_reported_ = false;
  size_t cursor_ = 0;
  ExchangePool exchanges_{this};
  std::vector<RequestRecord> records_;
  std::vector<std::string> texts_;
  int64_t warmup_failed_ = 0;
  int64_t warmup_done_ = 0;  // warmup requests that finished (ok or failed): excluded from the results
  metrics::LogHistogram lag_;
  int64_t probe_due_ns_ = 0;
  bool measuring_ = false;
  std::atomic<int64_t> streamed_tokens_{0};
  int64_t cpu_start_ns_ = 0, cpu_end_ns_ = 0, wall_start_ns_ = 0, wall_end_ns_ = 0;
};

}  // namespace

std::vector<http::Header> server_headers(const ServeRunnerOptions& options, std::vector<http::Header> defaults) {
  return request_headers(options.api_key, options.extra_headers, std::move(defaults));
}

void judge_client_delay(const ClientDelay& d, metrics::ClientHealth& h) {
  // The mark says the client's own delay reached the measurements, not that a gauge grazed a
  // line: a delay counts when it is above the absolute threshold AND more than
  // kClientDelayShare of what it distorts — sends late against the median request's life (the
  // offered load the client lost), or, without kernel receive stamps, loop lag against the
  // median TTFT it inflates. A busy thread with neither effect is a warning, not a mark.
  constexpr double kClientDelayShare = 0.01;
  h.send_delay_p90_ms = d.send_delay_p90_ms;
  h.client_delay_share = d.median_e2el_ms > 0 ? d.send_delay_p90_ms / d.median_e2el_ms : 0.0;
  const bool sends_late = d.send_delay_p90_ms > d.threshold_ms && h.client_delay_share > kClientDelayShare;
  const bool reads_late = !d.stamps_immune && d.lag_p99_ms > d.threshold_ms &&
                          (d.median_ttft_ms <= 0 || d.lag_p99_ms / d.median_ttft_ms > kClientDelayShare);
  const std::string where = d.max_busy >= 0.5 ? "use more --threads"
                                              : fmt::format(
                                                    "client threads were only {:.0f}% busy: the machine is "
                                                    "oversubscribed (other processes compete for the CPU)",
                                                    d.max_busy * 100);
  h.saturated = sends_late || reads_late;
  if (sends_late) {
    h.reason =
        fmt::format("sends {:.3f} ms late at p90, {:.1f}% of the median request's {:.1f} ms (> {:.0f}%): {}",
                    d.send_delay_p90_ms, h.client_delay_share * 100, d.median_e2el_ms, kClientDelayShare * 100, where);
  } else if (reads_late) {
    h.reason = fmt::format(
        "event-loop lag p99 {:.3f} ms on reads without kernel timestamps, > {:.0f}% of the median TTFT {:.1f} ms: {}",
        d.lag_p99_ms, kClientDelayShare * 100, d.median_ttft_ms, where);
  } else if (d.max_busy >= 0.95) {
    h.warning = fmt::format(
        "a client worker thread was busy {:.0f}% of the run, with no measurable effect (sends {:.3f} ms late at p90); "
        "more --threads give headroom",
        d.max_busy * 100, d.send_delay_p90_ms);
  }
}

std::string profile_request_body(const ServeRunnerOptions& options, bool start) {
  const boost::json::object profile{{"num_steps", 1}, {"merge_profiles", true}, {"profile_by_stage", true}};
  openai::CompletionRequest request;
  request.model = options.model;
  request.prompt = "Hello";
  request.max_tokens = options.measured.empty() ? 1 : options.measured.front().output_len;
  request.ignore_eos = options.ignore_eos;
  request.logprobs = options.logprobs;
  if (start) request.extra_body = &profile;
  return openai::build_request_body(options.backend, request);
}

namespace {

Result<void> check_runner_options(const ServeRunnerOptions& options) {
  if (!options.prompt) return fail(ErrorCode::kInvalidArgument, "run_serve: no prompt supplier");
  if (options.lora_modules.empty()) return {};
  const bool fits = options.lora_choice.size() == options.measured.size() &&
                    std::all_of(options.lora_choice.begin(), options.lora_choice.end(),
                                [&](uint32_t k) { return k < options.lora_modules.size(); });
  if (!fits)
    return fail(ErrorCode::kInvalidArgument, "run_serve: lora_choice must pick a module for every measured request");
  return {};
}

// No more threads than the concurrency cap: a closed-loop worker's share of the cap would be
// zero and the thread idle.
int worker_thread_count(const ServeRunnerOptions& options) {
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(options.threads, options.max_concurrency.value_or(options.threads))));
}

http::LoopOptions loop_options_for(const ServeRunnerOptions& options) {
  http::LoopOptions loop_options;
  loop_options.target = options.base;
  loop_options.verify_tls = options.verify_tls;
  loop_options.read_buffer_bytes = 8192;
  // Connecting counts against --request-timeout too (a server that never accepts failed each
  // request after the loop's fixed 10 s instead).
  loop_options.connect_timeout_ns = std::min(loop_options.connect_timeout_ns, options.request_timeout_ns);
  return loop_options;
}

// The workers of a run, each on its own loop thread from start() until join() (or destruction).
class WorkerPool {
 public:
  explicit WorkerPool(const ServeRunnerOptions& options) : threads_(worker_thread_count(options)) {
    shared.options = &options;
    shared.retries.set(retry_budget(static_cast<int64_t>(options.warmups.size() + options.measured.size())));
  }
  ~WorkerPool() { join(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Resolves the target once per worker, then starts the loops. Errors: kUnavailable.
  Result<void> start() {
    const http::LoopOptions loop_options = loop_options_for(*shared.options);
    for (int i = 0; i < threads_; ++i) {
      workers_.push_back(std::make_unique<Worker>(i, threads_, shared, loop_options));
      if (auto ok = workers_.back()->loop().prepare(); !ok) return std::unexpected(ok.error());
      shared.workers.push_back(workers_.back().get());
    }
    for (auto& w : workers_) {
      Worker* raw = w.get();
      raw->loop().post([raw] { raw->start_probe(); });
      loop_threads_.emplace_back([raw] { raw->loop().run(); });
    }
    return {};
  }
  void join() {
    for (auto& w : workers_) w->loop().stop();
    for (auto& t : loop_threads_) t.join();
    loop_threads_.clear();
  }
  // Runs fn(worker) on each worker's loop thread.
  void post_all(const std::function<void(Worker*)>& fn) {
    for (auto& w : workers_) {
      Worker* raw = w.get();
      raw->loop().post([raw, fn] { fn(raw); });
    }
  }
  // Ends the measured window on every worker (its CPU and wall clocks), waiting for each.
  void stop_measuring() {
    for (auto& w : workers_) {
      Worker* raw = w.get();
      std::atomic<bool> done{false};
      raw->loop().post([raw, &done] {
        raw->stop_measuring();
        done.store(true);
      });
      while (!done.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  int64_t streamed() const {
    int64_t total = 0;
    for (const auto& w : workers_) total += w->streamed_tokens();
    return total;
  }
  int size() const { return threads_; }
  Worker& at(int i) { return *workers_[static_cast<size_t>(i)]; }
  const std::vector<std::unique_ptr<Worker>>& workers() const { return workers_; }

  Shared shared;

 private:
  int threads_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> loop_threads_;
};

std::string server_exited(pid_t pid) {
  return fmt::format("server process {} exited during the run", pid);
}

// Why the run must stop now (a signal, the server died, a client error), or nullopt.
std::optional<std::string> stop_reason(const ServeRunnerOptions& options, Shared& shared) {
  if (options.interrupt && options.interrupt->load())
    return std::string("interrupted by a signal (Ctrl-C, SIGTERM or SIGHUP) before the run completed");
  if (!process_alive(options.server_pid)) return server_exited(options.server_pid);
  std::lock_guard lock(shared.error_mutex);
  if (shared.fatal) return shared.fatal->message();
  return shared.server_gone;
}

void report_progress(WorkerPool& pool, const Phase& phase, int64_t t_start, int64_t now) {
  const Shared& shared = pool.shared;
  shared.options->on_progress(ServeProgress{
      .total = static_cast<int64_t>(phase.end - phase.begin),
      .completed = phase.warmup ? 0 : shared.completed.load(),
      .failed = phase.warmup ? 0 : shared.failed.load(),
      .output_tokens = phase.warmup ? 0 : pool.streamed(),
      .elapsed_s = static_cast<double>(now - t_start) / 1e9,
      .warmup = phase.warmup,
  });
}

// Waits for every worker to finish the phase, stopping them all at the first stop reason (or
// when a worker stopped the phase itself: a dead server, a prompt error), and reports progress.
std::optional<std::string> watch_phase(WorkerPool& pool, Phase& phase) {
  const ServeRunnerOptions& options = *pool.shared.options;
  const int64_t t_start = SteadyClock().now_ns();
  std::optional<std::string> reason;
  int64_t next_progress = t_start;
  bool stop_posted = false;
  while (phase.workers_done.load(std::memory_order_acquire) < pool.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!stop_posted) {
      reason = stop_reason(options, pool.shared);
      if (reason || phase.stopping.load()) {
        phase.stopping.store(true);
        stop_posted = true;
        pool.post_all([](Worker* w) { w->stop_now(); });
      }
    }
    const int64_t now = SteadyClock().now_ns();
    if (options.on_progress && now >= next_progress) {
      next_progress = now + int64_t{options.progress_interval_ms} * 1'000'000;
      report_progress(pool, phase, t_start, now);
    }
  }
  if (!reason && phase.stopping.load()) reason = stop_reason(options, pool.shared).value_or("stopped early");
  return reason;
}

// A server that is shutting down closes its listener before its process exits: the remaining
// requests can all fail in the meantime. Gives it a moment to finish dying so the run is not
// reported as a valid one with a failing server ("exited" rather than "refused connections").
std::optional<std::string> confirm_server_exit(const ServeRunnerOptions& options, Shared& shared,
                                               std::optional<std::string> reason) {
  bool refused = false;
  {
    std::lock_guard lock(shared.error_mutex);
    refused = reason && shared.server_gone && *reason == *shared.server_gone;
  }
  if (refused) reason.reset();
  if (reason || options.server_pid <= 0 || (shared.failed.load() == 0 && !refused)) return reason;
  for (int i = 0; i < 100 && !reason; ++i) {
    if (!process_alive(options.server_pid)) {
      reason = server_exited(options.server_pid);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!reason && refused) reason = stop_reason(options, shared);
  return reason;
}

// Runs one phase to completion (or until stopped); returns the stop reason if stopped.
std::optional<std::string> run_phase(WorkerPool& pool, Phase& phase, int64_t total_slots) {
  phase.cap = total_slots;
  const int threads = pool.size();
  for (int i = 0; i < threads; ++i) {
    const int64_t share = total_slots / threads + (i < total_slots % threads ? 1 : 0);
    Worker* w = &pool.at(i);
    w->loop().post([w, &phase, share] { w->start_phase(&phase, share); });
  }
  return confirm_server_exit(*pool.shared.options, pool.shared, watch_phase(pool, phase));
}

constexpr int64_t kUnlimitedConcurrency = std::numeric_limits<int32_t>::max();

std::optional<std::string> run_warmups(WorkerPool& pool, int64_t concurrency, ServeRunnerOutput& out) {
  const ServeRunnerOptions& options = *pool.shared.options;
  if (options.warmups.empty()) return std::nullopt;
  Phase warm;
  warm.warmup = true;
  warm.begin = 0;
  warm.end = options.warmups.size();
  warm.next.store(0);
  warm.t0 = SteadyClock().now_ns();
  auto stopped = run_phase(pool, warm, std::min<int64_t>(concurrency, static_cast<int64_t>(options.warmups.size())));
  out.extra["warmup_duration_s"] = static_cast<double>(SteadyClock().now_ns() - warm.t0) / 1e9;
  return stopped;
}

// What is asked of the server around the measured window: /metrics before and after, the
// profiler's start and stop. The same credentials and extra headers as the benchmark's requests
// (an auth proxy in front of the server guards /metrics and the profiler too).
struct ServerWindow {
  std::vector<http::Header> control_headers;
  std::vector<http::Header> profile_headers;
  metrics::PrometheusSample before;
  bool have_before = false;
};

// A control request's outcome as stored: the status, or the (sanitised) error.
boost::json::value control_outcome(const Result<http::SimpleResponse>& r) {
  return r ? boost::json::value(r->status) : boost::json::value(ix::storable(r.error().message()));
}

ServerWindow open_server_window(const ServeRunnerOptions& options, bool stopped, ServeRunnerOutput& out) {
  ServerWindow window;
  window.control_headers = server_headers(options);
  window.profile_headers = server_headers(options, {{"Content-Type", "application/json"}});
  if (stopped) return window;
  if (options.scrape_server_metrics) {
    if (auto r =
            http::fetch(options.base, "GET", "/metrics", {}, window.control_headers, 5'000'000'000, options.verify_tls);
        r && r->status == 200) {
      window.before = metrics::parse_prometheus_text(r->body);
      window.have_before = true;
    }
  }
  if (options.profile) {
    out.extra["profile_start"] =
        control_outcome(http::fetch(options.base, "POST", "/start_profile", profile_request_body(options, true),
                                    window.profile_headers, 60'000'000'000, options.verify_tls));
  }
  return window;
}

void close_server_window(const ServeRunnerOptions& options, const ServerWindow& window, bool stopped,
                         ServeRunnerOutput& out) {
  if (options.profile && !stopped) {
    out.extra["profile_stop"] =
        control_outcome(http::fetch(options.base, "POST", "/stop_profile", profile_request_body(options, false),
                                    window.profile_headers, 600'000'000'000, options.verify_tls));
  }
  if (window.have_before && process_alive(options.server_pid)) {
    if (auto r =
            http::fetch(options.base, "GET", "/metrics", {}, window.control_headers, 5'000'000'000, options.verify_tls);
        r && r->status == 200) {
      out.extra["server_metrics"] = metrics::server_window_summary(
          window.before, metrics::parse_prometheus_text(r->body), options.configured_acceptance_length);
    }
  }
}

// The measured phase's positions, start time and (open loop) due times.
Result<void> prepare_measured(const ServeRunnerOptions& options, bool stopped, Phase& measured,
                              ServeRunnerOutput& out) {
  measured.begin = options.warmups.size();
  measured.end = measured.begin + options.measured.size();
  measured.next.store(measured.begin);
  measured.open_loop = workload::open_loop(options.arrivals);
  if (stopped) measured.stopping.store(true);
  // Start a little in the future so every worker is armed before the first send is due.
  measured.t0 = SteadyClock().now_ns() + 2'000'000;
  out.start_unix_s = unix_now_s() + 0.002;
  if (!measured.open_loop) return {};
  auto offsets = workload::arrival_offsets_ns(options.measured.size(), options.arrivals);
  if (!offsets) return std::unexpected(offsets.error());
  measured.due_ns.reserve(offsets->size());
  for (int64_t off : *offsets) measured.due_ns.push_back(measured.t0 + off);
  return {};
}

// The workers' self-measurements and connection counters, merged once at the end (Nighthawk).
struct Merged {
  metrics::LogHistogram lag;
  double max_busy = 0.0;
  int64_t client_cpu_ns = 0;
  http::LoopCounters counters;
};

void add_counters(http::LoopCounters& sum, const http::LoopCounters& c) {
  sum.connections_opened += c.connections_opened;
  sum.connections_reused += c.connections_reused;
  sum.stale_retries += c.stale_retries;
  sum.bytes_read += c.bytes_read;
  sum.reads += c.reads;
  sum.kernel_timestamps += c.kernel_timestamps;
  sum.stamp_delay_sum_ns += c.stamp_delay_sum_ns;
  sum.stamp_delay_max_ns = std::max(sum.stamp_delay_max_ns, c.stamp_delay_max_ns);
}

// Moves every worker's records and texts into `out` and merges their measurements.
Merged merge_workers(const WorkerPool& pool, ServeRunnerOutput& out) {
  Merged m;
  for (const auto& w : pool.workers()) {
    m.lag.merge(w->lag());
    m.max_busy = std::max(m.max_busy, w->busy_fraction());
    m.client_cpu_ns += w->cpu_ns();
    out.warmup_failed += w->warmup_failed();
    out.warmup_done += w->warmup_done();
    add_counters(m.counters, w->loop().counters());
    auto& recs = w->records();
    auto& texts = w->texts();
    for (size_t i = 0; i < recs.size(); ++i) {
      out.records.push_back(std::move(recs[i]));
      out.generated_texts.push_back(std::move(texts[i]));
    }
  }
  return m;
}

// Sorts the records by index, keeping the texts parallel.
void sort_by_index(ServeRunnerOutput& out) {
  std::vector<size_t> order(out.records.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out.records[a].index < out.records[b].index; });
  std::vector<RequestRecord> sorted_records;
  std::vector<std::string> sorted_texts;
  sorted_records.reserve(order.size());
  sorted_texts.reserve(order.size());
  for (size_t i : order) {
    sorted_records.push_back(std::move(out.records[i]));
    sorted_texts.push_back(std::move(out.generated_texts[i]));
  }
  out.records = std::move(sorted_records);
  out.generated_texts = std::move(sorted_texts);
}

// The measured window: from the measured phase's start to the last completion.
void set_window(ServeRunnerOutput& out, int64_t t0, double end_unix) {
  out.start_ns = t0;
  out.end_ns = t0;
  for (const auto& r : out.records) out.end_ns = std::max(out.end_ns, r.end_ns);
  out.end_unix_s = std::min(end_unix, out.start_unix_s + static_cast<double>(out.end_ns - out.start_ns) / 1e9);
}

double median_or_zero(std::vector<double>& values) {
  return values.empty() ? 0.0 : metrics::percentile(values, 50);
}

// Does the loop lag reach the measurements? Received bytes carry the kernel's receive time (plain
// TCP), so lag only matters there when it delays sends: visible as queue time (send − scheduled),
// which is pure client delay except in an open loop capped by --max-concurrency. The closed
// loop's first wave (every slot scheduled at t0: no client sends thousands of requests in the
// same instant) is left out; it still shows in the queue statistics.
ClientDelay client_delay(const ServeRunnerOutput& out, const Merged& m, const ServeRunnerOptions& options,
                         bool open_loop, int64_t concurrency) {
  const bool queue_is_client_delay = !(open_loop && options.max_concurrency);
  const int64_t first_wave = open_loop ? 0 : concurrency;
  std::vector<double> queue_ms, e2el_ms, ttft_ms;
  for (const auto& r : out.records) {
    if (r.send_ns && r.index >= first_wave) queue_ms.push_back(static_cast<double>(r.send_ns - r.scheduled_ns) / 1e6);
    if (!r.success) continue;
    const int64_t last = r.content_event_ns.empty() ? r.end_ns : r.content_event_ns.back();
    e2el_ms.push_back(static_cast<double>(last - r.send_ns) / 1e6);
    if (r.first_token_ns) ttft_ms.push_back(static_cast<double>(r.first_token_ns - r.send_ns) / 1e6);
  }
  const double queue_p90_ms = queue_ms.empty() ? 0.0 : metrics::percentile(queue_ms, 90);
  return {.lag_p99_ms = static_cast<double>(m.lag.percentile(99)) / 1e6,
          .max_busy = m.max_busy,
          .send_delay_p90_ms = queue_is_client_delay ? queue_p90_ms : 0.0,
          .median_e2el_ms = median_or_zero(e2el_ms),
          .median_ttft_ms = median_or_zero(ttft_ms),
          .stamps_immune = m.counters.reads > 0 && m.counters.kernel_timestamps == m.counters.reads,
          .threshold_ms = options.loop_lag_threshold_ms};
}

void judge_client(ServeRunnerOutput& out, const Merged& m, const ServeRunnerOptions& options, int threads,
                  bool open_loop, int64_t concurrency) {
  metrics::ClientHealth& h = out.client;
  h.worker_threads = threads;
  h.event_loop_lag_p50_ms = static_cast<double>(m.lag.percentile(50)) / 1e6;
  h.event_loop_lag_p99_ms = static_cast<double>(m.lag.percentile(99)) / 1e6;
  h.event_loop_lag_max_ms = static_cast<double>(m.lag.max()) / 1e6;
  h.cpu_utilization = m.max_busy;
  judge_client_delay(client_delay(out, m, options, open_loop, concurrency), h);
}

// Why the run is invalid: it stopped early, or prompt synthesis delayed sends.
void record_invalid_reasons(ServeRunnerOutput& out, const std::optional<std::string>& stopped,
                            const ServeRunnerOptions& options, Shared& shared) {
  if (stopped) {
    out.stopped_early = true;
    {
      std::lock_guard lock(shared.error_mutex);
      out.server_lost = options.server_pid > 0 && (!process_alive(options.server_pid) || shared.server_gone);
    }
    out.invalid_reasons.push_back(*stopped);
  }
  const int64_t waits = shared.prompt_waits.load();
  if (waits > 0 && shared.prompt_wait_max_ns.load() > 1'000'000) {
    out.invalid_reasons.push_back(fmt::format("prompt synthesis delayed {} sends (max {:.1f} ms)", waits,
                                              static_cast<double>(shared.prompt_wait_max_ns.load()) / 1e6));
  }
}

void record_counters(ServeRunnerOutput& out, const Merged& m, Shared& shared) {
  const http::LoopCounters& c = m.counters;
  out.extra["client_connections"] = boost::json::object{
      {"opened", c.connections_opened},
      {"reused", c.connections_reused},
      {"stale_replaced", c.stale_retries},
      {"bytes_read", c.bytes_read},
      {"reads", c.reads},
      {"kernel_timestamped_reads", c.kernel_timestamps},
      // How much later than the kernel's receive time the loop read the bytes: the error the
      // kernel timestamps removed from the measurements.
      {"read_delay_mean_us",
       c.kernel_timestamps ? static_cast<double>(c.stamp_delay_sum_ns) / static_cast<double>(c.kernel_timestamps) / 1e3
                           : 0.0},
      {"read_delay_max_us", static_cast<double>(c.stamp_delay_max_ns) / 1e3},
  };
  // CPU the event-loop threads used in the measured window (cost per event = this / events).
  out.extra["client_loop_cpu_s"] = static_cast<double>(m.client_cpu_ns) / 1e9;
  out.extra["retries"] = shared.retries.used();
  out.extra["retries_refused_by_budget"] = shared.retries.refused();
  out.extra["warmup_failed"] = out.warmup_failed;
  out.extra["prompt_waits"] = shared.prompt_waits.load();
  std::lock_guard lock(shared.error_mutex);
  out.fatal = shared.fatal;
}

}  // namespace

Result<ServeRunnerOutput> run_serve(const ServeRunnerOptions& options) {
  if (auto ok = check_runner_options(options); !ok) return std::unexpected(ok.error());
  WorkerPool pool(options);
  if (auto ok = pool.start(); !ok) return std::unexpected(ok.error());

  ServeRunnerOutput out;
  const int64_t concurrency = options.max_concurrency.value_or(kUnlimitedConcurrency);
  std::optional<std::string> stopped = run_warmups(pool, concurrency, out);
  const ServerWindow window = open_server_window(options, stopped.has_value(), out);

  Phase measured;
  if (auto ok = prepare_measured(options, stopped.has_value(), measured, out); !ok) return std::unexpected(ok.error());
  if (!stopped) {
    const int64_t slots = measured.open_loop
                              ? concurrency
                              : std::min<int64_t>(concurrency, static_cast<int64_t>(options.measured.size()));
    stopped = run_phase(pool, measured, slots);
  }
  pool.stop_measuring();
  const double end_unix = unix_now_s();
  close_server_window(options, window, stopped.has_value(), out);
  pool.join();

  const Merged merged = merge_workers(pool, out);
  sort_by_index(out);
  set_window(out, measured.t0, end_unix);
  judge_client(out, merged, options, pool.size(), measured.open_loop, concurrency);
  record_invalid_reasons(out, stopped, options, pool.shared);
  record_counters(out, merged, pool.shared);
  return out;
}

}  // namespace ix::bench
