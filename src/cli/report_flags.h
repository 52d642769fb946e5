// The flags `report` (static HTML) and `dashboard` (served) share: the store, the $/GPU-hour table
// and the page title.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "report/gpu_cost.h"

namespace ix::cli {

struct DashboardFlags {
  std::string db;
  std::vector<std::string> gpu_hour_costs;  // HW=USD
  std::string gpu_hour_cost_file;
  std::string title = "ixbench results";
};

void add_dashboard_flags(CLI::App* command, DashboardFlags& flags);

// The shipped table, then the file's entries, then each HW=USD (later ones win).
Result<report::GpuHourCosts> gpu_hour_costs(const DashboardFlags& flags);

}  // namespace ix::cli
