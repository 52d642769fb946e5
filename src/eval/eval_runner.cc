#include "eval/eval_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <thread>

#include "bench/exchange.h"
#include "bench/run_watch.h"
#include "bench/serve_runner.h"
#include "common/rng.h"
#include "openai/backend.h"

namespace ix::eval {

namespace {

using bench::Exchange;
using metrics::ErrorKind;

// Resends of the whole run are bounded by the per-request limit alone: an eval needs every answer.
int64_t run_retry_budget(size_t requests, int max_retries) {
  return static_cast<int64_t>(requests) * std::max(max_retries, 0) + 1;
}

class EvalEngine final : public bench::ExchangeOwner {
 public:
  EvalEngine(const EvalRunOptions& options, const std::vector<std::string>& bodies)
      : o_(options),
        bodies_(bodies),
        loop_(loop_options(options)),
        headers_(bench::request_headers(options.api_key, options.extra_headers, {{"Accept", "text/event-stream"}})),
        budget_(run_retry_budget(bodies.size(), options.max_retries)),
        jitter_(Rng::stream(0x6576616cULL, "eval-retry-jitter")) {
    out_.replies.resize(bodies.size());
  }

  http::ClientLoop& loop() { return loop_; }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  EvalRunOutput& output() { return out_; }
  EvalProgress progress() const;

  // Loop thread.
  void start();
  void stop(std::string reason);

  openai::StreamChunkDecoder& chunk_decoder() override { return decoder_; }
  void count_streamed(int64_t) override {}
  bool resendable(const metrics::RequestRecord& rec) const override;
  bool resend(Exchange& exchange) override;
  void complete(Exchange& exchange) override;

 private:
  static http::LoopOptions loop_options(const EvalRunOptions& options) {
    http::LoopOptions l;
    l.target = options.base;
    l.verify_tls = options.verify_tls;
    l.connect_timeout_ns = std::min(l.connect_timeout_ns, options.request_timeout_ns);
    return l;
  }
  http::Request request_for(const Exchange& exchange) const;
  void send_next();
  void finish_if_done();

