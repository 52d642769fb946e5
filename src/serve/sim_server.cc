#include "serve/sim_server.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/sanitize.h"
#include "common/stop_signal.h"
#include "http/client.h"
#include "http/server.h"
#include "serve/openai_request.h"
#include "serve/prompt_workers.h"
#include "serve/schedule_engines.h"
#include "serve/serve_metrics.h"

namespace ix::serve {

// Everything the handlers share. Member order matters for destruction: the engine goes before the
// metrics, because destroying the engine destroys its sinks, whose stream states merge their
// last observations into the metrics.
struct ServeState {
  SimServeOptions options;
  std::unique_ptr<TextCodec> codec;
  ServeMetrics metrics;
  FaultInjector faults;
  int64_t start_ns = 0;
  std::atomic<uint64_t> next_request{1};
  std::mutex profile_mutex;
  int64_t profile_started_ns = 0;  // 0 = no window open
  std::unique_ptr<sim::LiveEngine> engine;
  // Set when the engine is a fixed schedule: requests are then admitted and their events produced
  // by the connection's own event loop (CompletionSource::produce_due), not by an engine thread.
  FixedScheduleEngine* fixed = nullptr;
  // --gsm8k-answers: the scripted answers (null without the flag).
  std::unique_ptr<const Gsm8kAnswerKey> gsm8k;
  // Last, so it goes first: its jobs use everything above.
  PromptWorkers workers;

