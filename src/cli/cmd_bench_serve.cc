// `ixbench bench serve`: the fixed-length serving benchmark (SPEC §4). Flag names and defaults
// follow vLLM's `bench serve` and InferenceX; see docs/bench-serve.md.
#include <cstdint>
#include <memory>
#include <string>

#include "bench/serve_command.h"
#include "cli/command.h"

namespace ix::cli {
namespace {

struct Flags {
  bench::BenchServeOptions options;
  bool ignore_eos = false;  // the default; accepted because every InferenceX call passes it
  bool no_ignore_eos = false;
  bool disable_progress = false;
  bool no_scrape = false;
  bool no_continuous_usage = false;
};

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* group = find_or_add_group(root, "bench", "benchmark clients");
  CLI::App* cmd = group->add_subcommand("serve", "fixed-length serving benchmark against an OpenAI-compatible server");
  // Everything CLI11 writes into lives in this one object, owned by the run callback: a flag bound
  // to a local of setup() would be written after setup() returned.
  auto flags = std::make_shared<Flags>();
  bench::BenchServeOptions* o = &flags->options;

  cmd->add_option("--base-url", o->base_url, "server URL, e.g. http://127.0.0.1:8000 (overrides --host/--port)");
  cmd->add_option("--host", o->host, "server host")->capture_default_str();
  cmd->add_option("--port", o->port, "server port")->capture_default_str();
  cmd->add_option("--endpoint", o->endpoint,
                  "API path (default: /v1/completions, or /v1/chat/completions for openai-chat)");
  cmd->add_option("--backend", o->backend, "vllm | sglang | openai | openai-chat | trt | atom")->capture_default_str();
  cmd->add_option("--model", o->model, "model name (also the default tokenizer)")->required();
  cmd->add_option("--served-model-name", o->served_model_name, "\"model\" field sent in requests (default: --model)");
  cmd->add_option("--tokenizer", o->tokenizer, "tokenizer.json path/dir or model name (default: --model)");
  cmd->add_option("--dataset-name", o->dataset_name, "dataset (random)")->capture_default_str();
  // Integers (lengths, counts, seeds) are read as decimal, overflow refused: main.cc.
  cmd->add_option("--random-input-len", o->random_input_len, "prompt tokens (upper bound)")->capture_default_str();
  cmd->add_option("--random-output-len", o->random_output_len, "output tokens (upper bound)")->capture_default_str();
  cmd->add_option("--random-range-ratio", o->random_range_ratio, "lengths uniform in [floor(r*L), L]")
      ->capture_default_str();
  cmd->add_option("--num-prompts", o->num_prompts, "measured requests (default: 10 x --max-concurrency, else 1000)");
  cmd->add_option("--max-concurrency", o->max_concurrency, "requests in flight at most (default: unlimited)");
  cmd->add_option("--request-rate", o->request_rate, "requests/s, or inf (all at once)")->capture_default_str();
  cmd->add_option("--burstiness", o->burstiness, "gamma shape of arrivals (1 = Poisson)")->capture_default_str();
  cmd->add_option("--ramp-up-strategy", o->ramp_up_strategy,
                  "linear | exponential: the request rate goes from --ramp-up-start-rps to --ramp-up-end-rps over "
                  "the run (instead of --request-rate)");
  cmd->add_option("--ramp-up-start-rps", o->ramp_up_start_rps, "ramp-up: rate of the first request (requests/s)");
  cmd->add_option("--ramp-up-end-rps", o->ramp_up_end_rps, "ramp-up: rate of the last request (requests/s)");
  cmd->add_option("--num-warmups", o->num_warmups, "warmup requests (default: 2 x --max-concurrency, else 0)");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "generate exactly the requested tokens (default on)");
  cmd->add_flag("--no-ignore-eos", flags->no_ignore_eos, "let the server stop at EOS");
  cmd->add_flag("--use-chat-template", o->use_chat_template, "apply the model's chat template to prompts");
  cmd->add_flag("--dsv4", o->dsv4,
                "frame prompts with DeepSeek-V4's own encoding in thinking mode (ends with the assistant marker and "
                "<think>; implies --use-chat-template), as InferenceX's client does");
  cmd->add_option("--tokenizer-mode", o->tokenizer_mode,
                  "vLLM's tokenizer modes: auto | hf | slow | custom (the native tokenizer), deepseek_v4 (also "
                  "DeepSeek-V4's encoding, as --dsv4), mistral (only with --tokenizer-from-server)")
      ->capture_default_str();
  cmd->add_flag("--tokenizer-from-server", o->tokenizer_from_server,
                "no local tokenizer: make prompts of exact length through the server's /tokenize and /detokenize "
                "(vLLM's endpoints; output tokens from the server's usage)");
  cmd->add_option("--percentile-metrics", o->percentile_metrics, "metrics to report")->capture_default_str();
  cmd->add_option("--metric-percentiles", o->metric_percentiles, "percentiles to report")->capture_default_str();
  cmd->add_option("--goodput", o->goodput, "SLOs: ttft:MS tpot:MS e2el:MS");
  cmd->add_flag("--save-result", o->save_result, "write the result JSON");
  cmd->add_flag("--save-detailed", o->save_detailed, "also write per-request records (<result>.requests.jsonl)");
  cmd->add_option("--result-dir", o->result_dir, "directory for result files");
  cmd->add_option("--result-filename", o->result_filename, "result file name (default: vLLM's naming)");
  cmd->add_option("--metadata", o->metadata, "KEY=VALUE pairs added to the result");
  cmd->add_option("--logprobs", o->logprobs,
                  "ask for N log probabilities per output token (\"logprobs\": N; completions backends)");
  cmd->add_option("--lora-modules", o->lora_modules,
                  "LoRA adapters the server was launched with: each measured request asks for one of them (seeded "
                  "random choice, vLLM's)");
  cmd->add_option("--request-id-prefix", o->request_id_prefix,
                  "send \"x-request-id: <prefix><index>\" with each measured request (vLLM's; off when not given)");
  cmd->add_option("--header", o->headers,
                  "KEY=VALUE HTTP headers sent with every request (replace the client's own of that name, e.g. "
                  "Authorization); values are not logged or stored");
  cmd->add_option("--seed", o->seed, "seed for lengths, prompts and arrivals (>= 0)")->capture_default_str();
  cmd->add_option("--request-timeout", o->request_timeout_s, "seconds before a request counts as timed out")
      ->capture_default_str();
  cmd->add_option("--max-retries", o->max_retries, "resend requests failing with connect/reset/429/5xx (default: off)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "client event-loop threads (0 = auto)")->capture_default_str();
  cmd->add_option("--server-pid", o->server_pid, "stop cleanly (results kept) if this process exits");
  cmd->add_flag("--profile", o->profile, "call the server's /start_profile and /stop_profile around the run");
  cmd->add_flag("--no-server-metrics", flags->no_scrape, "do not scrape the server's /metrics");
  cmd->add_option("--spec-acceptance-length", o->spec_acceptance_length,
                  "configured speculative-decoding acceptance length, reported beside the achieved one");
  cmd->add_option("--extra-body", o->extra_body, "JSON object merged into every request body");
  cmd->add_option("--temperature", o->temperature, "sampling temperature sent in requests (default 0: greedy)");
  cmd->add_option("--top-p", o->top_p, "top-p sent in requests (server default when not given)");
  cmd->add_option("--top-k", o->top_k, "top-k sent in requests (server default when not given)");
  cmd->add_option("--min-p", o->min_p, "min-p sent in requests (server default when not given)");
  cmd->add_option("--frequency-penalty", o->frequency_penalty, "frequency penalty sent in requests");
  cmd->add_option("--presence-penalty", o->presence_penalty, "presence penalty sent in requests");
  cmd->add_option("--repetition-penalty", o->repetition_penalty,
                  "repetition penalty sent in requests (server default when not given)");
  cmd->add_option("--label", o->label, "label of the result (\"label\" field, file-name prefix; default: --backend)");
  cmd->add_flag("--append-result", o->append_result,
                "append the result as one JSON line to the result file (kept results stay; implies --save-result)");
  cmd->add_option("--ready-check-timeout-sec", o->ready_check_timeout_s,
                  "retry a 1-token request until the endpoint answers, at most this long (0 = no check)")
      ->capture_default_str();
  cmd->add_flag("--insecure", o->insecure, "do not verify https certificates");
  cmd->add_flag("--disable-tqdm,--no-progress", flags->disable_progress, "no live progress line");
  cmd->add_option("--max-failed-fraction", o->max_failed_fraction,
                  "exit 1 above this fraction of failed requests (InferenceX: 0.05)")
      ->capture_default_str();
  cmd->add_flag("--fail-on-invalid", o->fail_on_invalid,
                "exit 1 when the client's self-check marks the run invalid (by default the mark is reported in the "
                "result and the summary, and the exit status is InferenceX's)");
  cmd->add_option("--client-lag-threshold-ms", o->loop_lag_threshold_ms,
                  "the client's own delay (late sends, or loop lag on reads without kernel timestamps) marks the run "
                  "invalid only above this many ms and above 1% of the median latency it distorts")
      ->capture_default_str();
  cmd->add_flag("--trust-remote-code", o->trust_remote_code,
                "accepted for vLLM compatibility and recorded (the native tokenizers run no model code)");
  cmd->add_flag("--no-continuous-usage-stats", flags->no_continuous_usage,
                "do not ask for usage in every chunk (stream_options.continuous_usage_stats, sent by default to "
                "vllm/sglang/trt for tokens per chunk; vLLM's and InferenceX's clients do not send it)");

  registry.on_run(cmd, [flags] {
    bench::BenchServeOptions& options = flags->options;
    options.ignore_eos = !flags->no_ignore_eos;
    options.continuous_usage = !flags->no_continuous_usage;
    options.progress = !flags->disable_progress;
    options.scrape_metrics = !flags->no_scrape;
    auto status = bench::run_bench_serve(options);
    return status ? *status : report_error(status.error());
  });
}

}  // namespace
IX_REGISTER_COMMAND(bench_serve, setup);
}  // namespace ix::cli
