// GPU board power -> energy over a benchmark window (SPEC §9), exactly as InferenceX's
// utils/aggregate_power.py computes it: the same validity rules, reason codes, values, rounding
// and field names, so a record patched by ixbench and one patched by the script are the same.
//
// Input: a telemetry CSV as `nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv
// -l 1` or `amd-smi metric ... --csv` write it (read as Python's csv.DictReader with
// skipinitialspace). Columns: the first whose name holds "time" (timestamp), the first holding
// "power" but none of limit/cap/max/min (watts; the first number of the cell, "[N/A]" is no
// reading), and one named index|gpu|gpu_id|gpu_index|card|device (GPU identity).
//
// Rules (per GPU): rows with a timestamp more than the maximum gap (3 s) outside the window are
// ignored; any other row whose timestamp or power cannot be read, or whose power is negative,
// makes the result invalid; readings of one GPU at one timestamp are averaged; every GPU must
// have two samples and bracket both window edges, and no two consecutive samples around the
// window may be more than the gap apart. Energy per GPU is the trapezoidal integral of power over
// [start, end], with power at the edges linearly interpolated. Totals are over all GPUs seen:
// avg_total_gpu_power_w = energy / duration, avg_power_w = that / number of GPUs; the per-token
// and per-query figures divide the whole energy by the raw result's counts.
//
// Everything here is computation on texts already read: the caller reads and writes the files
// (src/cli/power_step.h). Thread-safety: plain functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ix::metrics::power {

inline constexpr double kDefaultMaxSampleGapS = 3.0;
inline constexpr double kAccumulatorTolerance = 0.05;
inline constexpr int64_t kPowerMetricSchemaVersion = 2;  // power_metric_schema_version in the record
inline constexpr int64_t kValidationSchemaVersion = 1;   // schema_version of the sidecar
inline constexpr std::string_view kIntegrationMethod = "per_device_trapezoidal_with_linear_boundary_interpolation";

// A file as the caller found it: missing (no regular file), unreadable (with the OS's reason), or
// its text.
struct InputFile {
  enum class State { kMissing, kUnreadable, kRead };
  State state = State::kMissing;
  std::string text;
  std::string error;  // kUnreadable: why

  static InputFile missing() { return {}; }
  static InputFile read(std::string text) { return {State::kRead, std::move(text), {}}; }
  static InputFile unreadable(std::string why) { return {State::kUnreadable, {}, std::move(why)}; }
};

// Unix seconds of a timestamp cell, as the script reads it: epoch seconds (milliseconds above
// 1e12), nvidia-smi's "YYYY/MM/DD HH:MM:SS[.ffffff]" (local time), or ISO 8601 as Python 3.11's
// datetime.fromisoformat reads it (local time without an offset). nullopt: not a time.
std::optional<double> parse_timestamp(std::string_view cell);

// Python 3.11's datetime.fromisoformat(text) as Unix seconds, as CPython forms them for an aware
// time (whole microseconds / 1e6): a time with an offset by its offset, one without it (naive) at
// `naive_offset_s` seconds east of UTC. nullopt: not a time fromisoformat reads, or naive with no
// offset to apply. `naive`, when given, says whether the text had no offset.
std::optional<double> iso_to_unix(std::string_view text, std::optional<int64_t> naive_offset_s, bool* naive = nullptr);

// Watts of a power cell: the first number in it ("412.34 W"); nullopt for "", "[N/A]", "N/A", "NA"
// or no number.
std::optional<double> parse_power(std::string_view cell);

struct Columns {
  std::optional<std::string> timestamp;
  std::optional<std::string> power;
  std::optional<std::string> gpu;
};
Columns detect_columns(const std::vector<std::string>& header);

// Why a row or the file made the result invalid, for the user: 0 = the file, else its line.
struct Note {
  size_t line = 0;
  std::string message;
};

using Ordered = std::vector<std::pair<std::string, double>>;  // key order is output order

struct PowerIntegration {
  std::vector<std::string> invalid_reasons;  // in the order found; empty: valid
  std::optional<int64_t> expected_num_gpus;
  std::vector<std::string> observed_gpu_ids;  // numeric ids first (by value), then the others
  std::vector<std::pair<std::string, int64_t>> per_gpu_sample_counts;
  Ordered per_gpu_max_sample_gap_s;
  Ordered per_gpu_energy_j;
  std::vector<std::pair<std::string, std::vector<std::string>>> device_issues;
  std::optional<double> avg_power_w;
  std::optional<double> avg_total_gpu_power_w;
  std::optional<double> total_gpu_energy_j;
  std::vector<Note> notes;

