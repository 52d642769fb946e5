// The fixed-length serving benchmark runner behind `ixbench bench serve` (SPEC §4).
//
// Shared-nothing workers (h2load): `threads` ClientLoops, each on its own thread with its own
// keep-alive connections, its share of the concurrency and its own records; merged once at the
// end. Two pacing modes:
//   closed loop (request rate inf): each worker keeps its share of --max-concurrency busy; a
//     finished request's slot sends the next request at once. The request is "scheduled" when
//     its slot became free, so queue time is pure client delay.
//   open loop (finite rate): request i is due at t0 + offset_i (workload/arrivals.h, absolute
//     times, no drift); requests go round-robin to workers; with --max-concurrency also set, a
//     due request waits for a slot (vLLM's semaphore), and that wait is visible as queue time and
//     in the latencies measured from the scheduled time (wrk2: no coordinated omission).
// Warmup requests run first (closed loop at the same concurrency) and are excluded from every
// statistic; the measured window starts after they drain.
//
// Each request travels as an Exchange (bench/exchange.h: send and SSE timing, classification,
// resends within a retry budget); this file decides when requests go.
//
// Self-check: every worker runs a 1 ms probe timer and records how late it fires (event-loop
// lag) and its thread CPU time. Received bytes carry the kernel's receive timestamp (plain TCP),
// so lag reaches the measurements only through late sends (queue time) — or directly on https.
// The client is marked saturated and the run invalid only when its delay reached the
// measurements by more than 1 %: sends late at p90 by more than the threshold and by more than
// 1 % of the median E2EL, or (reads without kernel timestamps) loop lag p99 above the threshold
// and above 1 % of the median TTFT. A worker busy >= 95 % without such an effect is a warning.
//
// Stopping: `interrupt` (Ctrl-C, SIGTERM) or the death of `server_pid` cancels everything in flight
// (recorded as kind "cancelled"), sends nothing more, and returns what was measured.
//
// Thread-safety: run_serve() is a blocking call; it owns its threads. The prompt supplier is
// called from worker threads (concurrently) and must be thread-safe.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bench/exchange.h"
#include "common/error.h"
#include "http/client.h"
#include "metrics/serve_result.h"
#include "openai/backend.h"
#include "workload/arrivals.h"
#include "workload/random_dataset.h"

namespace ix::bench {

struct ServeProgress {
  int64_t total = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t output_tokens = 0;  // streamed so far (content events' tokens), not only completed
  double elapsed_s = 0.0;
  bool warmup = false;
};

struct ServeRunnerOptions {
  http::Url base;
  std::string endpoint = "/v1/completions";
  openai::Backend backend = openai::Backend::kVllm;
  std::string model;  // "model" field of every request
  bool ignore_eos = true;
  bool continuous_usage = true;    // ask for usage in every chunk (backends that support it)
  boost::json::object extra_body;  // merged into every request body (--extra-body, sampling flags)
  std::string api_key;             // sent as "Authorization: Bearer"; never logged or stored
  // Sent with every request to the server (--header); one of the same name (case-insensitive)
  // replaces the client's own (Authorization, Accept), as vLLM's extra headers do. Values are
  // never logged or stored (they may be credentials).
  std::vector<http::Header> extra_headers;
  // Non-empty: each measured request carries "x-request-id: <prefix><index>" (--request-id-prefix).
  std::string request_id_prefix;
  std::optional<int64_t> logprobs;  // completions backends: "logprobs": N in every body (--logprobs)
  // --lora-modules: measured request i asks for model lora_modules[lora_choice[i]] instead of
  // `model` (vLLM picks one at random per request; here seeded). Empty: every request `model`.
  std::vector<std::string> lora_modules;
  std::vector<uint32_t> lora_choice;
  bool verify_tls = true;

  std::vector<workload::RequestShape> warmups;
  std::vector<workload::RequestShape> measured;
  // Prompt text for send position k (0..warmups-1 = warmups, then measured), asked for once per
  // k; thread-safe; may block, reporting the wait in *waited_ns.
  std::function<Result<std::string>(size_t k, int64_t* waited_ns)> prompt;