  ServeState(SimServeOptions opts, std::unique_ptr<sim::LiveEngine> eng, std::unique_ptr<TextCodec> text,
             int worker_threads)
      : options(std::move(opts)),
        codec(std::move(text)),
        faults(options.faults, steady_clock_instance().now_ns()),
        start_ns(steady_clock_instance().now_ns()),
        engine(std::move(eng)),
        fixed(dynamic_cast<FixedScheduleEngine*>(engine.get())),
        workers(worker_threads, kMaxQueuedPromptBytes) {}
};

struct SimServer::Impl {
  std::unique_ptr<ServeState> state;
  std::unique_ptr<http::HttpServer> http;
};

namespace {

using http::PullResult;
using http::PullStatus;
using http::ServerResponse;

constexpr size_t kInterTokenBuckets = 20;  // vLLM's 19 TPOT bounds + +Inf
constexpr size_t kLatenessBuckets = 72;    // ServeMetrics' 71 delivery-lateness bounds + +Inf

ServerResponse json_response(int status, std::string body) {
  ServerResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

ServerResponse error_response(const ApiError& error) {
  return json_response(error.status, error_json(error));
}

ServerResponse error_response(int status, std::string_view message, std::string_view type,
                              std::string_view param = {}) {
  return error_response(ApiError{status, std::string(type), std::string(message), std::string(param)});
}

std::string_view error_type_for(int status) {
  switch (status) {
    case 404: return "NotFoundError";
    case 429: return "RateLimitError";
    case 500: return "InternalServerError";
    case 503: return "ServiceUnavailableError";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

std::string_view finish_name(sim::FinishReason reason) {
  switch (reason) {
    case sim::FinishReason::kLength: return "length";
    case sim::FinishReason::kStop: return "stop";
    case sim::FinishReason::kAbort: return "abort";
    case sim::FinishReason::kNone: return "null";
  }
  return "null";
}

// --- per-request stream state, shared by the engine's sink and the connection ------------------

struct Run {
  uint32_t events = 0;
  int32_t tokens_each = 0;
};

struct StreamShared {
  explicit StreamShared(ServeMetrics& m, int64_t received) : metrics(m), received_ns(received) {}
  ~StreamShared() { metrics.inter_token().merge(inter_token_counts, inter_token_sum_ns); }

  ServeMetrics& metrics;
  const int64_t received_ns;
  // When the engine first scheduled the request (engine time, from its first TokenEvent); unknown
  // (an engine that does not say): its phases are not observed.
  std::optional<int64_t> scheduled_ns;
  std::shared_ptr<http::Waker> waker;

  std::mutex mutex;
  std::vector<Run> runs;  // events not yet taken by the connection
  bool finished = false;
  sim::FinishReason finish = sim::FinishReason::kNone;
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;
  int32_t total_tokens = 0;
  bool wake_requested = false;
  int64_t first_event_ns = 0;
  int64_t last_event_ns = 0;
  // Inter-token gaps are counted here and merged once (no shared atomics per token).
  std::array<uint32_t, kInterTokenBuckets> inter_token_counts{};
  int64_t inter_token_sum_ns = 0;
  // Scheduled times of the events in `runs` (first and last; a stream's events are evenly spaced
  // on a fixed schedule), for the delivery-lateness histogram.
  int64_t pending_first_ns = 0;
  int64_t pending_last_ns = 0;
  uint32_t pending_events = 0;

  // The request's end-to-end latency and vLLM's phase histograms, once, when it ends at `end_ns`
  // (engine time); the caller holds `mutex`.
  void observe_end(int64_t end_ns) {
    metrics.observe_e2e_s(static_cast<double>(end_ns - received_ns) / 1e9);
    if (scheduled_ns) metrics.observe_request_phases(received_ns, *scheduled_ns, first_event_ns, end_ns);
  }
};

void on_token_event(StreamShared& shared, const sim::TokenEvent& event) {
  bool notify = false;
  {
    std::lock_guard lock(shared.mutex);
    if (shared.finished) return;
    if (!shared.runs.empty() && shared.runs.back().tokens_each == event.new_tokens) {
      ++shared.runs.back().events;
    } else {
      shared.runs.push_back({1, event.new_tokens});
    }
    shared.total_tokens = event.total_output_tokens;
    shared.prompt_tokens = event.prompt_tokens;
    shared.cached_tokens = event.cached_prompt_tokens;
    if (shared.first_event_ns == 0) {
      shared.first_event_ns = event.time_ns;
      if (!shared.scheduled_ns && event.scheduled_ns >= 0) shared.scheduled_ns = event.scheduled_ns;
      shared.metrics.observe_ttft_s(static_cast<double>(event.time_ns - shared.received_ns) / 1e9);
    } else {
      int64_t gap_ns = event.time_ns - shared.last_event_ns;
      size_t bucket = shared.metrics.inter_token().bucket_of(static_cast<double>(gap_ns) / 1e9);
      if (bucket < shared.inter_token_counts.size()) ++shared.inter_token_counts[bucket];
      shared.inter_token_sum_ns += gap_ns;
    }
    shared.last_event_ns = event.time_ns;
    if (shared.pending_events++ == 0) shared.pending_first_ns = event.time_ns;
    shared.pending_last_ns = event.time_ns;
    if (event.finish != sim::FinishReason::kNone) {
      shared.finished = true;
      shared.finish = event.finish;
      shared.observe_end(event.time_ns);
    }
    if (!shared.wake_requested) {
      shared.wake_requested = true;
      notify = true;
    }
  }
  if (notify && shared.waker) shared.waker->wake();
}

// What a completion source needs to know about its request.
struct StreamSpec {
  ApiKind kind = ApiKind::kCompletion;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool include_stop_str = false;  // include_stop_str_in_output: the matched stop text stays in the output
  int32_t min_tokens = 0;         // no stop (string or token id) before this many tokens
  FaultPlan faults;
  std::string id;
  int64_t created = 0;
  size_t token_offset = 0;  // where in the codec's output cycle this request starts
  // GSM8K answer mode: the output tokens come from this script instead of the codec's cycle.
  const AnswerScript* script = nullptr;
  // The engine was asked for exactly the tokens of a natural end (the scripted answer): its
  // "length" finish is reported as "stop".
  bool natural_end = false;
};

// Renders a request's response from its engine events (streamed or, for stream=false, collected).
class CompletionSource final : public http::BodySource {
 public:
  CompletionSource(ServeState& state, std::shared_ptr<StreamShared> shared, StreamSpec spec)
      : state_(state), shared_(std::move(shared)), spec_(std::move(spec)) {
    const std::string model = json_escape(state_.options.model_name);
    const char* object = spec_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion";
    head_ =
        fmt::format(R"({{"id":"{}","object":"{}","created":{},"model":"{}",)", spec_.id, object, spec_.created, model);
    if (spec_.kind == ApiKind::kChat) {
      prefix_ = "data: " + head_ + R"("choices":[{"index":0,"delta":{"content":")";
      suffix_ = R"("},"logprobs":null,"finish_reason":null}]})"
                "\n\n";
    } else {
      prefix_ = "data: " + head_ + R"("choices":[{"index":0,"text":")";
      suffix_ = R"(","logprobs":null,"finish_reason":null,"stop_reason":null}]})"
                "\n\n";
    }
    for (const auto& stop : spec_.stop) max_stop_bytes_ = std::max(max_stop_bytes_, stop.size());
  }

  ~CompletionSource() override {
    cancel_engine();
    state_.metrics.delivery_lateness().merge(lateness_counts_, lateness_sum_ns_);
  }

  void set_engine_request(uint64_t id) { engine_request_ = id; }
  // The request was admitted to the fixed schedule: this source produces its events.
  void set_schedule(const FixedScheduleEngine::Schedule& schedule) {
    schedule_ = schedule;
    scheduled_ = true;
    engine_request_ = schedule.id;
  }

  PullResult pull(std::string& out, size_t budget_bytes, int64_t now_ns) override {
    if (scheduled_) produce_due(now_ns);
    take_events(now_ns);
    if (spec_.stream && spec_.kind == ApiKind::kChat && !role_sent_) {
      role_sent_ = true;
      out += "data: " + head_ +
             R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},)"
             R"("logprobs":null,"finish_reason":null}]})"
             "\n\n";
    }
    size_t start_size = out.size();
    while (backlog_head_ < backlog_.size() && !stopped_) {
      if (spec_.stream && out.size() - start_size >= budget_bytes) return {PullStatus::kMore, 0};
      if (auto held = inject_faults(out, now_ns, false)) return *held;
      Run& run = backlog_[backlog_head_];
      int32_t tokens = run.tokens_each;
      if (--run.events == 0) ++backlog_head_;
      ++events_sent_;
      tokens_sent_ += tokens;
      bool last = finished_ && backlog_head_ == backlog_.size();
      emit_event(out, tokens, last);
    }
    if (backlog_head_ == backlog_.size()) {
      backlog_.clear();
      backlog_head_ = 0;
    }
    if (stopped_ || (finished_ && backlog_.empty())) {
      if (auto held = inject_faults(out, now_ns, true)) return *held;
      return finish(out);
    }
    return {PullStatus::kWait, next_due_ns()};
  }

  void on_abort() override {
    if (!ended_) state_.metrics.count_finished(sim::FinishReason::kAbort);
    ended_ = true;
    cancel_engine();
  }

 private:
  // The next event in the backlog is the request's last one.
  bool next_event_is_last() const {
    return finished_ && backlog_head_ + 1 == backlog_.size() && backlog_[backlog_head_].events == 1;
  }

  // Injected faults fire between events: once `*_after` tokens were sent, or before the last event
  // when the request ends sooner (an event may carry several tokens with speculative decoding, and
  // a natural EOS, a stop string or a short fault may end it before the drawn position), and at
  // the latest after the last event, before [DONE] (`at_end`: a request of a single event). So
  // every fault counted in ixbench:injected_faults_total happens. Returns the pull's result while
  // a fault holds the stream (a stall still running, a drop).
  std::optional<PullResult> inject_faults(std::string& out, int64_t now_ns, bool at_end) {
    const FaultPlan& plan = spec_.faults;
    auto due = [&](int32_t after, bool done) {
      if (after == 0 || done) return false;
      return at_end || (events_sent_ >= 1 && (tokens_sent_ >= after || next_event_is_last()));
    };
    if (due(plan.stall_after, stall_done_)) {
      if (stall_until_ns_ == 0) stall_until_ns_ = now_ns + plan.stall_ms * 1'000'000;
      if (now_ns < stall_until_ns_) return PullResult{PullStatus::kWait, stall_until_ns_};
      stall_done_ = true;
    }
    if (due(plan.drop_after, false)) {
      cancel_engine();
      ended_ = true;
      state_.metrics.count_finished(sim::FinishReason::kAbort);
      return PullResult{PullStatus::kAbort, 0};
    }
    if (due(plan.malformed_after, malformed_done_)) {
      malformed_done_ = true;
      // A non-streamed response is cut in half instead (finish()).
      if (spec_.stream) out += "data: " + head_ + R"("choices":[{"index":0,"text":)" + "\n\n";
    }
    return std::nullopt;
  }

  // Fixed schedule, on the connection's loop: every token due by `now_ns` becomes an event now
  // (exact scheduled time_ns; overdue tokens of this stream go out together in this pull), and
  // the pull returns the next due time, for which the loop arms this connection's timer. The
  // loop's timer queue is the schedule of all its streams; nothing is produced early.
  void produce_due(int64_t now_ns) {
    if (engine_done_ || produced_ >= schedule_.max_tokens || now_ns < schedule_.first_due_ns) return;
    // With itl 0 every token is due with the first.
    const int64_t due_count =
        schedule_.itl_ns <= 0
            ? schedule_.max_tokens
            : std::min<int64_t>(schedule_.max_tokens, (now_ns - schedule_.first_due_ns) / schedule_.itl_ns + 1);
    if (due_count <= produced_) return;
    sim::TokenEvent event;
    event.request_id = schedule_.id;
    event.new_tokens = 1;
    event.prompt_tokens = schedule_.prompt_tokens;
    event.scheduled_ns = schedule_.start_ns;
    const int32_t before = produced_;
    while (produced_ < due_count) {
      event.time_ns = schedule_.first_due_ns + produced_ * schedule_.itl_ns;
      event.previous_ns = produced_ == 0 ? 0 : event.time_ns - schedule_.itl_ns;
      ++produced_;
      event.total_output_tokens = produced_;
      event.finish = produced_ == schedule_.max_tokens ? sim::FinishReason::kLength : sim::FinishReason::kNone;
      on_token_event(*shared_, event);
    }
    state_.fixed->count_generated(produced_ - before);
    if (produced_ == schedule_.max_tokens) {
      engine_done_ = true;
      state_.fixed->release(true);
    }
  }

  int64_t next_due_ns() const {
    if (!scheduled_ || engine_done_ || produced_ >= schedule_.max_tokens) return 0;
    return schedule_.first_due_ns + produced_ * schedule_.itl_ns;
  }

  // Events are written in the pull that takes them (unless a no-delay backlog exceeds the write
  // budget), so `now_ns` is their delivery time.
  void take_events(int64_t now_ns) {
    std::lock_guard lock(shared_->mutex);
    shared_->wake_requested = false;
    if (shared_->pending_events > 0) {
      record_lateness(now_ns, shared_->pending_first_ns, shared_->pending_last_ns, shared_->pending_events);
      if (!first_token_taken_) {
        first_token_taken_ = true;
        state_.metrics.observe_first_token_lateness_s(
            static_cast<double>(std::max<int64_t>(now_ns - shared_->pending_first_ns, 0)) / 1e9);
      }
      shared_->pending_events = 0;
    }
    for (const Run& run : shared_->runs) {
      if (!backlog_.empty() && backlog_.back().tokens_each == run.tokens_each && backlog_head_ < backlog_.size()) {
        backlog_.back().events += run.events;
      } else {
        backlog_.push_back(run);
      }
    }
    shared_->runs.clear();
    finished_ = shared_->finished;
    finish_ = shared_->finish;
    prompt_tokens_ = shared_->prompt_tokens;
    cached_tokens_ = shared_->cached_tokens;
  }

  void record_lateness(int64_t now_ns, int64_t first_ns, int64_t last_ns, uint32_t events) {
    Histogram& histogram = state_.metrics.delivery_lateness();
    if (first_ns == last_ns) {
      const int64_t late = std::max<int64_t>(now_ns - first_ns, 0);
      const size_t bucket = histogram.bucket_of(static_cast<double>(late) / 1e9);
      if (bucket < lateness_counts_.size()) lateness_counts_[bucket] += events;
      lateness_sum_ns_ += late * events;
      return;
    }
    const double step = static_cast<double>(last_ns - first_ns) / static_cast<double>(events - 1);
    for (uint32_t i = 0; i < events; ++i) {
      const int64_t due = first_ns + static_cast<int64_t>(step * i);
      const int64_t late = std::max<int64_t>(now_ns - due, 0);
      const size_t bucket = histogram.bucket_of(static_cast<double>(late) / 1e9);
      if (bucket < lateness_counts_.size()) ++lateness_counts_[bucket];
      lateness_sum_ns_ += late;
    }
  }

  // One engine event = one SSE event carrying `tokens` tokens of text.
  void emit_event(std::string& out, int32_t tokens, bool last) {
    if (spec_.stop.empty() && spec_.stop_token_ids.empty()) {
      completion_tokens_ += tokens;
      if (spec_.stream) {
        out += prefix_;
        for (int32_t index = 0; index < tokens; ++index) out += next_token().json_text;
        end_event(out, last ? final_suffix(finish_reason_name()) : suffix_);
      } else {
        for (int32_t index = 0; index < tokens; ++index) text_ += next_token().text;
      }
      return;
    }
    // With stop strings or stop token ids: token by token, as vLLM checks them. Neither stops the
    // request within its first min_tokens tokens, and a stop string must end in a later token (vLLM
    // masks stop tokens, and searches stop strings only in text after min_tokens tokens). A stop
    // token counts as generated; its text is dropped unless include_stop_str_in_output, as is the
    // text of a stop string and everything after it. Text already sent is not held back (vLLM holds
    // back a possible partial match; we do not).
    std::string raw;
    int32_t taken = 0;
    while (taken < tokens && !stopped_) {
      const OutputToken& token = next_token();
      const bool may_stop = generated_ >= spec_.min_tokens;
      ++generated_;
      ++taken;
      if (may_stop &&
          std::find(spec_.stop_token_ids.begin(), spec_.stop_token_ids.end(), token.id) != spec_.stop_token_ids.end()) {
        if (spec_.include_stop_str) raw += token.text;
        stop_with(std::to_string(token.id));
        break;
      }
      raw += token.text;
      if (spec_.stop.empty()) continue;
      const size_t token_start = tail_.size();
      tail_ += token.text;
      if (!may_stop) continue;
      for (const auto& stop : spec_.stop) {
        // Only matches that end in this token: earlier text was searched with earlier tokens.
        const size_t from = token_start + 1 > stop.size() ? token_start + 1 - stop.size() : 0;
        const size_t found = tail_.find(stop, from);
        if (found == std::string::npos) continue;
        const size_t cut = spec_.include_stop_str ? found + stop.size() : found;  // in tail_
        const size_t raw_start = tail_.size() - raw.size();
        if (cut >= raw_start) {
          raw.resize(cut - raw_start);
        } else {
          // The match began in an earlier event: a non-streamed response still holds that text
          // and drops it too (a streamed one has sent it).
          raw.clear();
          if (!spec_.stream) text_.resize(text_.size() - std::min(text_.size(), raw_start - cut));
        }
        stop_with("\"" + json_escape(stop) + "\"");
        break;
      }
    }
    completion_tokens_ += taken;  // a stop ends the count at its token
    if (tail_.size() > max_stop_bytes_) tail_.erase(0, tail_.size() - max_stop_bytes_);
    if (spec_.stream) {
      out += prefix_;
      out += json_escape(raw);
      end_event(out, (last || stopped_) ? final_suffix(finish_reason_name()) : suffix_);
    } else {
      text_ += raw;
    }
  }

  // The request ends with finish_reason "stop" and stop_reason `reason_json` (a JSON value: the
  // stop string, or the stop token id as a number, as vLLM reports them).
  void stop_with(std::string reason_json) {
    stopped_ = true;
    stop_reason_json_ = std::move(reason_json);
    {
      // The engine is cancelled and never reports this end: the request finished with the event
      // that carried the stop (the newest one received), and counts as finished ("stop").
      std::lock_guard lock(shared_->mutex);
      if (!shared_->finished && shared_->first_event_ns != 0) shared_->observe_end(shared_->last_event_ns);
    }
    cancel_engine();
  }

  // Closes a token event with `suffix` (which ends with the object's "}\n\n"). With
  // stream_options.continuous_usage_stats the running usage goes in every chunk, as vLLM does:
  // clients read how many tokens each chunk carried from the completion_tokens deltas.
  void end_event(std::string& out, const std::string& suffix) const {
    if (!spec_.continuous_usage) {
      out += suffix;
      return;
    }
    out.append(suffix, 0, suffix.size() - 3);
    out += R"(,"usage":)";
    out += usage_json();
    out += "}\n\n";
  }

  // The request's next output token: its script's, else the codec's cycle from its offset.
  const OutputToken& next_token() {
    const size_t index = token_cursor_++;
    if (spec_.script != nullptr) return spec_.script->token(index);
    const auto& cycle = state_.codec->output_tokens();
    return cycle[(spec_.token_offset + index) % cycle.size()];
  }

  // The engine generated fewer tokens than max_tokens on purpose (a short fault, a scripted
  // answer's end), so its "length" is a natural stop.
  bool ends_naturally() const {
    return (spec_.faults.short_tokens != 0 || spec_.natural_end) && finish_ == sim::FinishReason::kLength;
  }

  std::string finish_reason_name() const {
    if (stopped_ || ends_naturally()) return "stop";
    return std::string(finish_name(finish_));
  }

  std::string stop_reason_json() const { return stopped_ ? stop_reason_json_ : "null"; }

  std::string final_suffix(const std::string& reason) const {
    if (spec_.kind == ApiKind::kChat) {
      return fmt::format(R"("}},"logprobs":null,"finish_reason":"{}","stop_reason":{}}}]}})"
                         "\n\n",
                         reason, stop_reason_json());
    }
    return fmt::format(R"(","logprobs":null,"finish_reason":"{}","stop_reason":{}}}]}})"
                       "\n\n",
                       reason, stop_reason_json());
  }

  std::string usage_json() const {
    return fmt::format(
        R"({{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{},"prompt_tokens_details":{{"cached_tokens":{}}}}})",
        prompt_tokens_, prompt_tokens_ + completion_tokens_, completion_tokens_, cached_tokens_);
  }

  PullResult finish(std::string& out) {
    ended_ = true;
    const bool stop = stopped_ || spec_.faults.short_tokens != 0 || ends_naturally();
    sim::FinishReason counted = stop ? sim::FinishReason::kStop : finish_;
    state_.metrics.count_finished(counted);
    engine_done_ = true;
    if (spec_.stream) {
      if (spec_.include_usage) out += "data: " + head_ + R"("choices":[],"usage":)" + usage_json() + "}\n\n";
      out += "data: [DONE]\n\n";
      return {PullStatus::kEnd, 0};
    }
    std::string body;
    std::string model = json_escape(state_.options.model_name);
    if (spec_.kind == ApiKind::kChat) {
      body = fmt::format(
          R"({{"id":"{}","object":"chat.completion","created":{},"model":"{}","choices":[{{"index":0,"message":{{"role":"assistant","content":"{}","tool_calls":[]}},"logprobs":null,"finish_reason":"{}","stop_reason":{}}}],"usage":{}}})",
          spec_.id, spec_.created, model, json_escape(text_), finish_reason_name(), stop_reason_json(), usage_json());
    } else {
      body = fmt::format(
          R"({{"id":"{}","object":"text_completion","created":{},"model":"{}","choices":[{{"index":0,"text":"{}","logprobs":null,"finish_reason":"{}","stop_reason":{},"prompt_logprobs":null}}],"usage":{}}})",
          spec_.id, spec_.created, model, json_escape(text_), finish_reason_name(), stop_reason_json(), usage_json());
    }
    // A malformed-fault non-streaming response is cut in the middle of its JSON.
    if (spec_.faults.malformed_after != 0) body.resize(body.size() / 2);
    out += body;
    return {PullStatus::kEnd, 0};
  }

  void cancel_engine() {
    if (engine_done_ || engine_request_ == 0) return;
    engine_done_ = true;
    bool finished = false;
    {
      std::lock_guard lock(shared_->mutex);
      finished = shared_->finished;
      shared_->finished = true;  // drop any event still in flight
    }
    if (finished) return;
    if (scheduled_) {
      state_.fixed->release(false);
    } else {
      state_.engine->cancel(engine_request_);
    }
  }

  ServeState& state_;
  std::shared_ptr<StreamShared> shared_;
  StreamSpec spec_;
  std::string head_;
  std::string prefix_;
  std::string suffix_;
  uint64_t engine_request_ = 0;
  bool engine_done_ = false;
  // Fixed schedule (see produce_due).
  bool scheduled_ = false;
  bool first_token_taken_ = false;  // the stream's first token's lateness is recorded
  FixedScheduleEngine::Schedule schedule_;
  int32_t produced_ = 0;
  bool ended_ = false;
  std::array<uint32_t, kLatenessBuckets> lateness_counts_{};
  int64_t lateness_sum_ns_ = 0;
  // Events taken from the shared queue, not yet rendered.
  std::vector<Run> backlog_;
  size_t backlog_head_ = 0;
  bool finished_ = false;
  sim::FinishReason finish_ = sim::FinishReason::kNone;
  int32_t prompt_tokens_ = 0;
  int32_t cached_tokens_ = 0;
  int32_t completion_tokens_ = 0;
  int32_t events_sent_ = 0;
  int32_t tokens_sent_ = 0;  // tokens of the events sent (fault positions count tokens)
  size_t token_cursor_ = 0;
  bool role_sent_ = false;
  int64_t stall_until_ns_ = 0;
  bool stall_done_ = false;
  bool malformed_done_ = false;
  // Stop strings.
  std::string tail_;
  size_t max_stop_bytes_ = 0;
  bool stopped_ = false;
  std::string stop_reason_json_;
  int32_t generated_ = 0;  // tokens taken so far (for min_tokens)
  // Non-streaming text.
  std::string text_;
};

