#include "report/results_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace ix::report {
namespace {

Result<double> number(const boost::json::object& result, std::string_view key) {
  const auto* value = result.if_contains(key);
  if (value == nullptr) return fail(ErrorCode::kInvalidArgument, fmt::format("missing key '{}'", key));
  if (value->is_null()) return 0.0;
  if (!value->is_number()) return fail(ErrorCode::kInvalidArgument, fmt::format("key '{}' must be a number", key));
  return value->to_number<double>();
}

// A statistic: absent or null (an empty set) reads as unknown.
Result<std::optional<double>> statistic(const boost::json::object& result, std::string_view key) {
  const auto* value = result.if_contains(key);
  if (value == nullptr || value->is_null()) return std::optional<double>{};
  if (!value->is_number()) return fail(ErrorCode::kInvalidArgument, fmt::format("key '{}' must be a number", key));
  return std::optional<double>(value->to_number<double>());
}

// A count: a whole number that fits (a double outside int64 is undefined behaviour to convert).
Result<int64_t> count(const boost::json::object& result, std::string_view key) {
  auto value = number(result, key);
  if (!value) return fail(value.error());
  constexpr double kMax = 9.0e15;  // exactly representable integers
  if (!(*value >= 0 && *value <= kMax) || std::floor(*value) != *value)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("key '{}' must be a whole number in [0, 9e15], got {}", key, *value));
  return static_cast<int64_t>(*value);
}

std::string cell(std::optional<double> value, int precision) {
  if (!value) return "-";
  return fmt::format("{:.{}f}", *value, precision);
}

}  // namespace

Result<ResultRow> row_from_result(const boost::json::object& result, std::string label, std::optional<int> num_gpus) {
  ResultRow row;
  row.label = std::move(label);
  for (auto [key, out] : std::initializer_list<std::pair<std::string_view, double*>>{
           {"request_throughput", &row.request_throughput},
           {"output_throughput", &row.output_throughput},
           {"total_token_throughput", &row.total_token_throughput}}) {
    auto value = number(result, key);
    if (!value) return fail(value.error());
    *out = *value;
  }
  auto completed = count(result, "completed");
  if (!completed) return fail(completed.error());
  row.completed = *completed;
  if (result.contains("failed")) {
    auto failed = count(result, "failed");
    if (!failed) return fail(failed.error());
    row.failed = *failed;
  }
  if (result.contains("max_concurrency") && !result.at("max_concurrency").is_null()) {
    auto conc = count(result, "max_concurrency");
    if (!conc) return fail(conc.error());
    row.max_concurrency = *conc;
  }
  if (const auto* rate = result.if_contains("request_rate")) {
    if (rate->is_number()) row.request_rate = rate->to_number<double>();
    if (rate->is_string() && rate->get_string() == "inf") row.request_rate = std::numeric_limits<double>::infinity();
  }
  for (auto [key, out] : std::initializer_list<std::pair<std::string_view, std::optional<double>*>>{
           {"median_ttft_ms", &row.median_ttft_ms},
           {"median_tpot_ms", &row.median_tpot_ms},
           {"p99_itl_ms", &row.p99_itl_ms},
           {"median_e2el_ms", &row.median_e2el_ms}}) {
    auto value = statistic(result, key);
    if (!value) return fail(value.error());
    // With no completed request the writers put 0 (vLLM) or null: neither is a latency.
    *out = row.completed > 0 ? *value : std::nullopt;
  }
  std::optional<int> gpus = num_gpus;
  if (!gpus) {
    if (const auto* field = result.if_contains("num_gpus"); field && field->is_number()) {
      const double value = field->to_number<double>();
      if (value >= 1 && value <= 1e6 && std::floor(value) == value) gpus = static_cast<int>(value);
    }
  }
  if (gpus && *gpus > 0) row.tput_per_gpu = row.total_token_throughput / *gpus;
  if (row.median_tpot_ms && *row.median_tpot_ms > 0) row.interactivity = 1000.0 / *row.median_tpot_ms;
  // The result writer's keys (ixbench.run_valid, ixbench.invalid_reasons); at the top level, and
  // "valid"/"invalid_reason", as older files spell them.
  const auto* own_value = result.if_contains("ixbench");
  const boost::json::object& own = own_value && own_value->is_object() ? own_value->as_object() : result;
  const auto* valid = own.if_contains("run_valid");
  if (!valid) valid = result.if_contains("run_valid");
  if (!valid) valid = result.if_contains("valid");
  if (valid && valid->is_bool() && !valid->get_bool()) {
    row.note = "INVALID";
    std::string reasons;
    const auto* list = own.if_contains("invalid_reasons");
    if (!list) list = result.if_contains("invalid_reasons");
    if (list && list->is_array()) {
      for (const auto& reason : list->get_array())
        if (reason.is_string()) reasons += (reasons.empty() ? "" : "; ") + std::string(reason.get_string());
    } else if (const auto* reason = result.if_contains("invalid_reason"); reason && reason->is_string()) {
      reasons = std::string(reason->get_string());
    }
    if (!reasons.empty()) row.note += ": " + reasons;
  } else if (row.completed == 0) {
    row.note = "NO REQUEST COMPLETED";
  } else if (row.failed * 20 > row.completed + row.failed) {
    row.note = fmt::format("FAILED: {} of {} requests", row.failed, row.completed + row.failed);
  }
  return row;
}

std::string render_table(std::span<const ResultRow> input) {
  std::vector<ResultRow> rows(input.begin(), input.end());
  std::stable_sort(rows.begin(), rows.end(), [](const ResultRow& a, const ResultRow& b) {
    if (a.max_concurrency.has_value() != b.max_concurrency.has_value()) return a.max_concurrency.has_value();
    if (a.max_concurrency) return *a.max_concurrency < *b.max_concurrency;
    return a.request_rate.value_or(0) < b.request_rate.value_or(0);
  });
  std::string out = fmt::format("{:>6} {:>6} {:>6} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}\n",
                                "conc", "ok", "failed", "req/s", "out tok/s", "total tok/s", "tok/s/GPU", "TTFT p50",
                                "TPOT p50", "ITL p99", "E2EL p50", "tok/s/user", "run");
  out += fmt::format("{:>6} {:>6} {:>6} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "", "", "",
                     "", "", "", "", "(ms)", "(ms)", "(ms)", "(s)", "");
  for (const auto& row : rows) {
    std::string label = row.label;
    if (!row.max_concurrency && row.request_rate) {
      label += std::isinf(*row.request_rate) ? " (rate inf)" : fmt::format(" (rate {:g} req/s)", *row.request_rate);
    }
    const std::optional<double> e2el_s =
        row.median_e2el_ms ? std::optional<double>(*row.median_e2el_ms / 1000.0) : std::nullopt;
    out += fmt::format(
        "{:>6} {:>6} {:>6} {:>9.2f} {:>11.1f} {:>11.1f} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}{}\n",
        row.max_concurrency ? std::to_string(*row.max_concurrency) : "-", row.completed, row.failed,
        row.request_throughput, row.output_throughput, row.total_token_throughput, cell(row.tput_per_gpu, 1),
        cell(row.median_ttft_ms, 1), cell(row.median_tpot_ms, 2), cell(row.p99_itl_ms, 2), cell(e2el_s, 2),
        cell(row.interactivity, 1), label, row.note.empty() ? "" : "  " + row.note);
  }
  return out;
}

}  // namespace ix::report
