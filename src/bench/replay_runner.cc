#include "bench/replay_runner.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>

#include "bench/exchange.h"
#include "bench/replay_request.h"
#include "bench/run_watch.h"
#include "bench/serve_runner.h"

namespace ix::bench {
namespace {

http::LoopOptions loop_options_for(const ReplayRunnerOptions& options) {
  http::LoopOptions loop_options;
  loop_options.target = options.base;
  loop_options.verify_tls = options.verify_tls;
  loop_options.connect_timeout_ns = std::min(loop_options.connect_timeout_ns, options.request_timeout_ns);
  return loop_options;
}

// The replay's wire: each request a chat body on the client loop, measured as an exchange; the
// loop's clock is the schedule's.
class HttpReplayTransport final : public workload::ReplayTransport, public ExchangeOwner {
 public:
  explicit HttpReplayTransport(const ReplayRunnerOptions& options)
      : o_(options),
        loop_(loop_options_for(options)),
        headers_(request_headers(options.api_key, options.extra_headers, {{"Accept", "text/event-stream"}})) {}

  void attach(workload::ReplayScheduler* scheduler) { scheduler_ = scheduler; }
  http::ClientLoop& loop() { return loop_; }

  int64_t now_ns() const override { return loop_.now_ns(); }
  void call_at(int64_t due_ns, std::function<void()> fn) override { loop_.call_at(due_ns, std::move(fn)); }
  void post(std::function<void()> fn) override { loop_.post(std::move(fn)); }
  void cancel_all() override { loop_.cancel_all(); }
  void send(const workload::ReplaySend& send) override;

  openai::StreamChunkDecoder& chunk_decoder() override { return chunk_decoder_; }
  void count_streamed(int64_t) override {}
  bool resend(Exchange&) override { return false; }  // aiperf's replay does not resend
  void complete(Exchange& exchange) override;

 private:
  http::Request make_request(const Exchange& exchange, const workload::ReplaySend& send) const;

  const ReplayRunnerOptions& o_;
  http::ClientLoop loop_;
  openai::StreamChunkDecoder chunk_decoder_;
  std::vector<http::Header> headers_;
  ExchangePool exchanges_{this};
  workload::ReplayScheduler* scheduler_ = nullptr;
};

http::Request HttpReplayTransport::make_request(const Exchange& exchange, const workload::ReplaySend& send) const {
  http::Request request;
  request.target = o_.endpoint;
  request.timeout_ns = o_.request_timeout_ns;
  request.headers = headers_;
  request.headers.push_back({"X-Correlation-ID", std::string(send.correlation_id)});
  if (o_.session_id_header) {
    request.headers.push_back({"X-Dynamo-Session-ID", std::string(send.correlation_id)});
    if (!send.root_correlation_id.empty())
      request.headers.push_back({"X-Dynamo-Parent-Session-ID", std::string(send.root_correlation_id)});
  }
  request.body = exchange.body;
  return request;
}

void HttpReplayTransport::send(const workload::ReplaySend& send) {
  Exchange* e = exchanges_.acquire();
  e->reset(send.tag, send.scheduled_ns, send.turn->in, send.max_tokens, send.warmup);
  e->body = render_replay_body(*send.messages, *o_.synth,
                               {.model = o_.model,
                                .max_tokens = send.max_tokens,
                                .cache_bust = send.cache_bust,
                                .replies = send.replies,
                                .extra = &o_.extra_body});
  loop_.submit(make_request(*e, send), e);
}

void HttpReplayTransport::complete(Exchange& exchange) {
  workload::ReplayReply reply{.rec = std::move(exchange.rec), .server_prompt_tokens = exchange.server_prompt_tokens};
  if (o_.schedule.live_assistant) reply.text = std::move(exchange.text);
  const uint64_t tag = exchange.tag;
  exchanges_.release(&exchange);
  scheduler_->complete(tag, std::move(reply));
}

// What run_watch's watch_engine() drives: the loop, and the scheduler's state and stop.
struct WatchedReplay {
  HttpReplayTransport& transport;
  workload::ReplayScheduler& scheduler;
  http::ClientLoop& loop() { return transport.loop(); }
  bool finished() const { return scheduler.finished(); }
  void stop(std::string reason) { scheduler.stop(std::move(reason)); }
  ReplayProgress progress() const { return scheduler.progress(); }
};

Result<void> check_options(const ReplayRunnerOptions& o) {
  if (!o.trace || !o.synth) return fail(ErrorCode::kInvalidArgument, "replay: no trace or no prompt synthesizer");
  if (auto error = workload::schedule_options_error(o.schedule))
    return fail(ErrorCode::kInvalidArgument, "replay: " + *error);
  return {};
}

int64_t steady_to_unix_now(const http::ClientLoop& loop) {
  const auto unix_now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(unix_now).count() - loop.now_ns();
}

}  // namespace

Result<ReplayRunnerOutput> run_replay(const ReplayRunnerOptions& options) {
  if (auto ok = check_options(options); !ok) return std::unexpected(ok.error());
  workload::ReplayScheduleOptions schedule = options.schedule;
  schedule.run_nonce = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  HttpReplayTransport transport(options);
  workload::ReplayScheduler scheduler(schedule, *options.trace, transport,
                                      {.on_record = options.on_record, .on_profile_start = options.on_profile_start});
  transport.attach(&scheduler);
  if (auto ok = transport.loop().prepare(); !ok) return std::unexpected(ok.error());
  const int64_t steady_to_unix = steady_to_unix_now(transport.loop());
  std::thread loop_thread([&transport] { transport.loop().run(); });
  transport.loop().post([&scheduler] { scheduler.start(); });
  WatchedReplay watched{transport, scheduler};
  watch_engine(watched, options);
  transport.loop().stop();
  loop_thread.join();
  ReplayRunnerOutput out;
  static_cast<workload::ReplayScheduleOutput&>(out) = scheduler.output();
  out.steady_to_unix_ns = steady_to_unix;
  out.profile_end_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  if (options.on_progress) options.on_progress(scheduler.progress());
  return out;
}

}  // namespace ix::bench
