// aiperf's artifact layout for `bench replay`, so InferenceX's agentic aggregation
// (utils/agentic/aggregation/process_agentic_result.py) and validation
// (utils/agentic/validation/validate_agentic_result.py) read ixbench's output unchanged. In one
// directory (InferenceX passes <result dir>/aiperf_artifacts):
//
//   profile_export.jsonl        one line per request, warmup, profiling and error rows, streamed
//                               as requests complete:
//                                 {"metadata": {benchmark_phase "warmup"|"profiling",
//                                   request_start_ns, request_end_ns (wall clock ns),
//                                   conversation_id, turn_index, x_correlation_id, session_num,
//                                   lane, agent_depth, turn_depth, scheduled_ns (wall clock, when
//                                   given), was_cancelled},
//                                  "metrics": {time_to_first_token, request_latency,
//                                   inter_token_latency (ms), input_sequence_length,
//                                   output_sequence_length (tokens): {value, unit}; a metric
//                                   without a value is left out},
//                                  "error": null | {type, code, message}}
//                               (requests never sent, over --max-context-length, are not rows)
//   profile_export_aiperf.json  aggregate of the profiling phase: request_count (successes),
//                               error_request_count, completed_request_count ({unit
//                               "requests", avg}; requests the client cancelled, at the
//                               duration's grace or a signal, are in cancelled_request_count,
//                               not in these: validate_agentic_result judges the server), request_throughput,
//                               output_token_throughput, benchmark_duration, theoretical_prefix_cache_hit {unit "%",
//                               avg, count (total blocks), sum (hit blocks)}, time_to_first_token, request_latency,
//                               inter_token_latency, input_sequence_length, output_sequence_length ({unit, avg, min,
//                               max, std, p1, p5, p10, p25, p50, p75, p90, p95, p99}; numpy statistics), start_time and
//                               end_time (ISO 8601, UTC with its "+00:00" offset), metadata
//                               {scenario, submission_valid, submission_invalid_reasons,
//                               dataset}
//   server_metrics_export.json  (+ .csv) from time-stamped Prometheus scrapes (see
//                               ServerMetricsCollector)
//
// Thread-safety: ProfileExportWriter and ServerMetricsCollector are used from one thread at a
// time; the rest are pure functions, except the write_* functions, which write files.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file_io.h"
#include "metrics/replay_result.h"

namespace ix::bench {

inline constexpr std::string_view kProfileExportFile = "profile_export.jsonl";
inline constexpr std::string_view kAiperfAggregateFile = "profile_export_aiperf.json";
inline constexpr std::string_view kServerMetricsJsonFile = "server_metrics_export.json";
inline constexpr std::string_view kServerMetricsCsvFile = "server_metrics_export.csv";

// One profile_export.jsonl row. `steady_to_unix_ns` is added to the record's steady-clock stamps
// to make them wall-clock ns.
boost::json::object profile_export_row(const metrics::ReplayRecord& record, int64_t steady_to_unix_ns);

// Streams profile_export.jsonl: rows are buffered and appended to the file every kFlushBytes (and
// on flush/close), so a long run holds little in memory and a crash loses at most one buffer.
// A failed write returns the error (path and the OS's reason) and keeps the rows not yet
// written, which the next write or flush tries again; what reached the file stays there.
class ProfileExportWriter {
 public:
  static constexpr size_t kFlushBytes = size_t{64} << 10;

  // Creates `dir` when missing and `dir`/profile_export.jsonl (truncated).
  static Result<ProfileExportWriter> open(const std::filesystem::path& dir);

