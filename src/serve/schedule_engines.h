// LiveEngines that need no cost model, for `ixbench sim serve --fixed-ttft-ms/--fixed-itl-ms` and
// `--no-delay`: exact, predictable schedules to test clients against and to measure the HTTP
// front's own capacity.
//
// FixedScheduleEngine: the first token of a request is produced `ttft_ms` after it is admitted
// (admit(): after the request reached the server's socket), then one token every `itl_ms`, always `max_tokens` tokens
// (finish kLength). Event times are on an absolute schedule (admit + ttft + i·itl): a late wake-up delivers the overdue
// events at once but never shifts later ones (no drift), and no event is delivered before its time. Two ways in:
//   - admit() (what the HTTP front uses): the engine only hands out the request's schedule and
//     keeps the counters; the caller produces the events itself on its own thread, at their due
//     times (SimServer: on the connection's event loop, from that loop's timers). No engine thread
//     and no cross-thread hand-off per token, so delivery scales with the front's loop threads.
//   - submit() (the LiveEngine contract): one engine thread, started on the first submit(),
//     delivers every request's events to its sink; it wakes at most once per tick (200 µs by
//     default) and then delivers every event due by then, so an event is at most one tick (plus
//     scheduling latency) late. Per event O(1) (two FIFO queues: every request has the same ttft
//     and itl, so both queues stay sorted by due time).
//
// NoDelayEngine: every token of a request is produced at submit() time: all events are delivered
// inline, from inside submit(), before it returns (the one deviation from LiveEngine's "sinks run
// on the engine's thread"). The HTTP front then sends them as fast as the peer reads them; this is
// the capacity mode.
//
// Neither engine models prefix caching, KV usage or speculative decoding: those metrics stay 0.
// Both reject prompts that with max_tokens exceed max_model_len (kInvalidArgument).
//
// Thread-safety: all methods may be called from any thread. Sinks must not call back into the
// engine (FixedScheduleEngine runs them under its lock, which is what makes cancel() final: after
// cancel() returns, no event of that request is delivered).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/clock.h"
#include "sim/live_engine.h"

namespace ix::serve {

class FixedScheduleEngine final : public sim::LiveEngine {
 public:
  // Delivery granularity of submit(): the engine thread wakes at most once per tick and then delivers every
  // event due by then, so an event is delivered at most one tick (plus scheduling latency) after
  // its scheduled time, and never before it. Event times (time_ns) are the exact schedule.
  static constexpr int64_t kDefaultTickNs = 200'000;

  // `clock` must be a steady clock (the engine sleeps on std::chrono::steady_clock) and outlive
  // the engine.
  FixedScheduleEngine(double ttft_ms, double itl_ms, int32_t max_model_len, const Clock& clock,
                      int64_t tick_ns = kDefaultTickNs);
  ~FixedScheduleEngine() override;

  Result<uint64_t> submit(sim::GenerationRequest request, Sink sink) override;
  void cancel(uint64_t request_id) override;
  sim::EngineMetrics metrics() const override;
  int32_t max_model_len() const override { return max_model_len_; }

  // A request admitted for caller-side delivery: token i (0-based) is due at
  // first_due_ns + i·itl_ns (steady-clock ns), i < max_tokens; its schedule started (it was
  // scheduled, in vLLM's terms) at start_ns.
  struct Schedule {
    uint64_t id = 0;
    int64_t start_ns = 0;
    int64_t first_due_ns = 0;
    int64_t itl_ns = 0;
    int32_t max_tokens = 0;
    int32_t prompt_tokens = 0;
  };
  // Checks the request like submit() and starts its schedule at `arrived_ns` (when the request
  // reached the server: the first token is due ttft after it; a time after now counts as now),
  // so the time the front took to read, parse and tokenize it is inside the TTFT, not added to
  // it. Counts it as running. The caller produces the events (never before their due time),
  // reports them with count_generated(), and ends the request exactly once with release().
  // Lock-free.
  Result<Schedule> admit(const sim::GenerationRequest& request, int64_t arrived_ns);
  // `tokens` tokens of admitted requests were produced (one relaxed add on a per-thread slot).
  void count_generated(int32_t tokens);
  // An admitted request ended: `completed` (all max_tokens produced) or cancelled.
  void release(bool completed);
  // Whether submit() has started the engine thread (admit() never does).
  bool delivery_thread_started() const;

 private:
  struct Active {
    Sink sink;
    int64_t submit_ns = 0;
    int32_t max_tokens = 0;
    int32_t emitted = 0;
    int32_t prompt_tokens = 0;
    int64_t last_event_ns = 0;  // 0 before its first token
  };
  struct Due {
    int64_t due_ns;
    uint64_t id;
  };
  void run();

  const int64_t ttft_ns_;
  const int64_t itl_ns_;
  const int64_t tick_ns_;
  const int32_t max_model_len_;
  const Clock& clock_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int64_t last_wake_ns_ = 0;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Active> active_;
  std::deque<Due> first_queue_;   // waiting for their first token, sorted by due time
  std::deque<Due> decode_queue_;  // waiting for their next token, sorted by due time
  sim::EngineMetrics counters_;
  std::thread thread_;  // started by the first submit()
  // Counters of admitted requests (no lock: the front's loop threads update them). Generated
  // tokens go to one of several cache-line-sized slots chosen by thread, so loops do not contend.
  struct alignas(64) Slot {
    std::atomic<int64_t> value{0};
  };
  static constexpr size_t kSlots = 16;
  std::array<Slot, kSlots> admitted_generated_{};
  std::atomic<uint64_t> admitted_next_id_{1ull << 63};
  std::atomic<int64_t> admitted_prompt_tokens_{0};
  std::atomic<int64_t> admitted_running_{0};
  std::atomic<int64_t> admitted_success_{0};
};

class NoDelayEngine final : public sim::LiveEngine {
 public:
  NoDelayEngine(int32_t max_model_len, const Clock& clock);

  Result<uint64_t> submit(sim::GenerationRequest request, Sink sink) override;
  // Nothing is ever pending after submit() returns; cancel() only exists for the interface.
  void cancel(uint64_t request_id) override;
  sim::EngineMetrics metrics() const override;
  int32_t max_model_len() const override { return max_model_len_; }

 private:
  const int32_t max_model_len_;
  const Clock& clock_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<int64_t> prompt_tokens_{0};
  std::atomic<int64_t> generation_tokens_{0};
  std::atomic<int64_t> requests_{0};
};

// The check both engines share (and the front applies before submit): prompt + max_tokens must
// fit in max_model_len. The message follows vLLM's.
Result<void> check_context_length(int32_t prompt_tokens, int32_t max_tokens, int32_t max_model_len);

}  // namespace ix::serve
