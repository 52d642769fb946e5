// Telemetry parsing and per-GPU integration. The arithmetic follows the script step by step (same
// operand order, plain left-to-right sums as Python 3.11's sum()), so the doubles come out equal,
// not just close.
#include "metrics/power.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "common/csv.h"
#include "common/strings.h"

namespace ix::metrics::power {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// _NUMBER_RE = -?\d+(?:\.\d+)? matched at `pos`: its length, or 0.
size_t number_at(std::string_view text, size_t pos) {
  size_t i = pos;
  if (i < text.size() && text[i] == '-') ++i;
  const size_t digits = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == digits) return 0;
  if (i + 1 < text.size() && text[i] == '.' && is_digit(text[i + 1])) {
    ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
  }
  return i - pos;
}

double to_double(std::string_view number) {
  return std::strtod(std::string(number).c_str(), nullptr);
}

bool contains_ci(std::string_view text, std::string_view word) {
  return ascii_lower(text).find(word) != std::string::npos;
}

// The value of the column `name` in a row (the last column of that name, as a dict built from
// the header keeps it); "" when the row is short.
std::string_view cell(const std::vector<std::string>& header, const std::vector<std::string>& fields,
                      const std::string& name) {
  for (size_t index = header.size(); index-- > 0;)
    if (header[index] == name) return index < fields.size() ? strip(fields[index]) : std::string_view{};
  return {};
}

// The script's _gpu_sort_key order: digit-only ids by value, before the others by text.
bool gpu_less(const std::string& a, const std::string& b) {
  auto numeric = [](const std::string& id) { return !id.empty() && std::ranges::all_of(id, is_digit); };
  const bool na = numeric(a), nb = numeric(b);
  if (na != nb) return na;
  if (!na) return a < b;
  auto value = [](const std::string& id) {
    return std::string_view(id).substr(std::min(id.find_first_not_of('0'), id.size()));
  };
  const std::string_view va = value(a), vb = value(b);
  return va.size() != vb.size() ? va.size() < vb.size() : va < vb;
}

void append_reason(std::vector<std::string>& reasons, const std::string& reason) {
  if (std::ranges::find(reasons, reason) == reasons.end()) reasons.push_back(reason);
}

// statistics.mean() of one GPU's readings at one timestamp: exact for one or two readings (as
// Python's exact rational mean is), extended precision beyond.
double mean_of(const std::vector<double>& values) {
  if (values.size() == 1) return values[0];
  if (values.size() == 2) return (values[0] + values[1]) / 2.0;
  long double sum = 0;
  for (double v : values) sum += v;
  return static_cast<double>(sum / static_cast<long double>(values.size()));
}

using Samples = std::vector<std::pair<double, double>>;  // (unix s, W), sorted by time

size_t lower_bound_time(const Samples& samples, double t) {
  return static_cast<size_t>(std::ranges::lower_bound(samples, t, {}, &std::pair<double, double>::first) -
                             samples.begin());
}
size_t upper_bound_time(const Samples& samples, double t) {
  return static_cast<size_t>(std::ranges::upper_bound(samples, t, {}, &std::pair<double, double>::first) -
                             samples.begin());
}

// _interpolate_power(): `t` is bracketed by the samples (checked by the caller).
double interpolate_power(const Samples& samples, double t) {
  const size_t right = lower_bound_time(samples, t);
  if (right < samples.size() && std::fabs(samples[right].first - t) <= 1e-9) return samples[right].second;
  const auto& [left_time, left_power] = samples[right - 1];
  const auto& [right_time, right_power] = samples[right];
  const double fraction = (t - left_time) / (right_time - left_time);
  return left_power + fraction * (right_power - left_power);
}

double trapezoid(const Samples& samples) {
  double energy_j = 0.0;
  for (size_t index = 1; index < samples.size(); ++index) {
    const auto& [left_time, left_power] = samples[index - 1];
    const auto& [right_time, right_power] = samples[index];
    energy_j += (right_time - left_time) * (left_power + right_power) / 2.0;
  }
  return energy_j;
}

