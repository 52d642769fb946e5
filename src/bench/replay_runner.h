// The agentic trace replay behind `ixbench bench replay` (SPEC §6) over HTTP: the schedule of
// workload/replay_schedule.h (lanes or fixed schedule, warmup, idle caps) on a client loop's wall
// clock, each request a chat body rendered from its turn's history (bench/replay_request.h) that
// travels and is measured as an exchange (bench/exchange.h, the one `bench serve` uses).
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
#include "workload/replay_schedule.h"
#include "workload/trace.h"

namespace ix::bench {

using ReplayMode = workload::ReplayMode;
using ReplayProgress = workload::ReplayProgress;

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

  workload::ReplayScheduleOptions schedule;
  bool session_id_header = false;  // X-Dynamo-Session-ID (+ X-Dynamo-Parent-Session-ID)

  pid_t server_pid = 0;  // 0 = do not watch
  const std::atomic<bool>* interrupt = nullptr;
  std::function<void(metrics::ReplayRecord&&)> on_record;
  std::function<void(const ReplayProgress&)> on_progress;  // on the calling thread
  // On the loop thread when the profiling window opens, before its start is stamped and while
  // nothing is in flight (a scrape of the server's counters there is the window's exact baseline).
  std::function<void()> on_profile_start;
  int progress_interval_ms = 500;
};

struct ReplayRunnerOutput : workload::ReplayScheduleOutput {
  int64_t profile_end_ns = 0;     // steady clock (profile_start_ns too)
  int64_t steady_to_unix_ns = 0;  // add to a steady stamp for Unix-epoch ns
  boost::json::object extra;      // connection counters
};

// Errors: kInvalidArgument for options that cannot run (no trace, no lanes); kUnavailable when
// the host does not resolve. Failures of the server are records.
Result<ReplayRunnerOutput> run_replay(const ReplayRunnerOptions& options);

}  // namespace ix::bench
