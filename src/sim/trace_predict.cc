#include "sim/trace_predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "common/rng.h"
#include "sim/kv_cache.h"

namespace ix::sim {
namespace {

using workload::HistoryMessage;

uint64_t splitmix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

int32_t token_id(uint64_t key, int64_t position) {
  return static_cast<int32_t>(splitmix(key ^ splitmix(static_cast<uint64_t>(position))) & 0x7fffffffU);
}

// The token ids the engine sees for one request: each message framed by its role's markers, its
// pieces' ids, the cache-bust marker at the start of the first message, and the generation
// prompt. Reuses `ids`.
void prompt_ids(const workload::ReplaySend& send, std::vector<int32_t>& ids) {
  ids.clear();
  const auto framing = [&ids](uint64_t role, int32_t count) {
    for (int32_t i = 0; i < count; ++i) ids.push_back(token_id(0x7e3a11c0ULL + role, i));
  };
  const uint64_t bust_key = send.cache_bust.empty() ? 0 : fnv1a64(send.cache_bust);
  for (size_t m = 0; m < send.messages->size(); ++m) {
    const HistoryMessage& message = (*send.messages)[m];
    framing(static_cast<uint64_t>(message.role), kTemplateTokensPerMessage);
    if (m == 0 && bust_key != 0)
      for (int32_t i = 0; i < kCacheBustTokens; ++i) ids.push_back(token_id(bust_key, i));
    for (const auto& piece : message.pieces)
      for (int64_t i = 0; i < piece.tokens; ++i) ids.push_back(token_id(piece.key, i));
  }
  framing(static_cast<uint64_t>(HistoryMessage::Role::kAssistant) + 8, kTemplateTokensPerPrompt);
}

// A timer of the virtual clock; `seq` keeps equal times in the order they were set.
struct Timer {
  int64_t due_ns;
  uint64_t seq;
  std::function<void()> fn;
};
struct TimerLater {
  bool operator()(const Timer& a, const Timer& b) const {
    return a.due_ns != b.due_ns ? a.due_ns > b.due_ns : a.seq > b.seq;
  }
};

// The replay's wire in virtual time: requests go straight into the engine core; the clock jumps
// from event to event (the core's next step or arrival, or the schedule's next timer).
class VirtualTransport final : public workload::ReplayTransport {
 public:
  explicit VirtualTransport(EngineCore& core) : core_(core), block_size_(core.engine().config.block_size) {}
  void attach(workload::ReplayScheduler* scheduler) { scheduler_ = scheduler; }

  int64_t now_ns() const override { return now_; }
  void call_at(int64_t due_ns, std::function<void()> fn) override {
    timers_.push_back({std::max(due_ns, now_), next_seq_++, std::move(fn)});
    std::push_heap(timers_.begin(), timers_.end(), TimerLater{});
  }
  void post(std::function<void()> fn) override { call_at(now_, std::move(fn)); }
  // Deferred to a timer: the core may be emitting events (a sink must not cancel).
  void cancel_all() override {
    post([this] { cancel_in_flight(); });
  }
  void send(const workload::ReplaySend& send) override;

  // Runs until the scheduler is finished. kInternal when nothing is pending but it is not.
  Result<void> run(const std::atomic<bool>* interrupt);

 private:
  struct InFlight {
    uint64_t tag = 0;
    workload::ReplayReply reply;
  };
  void on_event(const TokenEvent& event);
  void cancel_in_flight();
  void run_next_timer();