  std::optional<int64_t> max_concurrency;
  // When the measured requests are due: all at once (closed loop, the default), at a rate, or on
  // a ramp-up (--request-rate, --burstiness, --ramp-up-*, --seed).
  workload::ArrivalOptions arrivals{.request_rate = std::numeric_limits<double>::infinity()};
  int64_t request_timeout_ns = 600'000'000'000;
  // Resends per request after connect/reset/429/5xx failures (off by default), each after a
  // jittered exponential backoff or the server's Retry-After (http/client_retry.h), within the
  // run's retry_budget(); at most kMaxRetriesPerRequest.
  int max_retries = 0;
  int threads = 1;

  pid_t server_pid = 0;  // 0 = do not watch
  const std::atomic<bool>* interrupt = nullptr;
  double loop_lag_threshold_ms = 1.0;

  bool scrape_server_metrics = true;  // GET /metrics before and after the measured window
  std::optional<double> configured_acceptance_length;
  bool profile = false;  // POST /start_profile and /stop_profile around the measured window

  // Called on the calling thread about every `progress_interval_ms`.
  std::function<void(const ServeProgress&)> on_progress;
  int progress_interval_ms = 250;
};

struct ServeRunnerOutput {
  std::vector<metrics::RequestRecord> records;  // measured requests that were sent, by index
  std::vector<std::string> generated_texts;     // parallel to records
  int64_t start_ns = 0;                         // dispatch start of the measured window
  int64_t end_ns = 0;                           // last completion
  double start_unix_s = 0.0;
  double end_unix_s = 0.0;
  metrics::ClientHealth client;
  std::vector<std::string> invalid_reasons;  // interrupted, server died, prompt synthesis late
  boost::json::object extra;                 // server_metrics, profile, connection counters...
  int64_t warmup_failed = 0;
  int64_t warmup_done = 0;  // warmup requests that finished (ok or failed)
  bool stopped_early = false;
  bool server_lost = false;  // stopped because the watched server exited or refused connections
  // A client-side error that stopped the run midway (a prompt that could not be made): the run
  // is returned with what was measured before it (stopped_early, the message in
  // invalid_reasons), so the caller can keep that and still fail.
  std::optional<Error> fatal;
};

// Errors only for problems of the client itself found before the first send (unresolvable
// host, bad schedule); failures of the server are records, and a client error during the run is
// ServeRunnerOutput::fatal.
Result<ServeRunnerOutput> run_serve(const ServeRunnerOptions& options);

// What the client's self-check weighs (serve_runner.cc measures it over the measured window).
struct ClientDelay {
  double lag_p99_ms = 0;         // event-loop lag p99 over all workers
  double max_busy = 0;           // the busiest worker thread's busy fraction
  double send_delay_p90_ms = 0;  // sends later than scheduled, p90 (0 where queueing is the server's)
  double median_e2el_ms = 0;
  double median_ttft_ms = 0;
  bool stamps_immune = true;  // every read carried a kernel receive timestamp
  double threshold_ms = 1.0;  // --client-lag-threshold-ms
};

// Marks `h` saturated (the run invalid) only when the client's delay reached the measurements:
// sends late by more than the threshold and by more than 1 % of the median E2EL, or, on reads
// without kernel timestamps, lag p99 above the threshold and above 1 % of the median TTFT. A
// thread busy >= 95 % with neither effect sets h.warning instead.
void judge_client_delay(const ClientDelay& delay, metrics::ClientHealth& h);

// The body of POST /start_profile (`start`) or /stop_profile with --profile, as InferenceX's
// client sends them: the backend's request body (a short prompt, the first measured request's
// max_tokens), plus {"num_steps": 1, "merge_profiles": true, "profile_by_stage": true} to start
// (SGLang's profiler options; vLLM ignores the body).
std::string profile_request_body(const ServeRunnerOptions& options, bool start);

// The headers of a request to the server: `defaults` (the client's own), Authorization from
// options.api_key, then options.extra_headers, each replacing an earlier one of the same name.
std::vector<http::Header> server_headers(const ServeRunnerOptions& options, std::vector<http::Header> defaults = {});

// Whether the process is alive (a zombie not yet reaped counts as gone); true for pid <= 0.
bool process_alive(pid_t pid);

}  // namespace ix::bench
