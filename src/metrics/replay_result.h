// What an agentic trace replay (`ixbench bench replay`, SPEC §6) measured: the record the runner
// hands over for each request, the compact sample kept of it, and the result object built from
// the samples.
//
// The numbers are those InferenceX's utils/agentic/aggregation/process_agentic_result.py derives
// from aiperf's artifacts, computed the same way, so the result and the aggregate agree:
//   - per request (aiperf's definitions): TTFT = first content event − send; request latency
//     (E2EL) = end − send; ITL = (latency − TTFT) / (OSL − 1), only when OSL ≥ 2. ISL is
//     usage.prompt_tokens when the server sent it, else the prompt length sent; OSL is the output
//     length of the record (usage.completion_tokens, else the client's count);
//   - warmup and error records are excluded from every metric but counted;
//   - statistics: mean, p50, p75, p90, p95, p99 and std (population), percentiles by linear
//     interpolation between closest ranks (k = (n−1)·p/100), over the values that are finite and
//     > 0, in seconds (milliseconds / 1000, as the aggregation converts aiperf's exported ms).
//
// A 100,000-request run keeps one ReplaySample (72 bytes) per request; the records themselves
// are streamed to disk as they complete (bench/aiperf_export.h).
//
// Thread-safety: plain values and pure functions; no I/O, no clock.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/serve_result.h"

namespace ix::metrics {

enum class ReplayPhase { kWarmup, kProfiling };
// "warmup" | "profiling" (aiperf's metadata.benchmark_phase).
std::string_view replay_phase_name(ReplayPhase phase);

// One request the replay sent (or skipped), as the runner hands it over on completion.
struct ReplayRecord {
  RequestRecord rec;                  // metrics/serve_result.h: send_ns, first_token_ns, end_ns, content_event_ns,
                                      // tokens_per_event, prompt_len (ISL), output_len (OSL), success, error_kind,
                                      // error_message, http_status; steady-clock ns
  int64_t server_prompt_tokens = -1;  // usage.prompt_tokens when the server sent it
  ReplayPhase phase = ReplayPhase::kProfiling;
  std::string conversation_id;  // "<trace id>" for a root stream, "<trace id>::sa:<agent>" for a subagent
  int64_t turn_index = 0;       // turn's index in its conversation
  std::string correlation_id;   // X-Correlation-ID sent (unique per stream and tree play)
  int64_t session_num = 0;      // which tree play (0, 1, ... in start order)
  int64_t lane = 0;
  int depth = 0;           // 0 root, 1 subagent of the root, ...
  int64_t turn_depth = 0;  // turns of this tree play sent before this one (for TTFT by depth)
  int64_t hit_blocks = 0;  // theoretical prefix-cache hit: leading hash blocks already seen in the tree
  int64_t total_blocks = 0;
  int64_t scheduled_ns = 0;      // when the schedule said to send (open-loop: the trace timestamp)
  bool skipped_context = false;  // over --max-context-length: never sent, counted
};

// The input sequence length of a record: usage.prompt_tokens when the server sent it, else the
// prompt length sent.
int64_t replay_isl(const ReplayRecord& record);

// The error type a failed request is exported and counted under (aiperf's error.type, the
// aggregation's error category): "RequestCancellationError" for a cancelled request (aiperf's
// name), else error_kind_name() ("http_status", "timeout", ...).
std::string replay_error_type(ErrorKind kind);

// The compact per-request sample. Times are steady-clock ns (the records' epoch); 0 = absent.
struct ReplaySample {
  int64_t start_ns = 0;         // send
  int64_t end_ns = 0;           // last response byte (or failure)
  int64_t ttft_ns = 0;          // first content event − send; 0 when no content arrived
  int64_t schedule_lag_ns = 0;  // send − scheduled; 0 when no schedule was given
  int32_t isl = 0;
  int32_t osl = 0;
  int32_t hit_blocks = 0;
  int32_t total_blocks = 0;
  int32_t session_num = 0;
  int32_t turn_depth = 0;
  ReplayPhase phase = ReplayPhase::kProfiling;
  ErrorKind error = ErrorKind::kNone;
  bool ok = false;               // a successful request (error == kNone)
  bool scheduled = false;        // scheduled_ns was given
  bool skipped_context = false;  // never sent: over --max-context-length

