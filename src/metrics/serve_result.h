// Per-request records of a fixed-length serving benchmark and the result object built from them
// (SPEC §4): vLLM / InferenceX `bench serve` keys, exactly as they spell them (including vLLM's
// historical "request_goodput:" key), plus ixbench's extra fields under their own names.
//
// Used by `ixbench bench serve` (wall clock) and, through serve_summary.h, `ixbench sim predict`
// (virtual time): this file does no I/O and reads no clock. Every time is an int64 nanosecond stamp on one monotonic
// epoch chosen by the caller (steady clock or simulator time); only differences are used, converted to seconds before
// statistics, as vLLM's perf_counter() floats are.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ix::metrics {

// Why a request failed. Failures of the server under test are data: counted by kind.
enum class ErrorKind {
  kNone,
  kConnect,      // could not connect (refused, DNS, TLS handshake)
  kHttpStatus,   // non-2xx status (429, 500, 503, ...)
  kTimeout,      // request timeout or stalled stream
  kReset,        // connection reset or closed mid-response
  kTruncated,    // stream ended without the terminal event ([DONE] / finish_reason)
  kMalformed,    // bytes that are not valid HTTP/SSE/JSON
  kServerError,  // an error object inside a 200 stream
  kNoContent,    // a complete stream without one content-bearing event (no TTFT to measure)
  kCancelled,    // stopped by the client (Ctrl-C, server died, run aborted)
  // usage counts that cannot be true: negative or not whole, completion_tokens beyond max_tokens
  // (+ a small slack), prompt_tokens far beyond the prompt sent; never added to a total
  kBadUsage,
  kOther,
};
std::string_view error_kind_name(ErrorKind kind);  // "http_status", "timeout", ...

struct RequestRecord {
  int64_t index = 0;    // position in the dataset (send order for closed loop)
  bool warmup = false;  // warmup requests are excluded from every statistic
  bool success = false;
  ErrorKind error_kind = ErrorKind::kNone;
  std::string error_message;  // one example line; empty on success
  int http_status = 0;

  int64_t prompt_len = 0;  // tokens of the prompt as sent (dataset length)
  // Output tokens used for metrics: usage.completion_tokens if the server sent it, else the
  // client's count. 0 for failed requests (vLLM's actual_output_lens).
  int64_t output_len = 0;
  int64_t server_output_tokens = -1;  // usage.completion_tokens; -1 when absent
  int64_t client_output_tokens = -1;  // tokenizer count of the generated text; -1 when not counted
  int64_t expected_output_len = 0;    // max_tokens requested

  // Timestamps (ns, caller's epoch); 0 = did not happen.
  int64_t scheduled_ns = 0;               // when the arrival process said to send
  int64_t send_ns = 0;                    // first request byte handed to the socket
  int64_t first_byte_ns = 0;              // first response byte read
  int64_t first_token_ns = 0;             // first content-bearing SSE event read
  int64_t end_ns = 0;                     // last byte of the response (or failure)
  std::vector<int64_t> content_event_ns;  // each content-bearing event, when its bytes were read
  // Tokens carried by each content event (usage deltas when the server streams usage; else 1).
  std::vector<int32_t> tokens_per_event;
};

// Client self-measurement (filled by the runner; absent in virtual time).
struct ClientHealth {
  double event_loop_lag_p50_ms = 0.0;
  double event_loop_lag_p99_ms = 0.0;
  double event_loop_lag_max_ms = 0.0;
  double cpu_utilization = 0.0;  // the busiest worker thread's busy fraction of the run
  int worker_threads = 0;
  // The client's own delay as it reached the measurements: sends later than scheduled (p90, the
  // closed loop's first wave excluded), and that delay as a share of the median request's life
  // (send delay / median E2EL; the fraction of offered load the client lost).
  double send_delay_p90_ms = 0.0;
  double client_delay_share = 0.0;
  bool saturated = false;  // the measurements were affected: the run is marked invalid
  std::string reason;      // why it is marked saturated; empty otherwise
  std::string warning;     // near a limit without a measurable effect (e.g. a thread busy >= 95 %)
};

// Version of the "ixbench" object of a serve result; raised when a field in it changes meaning.
inline constexpr int kServeResultSchemaVersion = 1;

struct ServeRunInfo {
  // Header fields, as vLLM writes them.
  std::string date;  // "%Y%m%d-%H%M%S", supplied by the caller (no clock here)
  std::string backend;
  std::string model_id;
  std::string tokenizer_id;
  int64_t best_of = 1;
  int64_t num_prompts = 0;
  double request_rate = 0.0;  // +inf = all at once ("inf" in the JSON)
  double burstiness = 1.0;
  std::optional<int64_t> max_concurrency;  // null when unlimited

  // Benchmark window on the records' epoch: dispatch start → last completion.
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  double start_unix_s = 0.0;  // benchmark_start_time_unix / _end_ (InferenceX)
  double end_unix_s = 0.0;

  std::vector<std::string> percentile_metrics = {"ttft", "tpot", "itl", "e2el"};
  std::vector<double> metric_percentiles = {90, 99, 99.9};
  // --goodput: metric ("ttft", "tpot", "e2el") → SLO in ms. Empty = goodput not requested.
  std::map<std::string, double> goodput_slo_ms;

  std::optional<ClientHealth> client;  // "client" object + run validity
  // Fields of the "ixbench" object, appended after its own (server_metrics, profile...).
  boost::json::object extra;
};

// Builds the result object. Top level: exactly the reference client's keys (InferenceX's
// benchmark_serving.py) in its order, plus vLLM's current numeric ones — failed,
// max_output_tokens_per_s, max_concurrent_requests, request_goodput (when --goodput was given) —
// and per-metric mean_/median_/std_/p{P}_ keys in `percentile_metrics` order. InferenceX's
// process_result.py reads every top-level key ending in "ms" as float() and every key holding
// "tpot" as 1000/float(), so none of those is ever a list or null. Everything ixbench adds is in
// "ixbench" {schema_version (kServeResultSchemaVersion), num_warmups_excluded, error_rate,
// error_counts {kind: n}, error_examples {kind: message},
// {mean,median,std,p{P}}_{queue,sched_ttft,sched_e2el,token_itl}_ms (queue = send − scheduled;
// sched_* measured from the scheduled time, coordinated-omission free; token_itl = each gap
// divided by the tokens its event carried, one sample per token),
// {mean,median,max}_tokens_per_chunk, output_token_mismatch {...}, scheduled_offsets_ms,
// client {...}, run_valid, invalid_reasons, then `extra`}. It is a ServeSummary
// (serve_summary.h) fed with every record, samples kept in order (TokenSamples::kEvery).
boost::json::object build_serve_result(const std::vector<RequestRecord>& records, const ServeRunInfo& info);

// One request as a JSON object (for --save-detailed JSONL): times relative to `origin_ns`, in ms.
boost::json::object request_record_to_json(const RequestRecord& record, int64_t origin_ns);

// Console summary in vLLM's layout ("============ Serving Benchmark Result ============").
std::string format_serve_summary(const boost::json::object& result);

}  // namespace ix::metrics