  const EvalRunOptions& o_;
  const std::vector<std::string>& bodies_;
  http::ClientLoop loop_;
  openai::StreamChunkDecoder decoder_;
  std::vector<http::Header> headers_;
  bench::ExchangePool exchanges_{this};
  bench::RetryBudget budget_;
  Rng jitter_;
  EvalRunOutput out_;
  size_t next_ = 0;
  int64_t in_flight_ = 0;
  bool stopping_ = false;
  int64_t start_ns_ = 0;
  std::atomic<bool> finished_{false};
  std::atomic<int64_t> answered_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> in_flight_count_{0};
  std::atomic<int64_t> retries_{0};
  std::atomic<int64_t> timeouts_{0};
};

EvalProgress EvalEngine::progress() const {
  return {.answered = answered_.load(std::memory_order_relaxed),
          .failed = failed_.load(std::memory_order_relaxed),
          .in_flight = in_flight_count_.load(std::memory_order_relaxed),
          .retries = retries_.load(std::memory_order_relaxed),
          .timeouts = timeouts_.load(std::memory_order_relaxed),
          .total = static_cast<int64_t>(bodies_.size()),
          .elapsed_s = start_ns_ ? static_cast<double>(loop_.now_ns() - start_ns_) / 1e9 : 0.0};
}

http::Request EvalEngine::request_for(const Exchange& exchange) const {
  http::Request request;
  request.target = o_.endpoint;
  request.timeout_ns = o_.request_timeout_ns;
  request.headers = headers_;
  request.body = bodies_[exchange.tag];
  return request;
}

void EvalEngine::start() {
  start_ns_ = loop_.now_ns();
  while (!stopping_ && in_flight_ < o_.concurrency && next_ < bodies_.size()) send_next();
  finish_if_done();
}

void EvalEngine::send_next() {
  const size_t index = next_++;
  Exchange* e = exchanges_.acquire();
  e->split_reasoning = true;
  // The prompt's bytes bound its tokens from above (the usage check's prompt length).
  e->reset(index, loop_.now_ns(), static_cast<int64_t>(bodies_[index].size()), o_.max_tokens, false);
  out_.replies[index].sent = true;
  ++in_flight_;
  in_flight_count_.store(in_flight_, std::memory_order_relaxed);
  loop_.submit(request_for(*e), e);
}

// Everything a server or network can get wrong once: resent (an eval needs the answer, not the
// timing). A response that is not a stream, or a usage count that cannot be true, is not.
bool EvalEngine::resendable(const metrics::RequestRecord& rec) const {
  return bench::retriable(rec) || rec.error_kind == ErrorKind::kTimeout || rec.error_kind == ErrorKind::kTruncated;
}

bool EvalEngine::resend(Exchange& exchange) {
  if (stopping_) return false;
  const ErrorKind kind = exchange.rec.error_kind;
  std::string error =
      exchange.rec.error_message.empty() ? std::string(metrics::error_kind_name(kind)) : exchange.rec.error_message;
  if (!bench::schedule_resend(loop_, exchange, o_.max_retries, budget_, jitter_,
                              [this](const Exchange& e) { return request_for(e); }))
    return false;
  EvalReply& reply = out_.replies[exchange.tag];
  reply.error = std::move(error);
  ++reply.retries;
  retries_.fetch_add(1, std::memory_order_relaxed);
  if (kind == ErrorKind::kTimeout) {
    ++reply.timeouts;
    timeouts_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

void EvalEngine::complete(Exchange& exchange) {
  EvalReply& reply = out_.replies[exchange.tag];
  const metrics::RequestRecord& rec = exchange.rec;
  reply.ok = rec.success;
  reply.latency_s =
      rec.end_ns > rec.send_ns && rec.send_ns > 0 ? static_cast<double>(rec.end_ns - rec.send_ns) / 1e9 : 0;
  reply.finish_reason = exchange.finish_reason;
  reply.completion_tokens = rec.server_output_tokens;
  if (rec.success) {
    reply.error.clear();
    // As InferenceX's lm-eval patch reads a reply: the content, or the reasoning when it is empty.
    reply.text = exchange.text.empty() ? exchange.reasoning : std::move(exchange.text);
    reply.reasoning = std::move(exchange.reasoning);
    answered_.fetch_add(1, std::memory_order_relaxed);
  } else {
    if (rec.error_kind == ErrorKind::kTimeout) {
      ++reply.timeouts;
      timeouts_.fetch_add(1, std::memory_order_relaxed);
    }
    reply.error = rec.error_message.empty() ? std::string(metrics::error_kind_name(rec.error_kind)) : rec.error_message;
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (rec.error_kind == ErrorKind::kConnect && !stopping_)
      stop(fmt::format("stopped: the server at {} cannot be reached ({}) after {} retries", o_.base.origin(),
                       reply.error, reply.retries));
  }
  exchanges_.release(&exchange);
  --in_flight_;
  in_flight_count_.store(in_flight_, std::memory_order_relaxed);
  if (!stopping_ && next_ < bodies_.size()) send_next();
  finish_if_done();
}

void EvalEngine::stop(std::string reason) {
  if (stopping_) return;
  stopping_ = true;
  out_.stop_reason = std::move(reason);
  // Resends waiting for their backoff end now (their exchanges fail as cancelled).
  loop_.cancel_all();
  for (const auto& e : exchanges_.all()) {
    if (e->retry_pending) {
      e->retry_pending = false;
      EvalReply& reply = out_.replies[e->tag];
      reply.error = "cancelled: " + out_.stop_reason;
      exchanges_.release(e.get());
      --in_flight_;
    }
  }
  in_flight_count_.store(in_flight_, std::memory_order_relaxed);
  finish_if_done();
}

void EvalEngine::finish_if_done() {
  if (in_flight_ == 0 && (stopping_ || next_ >= bodies_.size())) finished_.store(true, std::memory_order_release);
}

}  // namespace

Result<EvalRunOutput> run_eval_requests(const EvalRunOptions& options, const std::vector<std::string>& bodies) {
  if (options.concurrency < 1) return fail(ErrorCode::kInvalidArgument, "--concurrency must be at least 1");
  EvalEngine engine(options, bodies);
  if (auto ok = engine.loop().prepare(); !ok) return std::unexpected(ok.error());
  const auto started = std::chrono::steady_clock::now();
  std::thread loop_thread([&engine] { engine.loop().run(); });
  engine.loop().post([&engine] { engine.start(); });
  bench::watch_engine(engine, options);
  engine.loop().stop();
  loop_thread.join();
  EvalRunOutput out = std::move(engine.output());
  out.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.on_progress) options.on_progress(engine.progress());
  int64_t failed = 0;
  const EvalReply* last_failure = nullptr;
  for (const auto& reply : out.replies) {
    out.retries += reply.retries;
    out.timeouts += reply.timeouts;
    if (!reply.ok) {
      out.complete = false;
      ++failed;
      if (reply.sent) last_failure = &reply;
    }
  }
  if (!out.complete && out.stop_reason.empty())
    out.stop_reason = fmt::format("{} of {} requests got no answer (last error: {})", failed, out.replies.size(),
                                  last_failure ? last_failure->error : "none");
  return out;
}

}  // namespace ix::eval
