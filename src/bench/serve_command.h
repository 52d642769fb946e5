// `ixbench bench serve` as a library call: flags (vLLM names, InferenceX defaults) in, a result
// file, a console summary and an exit status out. The CLI file only maps argv onto
// BenchServeOptions.
//
// Steps (each its own function): check and parse every flag (serve_plan.h); load the tokenizer
// and draw lengths; start prompt synthesis on background threads (the first requests' prompts
// are ready before the clock starts, the rest stay ahead of the send schedule) — or, with
// --tokenizer-from-server, make every prompt through the server's /tokenize and /detokenize
// first; run (serve_runner.h); count output tokens client-side where the server did not report
// usage; build the SPEC §4 result (metrics/serve_result.h); write it (serve_output.h) even when
// the run failed its checks; print the summary.
//
// Exit status (returned, not thrown), as InferenceX's client: 0 ok — also for a run the client's
// self-check marks invalid (the mark is in the result and printed), unless fail_on_invalid; 1
// when more than `max_failed_fraction` of the measured requests failed, none completed, the
// watched server died or a prompt could not be made (the result is still written); 128 + the
// signal number when the run was stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129), after
// writing what was measured.
//
// Thread-safety: one call at a time per process (it installs signal handlers while running).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace ix::bench {

struct BenchServeOptions {
  std::string base_url;  // overrides host/port
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string endpoint;  // default per backend
  std::string backend = "vllm";
  std::string model;
  std::string served_model_name;  // "model" in requests (default: model)
  std::string tokenizer;          // default: model
  std::string dataset_name = "random";
  int64_t random_input_len = 1024;
  int64_t random_output_len = 128;
  double random_range_ratio = 0.8;
  std::optional<int64_t> num_prompts;      // default 10 · max_concurrency, else 1000
  std::optional<int64_t> max_concurrency;  // default unlimited
  std::string request_rate = "inf";
  double burstiness = 1.0;
  std::string ramp_up_strategy;  // "" (off), linear, exponential (vLLM's --ramp-up-strategy)
  std::optional<int64_t> ramp_up_start_rps;
  std::optional<int64_t> ramp_up_end_rps;
  std::optional<int64_t> num_warmups;  // default 2 · max_concurrency, else 0
  bool ignore_eos = true;
  bool continuous_usage = true;  // ask for usage in every chunk (vllm, sglang and trt backends)
  bool use_chat_template = false;
  bool dsv4 = false;                    // DeepSeek-V4's encoding, thinking mode (implies the chat template)
  std::string tokenizer_mode = "auto";  // vLLM's values; deepseek_v4 selects DeepSeek-V4's encoding
  bool tokenizer_from_server = false;   // prompts made through the server's /tokenize and /detokenize
  bool trust_remote_code = false;       // recorded; the native tokenizers run no model code
  std::string percentile_metrics = "ttft,tpot,itl,e2el";
  std::string metric_percentiles = "90,99,99.9";
  std::vector<std::string> goodput;  // "ttft:MS" ...
  bool save_result = false;
  bool save_detailed = false;
  std::string result_dir;
  std::string result_filename;
  std::vector<std::string> metadata;             // KEY=VALUE, added to the result
  std::vector<std::string> headers;              // KEY=VALUE, HTTP headers sent with every request (--header)
  std::optional<std::string> request_id_prefix;  // x-request-id: <prefix><index> on measured requests
  std::vector<std::string> lora_modules;         // "model" of each measured request: one of these, seeded
  std::optional<int64_t> logprobs;               // completions backends: log probabilities per output token
  uint64_t seed = 0;
  double request_timeout_s = 600.0;
  int max_retries = 0;
  int threads = 0;                  // 0 = auto: one per 64 concurrent streams, up to a quarter of the cores
  std::optional<pid_t> server_pid;  // watched when set; must name a live process at start
  bool profile = false;
  bool scrape_metrics = true;
  std::optional<double> spec_acceptance_length;  // configured AL, reported beside the achieved one
  std::string extra_body;
  // vLLM's sampling flags: set ones go into every request body (temperature stays 0, greedy, when
  // not given); an --extra-body entry of the same name wins, as in vLLM.
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> frequency_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> repetition_penalty;
  std::string label;           // result "label" and file-name prefix (default: the backend)
  bool append_result = false;  // add the result as one JSON line to the file instead of replacing it
  // Before anything is measured, retry one small request until the endpoint answers 200, for at
  // most this long (vLLM's --ready-check-timeout-sec; 0 = no check, InferenceX's client has none).
  double ready_check_timeout_s = 0;
  bool insecure = false;
  bool progress = true;  // live progress line when stderr is a TTY
  double max_failed_fraction = 0.05;
  bool fail_on_invalid = false;  // exit 1 when the self-check marks the run invalid
  double loop_lag_threshold_ms = 1.0;
  bool count_client_tokens = true;
  // Date stamp for the file name and "date" (default: local time now, "%Y%m%d-%H%M%S").
  std::string date;
};

// Runs the benchmark. Errors: bad flags (kInvalidArgument), tokenizer problems, an unreachable
// host name, an unwritable result path. A server that fails requests is not an error: the
// status says so.
Result<int> run_bench_serve(const BenchServeOptions& options);

// Python's str(float) for the result file name ("inf", "8.0", "0.5").
std::string python_float_str(double value);

}  // namespace ix::bench
