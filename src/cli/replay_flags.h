// The trace and schedule flags of an agentic replay, as aiperf names them (InferenceX's
// build_replay_cmd passes them), shared by `bench replay` and `sim predict --trace` so both
// accept the same command line. Beside the engine flags of `sim predict` the aliases those
// already use are left out: --block-size (the KV block there; --prompt-input-tokens-block-size
// here), --seed (the engine's; --random-seed here) and --result-dir.
#pragma once

#include <CLI/CLI.hpp>

#include "bench/replay_command.h"

namespace ix::cli {

enum class ReplayFlagSet { kBenchReplay, kBesideEngineFlags };

// --trace --trace-format --block-size --num-dataset-entries --public-dataset --scenario --artifact-dir
void add_replay_trace_flags(CLI::App* cmd, bench::BenchReplayOptions& options, ReplayFlagSet set);
// --concurrency --benchmark-duration --benchmark-grace-period --random-seed --failed-request-threshold
// --trajectory-start-{min,max}-ratio --warmup-requests-per-lane --warmup-grace-period
// --{trace,system}-idle-gap-cap-seconds --max-context-length --use-server-token-count
// --live-assistant-responses --no-cache-bust --fixed-schedule --fixed-schedule-speedup --single-pass
void add_replay_schedule_flags(CLI::App* cmd, bench::BenchReplayOptions& options, ReplayFlagSet set);

}  // namespace ix::cli
