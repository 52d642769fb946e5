// Dollars per GPU-hour by hardware, for the dashboard's cost per million tokens:
//   cost = usd_per_gpu_hour / (tokens/s/GPU * 3600) * 1e6
// (the GPU count cancels: throughput is already per GPU). The shipped table
// (data/report/gpu_hour_cost.json, compiled in) holds illustrative list prices; users pass their
// own per hardware (`--gpu-hour-cost h200=3.5`) or as a file of the same format.
//
// Thread-safety: plain values and functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace ix::report {

struct GpuHourCosts {
  std::map<std::string, double> usd_per_gpu_hour;
  // The price of `hw`: its own entry, else the entry of its name before the first '-' (runner
  // names such as h200-cw or gb200-nvl72), else none.
  std::optional<double> lookup(std::string_view hw) const;
};

// {"usd_per_gpu_hour": {"h200": 3.79, ...}}; `origin` names the text in errors.
Result<GpuHourCosts> parse_gpu_hour_costs(std::string_view json_text, std::string_view origin);
// The table compiled into the binary.
const GpuHourCosts& default_gpu_hour_costs();
// "HW=USD" (USD a finite number > 0) sets or replaces one entry.
Result<void> apply_gpu_hour_cost(GpuHourCosts& costs, std::string_view hw_equals_usd);

// Dollars per million tokens at `tokens_per_s_per_gpu`; none when either input is missing or not
// positive.
std::optional<double> cost_per_million_tokens(std::optional<double> usd_per_gpu_hour,
                                              std::optional<double> tokens_per_s_per_gpu);

}  // namespace ix::report
