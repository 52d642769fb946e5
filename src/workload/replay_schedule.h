// When each request of an agentic trace replay goes (SPEC §6), on any clock: the schedule of
// `ixbench bench replay` (HTTP, wall clock) and of `ixbench sim predict --trace` (the engine
// simulator, virtual time). What a request holds comes from replay_plan.h (streams, dependencies,
// chat history from hash ids); how it travels is the transport's business.
//
// Lanes (the default, aiperf's agentic replay): `concurrency` lanes each play one session tree at
// a time; a finished tree is replaced by the next from a seeded shuffle of the trace (wrapping;
// `single_pass`: each tree once, from its first turn, in file order for Mooncake). A lane's first
// tree starts at a point t* drawn uniformly in [min_ratio, max_ratio] of its recorded span; the
// turns before t* count as done, and the streams live at t* are primed: one request per live
// stream replaying the turn before t* with its full history and max_tokens 1. When the primers
// have returned, each lane sends `warmup_per_lane` more requests in dependency order without
// delays (max_tokens 1); then, when the warmup has drained (at most `warmup_grace_s`, after which
// what is left is cancelled), profiling starts: each lane's next turns keep their recorded
// spacing, the earliest firing at once. Gaps between turns are replayed (end-to-start); while a
// tree has nothing in flight its pending turns are pulled forward so the next fires at most
// `idle_cap_s` later, and while nothing at all is in flight, at most `system_idle_cap_s` later
// (order and spawn/join kept). Subagent fan-out may put more than `concurrency` requests in
// flight. No request starts after `duration_s`; those in flight then get `grace_s` before they
// are cancelled.
//
// Fixed schedule (Mooncake's open loop): every turn is sent at its recorded time, divided by
// `schedule_speedup`, whatever is in flight; the record keeps the scheduled time, so the result
// reports schedule lag (dispatch - scheduled). No warmup.
//
// Thread-safety: a ReplayScheduler and its transport live on one thread (the transport's), except
// finished() and progress(), which any thread may call.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/replay_result.h"
#include "workload/replay_plan.h"
#include "workload/trace.h"

namespace ix::workload {

enum class ReplayMode { kLanes, kFixedSchedule };

// Profiled requests that must have finished before the error share can stop a run (so the first
// failure of a run does not end it).
inline constexpr int64_t kMinFinishedForAbort = 20;

struct ReplayScheduleOptions {
  ReplayMode mode = ReplayMode::kLanes;
  int64_t concurrency = 1;
  double duration_s = 3600.0;
  double grace_s = 30.0;  // --benchmark-grace-period
  uint64_t seed = 42;
  double start_min_ratio = 0.25;
  double start_max_ratio = 0.75;
  int64_t warmup_per_lane = 10;
  double warmup_grace_s = 1800.0;
  double idle_cap_s = 300.0;
  double system_idle_cap_s = 10.0;
  bool single_pass = false;
  double schedule_speedup = 1.0;
  std::optional<int64_t> max_context_length;  // turns with in + out above it are skipped, counted
  bool live_assistant = false;                // the server's replies become the assistant turns
  bool cache_bust = true;                     // "[rid:...]" before each tree play's first message
  // Stop the run once at least kMinFinishedForAbort profiled requests finished and the failed share
  // exceeds this (aiperf's live --failed-request-threshold); nullopt: never.
  std::optional<double> abort_error_rate;
  // Mixed into the cache-bust marker so two runs of one seed do not share prefixes (the HTTP
  // runner uses the wall clock; virtual time keeps 0 for reproducible predictions).
  uint64_t run_nonce = 0;
};

// One request for the transport to send.
struct ReplaySend {
  uint64_t tag = 0;  // names the request in ReplayScheduler::complete()
  const TraceTurn* turn = nullptr;
  const std::vector<HistoryMessage>* messages = nullptr;  // the turn's chat history
  std::string_view cache_bust;                            // marker before the first message ("" for none)
  const std::vector<std::string>* replies = nullptr;      // live-assistant replies of the stream, else null
  int64_t max_tokens = 1;
  bool warmup = false;
  int64_t scheduled_ns = 0;
  std::string_view correlation_id;       // unique per stream and tree play
  std::string_view root_correlation_id;  // the tree play's root stream ("" when this is the root)
};

// What came back for one request.
struct ReplayReply {
  metrics::RequestRecord rec;
  int64_t server_prompt_tokens = -1;
  std::string text;  // the generated text (kept only in live-assistant mode)
};

// The clock and the wire a scheduler runs on.
class ReplayTransport {
 public:
  virtual ~ReplayTransport() = default;
  virtual int64_t now_ns() const = 0;
  virtual void call_at(int64_t due_ns, std::function<void()> fn) = 0;
  // Runs `fn` soon, after the current callback returns.
  virtual void post(std::function<void()> fn) = 0;
  // Ends every request in flight as cancelled (each still completes).
  virtual void cancel_all() = 0;
  // Starts a request; its reply goes to ReplayScheduler::complete(send.tag, ...) later.
  virtual void send(const ReplaySend& send) = 0;
};

struct ReplayProgress {
  bool warmup = true;
  int64_t sent = 0;
  int64_t completed = 0;  // profiled, successful
  int64_t failed = 0;     // profiled, failed
  int64_t in_flight = 0;
  double elapsed_s = 0.0;  // since profiling started (0 during warmup)
};

struct ReplayScheduleOutput {
  int64_t profile_start_ns = 0;  // transport clock
  int64_t sent = 0;
  int64_t warmup_sent = 0;
  int64_t primers = 0;
  int64_t skipped_context = 0;
  int64_t dropped_subagents = 0;  // subagents with no parent turn before them
  int64_t tree_plays = 0;
  bool warmup_grace_expired = false;
  bool stopped_early = false;
  std::vector<std::string> invalid_reasons;
};

struct ReplayHooks {
  // Each request as it completes (or is skipped), on the transport's thread.
  std::function<void(metrics::ReplayRecord&&)> on_record;
  // When the profiling window opens, before its start is stamped and while nothing is in flight
  // (a scrape of the server's counters there is the window's exact baseline).
  std::function<void()> on_profile_start;
};

class ReplayScheduler {
 public:
  // `trace` and `transport` must outlive the scheduler.
  ReplayScheduler(const ReplayScheduleOptions& options, const Trace& trace, ReplayTransport& transport,
                  ReplayHooks hooks);
  ~ReplayScheduler();
  ReplayScheduler(const ReplayScheduler&) = delete;
  ReplayScheduler& operator=(const ReplayScheduler&) = delete;

  void start();
  // Ends the run early (what was measured is kept; the reason makes the result invalid).
  void stop(std::string reason);
  void complete(uint64_t tag, ReplayReply&& reply);

  bool finished() const;
  ReplayProgress progress() const;
  const ReplayScheduleOutput& output() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Options a schedule cannot run with (no lanes, a speed-up <= 0).
std::optional<std::string> schedule_options_error(const ReplayScheduleOptions& options);

}  // namespace ix::workload
