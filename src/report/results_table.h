// Console table of benchmark results: one row per raw result (SPEC §4 schema, as written by
// `ixbench bench serve` or `ixbench sim predict`), the headline numbers of a throughput-vs-latency
// sweep side by side.
#pragma once

#include <boost/json/fwd.hpp>
#include <optional>
#include <span>
#include <string>

#include "common/error.h"

namespace ix::report {

struct ResultRow {
  std::string label;                       // usually the result file's stem
  std::optional<int64_t> max_concurrency;  // null in a request-rate run
  std::optional<double> request_rate;      // requests/s of an open-loop run (+inf: all at once)
  int64_t completed = 0;
  int64_t failed = 0;
  double request_throughput = 0;       // requests/s
  double output_throughput = 0;        // tokens/s
  double total_token_throughput = 0;   // input + output tokens/s
  std::optional<double> tput_per_gpu;  // total tokens/s/GPU, when the GPU count is known
  // Latency statistics: absent when the result does not hold them (--percentile-metrics /
  // --metric-percentiles left them out) or when no request completed.
  std::optional<double> median_ttft_ms;
  std::optional<double> median_tpot_ms;
  std::optional<double> p99_itl_ms;
  std::optional<double> median_e2el_ms;
  std::optional<double> interactivity;  // 1000 / median_tpot_ms (tokens/s/user)
  std::string note;                     // e.g. "INVALID: client saturated"
};

// Reads the fields above from a raw result object. `num_gpus` (> 0) enables tput_per_gpu; a
// result's own "num_gpus" field is used when `num_gpus` is not given. Missing required keys
// (counts and throughputs) are an error naming the key; counts must be integers in range.
Result<ResultRow> row_from_result(const boost::json::object& result, std::string label, std::optional<int> num_gpus);

// Fixed-width text table, newline-terminated: concurrency runs by concurrency, then request-rate
// runs by rate (stable).
std::string render_table(std::span<const ResultRow> rows);

}  // namespace ix::report
