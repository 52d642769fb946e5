#include "report/results_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <vector>

namespace ix::report {
namespace {

Result<double> number(const boost::json::object& result, std::string_view key) {
  const auto* value = result.if_contains(key);
  if (value == nullptr) return fail(ErrorCode::kInvalidArgument, fmt::format("missing key '{}'", key));
  if (value->is_null()) return 0.0;  // statistics of an empty set are written as null
  if (!value->is_number()) return fail(ErrorCode::kInvalidArgument, fmt::format("key '{}' must be a number", key));
  return value->to_number<double>();
}

std::string cell(std::optional<double> value, int precision) {
  if (!value) return "-";
  return fmt::format("{:.{}f}", *value, precision);
}

}  // namespace

Result<ResultRow> row_from_result(const boost::json::object& result, std::string label, std::optional<int> num_gpus) {
  ResultRow row;
  row.label = std::move(label);
  auto read = [&](std::string_view key, double& out) -> Result<void> {
    auto value = number(result, key);
    if (!value) return fail(value.error());
    out = *value;
    return {};
  };
  double max_concurrency = 0, completed = 0, failed = 0;
  for (auto [key, out] : std::initializer_list<std::pair<std::string_view, double*>>{
           {"completed", &completed},
           {"request_throughput", &row.request_throughput},
           {"output_throughput", &row.output_throughput},
           {"total_token_throughput", &row.total_token_throughput},
           {"median_ttft_ms", &row.median_ttft_ms},
           {"median_tpot_ms", &row.median_tpot_ms},
           {"p99_itl_ms", &row.p99_itl_ms},
           {"median_e2el_ms", &row.median_e2el_ms}}) {
    if (auto ok = read(key, *out); !ok) return fail(ok.error());
  }
  if (result.contains("max_concurrency") && !result.at("max_concurrency").is_null()) {
    if (auto ok = read("max_concurrency", max_concurrency); !ok) return fail(ok.error());
  }
  if (result.contains("failed")) {
    if (auto ok = read("failed", failed); !ok) return fail(ok.error());
  }
  row.max_concurrency = static_cast<int64_t>(max_concurrency);
  row.completed = static_cast<int64_t>(completed);
  row.failed = static_cast<int64_t>(failed);
  std::optional<int> gpus = num_gpus;
  if (!gpus && result.contains("num_gpus") && result.at("num_gpus").is_int64()) {
    gpus = static_cast<int>(result.at("num_gpus").get_int64());
  }
  if (gpus && *gpus > 0) row.tput_per_gpu = row.total_token_throughput / *gpus;
  if (row.median_tpot_ms > 0) row.interactivity = 1000.0 / row.median_tpot_ms;
  if (const auto* valid = result.if_contains("valid"); valid && valid->is_bool() && !valid->get_bool()) {
    row.note = "INVALID";
    if (const auto* reason = result.if_contains("invalid_reason"); reason && reason->is_string()) {
      row.note += std::string(": ") + std::string(reason->get_string());
    }
  }
  return row;
}

std::string render_table(std::span<const ResultRow> input) {
  std::vector<ResultRow> rows(input.begin(), input.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ResultRow& a, const ResultRow& b) { return a.max_concurrency < b.max_concurrency; });
  std::string out = fmt::format("{:>6} {:>6} {:>6} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n",
                                "conc", "ok", "failed", "req/s", "out tok/s", "total tok/s", "tok/s/GPU", "TTFT p50",
                                "TPOT p50", "ITL p99", "E2EL p50", "tok/s/user", "run");
  out += fmt::format("{:>6} {:>6} {:>6} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "", "", "",
                     "", "", "", "", "(ms)", "(ms)", "(ms)", "(s)", "");
  for (const auto& row : rows) {
    out += fmt::format(
        "{:>6} {:>6} {:>6} {:>9.2f} {:>11.1f} {:>11.1f} {:>10} {:>10.1f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10}  {}{}\n",
        row.max_concurrency, row.completed, row.failed, row.request_throughput, row.output_throughput,
        row.total_token_throughput, cell(row.tput_per_gpu, 1), row.median_ttft_ms, row.median_tpot_ms, row.p99_itl_ms,
        row.median_e2el_ms / 1000.0, cell(row.interactivity, 1), row.label, row.note.empty() ? "" : "  " + row.note);
  }
  return out;
}

}  // namespace ix::report