double integrate_device(const Samples& samples, double start_unix, double end_unix) {
  Samples clipped{{start_unix, interpolate_power(samples, start_unix)}};
  for (const auto& sample : samples)
    if (start_unix < sample.first && sample.first < end_unix) clipped.push_back(sample);
  clipped.emplace_back(end_unix, interpolate_power(samples, end_unix));
  return trapezoid(clipped);
}

// The header and rows of a telemetry CSV as csv.DictReader(skipinitialspace=True) yields them.
struct Table {
  std::vector<std::string> header;
  std::vector<csv::Record> rows;  // empty records dropped
};

Result<Table> read_table(std::string_view text) {
  auto records = csv::read_records(text, {.skip_initial_space = true});
  if (!records) return std::unexpected(records.error());
  Table table;
  if (records->empty()) return table;
  for (const std::string& name : records->front().fields) table.header.emplace_back(strip(name));
  for (size_t index = 1; index < records->size(); ++index)
    if (!(*records)[index].fields.empty()) table.rows.push_back(std::move((*records)[index]));
  return table;
}

std::string header_text(const std::vector<std::string>& header) {
  std::string out;
  for (const std::string& name : header) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Header problems, as the script names them, with what was expected.
std::vector<std::string> missing_columns(const Columns& columns, const Table& table, std::vector<Note>& notes) {
  std::vector<std::string> reasons;
  const std::string seen = fmt::format("the header is '{}'", header_text(table.header));
  auto miss = [&](const char* reason, const char* expected) {
    reasons.emplace_back(reason);
    notes.push_back({1, fmt::format("no {} column: {} (is the header line missing?)", expected, seen)});
  };
  if (!columns.timestamp) miss("timestamp_column_missing", "timestamp (a name holding 'time', e.g. 'timestamp')");
  if (!columns.power)
    miss("power_column_missing", "power (a name holding 'power' but not limit/cap/max/min, e.g. 'power.draw [W]')");
  if (!columns.gpu) miss("gpu_identity_column_missing", "GPU identity ('index', 'gpu', 'gpu_id', 'card' or 'device')");
  return reasons;
}

// Readings per GPU (in order of first appearance) and timestamp.
struct RawSamples {
  std::vector<std::string> order;
  std::map<std::string, std::map<double, std::vector<double>>> by_gpu;
  bool saw_missing_gpu_identity = false;
};

struct Scan {
  double low = 0, high = 0;  // rows outside [low, high] are ignored
  std::vector<std::string>* reasons = nullptr;
  std::vector<Note>* notes = nullptr;
};

void add_row(const Table& table, const Columns& columns, const csv::Record& row, const Scan& scan, RawSamples& raw) {
  const std::string_view ts_text = cell(table.header, row.fields, *columns.timestamp);
  const std::optional<double> timestamp = parse_timestamp(ts_text);
  if (!timestamp || !std::isfinite(*timestamp)) {
    append_reason(*scan.reasons, "invalid_timestamp_sample");
    scan.notes->push_back({row.line, fmt::format("timestamp '{}' is not a time (expected nvidia-smi's "
                                                 "'2026/12/01 10:00:00.123', ISO 8601 or epoch seconds)",
                                                 ts_text)});
    return;
  }
  if (*timestamp < scan.low || *timestamp > scan.high) return;
  const std::string_view power_text = cell(table.header, row.fields, *columns.power);
  const std::optional<double> power = parse_power(power_text);
  if (!power || !std::isfinite(*power) || *power < 0) {
    append_reason(*scan.reasons, "invalid_power_sample");
    scan.notes->push_back(
        {row.line, fmt::format("power '{}' is not a reading (expected watts >= 0, as '412.34 W')", power_text)});
    return;
  }
  const std::string gpu_id(cell(table.header, row.fields, *columns.gpu));
  if (gpu_id.empty()) {
    raw.saw_missing_gpu_identity = true;
    scan.notes->push_back({row.line, fmt::format("no GPU identity in column '{}'", *columns.gpu)});
    return;
  }
  if (!raw.by_gpu.contains(gpu_id)) raw.order.push_back(gpu_id);
  raw.by_gpu[gpu_id][*timestamp].push_back(*power);
}

// Integrates one GPU's samples into `out` (counts, gaps, energy, issues).
void integrate_gpu(const std::string& gpu_id, const Samples& samples, const Window& window, double max_gap,
                   PowerIntegration& out) {
  out.per_gpu_sample_counts.emplace_back(gpu_id, static_cast<int64_t>(samples.size()));
  std::vector<std::string> issues;
  if (samples.size() < 2) {
    issues.emplace_back("insufficient_power_samples");
  } else if (samples.front().first > window.start_unix || samples.back().first < window.end_unix) {
    issues.emplace_back("benchmark_window_not_bracketed");
  } else {
    const size_t left = upper_bound_time(samples, window.start_unix) - 1;
    const size_t right = std::min(lower_bound_time(samples, window.end_unix), samples.size() - 1);
    double max_gap_s = 0.0;
    for (size_t index = left + 1; index <= right; ++index)
      max_gap_s = std::max(max_gap_s, samples[index].first - samples[index - 1].first);
    out.per_gpu_max_sample_gap_s.emplace_back(gpu_id, max_gap_s);
    if (max_gap_s > max_gap) issues.emplace_back("sampling_gap_exceeded");
    out.per_gpu_energy_j.emplace_back(gpu_id, integrate_device(samples, window.start_unix, window.end_unix));
  }
  for (const std::string& issue : issues) append_reason(out.invalid_reasons, issue);
  if (!issues.empty()) out.device_issues.emplace_back(gpu_id, std::move(issues));
}

Samples samples_of(const std::map<double, std::vector<double>>& readings) {
  Samples samples;
  for (const auto& [timestamp, values] : readings) samples.emplace_back(timestamp, mean_of(values));
  return samples;
}

void integrate_devices(const RawSamples& raw, const Window& window, double max_gap, PowerIntegration& out) {
  out.observed_gpu_ids = raw.order;
  std::ranges::stable_sort(out.observed_gpu_ids, gpu_less);
  const auto expected = out.expected_num_gpus;
  if (expected && *expected > 0 && static_cast<int64_t>(out.observed_gpu_ids.size()) != *expected)
    append_reason(out.invalid_reasons, "expected_gpu_count_mismatch");
  for (const std::string& gpu_id : out.observed_gpu_ids)
    integrate_gpu(gpu_id, samples_of(raw.by_gpu.at(gpu_id)), window, max_gap, out);
  if (out.per_gpu_energy_j.size() != out.observed_gpu_ids.size()) return;
  double total = 0.0;
  for (const auto& [gpu_id, energy] : out.per_gpu_energy_j) total += energy;
  out.total_gpu_energy_j = total;
  out.avg_total_gpu_power_w = total / (window.end_unix - window.start_unix);
  out.avg_power_w = *out.avg_total_gpu_power_w / static_cast<double>(out.observed_gpu_ids.size());
}

// The checks made before the file is read: the window, the expected count, the gap, the file.
std::optional<PowerIntegration> precheck(const InputFile& csv, const Window& window, std::optional<int64_t> expected,
                                         double max_gap, std::vector<std::string>& reasons) {
  if (!std::isfinite(window.start_unix) || !std::isfinite(window.end_unix) || window.end_unix <= window.start_unix)
    return empty_integration(expected, {"invalid_benchmark_window"});
  if (expected && *expected <= 0) append_reason(reasons, "invalid_expected_gpu_count");
  if (!std::isfinite(max_gap) || max_gap <= 0) return empty_integration(expected, {"invalid_max_sample_gap"});
  std::optional<std::pair<const char*, std::string>> problem;
  if (csv.state == InputFile::State::kMissing) problem = {"telemetry_file_missing", "no such file"};
  if (csv.state == InputFile::State::kUnreadable) problem = {"telemetry_file_unreadable", csv.error};
  if (csv.state == InputFile::State::kRead && csv.text.empty())
    problem = {"telemetry_file_empty",
               "the file is empty: no header and no samples (expected nvidia-smi's or amd-smi's CSV with its "
               "header line; was the GPU monitor started?)"};
  if (!problem) return std::nullopt;
  append_reason(reasons, problem->first);
  PowerIntegration out = empty_integration(expected, reasons);
  out.notes.push_back({0, problem->second});
  return out;
}

}  // namespace

