// `ixbench bench replay`: the agentic trace replay (SPEC §6). Flag names are aiperf's, as
// InferenceX's build_replay_cmd passes them (ixbench names are aliases); see docs/bench-replay.md.
#include <memory>
#include <string>

#include "bench/replay_command.h"
#include "cli/command.h"
#include "cli/replay_flags.h"

namespace ix::cli {
namespace {

struct Flags {
  bench::BenchReplayOptions options;
  bool streaming = true;  // accepted: replays always stream
  bool no_progress = false;
  bool no_gpu_telemetry = false;
  bool trust_remote_code = false;
  bool apply_chat_template = false;
  double stats_interval_s = 30;
  int64_t dynamo_session_timeout_s = 3600;
};

// Flags InferenceX passes that change nothing here, accepted so its command line runs unchanged.
void add_accepted(CLI::App* cmd, Flags& f) {
  cmd->add_flag("--streaming", f.streaming, "accepted (requests always stream)");
  cmd->add_option("--stats-interval", f.stats_interval_s, "accepted (the progress line updates every 0.5 s)")
      ->capture_default_str();
  cmd->add_flag("--no-gpu-telemetry", f.no_gpu_telemetry, "accepted (no GPU telemetry is collected here)");
  cmd->add_flag("--tokenizer-trust-remote-code,--trust-remote-code", f.trust_remote_code,
                "accepted (the native tokenizers run no model code)");
  cmd->add_flag("--apply-chat-template", f.apply_chat_template,
                "accepted (the server applies its chat template; ISL is the trace's, or the server's count with "
                "--use-server-token-count)");
  cmd->add_option("--dynamo-session-timeout-seconds", f.dynamo_session_timeout_s,
                  "accepted with --use-dynamo-conv-aware-routing")
      ->capture_default_str();
  cmd->add_flag("--unsafe-override", f.options.unsafe_override,
                "accepted: a run under 900 s is then still marked not submission-valid");
}

void add_target(CLI::App* cmd, bench::BenchReplayOptions& o) {
  cmd->add_option("--url,--base-url", o.url, "server URL")->capture_default_str();
  cmd->add_option("--endpoint", o.endpoint, "chat completions path")->capture_default_str();
  cmd->add_option("--endpoint-type", o.endpoint_type, "chat (the only type a replay sends)")->capture_default_str();
  cmd->add_option("--model,-m", o.model, "model name sent in every request")->required();
  cmd->add_option("--tokenizer", o.tokenizer, "tokenizer.json path/dir or model name (default: --model)");
  cmd->add_option("--header,-H", o.headers, "KEY=VALUE HTTP headers sent with every request (values not logged)");
  cmd->add_option("--request-timeout", o.request_timeout_s, "seconds before a request counts as timed out")
      ->capture_default_str();
  cmd->add_flag("--insecure", o.insecure, "do not verify https certificates");
  cmd->add_option("--server-pid", o.server_pid, "stop cleanly (artifacts kept) if this process exits");
  cmd->add_option("--extra-inputs", o.extra_inputs, "key:value pairs (or one JSON object) merged into every body");
  cmd->add_flag("--use-dynamo-conv-aware-routing,--session-id-header", o.session_id_header,
                "send X-Dynamo-Session-ID (the stream's session id) and, from subagents, X-Dynamo-Parent-Session-ID");
}

void add_outputs(CLI::App* cmd, Flags& f) {
  bench::BenchReplayOptions& o = f.options;
  cmd->add_option("--server-metrics", o.server_metrics,
                  "Prometheus endpoints scraped into server_metrics_export.json (default: the target's /metrics)")
      ->expected(1, -1);
  cmd->add_flag("--no-server-metrics", o.no_server_metrics, "do not scrape the target's /metrics");
  cmd->add_option("--slice-duration", o.slice_duration_s, "seconds per time slice of the server-metrics export")
      ->capture_default_str();
  cmd->add_option("--num-gpus", o.num_gpus, "GPUs of the deployment (per-GPU throughput)")->capture_default_str();
  cmd->add_flag("--no-progress,--disable-tqdm", f.no_progress, "no live progress line");
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* group = find_or_add_group(root, "bench", "benchmark clients");
  CLI::App* cmd = group->add_subcommand("replay", "agentic trace replay against a chat endpoint (aiperf's flags)");
  auto flags = std::make_shared<Flags>();
  add_target(cmd, flags->options);
  add_replay_trace_flags(cmd, flags->options, ReplayFlagSet::kBenchReplay);
  add_replay_schedule_flags(cmd, flags->options, ReplayFlagSet::kBenchReplay);
  add_outputs(cmd, *flags);
  add_accepted(cmd, *flags);
  registry.on_run(cmd, [flags] {
    bench::BenchReplayOptions& options = flags->options;
    options.progress = !flags->no_progress;
    auto status = bench::run_bench_replay(options);
    return status ? *status : report_error(status.error());
  });
}

}  // namespace
IX_REGISTER_COMMAND(bench_replay, setup);
}  // namespace ix::cli
