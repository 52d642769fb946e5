// The benchmark side of a power measurement (window and counts from the raw result), the record
// patch, the validation sidecar and the accumulator cross-check, as aggregate_power.py writes them.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "common/csv.h"
#include "common/json_io.h"
#include "common/strings.h"
#include "metrics/power.h"

namespace ix::metrics::power {
namespace {

namespace bj = boost::json;

constexpr std::string_view kMetricKeys[] = {"avg_power_w",
                                            "avg_total_gpu_power_w",
                                            "total_gpu_energy_j",
                                            "joules_per_successful_query",
                                            "joules_per_input_token",
                                            "joules_per_output_token",
                                            "joules_per_total_token"};

bool is_number(const bj::value* v) {
  return v && (v->is_int64() || v->is_uint64() || v->is_double());
}

double number_of(const bj::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.get_double();
}

// A positive integer count (`bool` is no integer in JSON); 0 with `reason` otherwise.
int64_t count_of(const bj::object& bench, std::string_view key, const char* reason, std::vector<std::string>& reasons) {
  const bj::value* v = bench.if_contains(key);
  if (v && v->is_int64() && v->get_int64() > 0) return v->get_int64();
  if (v && v->is_uint64()) return static_cast<int64_t>(std::min<uint64_t>(v->get_uint64(), INT64_MAX));
  if (std::ranges::find(reasons, reason) == reasons.end()) reasons.emplace_back(reason);
  return 0;
}

std::optional<BenchmarkData> window_of(const bj::object& bench) {
  const bj::value* start = bench.if_contains("benchmark_start_time_unix");
  const bj::value* end = bench.if_contains("benchmark_end_time_unix");
  const bj::value* duration = bench.if_contains("duration");
  if (!is_number(start) || !is_number(end) || !is_number(duration)) return std::nullopt;
  BenchmarkData data{number_of(*start), number_of(*end), number_of(*duration), {}, {}, {}};
  if (!std::isfinite(data.start_unix) || !std::isfinite(data.end_unix) || !std::isfinite(data.reported_duration_s) ||
      data.end_unix <= data.start_unix || data.reported_duration_s <= 0)
    return std::nullopt;
  return data;
}

std::optional<bj::object> parse_object(const InputFile& file) {
  if (file.state != InputFile::State::kRead) return std::nullopt;
  auto value = json::parse(file.text);
  if (!value || !value->is_object()) return std::nullopt;
  return value->as_object();
}

// float() of a cell: decimal text with '_' between digits; hex and other forms refused.
std::optional<double> python_float(std::string_view text) {
  text = strip(text);
  std::string clean;
  for (size_t index = 0; index < text.size(); ++index) {
    const char c = text[index];
    if (c == '_') {
      const bool between = index > 0 && index + 1 < text.size() &&
                           std::isdigit(static_cast<unsigned char>(text[index - 1])) &&
                           std::isdigit(static_cast<unsigned char>(text[index + 1]));
      if (!between) return std::nullopt;
      continue;
    }
    if (c == 'x' || c == 'X' || c == 'p' || c == 'P') return std::nullopt;
    clean += c;
  }
  if (clean.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return value;
}

std::string_view cell(const std::vector<std::string>& header, const std::vector<std::string>& fields,
                      std::string_view name) {
  for (size_t index = header.size(); index-- > 0;)
    if (header[index] == name) return index < fields.size() ? strip(fields[index]) : std::string_view{};
  return {};
}

struct CsvRows {
  std::vector<std::string> header;
  std::vector<csv::Record> rows;
};

// nullopt: the file could not be read (the script's OSError / csv.Error).
std::optional<CsvRows> rows_of(const InputFile& file) {
  if (file.state != InputFile::State::kRead) return std::nullopt;
  auto records = csv::read_records(file.text, {.skip_initial_space = true});
  if (!records) return std::nullopt;
  CsvRows out;
  for (size_t index = 0; index < records->size(); ++index) {
    auto& record = (*records)[index];
    if (index == 0) {
      for (const std::string& name : record.fields) out.header.emplace_back(strip(name));
    } else if (!record.fields.empty()) {
      out.rows.push_back(std::move(record));
    }
  }
  return out;
}

using Energies = std::vector<std::pair<std::string, double>>;

// _read_energy_snapshot(): GPU -> accumulator joules, in first-seen order; empty: unparseable.
Energies energy_snapshot(const CsvRows& table) {
  Energies out;
  if (std::ranges::find(table.header, "gpu") == table.header.end() ||
      std::ranges::find(table.header, "total_energy_consumption") == table.header.end())
    return out;
  for (const csv::Record& row : table.rows) {
    const std::string gpu(cell(table.header, row.fields, "gpu"));
    const auto joules = python_float(cell(table.header, row.fields, "total_energy_consumption"));
    if (gpu.empty() || !joules || !std::isfinite(*joules)) continue;
    auto it = std::ranges::find(out, gpu, &std::pair<std::string, double>::first);
    if (it == out.end()) {
      out.emplace_back(gpu, *joules);
    } else {
      it->second = *joules;
    }
  }
  return out;
}

bool gpu_less(const std::string& a, const std::string& b) {
  auto numeric = [](const std::string& id) {
    return !id.empty() && std::ranges::all_of(id, [](char c) { return c >= '0' && c <= '9'; });
  };
  const bool na = numeric(a), nb = numeric(b);
  if (na != nb) return na;
  if (!na) return a < b;
  auto value = [](const std::string& id) {
    return std::string_view(id).substr(std::min(id.find_first_not_of('0'), id.size()));
  };
  const std::string_view va = value(a), vb = value(b);
  return va.size() != vb.size() ? va.size() < vb.size() : va < vb;
}

std::vector<std::string> sorted_ids(std::vector<std::string> ids) {
  std::ranges::stable_sort(ids, gpu_less);
  return ids;
}

using Stream = std::map<std::string, std::vector<std::pair<double, double>>>;

// _stream_samples_by_gpu(): every readable (time, W) sample per GPU, sorted, no window.
Stream stream_samples(const CsvRows& table) {
  Stream out;
  const Columns columns = detect_columns(table.header);
  if (!columns.timestamp || !columns.power || !columns.gpu) return out;
  for (const csv::Record& row : table.rows) {
    const auto timestamp = parse_timestamp(cell(table.header, row.fields, *columns.timestamp));
    const auto power = parse_power(cell(table.header, row.fields, *columns.power));
    const std::string gpu(cell(table.header, row.fields, *columns.gpu));
    if (!timestamp || !power || gpu.empty() || !std::isfinite(*timestamp) || !std::isfinite(*power)) continue;
    out[gpu].emplace_back(*timestamp, *power);
  }
  for (auto& [gpu, samples] : out) std::ranges::sort(samples);
  return out;
}

double trapezoid(const std::vector<std::pair<double, double>>& samples) {
  double energy_j = 0.0;
  for (size_t index = 1; index < samples.size(); ++index)
    energy_j +=
        (samples[index].first - samples[index - 1].first) * (samples[index - 1].second + samples[index].second) / 2.0;
  return energy_j;
}

bj::array string_array(const std::vector<std::string>& items) {
  bj::array out;
  for (const std::string& item : items) out.emplace_back(item);
  return out;
}

bj::object unavailable(std::string_view reason) {
  return {{"available", false}, {"reason", reason}};
}

// The comparison itself, once both snapshots are read.
bj::object compare_accumulator(const Energies& start, const Energies& end, const Stream& stream) {
  std::vector<std::string> matched, unmatched, negative, integrated;
  auto has = [](const Energies& e, const std::string& id) {
    return std::ranges::find(e, id, &std::pair<std::string, double>::first) != e.end();
  };
  for (const auto& [id, joules] : start) (has(end, id) ? matched : unmatched).push_back(id);
  for (const auto& [id, joules] : end)
    if (!has(start, id)) unmatched.push_back(id);
  matched = sorted_ids(matched);
  unmatched = sorted_ids(unmatched);
  bj::object per_gpu_delta;
  double accumulator_delta_j = 0.0;
  for (const std::string& id : matched) {
    const double delta = std::ranges::find(end, id, &std::pair<std::string, double>::first)->second -
                         std::ranges::find(start, id, &std::pair<std::string, double>::first)->second;
    per_gpu_delta[id] = delta;
    accumulator_delta_j += delta;
    if (delta < 0) negative.push_back(id);
    if (stream.contains(id)) integrated.push_back(id);
  }
  integrated = sorted_ids(integrated);
  double integrated_stream_j = 0.0;
  std::vector<double> boundaries;
  for (const std::string& id : integrated) {
    const auto& samples = stream.at(id);
    integrated_stream_j += trapezoid(samples);
    boundaries.push_back(samples.front().first);
    boundaries.push_back(samples.back().first);
  }
  const double span_s =
      boundaries.empty() ? 0.0 : *std::ranges::max_element(boundaries) - *std::ranges::min_element(boundaries);
  bj::value relative_error = nullptr;
  bool within = false;
  if (accumulator_delta_j > 0) {
    const double error = std::fabs(accumulator_delta_j - integrated_stream_j) / accumulator_delta_j;
    relative_error = error;
    within = negative.empty() && error <= kAccumulatorTolerance;
  }
  return {{"available", true},
          {"accumulator_delta_j", accumulator_delta_j},
          {"integrated_stream_j", integrated_stream_j},
          {"relative_error", relative_error},
          {"within_tolerance", within},
          {"tolerance", kAccumulatorTolerance},
          {"per_gpu_delta_j", per_gpu_delta},
          {"integrated_gpu_ids", string_array(integrated)},
          {"unmatched_gpus", string_array(unmatched)},
          {"negative_delta_gpus", string_array(negative)},
          {"stream_span_s", span_s}};
}

bj::value optional_count(const std::optional<int64_t>& count) {
  return count ? bj::value(*count) : bj::value(nullptr);
}

bj::object benchmark_window(const BenchmarkData& b) {
  return {{"start_time_unix", b.start_unix},
          {"end_time_unix", b.end_unix},
          {"reported_duration_s", b.reported_duration_s},
          {"integration_duration_s", b.integration_duration_s()},
          {"completed", optional_count(b.completed)},
          {"total_input_tokens", optional_count(b.total_input_tokens)},
          {"total_output_tokens", optional_count(b.total_output_tokens)}};
}

template <typename T>
bj::object ordered_object(const std::vector<std::pair<std::string, T>>& items) {
  bj::object out;
  for (const auto& [key, value] : items) out[key] = value;
  return out;
}

bj::object device_issues(const PowerIntegration& integration) {
  bj::object out;
  for (const auto& [gpu, issues] : integration.device_issues) out[gpu] = string_array(issues);
  return out;
}

}  // namespace

BenchmarkLoad load_benchmark_data(const std::optional<InputFile>& raw, const std::optional<Window>& window) {
  if (!raw) {
    if (!window) return {std::nullopt, {"invalid_benchmark_window"}};
    return {BenchmarkData{window->start_unix, window->end_unix, window->end_unix - window->start_unix, {}, {}, {}}, {}};
  }
  const std::optional<bj::object> bench = parse_object(*raw);
  if (!bench) return {std::nullopt, {"invalid_benchmark_result"}};
  std::optional<BenchmarkData> data =
      window ? BenchmarkData{window->start_unix, window->end_unix, window->end_unix - window->start_unix, {}, {}, {}}
             : window_of(*bench);
  if (!data) return {std::nullopt, {"invalid_benchmark_window"}};
  std::vector<std::string> reasons;
  const double integration = data->integration_duration_s();
  if (std::fabs(data->reported_duration_s - integration) > std::max(0.5, integration * 0.01))
    reasons.emplace_back("benchmark_duration_mismatch");
  data->completed = count_of(*bench, "completed", "invalid_successful_query_count", reasons);
  data->total_input_tokens = count_of(*bench, "total_input_tokens", "invalid_input_token_count", reasons);
  data->total_output_tokens = count_of(*bench, "total_output_tokens", "invalid_output_token_count", reasons);
  return {data, reasons};
}

Ordered derived_metrics(const PowerIntegration& integration, const BenchmarkData& benchmark) {
  const double energy = integration.total_gpu_energy_j.value_or(NAN);
  Ordered out{{"avg_power_w", integration.avg_power_w.value_or(NAN)},
              {"avg_total_gpu_power_w", integration.avg_total_gpu_power_w.value_or(NAN)},
              {"total_gpu_energy_j", energy}};
  if (!benchmark.completed || !benchmark.total_input_tokens || !benchmark.total_output_tokens) return out;
  const auto as_double = [](int64_t n) { return static_cast<double>(n); };
  out.emplace_back("joules_per_successful_query", energy / as_double(*benchmark.completed));
  out.emplace_back("joules_per_input_token", energy / as_double(*benchmark.total_input_tokens));
  out.emplace_back("joules_per_output_token", energy / as_double(*benchmark.total_output_tokens));
  out.emplace_back("joules_per_total_token",
                   energy / as_double(*benchmark.total_input_tokens + *benchmark.total_output_tokens));
  return out;
}

std::optional<bj::object> patch_power_record(const bj::object& record, bool power_valid, const Ordered& metrics) {
  bj::object out;
  for (const auto& [key, value] : record) {
    const bool metric = std::ranges::find(kMetricKeys, std::string_view(key)) != std::end(kMetricKeys);
    if (!metric && key != "power_invalid_reasons") out[key] = value;
  }
  out["power_metric_schema_version"] = kPowerMetricSchemaVersion;
  out["power_valid"] = power_valid ? 1 : 0;
  if (!power_valid) return out;
  for (const auto& [key, value] : metrics) {
    if (!std::isfinite(value)) return std::nullopt;
    const bool watts_or_joules = key.ends_with("_w") || key.ends_with("_j");
    out[key] = python_round(value, watts_or_joules ? 3 : 6);
  }
  return out;
}

std::optional<bj::object> cross_check_accumulator(const InputFile& csv, const InputFile& start_snapshot,
                                                  const InputFile& end_snapshot) {
  const bool start_exists = start_snapshot.state != InputFile::State::kMissing;
  const bool end_exists = end_snapshot.state != InputFile::State::kMissing;
  if (!start_exists && !end_exists) return std::nullopt;
  if (!start_exists) return unavailable("missing_start_snapshot");
  if (!end_exists) return unavailable("missing_end_snapshot");
  const auto start_rows = rows_of(start_snapshot);
  if (!start_rows) return unavailable("cross_check_error");
  const Energies start = energy_snapshot(*start_rows);
  if (start.empty()) return unavailable("unparseable_start_snapshot");
  const auto end_rows = rows_of(end_snapshot);
  if (!end_rows) return unavailable("cross_check_error");
  const Energies end = energy_snapshot(*end_rows);
  if (end.empty()) return unavailable("unparseable_end_snapshot");
  const auto stream_rows = rows_of(csv);
  if (!stream_rows) return unavailable("cross_check_error");
  return compare_accumulator(start, end, stream_samples(*stream_rows));
}

void PowerEvaluation::invalidate(const std::string& reason) {
  if (std::ranges::find(reasons, reason) == reasons.end()) reasons.push_back(reason);
  metrics.clear();
}

PowerEvaluation evaluate_power(const BenchmarkLoad& benchmark, const InputFile& csv,
                               std::optional<int64_t> expected_num_gpus) {
  PowerEvaluation out;
  out.benchmark = benchmark.data;
  out.integration = benchmark.data
                        ? integrate_power(csv, benchmark.data->start_unix, benchmark.data->end_unix, expected_num_gpus)
                        : empty_integration(expected_num_gpus, benchmark.reasons);
  out.reasons = benchmark.reasons;
  for (const std::string& reason : out.integration.invalid_reasons)
    if (std::ranges::find(out.reasons, reason) == out.reasons.end()) out.reasons.push_back(reason);
  if (out.power_valid() && out.benchmark) out.metrics = derived_metrics(out.integration, *out.benchmark);
  return out;
}

bj::object validation_payload(const PowerEvaluation& evaluation, std::string_view telemetry_source,
                              const std::optional<std::string>& bench_result,
                              const std::optional<bj::object>& accumulator_check) {
  const PowerIntegration& integration = evaluation.integration;
  bj::object metrics;
  for (const auto& [key, value] : evaluation.metrics)
    if (std::isfinite(value)) metrics[key] = python_round(value, 6);
  return {
      {"schema_version", kValidationSchemaVersion},
      {"power_valid", evaluation.power_valid()},
      {"reasons", string_array(evaluation.reasons)},
      {"telemetry_source", telemetry_source},
      {"benchmark_result", bench_result ? bj::value(*bench_result) : bj::value(nullptr)},
      {"benchmark_window", evaluation.benchmark ? bj::value(benchmark_window(*evaluation.benchmark)) : nullptr},
      {"integration_method", kIntegrationMethod},
      {"expected_gpu_count", optional_count(integration.expected_num_gpus)},
      {"observed_gpu_count", static_cast<int64_t>(integration.observed_gpu_ids.size())},
      {"observed_gpu_ids", string_array(integration.observed_gpu_ids)},
      {"per_gpu_sample_counts", ordered_object(integration.per_gpu_sample_counts)},
      {"per_gpu_max_sample_gap_s", ordered_object(integration.per_gpu_max_sample_gap_s)},
      {"per_gpu_energy_j", ordered_object(integration.per_gpu_energy_j)},
      {"device_issues", device_issues(integration)},
      {"accumulator_check", accumulator_check ? bj::value(*accumulator_check) : nullptr},
      {"metrics", metrics},
  };
}

std::string python_path_string(std::string_view path) {
  std::string root;
  if (path.starts_with("//") && !path.starts_with("///")) {
    root = "//";
  } else if (path.starts_with('/')) {
    root = "/";
  }
  std::string out = root;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t slash = std::min(path.find('/', pos), path.size());
    const std::string_view part = path.substr(pos, slash - pos);
    if (!part.empty() && part != ".") out += (out.size() > root.size() ? "/" : "") + std::string(part);
    pos = slash + 1;
  }
  return out.empty() ? "." : out;
}

double python_round(double value, int digits) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return std::strtod(buffer, nullptr);
}

}  // namespace ix::metrics::power