// --- handlers ----------------------------------------------------------------------------------

class Router {
 public:
  explicit Router(ServeState& state) : state_(state) {}

  ServerResponse handle(http::ServerRequest& request, http::RequestContext& context) {
    const std::string& path = request.path;
    const std::string& method = request.method;
    // HEAD is allowed wherever GET is (RFC 9110: a server supports HEAD); the HTTP layer sends
    // the head alone.
    auto allow = [&](std::initializer_list<std::string_view> methods) {
      for (auto allowed : methods) {
        if (method == allowed || (allowed == "GET" && method == "HEAD")) return true;
      }
      return false;
    };
    auto not_allowed = [&](std::string_view allowed) {
      ServerResponse response = error_response(
          405, fmt::format("method {} is not allowed for {} (allowed: {})", method, path, allowed), "BadRequestError");
      response.headers.push_back({"allow", std::string(allowed)});
      return response;
    };
    if (path == "/v1/completions" || path == "/v1/chat/completions") {
      if (!allow({"POST"})) return not_allowed("POST");
      if (auto refused = refuse_media_type(request)) return std::move(*refused);
      return completions(request, context, path == "/v1/chat/completions" ? ApiKind::kChat : ApiKind::kCompletion);
    }
    if (path == "/health") {
      if (!allow({"GET"})) return not_allowed("GET, HEAD");
      if (!state_.faults.health_ready(steady_clock_instance().now_ns())) {
        return error_response(503, "server is starting (injected /health delay)", "ServiceUnavailableError");
      }
      ServerResponse response;
      response.content_type.clear();
      return response;
    }
    if (path == "/v1/models") {
      if (!allow({"GET"})) return not_allowed("GET, HEAD");
      return models();
    }
    if (path == "/metrics") {
      if (!allow({"GET"})) return not_allowed("GET, HEAD");
      ServerResponse response;
      response.content_type = "text/plain; version=0.0.4; charset=utf-8";
      response.body = state_.metrics.render(state_.engine->metrics(), state_.options.model_name);
      return response;
    }
    if (path == "/tokenize" || path == "/detokenize") {
      if (!allow({"POST"})) return not_allowed("POST");
      if (auto refused = refuse_media_type(request)) return std::move(*refused);
      return path == "/tokenize" ? tokenize(request, context) : detokenize(request);
    }
    if (path == "/start_profile" || path == "/stop_profile") {
      // Not HEAD: a HEAD must not open or close a profiling window.
      if (method != "POST" && method != "GET") return not_allowed("POST, GET");
      return profile(path == "/start_profile");
    }
    if (path == "/version") {
      if (!allow({"GET"})) return not_allowed("GET, HEAD");
      return json_response(200, R"({"version":"ixbench-sim"})");
    }
    return error_response(404, fmt::format("no route for {} {}", method, path), "NotFoundError");
  }