std::optional<double> parse_power(std::string_view text) {
  text = strip(text);
  const std::string lower = ascii_lower(text);
  if (text.empty() || lower == "[n/a]" || lower == "n/a" || lower == "na") return std::nullopt;
  for (size_t pos = 0; pos < text.size(); ++pos)
    if (const size_t length = number_at(text, pos)) return to_double(text.substr(pos, length));
  return std::nullopt;
}

Columns detect_columns(const std::vector<std::string>& header) {
  Columns columns;
  for (const std::string& name : header) {
    const std::string lower = ascii_lower(name);
    if (!columns.timestamp && contains_ci(name, "time")) columns.timestamp = name;
    const bool excluded =
        std::ranges::any_of(std::vector<std::string_view>{"limit", "cap", "max", "min"},
                            [&](std::string_view word) { return lower.find(word) != std::string::npos; });
    if (!columns.power && contains_ci(name, "power") && !excluded) columns.power = name;
    const std::string stripped = ascii_lower(strip(name));
    if (!columns.gpu && (stripped == "index" || stripped == "gpu" || stripped == "gpu_id" || stripped == "gpu_index" ||
                         stripped == "card" || stripped == "device"))
      columns.gpu = name;
  }
  return columns;
}

PowerIntegration empty_integration(std::optional<int64_t> expected_num_gpus, std::vector<std::string> reasons) {
  PowerIntegration out;
  out.invalid_reasons = std::move(reasons);
  out.expected_num_gpus = expected_num_gpus;
  return out;
}