  // Appends one row; a record with skipped_context is not a request and writes nothing.
  Result<void> write(const metrics::ReplayRecord& record, int64_t steady_to_unix_ns);
  Result<void> flush();
  Result<void> close();  // flush, then sync and close the file
  int64_t rows() const { return rows_; }
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  explicit ProfileExportWriter(files::AppendFile file) : file_(std::move(file)) {}
  files::AppendFile file_;
  std::string buffer_;
  int64_t rows_ = 0;
};

struct AiperfAggregateInfo {
  int64_t steady_to_unix_ns = 0;
  std::string scenario = "inferencex-agentx-mvp";
  bool submission_valid = true;
  std::vector<std::string> submission_invalid_reasons;
  // aiperf's {source_type, loader, hf_dataset_name, hf_split, num_dataset_entries}; left out
  // when empty.
  boost::json::object dataset;
};

// "2026-01-02T03:04:05.123456+00:00" for a wall-clock ns stamp.
std::string iso8601_utc(int64_t unix_ns);

// profile_export_aiperf.json's object, from the profiling phase of `samples`.
boost::json::object build_aiperf_aggregate(std::span<const metrics::ReplaySample> samples,
                                           const AiperfAggregateInfo& info);

// One scrape of a Prometheus /metrics endpoint: its URL, when it was read (wall-clock ns), and
// the exposition text.
struct ServerScrape {
  std::string endpoint_url;
  int64_t unix_ns = 0;
  std::string text;
  double fetch_latency_ms = 0.0;  // how long the fetch took, when measured
};

struct ServerMetricsWindow {
  int64_t start_unix_ns = 0;  // the profiling window: stats cover [start, end]
  int64_t end_unix_ns = 0;
  double slice_duration_s = 1.0;                  // --slice-duration
  std::vector<std::string> endpoints_configured;  // --server-metrics URLs (the scraped ones when empty)
  std::string benchmark_id;
};

// Collects scrapes as they arrive (each is parsed at once; its text is not kept) and builds
// server_metrics_export.json:
//   {schema_version "1.0", aiperf_version "ixbench", benchmark_id,
//    summary {endpoints_configured, endpoints_successful, start_time, end_time, endpoint_info
//      {url: {total_fetches, first_fetch_ns, last_fetch_ns, avg_fetch_latency_ms, unique_updates,
//      first_update_ns, last_update_ns, duration_seconds, avg_update_interval_ms,
//      median_update_interval_ms}}},
//    metrics {name: {type, description, series [{endpoint_url, labels, stats, timeslices}]}}}
// Names are the Prometheus family names, counters without `_total`. Stats cover the window:
// gauge {avg, min, max, std, p1, p5, p10, p25, p50, p75, p90, p95, p99} of the scrapes in it;
// counter {total (Δ from the last scrape before the window, else the first in it, to the last in
// it; a reset counts from 0), rate (total / window s)}; histogram {count, sum, avg, count_rate,
// sum_rate, p50_estimate, p90_estimate, p95_estimate, p99_estimate (linear within the bucket of
// Δcounts)} and the series' "buckets" {le: Δcount}. Timeslices of slice_duration_s from the
// window's start: gauge {avg, min, max}, counter {total, rate}, histogram {count, sum, avg},
// each with start_ns, end_ns and is_complete; a slice without scrapes is left out.
// Untyped families are exported as gauges; summary families are left out.
class ServerMetricsCollector {
 public:
  void add(const ServerScrape& scrape);
  boost::json::object build(const ServerMetricsWindow& window) const;

  struct Point {
    int64_t unix_ns = 0;
    double value = 0.0;
  };
  struct HistogramPoint {
    int64_t unix_ns = 0;
    double count = 0.0;
    double sum = 0.0;
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative count), le ascending
  };
  struct Series {
    std::string endpoint_url;
    std::vector<std::pair<std::string, std::string>> labels;
    std::vector<Point> points;              // gauge, counter
    std::vector<HistogramPoint> histogram;  // histogram
  };
  struct Metric {
    std::string type;
    std::string description;
    std::map<std::string, Series> series;  // by endpoint and label set
  };
  struct Endpoint {
    std::vector<int64_t> fetch_ns;
    std::vector<int64_t> update_ns;  // scrapes whose text differed from the previous one
    double fetch_latency_ms_sum = 0.0;
    size_t last_text_hash = 0;
  };

 private:
  std::map<std::string, Metric> metrics_;
  std::map<std::string, Endpoint> endpoints_;
};

// The CSV beside the JSON: one row per series statistic:
// metric,type,endpoint_url,labels,stat,value (labels as k=v;k=v).
std::string server_metrics_csv(const boost::json::object& server_metrics_export);

// The server's prefix-cache counters over the window, from the export: Σ stats.total of
// vllm:prefix_cache_hits and vllm:prefix_cache_queries; nullopt when either is missing.
std::optional<metrics::ServerPrefixCacheDelta> realized_prefix_cache(const boost::json::object& server_metrics_export);

// Writes profile_export_aiperf.json into `dir` (created when missing).
Result<void> write_aiperf_aggregate(const std::filesystem::path& dir, const boost::json::object& aggregate);
// Writes server_metrics_export.json and .csv into `dir` (created when missing).
Result<void> write_server_metrics_export(const std::filesystem::path& dir, const boost::json::object& server_metrics);

}  // namespace ix::bench