 private:
  // One card per served name, as vLLM lists each --served-model-name.
  ServerResponse models() {
    const std::string root = json_escape(state_.options.model_name);
    const auto created = static_cast<int64_t>(std::time(nullptr));
    std::string body = R"({"object":"list","data":[)";
    auto card = [&](const std::string& name) {
      if (body.back() == '}') body += ',';
      body += fmt::format(R"({{"id":"{}","object":"model","created":{},"owned_by":"ixbench",)"
                          R"("root":"{}","parent":null,"max_model_len":{},"permission":[]}})",
                          json_escape(name), created, root, state_.engine->max_model_len());
    };
    card(state_.options.model_name);
    for (const auto& alias : state_.options.model_aliases) card(alias);
    body += "]}";
    return json_response(200, std::move(body));
  }

  static ApiError unknown_model(const std::string& name) {
    return ApiError{404, "NotFoundError", fmt::format("The model `{}` does not exist.", name), "model"};
  }

  bool serves_model(const std::string& name) const {
    if (name == state_.options.model_name) return true;
    const auto& aliases = state_.options.model_aliases;
    return std::find(aliases.begin(), aliases.end(), name) != aliases.end();
  }

  // vLLM's validate_json_request: a body declared as anything but JSON is refused. A request
  // without Content-Type is read as JSON (curl users often leave it out).
  static std::optional<ServerResponse> refuse_media_type(const http::ServerRequest& request) {
    const std::string* content_type = request.header("content-type");
    if (content_type == nullptr) return std::nullopt;
    std::string media(std::string_view(*content_type).substr(0, content_type->find(';')));
    while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.pop_back();
    while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.erase(0, 1);
    for (char& c : media) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (media == "application/json") return std::nullopt;
    return error_response(415,
                          fmt::format("Unsupported Media Type: Only 'application/json' is allowed (the request's "
                                      "Content-Type is '{}'; send 'Content-Type: application/json')",
                                      *content_type),
                          "UnsupportedMediaTypeError");
  }

