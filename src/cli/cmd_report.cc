// `ixbench report --db DB --out DIR`: the dashboard as one self-contained HTML file, from the
// results store (docs/dashboard.md). `ixbench report table FILE...`: one console table over raw
// result files.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/report_flags.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "report/dashboard_data.h"
#include "report/dashboard_page.h"
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

struct HtmlOptions {
  DashboardFlags dashboard;
  std::string out;
  store::ResultQuery query;
};

// The inlined data of a static report: what the served page would ask for, of these results only.
std::string report_data(const std::vector<store::ResultRecord>& results, const report::GpuHourCosts& costs,
                        const std::string& source) {
  boost::json::object data{
      {"facets", report::facets_json(report::facets_of(results))},
      {"view", report::view_json(results, costs)},
      {"generated_at", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                                   std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()))},
      {"source", source}};
  return json::to_string(data);
}

int run_html(const HtmlOptions& options) {
  if (options.out.empty()) {
    return report_error(Error(ErrorCode::kInvalidArgument,
                              "report: --out DIR is required (the static HTML report is written to DIR/index.html; "
                              "`ixbench report table FILE...` prints a console table)"));
  }
  auto costs = gpu_hour_costs(options.dashboard);
  if (!costs) return report_error(costs.error());
  const std::filesystem::path dir(options.out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return report_error(
        Error(ErrorCode::kIo, fmt::format("report: cannot create --out {}: {}", options.out, ec.message())));
  const std::filesystem::path page = dir / "index.html";
  if (auto ok = files::check_writable(page); !ok) return report_error(ok.error());
  auto store = store::open_store(options.dashboard.db);
  if (!store) return report_error(store.error());
  auto results = (*store)->latest(options.query);
  if (!results) return report_error(results.error());
  const std::string html = report::render_dashboard_page(
      {.title = options.dashboard.title, .data_json = report_data(*results, *costs, (*store)->describe())});
  if (auto ok = files::write_file(page, html); !ok) return report_error(ok.error());
  fmt::print("{} results -> {}\n", results->size(), page.string());
  return kExitOk;
}

void add_html_flags(CLI::App* group, HtmlOptions& options) {
  add_dashboard_flags(group, options.dashboard);
  group->add_option("--out", options.out, "folder for the static report (written as DIR/index.html)");
  group->add_option("--model", options.query.models, "only these models (model prefix or name; repeatable)");
  group->add_option("--hw", options.query.hardware, "only this hardware (repeatable)");
  group->add_option("--framework", options.query.frameworks, "only this framework (repeatable)");
  group->add_option("--precision", options.query.precisions, "only this precision (repeatable)");
  auto date = CLI::Validator(
      [](const std::string& text) -> std::string {
        auto query = report::query_from_params({{"from", text}});
        return query ? std::string() : query.error().message();
      },
      "YYYY-MM-DD");
  group->add_option("--from", options.query.from_date, "only runs created on or after this date")->check(date);
  group->add_option("--to", options.query.to_date, "only runs created on or before this date")->check(date);
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "report", "reports over stored results");
  auto html = std::make_shared<HtmlOptions>();
  add_html_flags(group, *html);
  registry.on_run(group, [html] { return run_html(*html); });
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