  bool power_valid() const { return invalid_reasons.empty(); }
};

// An invalid integration with these reasons and no device data.
PowerIntegration empty_integration(std::optional<int64_t> expected_num_gpus, std::vector<std::string> reasons);

// Integrates `csv` over [start_unix, end_unix] (integrate_power() of the script).
PowerIntegration integrate_power(const InputFile& csv, double start_unix, double end_unix,
                                 std::optional<int64_t> expected_num_gpus,
                                 double max_sample_gap_s = kDefaultMaxSampleGapS);

// The window and counts energy is normalised by (the raw result's benchmark_start_time_unix,
// benchmark_end_time_unix, duration, completed, total_input_tokens, total_output_tokens).
struct BenchmarkData {
  double start_unix = 0;
  double end_unix = 0;
  double reported_duration_s = 0;
  std::optional<int64_t> completed;  // nullopt: no raw result (a window given by hand)
  std::optional<int64_t> total_input_tokens;
  std::optional<int64_t> total_output_tokens;
  double integration_duration_s() const { return end_unix - start_unix; }
};

struct Window {
  double start_unix = 0;
  double end_unix = 0;
};

struct BenchmarkLoad {
  std::optional<BenchmarkData> data;  // nullopt: no usable window
  std::vector<std::string> reasons;
};

// The script's _load_benchmark_data() on the raw result's text. With `window`, its start and end
// replace the raw result's (whose window fields are then not read), and with no raw result
// (`raw` nullopt) the counts stay unknown.
BenchmarkLoad load_benchmark_data(const std::optional<InputFile>& raw, const std::optional<Window>& window);

// The whole-deployment metrics of a valid measurement (avg_power_w, avg_total_gpu_power_w,
// total_gpu_energy_j, then joules_per_successful_query, _input_token, _output_token,
// _total_token when the counts are known).
Ordered derived_metrics(const PowerIntegration& integration, const BenchmarkData& benchmark);

// The record with its power fields replaced: the metric keys and power_invalid_reasons removed
// (the others keep their places), power_metric_schema_version and power_valid set, and with a
// valid measurement the metrics appended, rounded as the script rounds them (3 decimals for *_w
// and *_j, 6 for the rest). nullopt: a metric is not finite (the script's
// aggregate_result_unwritable).
std::optional<boost::json::object> patch_power_record(const boost::json::object& record, bool power_valid,
                                                      const Ordered& metrics);

// The advisory cross-check of an amd-smi energy accumulator (<stem>_energy_start.csv and
// <stem>_energy_end.csv beside the CSV) against the integral of the whole stream; nullopt when
// neither snapshot exists. It never changes power_valid.
std::optional<boost::json::object> cross_check_accumulator(const InputFile& csv, const InputFile& start_snapshot,
                                                           const InputFile& end_snapshot);

// One power measurement, as the script's run() reaches its verdict.
struct PowerEvaluation {
  std::optional<BenchmarkData> benchmark;
  PowerIntegration integration;
  std::vector<std::string> reasons;  // benchmark reasons, then the integration's
  Ordered metrics;                   // empty unless valid
  bool power_valid() const { return reasons.empty(); }
  // Invalidates the measurement for a reason found after it (the record missing or unwritable).
  void invalidate(const std::string& reason);
};

PowerEvaluation evaluate_power(const BenchmarkLoad& benchmark, const InputFile& csv,
                               std::optional<int64_t> expected_num_gpus);

// The validation sidecar (power_validation_<stem>.json). `bench_result` nullopt: no raw result.
boost::json::object validation_payload(const PowerEvaluation& evaluation, std::string_view telemetry_source,
                                       const std::optional<std::string>& bench_result,
                                       const std::optional<boost::json::object>& accumulator_check);

// Python's str(pathlib.Path(text)): repeated slashes and "." components dropped.
std::string python_path_string(std::string_view path);

// Python's round(value, digits) for a finite double (correctly rounded, ties to even).
double python_round(double value, int digits);

}  // namespace ix::metrics::power
