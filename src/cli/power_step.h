// The power step of `ixbench power` and `ixbench aggregate`: reads the telemetry CSV, the raw
// result and the accumulator snapshots, measures (metrics/power.h), patches the record, writes the
// validation sidecar and reports, as aggregate_power.py's run() does. Best effort by default: an
// invalid measurement is recorded (power_valid 0 and the reasons in the sidecar) and the exit
// status stays 0; with require_power it is 1 once the artifacts are written.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "metrics/power.h"

namespace ix::cli {

struct PowerStepOptions {
  std::filesystem::path csv;
  std::optional<std::filesystem::path> bench_result;  // window and counts (nullopt: `window` only)
  std::optional<metrics::power::Window> window;       // replaces the raw result's window
  std::optional<int64_t> expected_num_gpus;
  std::filesystem::path validation_result;  // the sidecar
  bool require_power = false;
  std::string command;  // names the command in messages
};

// The sidecar's default path: power_validation_<stem>.json beside `file` (the raw result, or the
// CSV when there is none).
std::filesystem::path default_validation_path(const std::filesystem::path& file);

// Reads the files and measures.
metrics::power::PowerEvaluation measure_power(const PowerStepOptions& options);

// The record with its power fields, or nullopt with the evaluation invalidated
// (aggregate_result_unwritable) when a metric is not finite.
std::optional<boost::json::object> patch_record(metrics::power::PowerEvaluation& evaluation,
                                                const boost::json::object& record);

// Patches the record file in place (atomically); a missing or unreadable record invalidates the
// evaluation (aggregate_result_missing / aggregate_result_unwritable) and is left as it is.
void patch_record_file(metrics::power::PowerEvaluation& evaluation, const std::filesystem::path& record_path,
                       const std::string& command);

// The cross-check, the sidecar and the messages (per-row notes with file:line on stderr, the
// verdict); returns the exit status.
int finish_power_step(const metrics::power::PowerEvaluation& evaluation, const PowerStepOptions& options);

}  // namespace ix::cli
