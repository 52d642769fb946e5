// `ixbench report table FILE...`: one console table over raw result files.
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/json_io.h"
#include "report/results_table.h"

namespace ix::cli {
namespace {

struct TableOptions {
  std::vector<std::string> files;
  int num_gpus = 0;
};

int run_table(const TableOptions& options) {
  std::vector<report::ResultRow> rows;
  for (const auto& file : options.files) {
    auto value = json::read_file(file);
    if (!value) return report_error(value.error());
    if (!value->is_object()) {
      return report_error(Error(ErrorCode::kInvalidArgument, file + ": expected a JSON object (a raw result file)"));
    }
    auto row = report::row_from_result(value->get_object(), std::filesystem::path(file).stem().string(),
                                       options.num_gpus > 0 ? std::optional<int>(options.num_gpus) : std::nullopt);
    if (!row) return report_error(row.error().with_context(file));
    rows.push_back(std::move(*row));
  }
  std::fputs(report::render_table(rows).c_str(), stdout);
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "report", "reports over stored results");
  auto* table = group->add_subcommand("table", "print a results table (one row per raw result JSON file)");
  auto options = std::make_shared<TableOptions>();
  table->add_option("files", options->files, "raw result files (bench serve / sim predict output)")
      ->required()
      ->check(CLI::ExistingFile);
  table->add_option("--gpus", options->num_gpus, "GPU count for tokens/s/GPU (default: the result's num_gpus)")
      ->check(CLI::Range(1, 1'000'000).description("an integer >= 1"));
  registry.on_run(table, [options] { return run_table(*options); });
}

}  // namespace

IX_REGISTER_COMMAND(report, setup);

}  // namespace ix::cli
