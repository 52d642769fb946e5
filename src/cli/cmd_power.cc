// `ixbench power`: GPU telemetry -> energy over the benchmark window (SPEC §9), as InferenceX's
// utils/aggregate_power.py: its flags (--csv --bench-result --agg-result --expected-num-gpus
// --validation-result --require-power), its fields in the record and its validation sidecar; plus
// a window given by hand (--start/--end). Prints the power fields as JSON.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/power_step.h"
#include "common/json_io.h"
#include "common/strings.h"

namespace ix::cli {
namespace {

namespace fs = std::filesystem;

struct Flags {
  std::string csv = "/workspace/gpu_metrics.csv";
  std::string bench_result;
  std::string agg_result;
  std::optional<int64_t> expected_num_gpus;
  std::string validation_result;
  std::string start;
  std::string end;
  bool require_power = false;
};

bool require_power_from_env() {
  const char* value = std::getenv("REQUIRE_POWER");
  const std::string lower = value ? ascii_lower(value) : "";
  return lower == "1" || lower == "true" || lower == "yes";
}

Result<double> time_flag(const char* flag, const std::string& text) {
  if (auto t = metrics::power::parse_timestamp(text)) return *t;
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("{} '{}' is not a time: give epoch seconds (1764583200.5), ISO 8601 "
                          "(2026-12-01T10:00:00.123, local time unless it has an offset) or nvidia-smi's "
                          "'2026/12/01 10:00:00.123'",
                          flag, text));
}

// The raw result: --bench-result, else <stem>.json beside --agg-result agg_<stem>.json.
std::optional<fs::path> bench_path(const Flags& f) {
  if (!f.bench_result.empty()) return fs::path(f.bench_result);
  const fs::path agg(f.agg_result);
  const std::string name = agg.filename().string();
  if (f.agg_result.empty() || !name.starts_with("agg_")) return std::nullopt;
  return agg.parent_path() / name.substr(4);
}

Result<PowerStepOptions> step_options(const Flags& f) {
  PowerStepOptions o;
  o.csv = f.csv;
  o.expected_num_gpus = f.expected_num_gpus;
  o.command = "power";
  o.bench_result = bench_path(f);
  if (!f.start.empty()) {
    auto start = time_flag("--start", f.start);
    if (!start) return std::unexpected(start.error());
    auto end = time_flag("--end", f.end);
    if (!end) return std::unexpected(end.error());
    o.window = metrics::power::Window{*start, *end};
  }
  if (!o.bench_result && !o.window)
    return fail(ErrorCode::kInvalidArgument,
                "no benchmark window: give --bench-result RAW.json (its window and token counts), --agg-result "
                "agg_<stem>.json with <stem>.json beside it, or --start T0 --end T1");
  o.validation_result = !f.validation_result.empty() ? fs::path(f.validation_result)
                                                     : default_validation_path(o.bench_result.value_or(o.csv));
  o.require_power = f.require_power || require_power_from_env();
  return o;
}

int run(const Flags& f) {
  auto options = step_options(f);
  if (!options) return report_error(options.error());
  auto evaluation = measure_power(*options);
  if (!f.agg_result.empty()) patch_record_file(evaluation, f.agg_result, "power");
  const int status = finish_power_step(evaluation, *options);
  auto fields = patch_record(evaluation, {});
  fmt::print("{}", json::to_pretty_string(*fields));
  return status;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* cmd = root.add_subcommand(
      "power", "GPU telemetry CSV -> energy over the benchmark window, into the agg record (aggregate_power.py)");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--csv", flags->csv, "nvidia-smi or amd-smi telemetry CSV")->capture_default_str();
  cmd->add_option("--bench-result,--raw", flags->bench_result,
                  "raw benchmark result (window and token counts; default: <stem>.json beside agg_<stem>.json)");
  cmd->add_option("--agg-result,--agg", flags->agg_result, "agg record to patch in place (atomically)");
  cmd->add_option("--expected-num-gpus", flags->expected_num_gpus, "GPUs the telemetry must show (TP * PP * PCP)");
  cmd->add_option("--validation-result", flags->validation_result,
                  "validation sidecar (default: power_validation_<stem>.json beside the raw result, else the CSV)");
  auto* start = cmd->add_option("--start", flags->start,
                                "window start: epoch seconds, ISO 8601 or nvidia-smi time (replaces the raw result's)");
  auto* end = cmd->add_option("--end", flags->end, "window end (with --start)");
  start->needs(end);
  end->needs(start);
  cmd->add_flag("--require-power", flags->require_power,
                "exit 1 when the measurement is invalid (also REQUIRE_POWER=1|true|yes)");
  registry.on_run(cmd, [flags] { return run(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(power, setup);
}  // namespace ix::cli
