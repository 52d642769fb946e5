// The rules InferenceX's agentic aggregation (utils/agentic/aggregation/process_agentic_result.py,
// request_metrics.py, server_metrics.py, backends/) and validation
// (utils/agentic/validation/validate_agentic_result.py) apply to aiperf's artifact directory,
// restated so tests can hold ixbench's artifacts to them (the scripts are not part of this
// project):
//   - artifact directory: <result>/aiperf_artifacts when it holds profile_export.jsonl, else its
//     first child directory (sorted) that does;
//   - profile_export.jsonl: one JSON object per non-blank line; a row is warmup when
//     metadata.benchmark_phase is present and not "profiling"; a truthy `error` drops it, under
//     the category of the first non-empty error.type|error_type|code|class|status, else the text
//     of the message's first line before ':' (at most 120 characters);
//   - kept rows feed metrics by name: metrics.<name> is {value, unit} (or a bare number);
//     throughput and QPS read metadata.request_start_ns / request_end_ns (truthy ints);
//   - validation reads profile_export_aiperf.json: request_count, error_request_count and
//     completed_request_count must be objects whose avg is a finite number >= 0; it fails when
//     completed <= 0 or errors / completed > threshold;
//   - server metrics: the backend is the first of dynamo (framework dynamo* or a dynamo_ name),
//     atom (atom: / atom_), sglang (sglang:), vllm (vllm:); with no metrics, the framework's name;
//     metrics present with no backend make the aggregation raise.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace ix::testing {

std::filesystem::path agentic_artifact_dir(const std::filesystem::path& result_dir);

struct AgenticRecords {
  std::vector<boost::json::object> kept;  // profiled rows without an error
  int64_t records_total = 0;
  int64_t records_profiled = 0;
  int64_t records_dropped_total = 0;
  int64_t records_warmup_dropped = 0;
  int64_t records_error_dropped = 0;
  std::map<std::string, int64_t> error_categories;
};

// load_records_with_accounting(); an error when a line is not a JSON object.
ix::Result<AgenticRecords> agentic_load_records(const std::filesystem::path& jsonl);

// A kept row's metric value as the aggregation reads it (float(value)); nullopt when absent.
std::optional<double> agentic_metric_value(const boost::json::object& row, const std::string& name);

// validate_agentic_result's messages for the directory; empty when it passes.
std::vector<std::string> agentic_validate(const std::filesystem::path& artifact_dir, double failed_request_threshold);

// The backend name detect_backend() picks ("none" when no metrics and none matches), or the
// error the aggregation would raise.
ix::Result<std::string> agentic_server_backend(const boost::json::object& server_metrics, const std::string& framework);

// request_metrics.cache.theoretical_cache_hit_rate from the aggregate, or nullopt.
std::optional<double> agentic_theoretical_hit_rate(const boost::json::object& aggregate);

}  // namespace ix::testing