PowerIntegration integrate_power(const InputFile& csv, double start_unix, double end_unix,
                                 std::optional<int64_t> expected_num_gpus, double max_sample_gap_s) {
  const Window window{start_unix, end_unix};
  std::vector<std::string> reasons;
  if (auto early = precheck(csv, window, expected_num_gpus, max_sample_gap_s, reasons)) return *early;
  std::vector<Note> notes;
  auto table = read_table(csv.text);
  if (!table) {
    append_reason(reasons, "telemetry_file_unreadable");
    PowerIntegration out = empty_integration(expected_num_gpus, reasons);
    out.notes.push_back({0, table.error().message()});
    return out;
  }
  const Columns columns = detect_columns(table->header);
  for (const std::string& reason : missing_columns(columns, *table, notes)) append_reason(reasons, reason);
  if (!columns.timestamp || !columns.power || !columns.gpu) {
    PowerIntegration out = empty_integration(expected_num_gpus, reasons);
    out.notes = std::move(notes);
    return out;
  }
  RawSamples raw;
  const Scan scan{start_unix - max_sample_gap_s, end_unix + max_sample_gap_s, &reasons, &notes};
  for (const csv::Record& row : table->rows) add_row(*table, columns, row, scan, raw);
  if (raw.saw_missing_gpu_identity) append_reason(reasons, "gpu_identity_missing");
  PowerIntegration out = empty_integration(expected_num_gpus, reasons);
  if (raw.by_gpu.empty()) {
    append_reason(out.invalid_reasons, "no_usable_power_samples");
    notes.push_back({0, fmt::format("no usable power sample within {} s of the benchmark window (do the telemetry "
                                    "clock and the window agree?)",
                                    max_sample_gap_s)});
  } else {
    integrate_devices(raw, window, max_sample_gap_s, out);
  }
  out.notes = std::move(notes);
  return out;
}

}  // namespace ix::metrics::power