  ServerResponse profile(bool start) {
    int64_t now = steady_clock_instance().now_ns();
    std::lock_guard lock(state_.profile_mutex);
    if (start) {
      state_.metrics.count_profile_start();
      state_.profile_started_ns = now;
      log::info("profiling window started");
    } else {
      state_.metrics.count_profile_stop();
      if (state_.profile_started_ns != 0) {
        log::info("profiling window stopped after {:.3f} s",
                  static_cast<double>(now - state_.profile_started_ns) / 1e9);
      } else {
        log::info("/stop_profile without an open profiling window");
      }
      state_.profile_started_ns = 0;
    }
    ServerResponse response;
    response.content_type.clear();
    return response;
  }

  // Every id must be in the tokenizer's vocabulary when one is loaded (vLLM: "Token id ... is out
  // of vocabulary").
  std::optional<ApiError> check_vocabulary(const std::vector<int32_t>& ids, std::string_view field) const {
    auto vocab = state_.codec->vocab_size();
    if (!vocab) return std::nullopt;
    for (int32_t id : ids) {
      if (id >= *vocab) {
        return ApiError{400, "BadRequestError",
                        fmt::format("Token id {} is out of vocabulary: the served model's tokenizer has ids 0..{} "
                                    "(field '{}')",
                                    id, *vocab - 1, field),
                        std::string(field)};
      }
    }
    return std::nullopt;
  }

  // Token ids of a prompt: given ids as they are (each must be in the tokenizer's vocabulary when
  // one is loaded), text and chat messages through the codec.
  std::expected<std::vector<int32_t>, ApiError> prompt_ids(const std::optional<std::string>& text,
                                                           const std::optional<std::vector<int32_t>>& ids,
                                                           const std::vector<ChatTurn>& messages, bool chat,
                                                           bool add_special_tokens,
                                                           bool add_generation_prompt = true) const {
    std::vector<int32_t> out;
    if (chat) {
      auto rendered = state_.codec->render_chat(messages, add_generation_prompt);
      if (!rendered) return std::unexpected(ApiError{400, "BadRequestError", rendered.error().message(), "messages"});
      state_.codec->encode(*rendered, add_special_tokens, out);
    } else if (ids) {
      if (auto refused = check_vocabulary(*ids, "prompt")) return std::unexpected(std::move(*refused));
      out = *ids;
    } else if (text) {
      state_.codec->encode(*text, add_special_tokens, out);
    }
    return out;
  }

  // /tokenize's answer, all of it off the loop for a big body (see off_loop).
  std::expected<std::string, ApiError> tokenize_body(std::string_view body) const {
    auto parsed = parse_tokenize_request(body);
    if (!parsed) return std::unexpected(std::move(parsed.error()));
    if (parsed->model && !serves_model(*parsed->model)) return std::unexpected(unknown_model(*parsed->model));
    if (auto refused = check_prompt_size(parsed->prompt_text, parsed->messages, parsed->is_chat)) {
      return std::unexpected(std::move(*refused));
    }
    auto ids = prompt_ids(parsed->prompt_text, parsed->prompt_ids, parsed->messages, parsed->is_chat,
                          parsed->add_special_tokens, parsed->add_generation_prompt);
    if (!ids) return std::unexpected(std::move(ids.error()));
    // vLLM's TokenizeResponse: count, max_model_len, tokens, token_strs (null unless asked for).
    std::string token_strs = "null";
    if (parsed->return_token_strs) {
      if (!state_.codec->vocab_size()) return std::unexpected(no_vocabulary("return_token_strs"));
      token_strs = "[";
      for (size_t index = 0; index < ids->size(); ++index) {
        if (index > 0) token_strs += ',';
        token_strs += '"' + json_escape(state_.codec->token_string((*ids)[index]).value_or("")) + '"';
      }
      token_strs += ']';
    }
    return fmt::format(R"({{"count":{},"max_model_len":{},"tokens":[{}],"token_strs":{}}})", ids->size(),
                       state_.engine->max_model_len(), fmt::join(*ids, ","), token_strs);
  }

