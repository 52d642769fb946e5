#include "cli/replay_flags.h"

namespace ix::cli {
namespace {

bool beside_engine(ReplayFlagSet set) {
  return set == ReplayFlagSet::kBesideEngineFlags;
}

}  // namespace

void add_replay_trace_flags(CLI::App* cmd, bench::BenchReplayOptions& o, ReplayFlagSet set) {
  cmd->add_option("--trace,--input-file", o.trace, "trace file or directory (Mooncake JSONL or session traces)");
  cmd->add_option("--trace-format,--custom-dataset-type", o.trace_format,
                  "auto | mooncake (mooncake_trace) | session (weka_trace)")
      ->capture_default_str();
  cmd->add_option(
      beside_engine(set) ? "--prompt-input-tokens-block-size" : "--block-size,--prompt-input-tokens-block-size",
      o.block_size, "tokens per hash id (default: the trace's; Mooncake 512)");
  cmd->add_option("--num-dataset-entries", o.num_dataset_entries, "use the first N sessions of the trace");
  cmd->add_option("--public-dataset", o.public_dataset,
                  "the agentic trace corpus from the Hugging Face cache (never downloaded); --trace wins");
  cmd->add_option("--scenario", o.scenario, "scenario name recorded in the artifacts")->capture_default_str();
  cmd->add_option(beside_engine(set) ? "--artifact-dir,--output-artifact-dir"
                                     : "--artifact-dir,--output-artifact-dir,--result-dir",
                  o.artifact_dir, "directory of aiperf's artifacts and replay_result.json")
      ->capture_default_str();
}

void add_replay_schedule_flags(CLI::App* cmd, bench::BenchReplayOptions& o, ReplayFlagSet set) {
  cmd->add_option("--concurrency", o.concurrency, "session trees played at once (lanes)")->capture_default_str();
  cmd->add_option("--benchmark-duration,--duration", o.benchmark_duration_s,
                  "profiling seconds (under 900: not submission-valid)")
      ->capture_default_str();
  cmd->add_option("--benchmark-grace-period", o.benchmark_grace_s,
                  "seconds in-flight requests get after the duration before they are cancelled")
      ->capture_default_str();
  cmd->add_option(beside_engine(set) ? "--random-seed" : "--random-seed,--seed", o.seed,
                  "seed of tree order and start points")
      ->capture_default_str();
  cmd->add_option("--failed-request-threshold", o.failed_request_threshold,
                  "errors / completed above this make the run invalid (exit 1)")
      ->capture_default_str();
  cmd->add_option("--trajectory-start-min-ratio", o.start_min_ratio, "start point: lowest share of the tree's span")
      ->capture_default_str();
  cmd->add_option("--trajectory-start-max-ratio", o.start_max_ratio, "start point: highest share of the tree's span")
      ->capture_default_str();
  cmd->add_option("--warmup-requests-per-lane", o.warmup_per_lane, "warmup requests per lane after the primers")
      ->capture_default_str();
  cmd->add_option("--warmup-grace-period,--agentic-warmup-grace-period", o.warmup_grace_s,
                  "longest wait for the warmup to drain (then it is cancelled and profiling starts)")
      ->capture_default_str();
  cmd->add_option("--trace-idle-gap-cap-seconds", o.idle_cap_s, "longest idle gap of one tree")->capture_default_str();
  cmd->add_option("--system-idle-gap-cap-seconds", o.system_idle_cap_s, "longest gap while nothing at all is in flight")
      ->capture_default_str();
  cmd->add_option("--max-context-length", o.max_context_length,
                  "turns with input + output tokens above this are skipped and counted, never sent");
  cmd->add_flag("--use-server-token-count", o.use_server_token_count,
                "ISL/OSL from the server's usage (always asked for; preferred when present)");
  cmd->add_flag("--live-assistant-responses", o.live_assistant,
                "send the server's replies as the assistant turns (default: the recorded ones)");
  cmd->add_flag("--no-cache-bust", o.no_cache_bust, "no [rid:...] marker before each tree play's first message");
  cmd->add_flag("--fixed-schedule", o.fixed_schedule,
                "open loop: every turn at its recorded timestamp (reports schedule lag)");
  cmd->add_option("--fixed-schedule-speedup", o.fixed_schedule_speedup, "divide the recorded timestamps by this")
      ->capture_default_str();
  cmd->add_flag("--single-pass", o.single_pass, "play each session once, then stop");
}

}  // namespace ix::cli
