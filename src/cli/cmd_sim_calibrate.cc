// `ixbench sim calibrate`: fits the simulator's efficiency factors and overheads on measured
// points and writes calibration.json (src/sim/fit.h), printing the residual table.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <optional>

#include "cli/command.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "sim/fit.h"

namespace ix::cli {
namespace {

struct CalibrateFlags {
  std::string csv;
  std::string out;
  bool holdout = false;
  int32_t holdout_series = 0;
  int32_t iterations = 2;
  int32_t max_prompts = 200;
  bool quiet = false;
  std::string residuals_csv;
  bool spec_groups = false;
  double huber_delta = 0.2;
  int32_t jobs = 0;
  std::vector<std::string> sweep_rows;
  bool evaluate = false;
};

int run_calibrate(const CalibrateFlags& flags) {
  auto data = sim::load_measured_csv(flags.csv);
  if (!data) return report_error(data.error());
  if (flags.iterations < 1) return report_error(Error(ErrorCode::kInvalidArgument, "--iterations must be >= 1"));
  if (!(flags.huber_delta >= 0)) return report_error(Error(ErrorCode::kInvalidArgument, "--huber-delta must be >= 0"));
  if (flags.jobs < 0) return report_error(Error(ErrorCode::kInvalidArgument, "--jobs must be >= 0 (0 = all cores)"));
  if (flags.max_prompts < 1) return report_error(Error(ErrorCode::kInvalidArgument, "--max-prompts must be >= 1"));
  if (flags.holdout_series == 1 || flags.holdout_series < 0)
    return report_error(Error(ErrorCode::kInvalidArgument,
                              fmt::format("--holdout-series must be >= 2 (hold out every Nth series of each "
                                          "hardware), got {}",
                                          flags.holdout_series)));
  const bool holding_out = flags.holdout || flags.holdout_series >= 2;
  if (flags.evaluate && (holding_out || !flags.out.empty()))
    return report_error(
        Error(ErrorCode::kInvalidArgument,
              "--evaluate fits nothing: drop --holdout, --holdout-series and --out (or drop --evaluate to fit)"));
  // The files are written after the fit (minutes to hours): a path that cannot take them fails
  // now, not after the work.
  for (const auto& [flag, path] : {std::pair{"--out", flags.out}, std::pair{"--residuals-csv", flags.residuals_csv}}) {
    if (path.empty()) continue;
    if (auto ok = files::check_writable(path); !ok) return report_error(ok.error().with_context(flag));
  }
  std::optional<sim::RowJoin> join;
  if (!flags.sweep_rows.empty()) {
    boost::json::array all_rows;
    for (const auto& path : flags.sweep_rows) {
      auto rows = json::read_file(path);
      if (!rows) return report_error(rows.error());
      if (!rows->is_array())
        return report_error(Error(
            ErrorCode::kParse,
            fmt::format("{}: expected a JSON array of sweep rows (the output of `ixbench sweep full-sweep`)", path)));
      for (auto& row : rows->as_array()) all_rows.push_back(std::move(row));
    }
    join = sim::join_sweep_rows(*data, all_rows);
    if (join->rows_used == 0)
      return report_error(Error(ErrorCode::kInvalidArgument,
                                fmt::format("{}: none of its {} rows is a disaggregated deployment the simulator can "
                                            "read; give the output of `ixbench sweep full-sweep ... --multi-node`",
                                            fmt::join(flags.sweep_rows, ", "), join->rows_skipped)));
    if (!flags.quiet)
      std::cerr << fmt::format(
          "calibrate: {}: {} disaggregated rows ({} others skipped); {} points matched a row, {} took its batch "
          "limits / MTP draft length, {} ambiguous (rows disagree; left as measured)\n",
          fmt::join(flags.sweep_rows, ", "), join->rows_used, join->rows_skipped, join->points_matched,
          join->points_changed, join->points_ambiguous);
  }
  sim::FitOptions options;
  options.holdout = flags.holdout;
  options.holdout_series = flags.holdout_series;
  options.iterations = flags.iterations;
  options.max_prompts = flags.max_prompts;
  options.spec_groups = flags.spec_groups;
  options.huber_delta = flags.huber_delta;
  options.jobs = flags.jobs;
  options.evaluate_only = flags.evaluate;
  auto report = sim::fit_calibration(*data, options, [&](const std::string& line) {
    if (!flags.quiet) std::cerr << "calibrate: " << line << "\n";
  });
  if (!report) return report_error(report.error());
  if (join)
    report->table.set_source(
        fmt::format("{}; {} disaggregated points took the batch limits / MTP draft length of "
                    "their sweep row (--sweep-rows)",
                    report->table.source(), join->points_changed));
  // Checked before the fit, the path may still fail now (removed, disk full): then the file goes
  // to the temporary directory and the error names it, so the fit is not lost; the tables below
  // are printed either way.
  std::optional<Error> write_error;
  auto write_or_keep = [&](const std::string& flag, const std::string& path, const std::string& text) {
    auto ok = files::write_file(path, text);
    if (ok || write_error) return;
    const auto fallback = files::temp_fallback_path(path);
    write_error = ok.error().with_context(
        !fallback.empty() && files::write_file(fallback, text)
            ? fmt::format("{}: cannot write {} (saved to {} instead)", flag, path, fallback.string())
            : fmt::format("{}: cannot write {}", flag, path));
  };
  if (!flags.out.empty()) write_or_keep("--out", flags.out, report->table.to_json());
  if (!flags.residuals_csv.empty()) {
    std::string text =
        "line,hardware,framework,precision,series,conc,fitted,measured_ttft_s,predicted_ttft_s,measured_tpot_s,"
        "predicted_tpot_s,measured_tput_per_gpu,predicted_tput_per_gpu\n";
    for (const auto& r : report->residuals) {
      const auto& p = *r.point;
      text += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", p.line, p.hardware, p.framework, p.precision,
                          p.series, p.conc, r.fitted ? 1 : 0, p.ttft_s, r.ttft_s, p.tpot_s, r.tpot_s, p.tput_per_gpu,
                          r.tput_per_gpu);
    }
    write_or_keep("--residuals-csv", flags.residuals_csv, text);
  }
  // With a file on standard output ("-") the tables go to stderr, so stdout holds the file alone.
  std::ostream& tables = files::is_stdout(flags.out) || files::is_stdout(flags.residuals_csv) ? std::cerr : std::cout;
  tables << fmt::format("points: {} simulated, {} skipped\n", report->residuals.size(), report->skipped.size());
  for (const auto& line : report->skipped) tables << "  skipped " << line << "\n";
  if (flags.evaluate) {
    tables << "\nBuilt-in calibration on these points (nothing fitted): median absolute relative error\n\n"
           << sim::residual_table(*report, true);
  } else if (holding_out) {
    tables << "\nHeld-out points (not used for fitting): median absolute relative error\n\n"
           << sim::residual_table(*report, true);
    const char* fitting = flags.holdout_series < 2 ? "lowest and highest concurrency of each series"
                          : flags.holdout          ? "lowest and highest concurrency of the series not held out"
                                                   : "every concurrency of the series not held out";
    tables << "\nFitting points (" << fitting << ")\n\n";
    sim::FitReport fitted_report;
    for (const auto& r : report->residuals)
      if (r.fitted) fitted_report.residuals.push_back(r);
    tables << sim::residual_table(fitted_report, false);
  } else {
    tables << "\nAll points (in-sample): median absolute relative error\n\n" << sim::residual_table(*report, false);
  }
  tables.flush();
  if (write_error) return report_error(*write_error);
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "sim", "engine simulator");
  auto* cmd = group->add_subcommand("calibrate", "fit the simulator's efficiency factors on measured benchmark points");
  auto flags = std::make_shared<CalibrateFlags>();
  cmd->add_option("--csv", flags->csv, "measured points (e.g. ../shared/data/calibration/measured_dsr1.csv)")
      ->required();
  cmd->add_option("--out", flags->out, "write the fitted calibration.json here (e.g. data/catalog/calibration.json)");
  cmd->add_flag("--holdout", flags->holdout,
                "fit on the lowest and highest concurrency of each series, report errors on the others");
  cmd->add_option("--holdout-series", flags->holdout_series,
                  "hold out every Nth series of each hardware whole (N >= 2; new deployments, and the only "
                  "split that judges one-concurrency series)");
  cmd->add_option("--iterations", flags->iterations, "simulate-and-refit rounds")->capture_default_str();
  cmd->add_option("--max-prompts", flags->max_prompts,
                  "simulated requests per point, raised to at least 3 x conc and capped at 10 x conc (what the "
                  "measured runs sent)")
      ->capture_default_str();
  cmd->add_option("--residuals-csv", flags->residuals_csv, "write measured vs predicted values per point here");
  cmd->add_flag("--spec-groups", flags->spec_groups,
                "also fit per speculative-decoding groups (lower in-sample, higher held-out error)");
  cmd->add_option("--huber-delta", flags->huber_delta,
                  "log errors beyond this count linearly in the fit (Huber loss); 0 = least squares")
      ->capture_default_str();
  cmd->add_option("--jobs", flags->jobs,
                  "points simulated in parallel (0 = one per core; the result does not depend on it)")
      ->capture_default_str();
  cmd->add_option("--sweep-rows", flags->sweep_rows,
                  "sweep rows (`ixbench sweep full-sweep ... --multi-node` output; several files are joined): "
                  "disaggregated points take their row's batch limits (recipe name, settings, recipe flags) and MTP "
                  "draft length")
      ->expected(1, -1);
  cmd->add_flag(
      "--evaluate", flags->evaluate,
      "fit nothing: report the built-in calibration's errors on these points (with --residuals-csv per point)");
  cmd->add_flag("--quiet", flags->quiet, "no progress lines on stderr");
  registry.on_run(cmd, [flags] { return run_calibrate(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(sim_calibrate, setup);
}  // namespace ix::cli