  ServerResponse tokenize(http::ServerRequest& request, http::RequestContext& context) {
    return off_loop<std::string>(
        request, context, [this](std::string_view body) { return tokenize_body(body); },
        [](std::string& body, http::RequestContext&) { return json_response(200, std::move(body)); });
  }

  // The approximate codec has ids but no vocabulary to turn them back into text.
  static ApiError no_vocabulary(std::string_view what) {
    return ApiError{501, "NotImplementedError",
                    fmt::format("{} needs the served model's tokenizer, and this server counts tokens "
                                "approximately (no tokenizer); start ixbench sim serve with --tokenizer",
                                what),
                    ""};
  }

  // vLLM's /detokenize: {"prompt": tokenizer.decode(tokens)}, special tokens kept.
  ServerResponse detokenize(const http::ServerRequest& request) {
    auto parsed = parse_detokenize_request(request.body);
    if (!parsed) return error_response(parsed.error());
    if (parsed->model && !serves_model(*parsed->model)) return error_response(unknown_model(*parsed->model));
    if (!state_.codec->vocab_size()) return error_response(no_vocabulary("/detokenize"));
    if (auto refused = check_vocabulary(parsed->tokens, "tokens")) return error_response(*refused);
    auto text = state_.codec->decode(parsed->tokens);
    if (!text) return error_response(500, text.error().message(), "InternalServerError");
    return json_response(200, fmt::format(R"({{"prompt":"{}"}})", json_escape(*text)));
  }

  // Runs `work` on the request's body (parsing, tokenizing) and answers with `then` (on the loop)
  // or with work's error. A body of at most kInlineBodyBytes is worked on here, on the loop; a
  // bigger one on a prompt worker, the answer deferred (503 when the workers' queue is full).
  template <typename T, typename Work, typename Then>
  ServerResponse off_loop(http::ServerRequest& request, http::RequestContext& context, Work work, Then then) {
    if (request.body.size() <= kInlineBodyBytes) {
      auto done = work(std::string_view(request.body));
      return done ? then(*done, context) : error_response(done.error());
    }
    const size_t bytes = request.body.size();
    auto responder = context.defer();
    auto job = [responder, work, then, body = std::move(request.body)]() mutable {
      if (responder->abandoned()) return;
      auto done = std::make_shared<std::expected<T, ApiError>>(run_guarded<T>(work, body));
      body = std::string();
      responder->respond([done, then](http::RequestContext& loop_context) {
        return *done ? then(**done, loop_context) : error_response(done->error());
      });
    };
    if (!state_.workers.try_submit(bytes, std::move(job))) return workers_busy(bytes);
    return ServerResponse::later();
  }

  // A worker's job must answer even when the work throws (bad_alloc on a huge prompt).
  template <typename T, typename Work>
  static std::expected<T, ApiError> run_guarded(Work& work, const std::string& body) {
    try {
      return work(std::string_view(body));
    } catch (const std::exception& e) {
      return std::unexpected(ApiError{500, "InternalServerError", std::string("internal error: ") + e.what(), ""});
    }
  }

  ServerResponse workers_busy(size_t bytes) const {
    ServerResponse response = error_response(
        503,
        fmt::format("the server is busy tokenizing other prompts: {} bytes are waiting, and this request's {} bytes "
                    "would pass the queue's limit of {} bytes; retry later",
                    state_.workers.queued_bytes(), bytes, state_.workers.max_queued_bytes()),
        "ServiceUnavailableError");
    response.headers.push_back({"retry-after", "1"});
    return response;
  }

  // 413 for a prompt text longer than --max-prompt-bytes (chat: the messages' roles and contents),
  // before any tokenizing.
  std::optional<ApiError> check_prompt_size(const std::optional<std::string>& text,
                                            const std::vector<ChatTurn>& messages, bool chat) const {
    size_t bytes = text ? text->size() : 0;
    if (chat) {
      for (const auto& turn : messages) bytes += turn.role.size() + turn.content.size();
    }
    const auto limit = static_cast<size_t>(state_.options.max_prompt_bytes);
    if (bytes <= limit) return std::nullopt;
    return ApiError{413, "BadRequestError",
                    fmt::format("The prompt is {} bytes, more than this server's limit of {} bytes "
                                "(--max-prompt-bytes of ixbench sim serve). Please send a shorter prompt.",
                                bytes, limit),
                    chat ? "messages" : "prompt"};
  }

  // A completion request parsed, with its prompt's token ids (truncated as asked), and in GSM8K
  // answer mode the script of its question (null: no known question).
  struct Prepared {
    OpenAiRequest request;
    std::vector<int32_t> ids;
    const AnswerScript* script = nullptr;
  };

  std::expected<Prepared, ApiError> prepare_completion(std::string_view body, ApiKind kind) const {
    auto parsed = parse_openai_request(body, kind);
    if (!parsed) return std::unexpected(std::move(parsed.error()));
    if (parsed->model && !serves_model(*parsed->model)) return std::unexpected(unknown_model(*parsed->model));
    const bool chat = kind == ApiKind::kChat;
    if (auto refused = check_prompt_size(parsed->prompt_text, parsed->messages, chat)) {
      return std::unexpected(std::move(*refused));
    }
    auto ids = prompt_ids(parsed->prompt_text, parsed->prompt_ids, parsed->messages, chat, parsed->add_special_tokens);
    if (!ids) return std::unexpected(std::move(ids.error()));
    if (auto refused = truncate_prompt(*parsed, *ids)) return std::unexpected(std::move(*refused));
    if (ids->empty()) {
      return std::unexpected(ApiError{400, "BadRequestError", "The prompt cannot be empty: it encodes to no tokens",
                                      chat ? "messages" : "prompt"});
    }
    const AnswerScript* script = state_.gsm8k ? state_.gsm8k->find(*parsed) : nullptr;
    return Prepared{std::move(*parsed), std::move(*ids), script};
  }

  // vLLM's truncate_prompt_tokens: k keeps the last k prompt tokens; -1 means max_model_len.
  std::optional<ApiError> truncate_prompt(const OpenAiRequest& parsed, std::vector<int32_t>& ids) const {
    if (!parsed.truncate_prompt_tokens) return std::nullopt;
    const int64_t max_model_len = state_.engine->max_model_len();
    const int64_t keep = *parsed.truncate_prompt_tokens == -1 ? max_model_len : *parsed.truncate_prompt_tokens;
    if (keep > max_model_len) {
      return ApiError{400, "BadRequestError",
                      fmt::format("truncate_prompt_tokens value ({}) is greater than max_model_len ({}). "
                                  "Please, select a smaller truncation size.",
                                  keep, max_model_len),
                      "truncate_prompt_tokens"};
    }
    if (static_cast<int64_t>(ids.size()) > keep) ids.erase(ids.begin(), ids.end() - keep);
    return std::nullopt;
  }

