// `ixbench bench replay`: the agentic trace replay (SPEC §6), a drop-in for the aiperf command
// InferenceX builds in `build_replay_cmd` (benchmarks/benchmark_lib.sh): the same flag names,
// aiperf's artifact layout in --artifact-dir (read unchanged by InferenceX's
// utils/agentic/aggregation/process_agentic_result.py), plus ixbench's own result
// (replay_result.json: SPEC §6 metrics, theoretical vs realised prefix-cache hit, per-session
// roll-ups, schedule lag). See docs/bench-replay.md.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "workload/replay_schedule.h"
#include "workload/trace.h"

namespace ix::bench {

struct BenchReplayOptions {
  std::string url = "http://localhost:8000";  // --url / --base-url
  std::string endpoint = "/v1/chat/completions";
  std::string endpoint_type = "chat";
  std::string model;
  std::string tokenizer;              // default: --model
  std::string trace;                  // --trace / --input-file
  std::string trace_format = "auto";  // auto | mooncake | session (aiperf: mooncake_trace, weka_trace)
  std::optional<int64_t> block_size;
  int64_t concurrency = 1;
  double benchmark_duration_s = 3600.0;
  double benchmark_grace_s = 30.0;
  int64_t seed = 42;
  double failed_request_threshold = 0.10;
  double start_min_ratio = 0.25;
  double start_max_ratio = 0.75;
  int64_t warmup_per_lane = 10;
  double warmup_grace_s = 1800.0;
  double idle_cap_s = 300.0;
  double system_idle_cap_s = 10.0;
  bool use_server_token_count = false;
  std::optional<int64_t> max_context_length;
  std::vector<std::string> extra_inputs;    // key:value pairs or one JSON object
  std::vector<std::string> server_metrics;  // URLs scraped into server_metrics_export.json
  bool no_server_metrics = false;           // not even the target's own /metrics
  double slice_duration_s = 1.0;
  bool session_id_header = false;  // X-Dynamo-Session-ID (--use-dynamo-conv-aware-routing)
  bool live_assistant = false;
  bool no_cache_bust = false;
  bool fixed_schedule = false;
  double fixed_schedule_speedup = 1.0;
  bool single_pass = false;
  std::optional<int64_t> num_dataset_entries;
  std::string artifact_dir = "artifacts";
  std::vector<std::string> headers;  // KEY=VALUE
  double request_timeout_s = 600.0;
  std::optional<int64_t> server_pid;
  int64_t num_gpus = 0;
  bool insecure = false;
  bool progress = true;
  bool unsafe_override = false;
  std::string scenario = "inferencex-agentx-mvp";
  std::string public_dataset;  // refused: public datasets are not downloaded
};

// The trace and schedule flags, shared with `sim predict --trace` (which replays in virtual time):
// their ranges, the schedule they describe, and the trace they name (--trace or --public-dataset,
// --trace-format, --block-size, --num-dataset-entries).
Result<void> check_schedule_flags(const BenchReplayOptions& options);
workload::ReplayScheduleOptions schedule_options(const BenchReplayOptions& options);
Result<workload::Trace> load_replay_trace(const BenchReplayOptions& options);
// The result's "run" section: the flags, the trace's size and what the schedule sent.
boost::json::object replay_run_section(const BenchReplayOptions& options, const workload::Trace& trace,
                                       const workload::ReplayScheduleOutput& out, std::string_view tool);

// Runs the replay and writes its files. The exit status: 0 when the run is valid, 1 when it is
// not (error rate above --failed-request-threshold, nothing completed; files still written),
// 128 + signal when a signal stopped it (what was measured is written).
Result<int> run_bench_replay(const BenchReplayOptions& options);

}  // namespace ix::bench