  bool profiled() const { return phase == ReplayPhase::kProfiling && !skipped_context; }
  // Milliseconds, as aiperf exports them; nullopt where aiperf writes no value.
  std::optional<double> ttft_ms() const;
  std::optional<double> latency_ms() const;
  std::optional<double> itl_ms() const;  // needs osl ≥ 2 and a TTFT
};

ReplaySample make_replay_sample(const ReplayRecord& record);

// Counters of the server's prefix cache over the profiling window (Δ of
// vllm:prefix_cache_hits / vllm:prefix_cache_queries, or the equivalent), in tokens.
struct ServerPrefixCacheDelta {
  double hits = 0.0;
  double queries = 0.0;
};

// Version of the replay result object; raised when a field changes meaning.
inline constexpr int kReplayResultSchemaVersion = 1;

struct ReplayRunInfo {
  int64_t num_gpus = 0;                    // per-GPU throughput when > 0 (TP·PP·PCP)
  double failed_request_threshold = 0.10;  // --failed-request-threshold
  double benchmark_duration_s = 0.0;       // --benchmark-duration; 0: the measured window is used
  double min_submission_duration_s = 900.0;
  double max_context_overflow_share = 0.01;  // above it the run is not submission-valid
  bool open_loop = false;                    // schedule lag is reported
  std::optional<ServerPrefixCacheDelta> server_prefix_cache;
  std::vector<std::string> client_invalid_reasons;  // e.g. the client saturated
};

// The result object. Keys (every statistic object is {mean, p50, p75, p90, p95, p99, std}; an
// object of a metric without values is empty, as the aggregation writes it):
//   schema_version                kReplayResultSchemaVersion
//   num_requests_total            every record sent: warmup, profiling, errors (records_total)
//   num_requests_successful       profiled successful requests (records_profiled)
//   request_accounting            {records_total, records_profiled, records_dropped_total,
//                                 records_warmup_dropped, records_error_dropped,
//                                 error_categories {category: n}}, named and counted as
//                                 process_agentic_result does (a warmup error counts in both
//                                 dropped counts; categories are the aiperf export's error types)
//   request_metrics               as process_agentic_result's request_metrics:
//     qps                         {window_seconds 1.0, samples, mean, p50, p75, p90, p95, p99,
//                                 std}: completions per 1 s window from the first completion,
//                                 while a full window fits; {mean: n / span} when none fits
//     latency                     {ttft, e2el, itl, tpot (= itl), intvty, e2e_norm_intvty} in s;
//                                 intvty.q = 1 / itl.q and intvty.std = std(1 / itl_i);
//                                 e2e_norm_intvty.q = 1 / q(e2el_i / osl_i), std = std(osl_i / e2el_i)
//     tokens                      {input, output_actual}: statistics of ISL and OSL
//     throughput                  {input, output, total: {tokens_per_second}, duration_seconds,
//                                 per_gpu {total_tput_tps, output_tput_tps, input_tput_tps}}
//                                 over max(end) − min(start) of profiled successful requests
//                                 (per_gpu empty without num_gpus)
//     cache                       {theoretical_cache_hit_rate}: profiling phase, hit / total blocks
//   prefix_cache                  {theoretical {warmup, profiling: {hit_blocks, total_blocks,
//                                 hit_rate}}, realized {hits, queries, hit_rate} from the server's
//                                 counters over the profiling window, or null when not given}
//   schedule_lag_ms               open loop only: {count, mean, p50, p90, p99, max} of send −
//                                 scheduled over profiled requests
//   sessions                      {makespan_s {count, mean, p50, p90}: per tree play, max(end) −
//                                 min(send) of its profiled requests; ttft_by_turn_depth_s
//                                 {"0", "1", "2-3", "4-7", "8-15", "16+": {count, p50, p90}}}
//   validity                      {submission_valid, reasons [...], completed (profiled
//                                 successes + errors), errors, cancelled (stopped by the
//                                 client: the duration's grace, a signal; neither errors nor
//                                 completed), error_rate,
//                                 failed_request_threshold, duration_seconds (as judged),
//                                 context_overflow {count, share}}. Reasons:
//                                 error_rate_exceeded, no_completed_requests,
//                                 duration_below_minimum, context_overflow_rate_exceeded, then
//                                 the client's own
boost::json::object build_replay_result(std::span<const ReplaySample> samples, const ReplayRunInfo& info);

// Statistics as the aggregation computes them (mean, linear-interpolated percentiles,
// population std; 0 for no values). Exposed for tests and the exporter.
double agentic_percentile(std::span<const double> sorted, double p);

}  // namespace ix::metrics