  // The request's max_tokens (its default applied), checked against the context window and
  // min_tokens as vLLM checks them.
  std::expected<int64_t, ApiError> output_budget(const OpenAiRequest& parsed, int64_t prompt_len) const {
    const int64_t max_model_len = state_.engine->max_model_len();
    if (prompt_len >= max_model_len) {
      return std::unexpected(
          ApiError{400, "BadRequestError",
                   fmt::format("This model's maximum context length is {} tokens. However, your request has "
                               "{} input tokens. Please reduce the length of the input messages.",
                               max_model_len, prompt_len),
                   ""});
    }
    const int64_t max_tokens =
        parsed.max_tokens.value_or(parsed.kind == ApiKind::kChat ? max_model_len - prompt_len : 16);
    if (parsed.min_tokens > max_tokens) {
      return std::unexpected(ApiError{
          400, "BadRequestError",
          fmt::format("min_tokens must be less than or equal to max_tokens={}, got {}.", max_tokens, parsed.min_tokens),
          "min_tokens"});
    }
    // Compared without the sum: max_tokens may be any positive int64 (the sum overflowed, the
    // check passed and the engine refused max_tokens -1 with a message about min_tokens).
    if (max_tokens > max_model_len - prompt_len) {
      return std::unexpected(ApiError{
          400, "BadRequestError",
          fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens ({} in "
                      "the messages, {} in the completion). Please reduce the length of the messages or completion.",
                      max_model_len, static_cast<uint64_t>(prompt_len) + static_cast<uint64_t>(max_tokens), prompt_len,
                      max_tokens),
          ""});
    }
    return max_tokens;
  }

  // The fault plan of one request; a short fault is an early natural stop, which min_tokens rules
  // out before min_tokens tokens (with min_tokens = max_tokens there is no shorter output to give).
  FaultPlan plan_faults(int64_t max_tokens, int64_t min_tokens) {
    FaultPlan plan = state_.faults.plan(static_cast<int32_t>(max_tokens));
    if (plan.short_tokens != 0) {
      plan.short_tokens = std::max(plan.short_tokens, static_cast<int32_t>(min_tokens));
      if (plan.short_tokens >= max_tokens) plan.short_tokens = 0;
    }
    if (plan.any()) state_.metrics.count_fault();
    return plan;
  }

  StreamSpec make_spec(const OpenAiRequest& parsed, const FaultPlan& plan) {
    uint64_t sequence = state_.next_request.fetch_add(1, std::memory_order_relaxed);
    uint64_t mixed = fnv1a64(fmt::format("{}:{}", state_.options.seed, sequence));
    StreamSpec spec;
    spec.kind = parsed.kind;
    spec.stream = parsed.stream;
    spec.include_usage = parsed.include_usage;
    spec.continuous_usage = parsed.continuous_usage;
    spec.stop = parsed.stop;
    spec.stop_token_ids = parsed.stop_token_ids;
    spec.include_stop_str = parsed.include_stop_str_in_output;
    spec.min_tokens = static_cast<int32_t>(parsed.min_tokens);
    spec.faults = plan;
    spec.id = fmt::format("{}-{:016x}{:016x}", parsed.kind == ApiKind::kChat ? "chatcmpl" : "cmpl", mixed, sequence);
    spec.created = static_cast<int64_t>(std::time(nullptr));
    const auto& starts = state_.codec->word_starts();
    spec.token_offset = starts[static_cast<size_t>(mixed % starts.size())];
    return spec;
  }

  ServerResponse completions(http::ServerRequest& request, http::RequestContext& context, ApiKind kind) {
    const int64_t received_ns = request.received_ns;
    const int64_t arrived_ns = request.arrived_ns;
    return off_loop<Prepared>(
        request, context, [this, kind](std::string_view body) { return prepare_completion(body, kind); },
        [this, received_ns, arrived_ns](Prepared& prepared, http::RequestContext& loop_context) {
          return schedule(prepared, received_ns, arrived_ns, loop_context);
        });
  }

  // On the loop: the request's budget and faults, then the engine (or the fixed schedule) and
  // the response that streams its tokens.
  ServerResponse schedule(Prepared& prepared, int64_t received_ns, int64_t arrived_ns, http::RequestContext& context) {
    const OpenAiRequest& parsed = prepared.request;
    auto budget = output_budget(parsed, static_cast<int64_t>(prepared.ids.size()));
    if (!budget) return error_response(budget.error());
    const int64_t max_tokens = *budget;
    FaultPlan plan = plan_faults(max_tokens, parsed.min_tokens);
    if (plan.error_status != 0) {
      return error_response(plan.error_status,
                            fmt::format("injected fault: HTTP {} (--fault-error-rate)", plan.error_status),
                            error_type_for(plan.error_status));
    }
    auto shared = std::make_shared<StreamShared>(state_.metrics, received_ns);
    // A fixed-schedule stream is pulled by its own timer on this loop; only engine threads wake it.
    if (state_.fixed == nullptr) shared->waker = context.waker();
    StreamSpec spec = make_spec(parsed, plan);

    sim::GenerationRequest generation;
    generation.prompt_token_ids = std::move(prepared.ids);
    generation.max_tokens = static_cast<int32_t>(plan.short_tokens != 0 ? plan.short_tokens : max_tokens);
    generation.ignore_eos = parsed.ignore_eos;
    if (!parsed.max_tokens) generation.natural_max_tokens = kDefaultBudgetNaturalMaxTokens;
    if (prepared.script != nullptr) follow_script(*prepared.script, parsed, max_tokens, spec, generation);
    generation.min_tokens = static_cast<int32_t>(std::min<int64_t>(parsed.min_tokens, generation.max_tokens));
    if (parsed.user) generation.session_id = fnv1a64(*parsed.user);
    auto source = std::make_unique<CompletionSource>(state_, shared, std::move(spec));
    if (auto refused = submit(std::move(generation), arrived_ns, shared, *source)) return std::move(*refused);
    count_gsm8k(prepared.script);

    ServerResponse response;
    if (parsed.stream) {
      response.content_type = "text/event-stream; charset=utf-8";
      response.headers.push_back({"cache-control", "no-cache"});
      response.body_mode = http::BodyMode::kChunked;
    } else {
      response.body_mode = http::BodyMode::kBuffered;
    }
    response.source = std::move(source);
    return response;
  }

  // GSM8K answer mode: the request's output is `script`. The engine generates exactly the scripted
  // length (a short fault may cut it further); a runaway ignores the request's stops.
  static void follow_script(const AnswerScript& script, const OpenAiRequest& parsed, int64_t max_tokens,
                            StreamSpec& spec, sim::GenerationRequest& generation) {
    const ScriptedLength length = scripted_length(script, max_tokens, parsed.min_tokens, parsed.ignore_eos);
    spec.script = &script;
    spec.natural_end = length.natural_end;
    if (script.runaway) {
      spec.stop.clear();
      spec.stop_token_ids.clear();
    }
    generation.max_tokens = std::min(generation.max_tokens, length.tokens);
    generation.ignore_eos = true;
    generation.natural_max_tokens = 0;
  }

