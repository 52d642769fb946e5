#include "report/gpu_cost.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <charconv>
#include <cmath>

#include "common/json_io.h"
#include "report/web_assets.h"

namespace ix::report {

std::optional<double> GpuHourCosts::lookup(std::string_view hw) const {
  if (auto found = usd_per_gpu_hour.find(std::string(hw)); found != usd_per_gpu_hour.end()) return found->second;
  const size_t dash = hw.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  if (auto found = usd_per_gpu_hour.find(std::string(hw.substr(0, dash))); found != usd_per_gpu_hour.end()) {
    return found->second;
  }
  return std::nullopt;
}

Result<GpuHourCosts> parse_gpu_hour_costs(std::string_view json_text, std::string_view origin) {
  auto value = json::parse(json_text, origin);
  if (!value) return fail(value.error());
  const auto* table = value->is_object() ? value->get_object().if_contains("usd_per_gpu_hour") : nullptr;
  if (table == nullptr || !table->is_object()) {
    return fail(ErrorCode::kParse,
                fmt::format("{}: expected an object {{\"usd_per_gpu_hour\": {{\"h200\": 3.79, ...}}}}", origin));
  }
  GpuHourCosts costs;
  for (const auto& [hw, usd] : table->get_object()) {
    if (!usd.is_number() || !std::isfinite(usd.to_number<double>()) || usd.to_number<double>() <= 0) {
      return fail(ErrorCode::kParse,
                  fmt::format("{}: usd_per_gpu_hour.{}: expected a number > 0", origin, std::string_view(hw)));
    }
    costs.usd_per_gpu_hour[std::string(hw)] = usd.to_number<double>();
  }
  return costs;
}

const GpuHourCosts& default_gpu_hour_costs() {
  static const GpuHourCosts costs = [] {
    auto parsed = parse_gpu_hour_costs(embedded_gpu_hour_cost_json(), "data/report/gpu_hour_cost.json");
    return parsed ? *parsed : GpuHourCosts{};  // the build checks the shipped file (report tests)
  }();
  return costs;
}

Result<void> apply_gpu_hour_cost(GpuHourCosts& costs, std::string_view hw_equals_usd) {
  const size_t eq = hw_equals_usd.find('=');
  const std::string_view hw = hw_equals_usd.substr(0, eq);
  double usd = 0;
  bool ok = eq != std::string_view::npos && !hw.empty();
  if (ok) {
    const std::string_view text = hw_equals_usd.substr(eq + 1);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), usd);
    ok = ec == std::errc() && end == text.data() + text.size() && std::isfinite(usd) && usd > 0;
  }
  if (!ok) {
    return fail(
        ErrorCode::kInvalidArgument,
        fmt::format("--gpu-hour-cost '{}': expected HW=USD with USD a number > 0 (e.g. h200=3.79)", hw_equals_usd));
  }
  costs.usd_per_gpu_hour[std::string(hw)] = usd;
  return {};
}

std::optional<double> cost_per_million_tokens(std::optional<double> usd_per_gpu_hour,
                                              std::optional<double> tokens_per_s_per_gpu) {
  if (!usd_per_gpu_hour || !tokens_per_s_per_gpu || !std::isfinite(*tokens_per_s_per_gpu) ||
      *tokens_per_s_per_gpu <= 0) {
    return std::nullopt;
  }
  return *usd_per_gpu_hour / (*tokens_per_s_per_gpu * 3600.0) * 1e6;
}

}  // namespace ix::report
