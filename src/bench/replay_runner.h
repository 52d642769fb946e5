// The agentic trace replay behind `ixbench bench replay` (SPEC §6): when each request of a trace
// goes. What a request holds comes from workload/replay_plan.h (streams, dependencies, chat
// history from hash ids); how it travels and what is measured from bench/exchange.h, the same
// exchange `bench serve` uses.
//
// Lanes (the default, aiperf's agentic replay): `concurrency` lanes each play one session tree at
// a time; a finished tree is replaced by the next from a seeded shuffle of the trace (wrapping;
// `single_pass`: each tree once, from its first turn, in file order for Mooncake). A lane's first
// tree starts at a point t*
// drawn uniformly in [min_ratio, max_ratio] of its recorded span; the turns before t* count as
// done, and the streams live at t* are primed: one request per live stream replaying the turn
// before t* with its full history and max_tokens 1. When the primers have returned, each lane
// sends `warmup_per_lane` more requests in dependency order without delays (max_tokens 1); then,
// when the warmup has drained (at most `warmup_grace_s`, after which what is left is cancelled),
// profiling starts: each lane's next turns keep their recorded spacing, the earliest firing at
// once. Gaps between turns are replayed (end-to-start); while a tree has nothing in flight its
// pending turns are pulled forward so the next fires at most `idle_cap_s` later, and while
// nothing at all is in flight, at most `system_idle_cap_s` later (order and spawn/join kept).
// Subagent fan-out may put more than `concurrency` requests in flight. No request starts after
// `duration_s`; those in flight then get `grace_s` before they are cancelled.
//
// Fixed schedule (Mooncake's open loop): every turn is sent at its recorded time, divided by
// `schedule_speedup`, whatever is in flight; the record keeps the scheduled time, so the result
// reports schedule lag (dispatch - scheduled). No warmup.
//
// Records are handed to `on_record` on the loop thread as each request completes (streamed: the
// runner keeps none). Thread-safety: run_replay() is a blocking call that owns its thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "http/client.h"
#include "metrics/replay_result.h"
#include "tokenizer/prompt_synth.h"
#include "workload/trace.h"

namespace ix::bench {

enum class ReplayMode { kLanes, kFixedSchedule };

// Profiled requests that must have finished before the error share can stop a run (so the first
// failure of a run does not end it).
inline constexpr int64_t kMinFinishedForAbort = 20;

struct ReplayProgress {
  bool warmup = true;
  int64_t sent = 0;
  int64_t completed = 0;  // profiled, successful
  int64_t failed = 0;     // profiled, failed
  int64_t in_flight = 0;
  double elapsed_s = 0.0;  // since profiling started (0 during warmup)
};

struct ReplayRunnerOptions {
  http::Url base;
  std::string endpoint = "/v1/chat/completions";
  std::string model;
  std::string api_key;                      // "Authorization: Bearer"; never logged or stored
  std::vector<http::Header> extra_headers;  // --header
  boost::json::object extra_body;           // --extra-inputs, merged into every body
  bool verify_tls = true;
  int64_t request_timeout_ns = 600'000'000'000;

  const workload::Trace* trace = nullptr;
  const tok::PromptSynth* synth = nullptr;

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
  bool session_id_header = false;             // X-Dynamo-Session-ID (+ X-Dynamo-Parent-Session-ID)
  bool live_assistant = false;                // send the server's replies as the assistant turns
  bool cache_bust = true;                     // "[rid:...]" before each tree play's first message
  // Stop the run once at least kMinFinishedForAbort profiled requests finished and the failed share
  // exceeds this (aiperf's live --failed-request-threshold); nullopt: never.
  std::optional<double> abort_error_rate;

  pid_t server_pid = 0;  // 0 = do not watch
  const std::atomic<bool>* interrupt = nullptr;
  std::function<void(metrics::ReplayRecord&&)> on_record;
  std::function<void(const ReplayProgress&)> on_progress;  // on the calling thread
  // On the loop thread when the profiling window opens, before its start is stamped and while
  // nothing is in flight (a scrape of the server's counters there is the window's exact baseline).
  std::function<void()> on_profile_start;
  int progress_interval_ms = 500;
};

struct ReplayRunnerOutput {
  int64_t profile_start_ns = 0;  // steady clock
  int64_t profile_end_ns = 0;
  int64_t steady_to_unix_ns = 0;  // add to a steady stamp for Unix-epoch ns
  int64_t sent = 0;
  int64_t warmup_sent = 0;
  int64_t primers = 0;
  int64_t skipped_context = 0;
  int64_t dropped_subagents = 0;  // subagents with no parent turn before them
  int64_t tree_plays = 0;
  bool warmup_grace_expired = false;
  bool stopped_early = false;
  std::vector<std::string> invalid_reasons;
  boost::json::object extra;  // connection counters
};

// Errors: kInvalidArgument for options that cannot run (no trace, no lanes); kUnavailable when
// the host does not resolve. Failures of the server are records.
Result<ReplayRunnerOutput> run_replay(const ReplayRunnerOptions& options);

}  // namespace ix::bench