  EngineCore& core_;
  int32_t block_size_;
  workload::ReplayScheduler* scheduler_ = nullptr;
  int64_t now_ = 0;
  uint64_t next_seq_ = 0;
  std::vector<Timer> timers_;                         // a heap (TimerLater)
  std::unordered_map<uint64_t, InFlight> in_flight_;  // by core request id
  std::vector<int32_t> ids_;
};

void VirtualTransport::send(const workload::ReplaySend& send) {
  InFlight request{.tag = send.tag};
  metrics::RequestRecord& rec = request.reply.rec;
  rec.warmup = send.warmup;
  rec.scheduled_ns = send.scheduled_ns;
  rec.prompt_len = send.turn->in;
  rec.expected_output_len = send.max_tokens;
  rec.send_ns = now_;
  prompt_ids(send, ids_);
  CoreRequest core_request;
  core_request.prompt_tokens = static_cast<int32_t>(ids_.size());
  core_request.block_hashes = prompt_block_hashes(ids_, block_size_);
  core_request.max_tokens = static_cast<int32_t>(send.max_tokens);
  core_request.output_tokens = core_request.max_tokens;
  core_request.arrival_ns = now_;
  auto id = core_.submit(std::move(core_request));
  if (!id) {
    // The front's answer to a request the engine refuses: 400, with the engine's reason.
    rec.error_kind = metrics::ErrorKind::kHttpStatus;
    rec.http_status = 400;
    rec.error_message = id.error().message();
    rec.end_ns = now_;
    post([this, request = std::move(request)]() mutable {
      scheduler_->complete(request.tag, std::move(request.reply));
    });
    return;
  }
  in_flight_.emplace(*id, std::move(request));
}

void VirtualTransport::on_event(const TokenEvent& event) {
  now_ = std::max(now_, event.time_ns);
  auto it = in_flight_.find(event.request_id);
  if (it == in_flight_.end()) return;
  workload::ReplayReply& reply = it->second.reply;
  metrics::RequestRecord& rec = reply.rec;
  if (rec.first_token_ns == 0) rec.first_token_ns = rec.first_byte_ns = event.time_ns;
  rec.content_event_ns.push_back(event.time_ns);
  rec.tokens_per_event.push_back(event.new_tokens);
  if (event.finish == FinishReason::kNone) return;
  rec.success = event.finish != FinishReason::kAbort;
  rec.end_ns = event.time_ns;
  rec.output_len = rec.server_output_tokens = event.total_output_tokens;
  reply.server_prompt_tokens = event.prompt_tokens;
  const uint64_t tag = it->second.tag;
  workload::ReplayReply done = std::move(reply);
  in_flight_.erase(it);
  scheduler_->complete(tag, std::move(done));
}

void VirtualTransport::cancel_in_flight() {
  auto cancelled = std::move(in_flight_);
  in_flight_.clear();
  std::vector<std::pair<uint64_t, InFlight>> ordered(std::make_move_iterator(cancelled.begin()),
                                                     std::make_move_iterator(cancelled.end()));
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [id, request] : ordered) {
    core_.cancel(id);
    metrics::RequestRecord& rec = request.reply.rec;
    rec.success = false;
    rec.error_kind = metrics::ErrorKind::kCancelled;
    rec.error_message = "cancelled";
    rec.end_ns = now_;
    scheduler_->complete(request.tag, std::move(request.reply));
  }
}

void VirtualTransport::run_next_timer() {
  std::pop_heap(timers_.begin(), timers_.end(), TimerLater{});
  Timer timer = std::move(timers_.back());
  timers_.pop_back();
  now_ = std::max(now_, timer.due_ns);
  timer.fn();
}

Result<void> VirtualTransport::run(const std::atomic<bool>* interrupt) {
  const auto sink = [this](const TokenEvent& event) { on_event(event); };
  bool interrupted = false;
  scheduler_->start();
  while (!scheduler_->finished()) {
    if (interrupt && !interrupted && interrupt->load(std::memory_order_relaxed)) {
      interrupted = true;
      scheduler_->stop("interrupted by a signal before the run completed");
      continue;
    }
    const int64_t timer_ns = timers_.empty() ? kNever : timers_.front().due_ns;
    const int64_t core_ns = core_.next_event_ns();
    if (timer_ns == kNever && core_ns == kNever)
      return fail(ErrorCode::kInternal, fmt::format("the virtual replay stalled at t = {:.3f} s with nothing pending "
                                                    "({} requests in flight)",
                                                    now_ / 1e9, in_flight_.size()));
    if (core_ns < timer_ns) {
      core_.run_until(core_ns, sink);
      now_ = std::max(now_, core_ns);
    } else {
      core_.run_until(timer_ns, sink);
      run_next_timer();
    }
  }
  return {};
}

}  // namespace

Result<TracePrediction> predict_trace(const ResolvedEngine& engine, const TracePredictOptions& options) {
  if (!options.trace) return fail(ErrorCode::kInvalidArgument, "sim predict --trace: no trace");
  if (auto error = workload::schedule_options_error(options.schedule)) return fail(ErrorCode::kInvalidArgument, *error);
  if (options.schedule.live_assistant)
    return fail(ErrorCode::kInvalidArgument,
                "--live-assistant-responses needs the server's generated text, which virtual time has none of: "
                "predict with the recorded assistant turns (drop the flag)");
  auto created = EngineCore::create(engine);
  if (!created) return fail(created.error());
  EngineCore& core = **created;
  TracePrediction prediction;
  prediction.num_gpus = total_gpus(engine.config);
  VirtualTransport transport(core);
  workload::ReplayScheduler scheduler(
      options.schedule, *options.trace, transport,
      {.on_record = options.on_record, .on_profile_start = [&] { prediction.at_profile_start = core.metrics(); }});
  transport.attach(&scheduler);
  if (auto ran = transport.run(options.interrupt); !ran) return fail(ran.error());
  prediction.schedule = scheduler.output();
  prediction.end_ns = transport.now_ns();
  prediction.at_end = core.metrics();
  prediction.prefix_cache = {
      .hits = double(prediction.at_end.prefix_cache_hits - prediction.at_profile_start.prefix_cache_hits),
      .queries = double(prediction.at_end.prefix_cache_queries - prediction.at_profile_start.prefix_cache_queries)};
  return prediction;
}

}  // namespace ix::sim