  void count_gsm8k(const AnswerScript* script) {
    if (!state_.gsm8k) return;
    if (script == nullptr) {
      state_.metrics.count_gsm8k_unmatched();
    } else {
      state_.metrics.count_gsm8k_answered(script->correct, script->runaway);
    }
  }

  // Hands the request to the fixed schedule or the engine; the error response when refused.
  std::optional<ServerResponse> submit(sim::GenerationRequest generation, int64_t arrived_ns,
                                       const std::shared_ptr<StreamShared>& shared, CompletionSource& source) {
    auto engine_error = [](const Error& error) {
      const bool invalid = error.code() == ErrorCode::kInvalidArgument;
      return error_response(invalid ? 400 : 500, error.message(), invalid ? "BadRequestError" : "InternalServerError");
    };
    if (state_.fixed != nullptr) {
      auto admitted = state_.fixed->admit(generation, arrived_ns);
      if (!admitted) return engine_error(admitted.error());
      source.set_schedule(*admitted);
      return std::nullopt;
    }
    auto submitted = state_.engine->submit(std::move(generation),
                                           [shared](const sim::TokenEvent& event) { on_token_event(*shared, event); });
    if (!submitted) return engine_error(submitted.error());
    source.set_engine_request(*submitted);
    return std::nullopt;
  }

  ServeState& state_;
};

// More loop threads than this is a typo (each is a thread with its own event loop).
constexpr int kMaxLoopThreads = 1024;
// Timeouts are turned into nanosecond deadlines: keep them far from int64 overflow (~115 days).
constexpr int64_t kMaxTimeoutMs = 10'000'000'000;
// Larger body or prompt limits are typos: a request is held in memory whole.
constexpr int64_t kMaxLimitBytes = int64_t{1} << 30;

Result<void> validate_limit_flags(const SimServeOptions& options) {
  if (options.tokenize_threads < 0 || options.tokenize_threads > kMaxLoopThreads) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--tokenize-threads must be in [0, {}] (0 = as many as event-loop threads), got {}",
                            kMaxLoopThreads, options.tokenize_threads));
  }
  for (auto [value, flag] : {std::pair{options.max_prompt_bytes, "--max-prompt-bytes"},
                             std::pair{options.max_body_bytes, "--max-body-bytes"}}) {
    if (value < 1 || value > kMaxLimitBytes) {
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("{} must be in [1, {}] (1 GiB), got {}", flag, kMaxLimitBytes, value));
    }
  }
  return {};
}

Result<void> validate_server_flags(const SimServeOptions& options) {
  if (options.threads < 0 || options.threads > kMaxLoopThreads) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("--threads must be in [0, {}] (0 = number of cores), got {}",
                                                         kMaxLoopThreads, options.threads));
  }
  if (options.request_timeout_ms < 1 || options.request_timeout_ms > kMaxTimeoutMs) {
    return fail(ErrorCode::kInvalidArgument, fmt::format("--request-timeout-ms must be in [1, {}], got {}",
                                                         kMaxTimeoutMs, options.request_timeout_ms));
  }
  if (options.idle_timeout_ms < 1 || options.idle_timeout_ms > kMaxTimeoutMs) {
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--idle-timeout-ms must be in [1, {}], got {}", kMaxTimeoutMs, options.idle_timeout_ms));
  }
  return validate_limit_flags(options);
}

}  // namespace

SimServer::SimServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SimServer::~SimServer() {
  stop();
}

Result<std::unique_ptr<SimServer>> SimServer::start(const SimServeOptions& options,
                                                    std::unique_ptr<sim::LiveEngine> engine,
                                                    std::unique_ptr<TextCodec> codec) {
  if (auto valid = validate(options.faults); !valid) return std::unexpected(valid.error());
  if (auto valid = validate_server_flags(options); !valid) return std::unexpected(valid.error());
  if (!engine) return fail(ErrorCode::kInvalidArgument, "sim serve needs an engine");
  if (!codec) codec = make_fallback_codec();
  auto impl = std::make_unique<Impl>();
  const int loop_threads =
      options.threads > 0 ? options.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int worker_threads = options.tokenize_threads > 0 ? options.tokenize_threads : loop_threads;
  impl->state = std::make_unique<ServeState>(options, std::move(engine), std::move(codec), worker_threads);
  if (options.gsm8k) {
    auto key = Gsm8kAnswerKey::load(*options.gsm8k, *impl->state->codec, options.model_name, options.seed);
    if (!key) return std::unexpected(key.error());
    log::info("sim serve: {}", (*key)->description());
    impl->state->gsm8k = std::move(*key);
    impl->state->metrics.enable_gsm8k();
  }
  http::ServerOptions server_options;
  server_options.host = options.host;
  server_options.port = options.port;
  server_options.threads = loop_threads;
  server_options.request_timeout_ms = options.request_timeout_ms;
  server_options.idle_timeout_ms = options.idle_timeout_ms;
  server_options.limits.max_body_bytes = static_cast<size_t>(options.max_body_bytes);
  server_options.limits.body_limit_flag = "--max-body-bytes of ixbench sim serve";
  auto router = std::make_shared<Router>(*impl->state);
  auto server =
      http::HttpServer::start(server_options, [router](http::ServerRequest& request, http::RequestContext& context) {
        return router->handle(request, context);
      });
  if (!server) return std::unexpected(server.error());
  impl->http = std::move(*server);
  return std::unique_ptr<SimServer>(new SimServer(std::move(impl)));
}

uint16_t SimServer::port() const {
  return impl_->http ? impl_->http->port() : 0;
}

size_t SimServer::connection_count() const {
  return impl_->http ? impl_->http->connection_count() : 0;
}

void SimServer::stop() {
  // The HTTP side goes first: closing connections cancels their engine requests. Then the prompt
  // workers (a running tokenization finishes): their jobs call into the handlers, which go with
  // the HTTP server.
  if (impl_->http) impl_->http->stop();
  if (impl_->state) impl_->state->workers.stop();
}

Result<void> run_until_signalled(const SimServeOptions& options, std::unique_ptr<sim::LiveEngine> engine,
                                 std::unique_ptr<TextCodec> codec) {
  // SIGINT, SIGTERM and SIGHUP stop the server (the first; a third kills), as every command.
  StopSignals stop_signals;
  signal(SIGPIPE, SIG_IGN);
  int64_t open_files = http::raise_open_file_limit();

  std::string codec_description = codec ? codec->description() : make_fallback_codec()->description();
  auto server = SimServer::start(options, std::move(engine), std::move(codec));
  if (!server) return std::unexpected(server.error());
  // An IPv6 host in brackets ("http://[::1]:8000"), as a URL must have it.
  const http::Url url{.host = options.host, .port = (*server)->port(), .path = {}};
  std::printf("listening on %s\n", url.origin().c_str());
  std::fflush(stdout);
  log::info("sim serve: model '{}', {}; {}; open-file limit {}", printable(options.model_name),
            printable(options.engine_description), printable(codec_description), open_files);
  const int received = StopSignals::wait();
  log::info("sim serve: signal {} received, stopping", received);
  (*server)->stop();
  return {};
}

}  // namespace ix::serve
