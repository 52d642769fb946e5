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
  std::string label;  // usually the result file's stem
  int64_t max_concurrency = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  double request_throughput = 0;       // requests/s
  double output_throughput = 0;        // tokens/s
  double total_token_throughput = 0;   // input + output tokens/s
  std::optional<double> tput_per_gpu;  // total tokens/s/GPU, when the GPU count is known
  double median_ttft_ms = 0;
  double median_tpot_ms = 0;
  double p99_itl_ms = 0;
  double median_e2el_ms = 0;
  std::optional<double> interactivity;  // 1000 / median_tpot_ms (tokens/s/user)
  std::string note;                     // e.g. "INVALID: client saturated"
};

// Reads the fields above from a raw result object. `num_gpus` (> 0) enables tput_per_gpu; a
// result's own "num_gpus" field is used when `num_gpus` is not given. Missing required keys are an
// error naming the key.
Result<ResultRow> row_from_result(const boost::json::object& result, std::string label, std::optional<int> num_gpus);

// Fixed-width text table sorted by concurrency (stable), newline-terminated.
std::string render_table(std::span<const ResultRow> rows);

}  // namespace ix::report
