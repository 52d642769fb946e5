#include "cli/report_flags.h"

#include "common/file_io.h"
#include "store/store.h"

namespace ix::cli {

void add_dashboard_flags(CLI::App* command, DashboardFlags& flags) {
  flags.db = store::kDefaultStoreLocation;
  command->add_option("--db", flags.db, "results store: a file, sqlite:PATH or postgresql://...")
      ->capture_default_str();
  command->add_option("--gpu-hour-cost", flags.gpu_hour_costs,
                      "USD per GPU-hour for one hardware, HW=USD (repeatable; replaces the shipped price)");
  command
      ->add_option(
          "--gpu-hour-cost-file", flags.gpu_hour_cost_file,
          "a JSON file {\"usd_per_gpu_hour\": {\"h200\": 3.79, ...}} (data/report/gpu_hour_cost.json's format)")
      ->check(CLI::ExistingFile);
  command->add_option("--title", flags.title, "the page title")->capture_default_str();
}

Result<report::GpuHourCosts> gpu_hour_costs(const DashboardFlags& flags) {
  report::GpuHourCosts costs = report::default_gpu_hour_costs();
  if (!flags.gpu_hour_cost_file.empty()) {
    auto text = files::read_text_file(flags.gpu_hour_cost_file, size_t{1} << 20, "a GPU-hour cost file");
    if (!text) return fail(text.error());
    auto file = report::parse_gpu_hour_costs(*text, flags.gpu_hour_cost_file);
    if (!file) return fail(file.error());
    for (const auto& [hw, usd] : file->usd_per_gpu_hour) costs.usd_per_gpu_hour[hw] = usd;
  }
  for (const auto& entry : flags.gpu_hour_costs) {
    if (auto ok = report::apply_gpu_hour_cost(costs, entry); !ok) return fail(ok.error());
  }
  return costs;
}

}  // namespace ix::cli
