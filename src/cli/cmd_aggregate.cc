// `ixbench aggregate`: a raw result -> its aggregated record, as InferenceX's scripts make it.
//   - fixed-seq-len (a raw `bench serve` result): agg_<stem>.json (SPEC §5), as
//     utils/process_result.py. Run bare in the folder of the raw result with process_result.py's
//     environment (RUNNER_TYPE, FRAMEWORK, ..., RESULT_FILENAME), it reads <RESULT_FILENAME>.json
//     and writes agg_<RESULT_FILENAME>.json there, printing the record. A single-node record first
//     goes through the power step the script runs (cli/power_step.h).
//   - agentic-coding (an agentic replay's aiperf artifact folder): $RESULT_FILENAME.json, as
//     utils/agentic/aggregation/process_agentic_result.py and then the AgentX power adapter
//     (cli/agentic_step.h).
// The variables come from the environment (or --env-file instead), over those a matrix row gives
// (--row): an explicit variable wins over the row's, and each one that changes a row value is
// logged.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/agentic_step.h"
#include "cli/aggregate_step.h"
#include "cli/command.h"
#include "cli/power_step.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/strings.h"
#include "metrics/aggregate.h"
#include "sweep/row_env.h"

namespace ix::cli {
namespace {

namespace bj = boost::json;

using Lookup = std::function<std::optional<std::string>(const char*)>;

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::optional<std::string>(value) : std::nullopt;
}

// The telemetry file process_result.py integrates: the first of $GPU_METRICS_CSV, gpu_metrics.csv
// and /workspace/gpu_metrics.csv that exists, else the first named (then missing: power_valid 0).
std::filesystem::path telemetry_csv(const std::function<std::optional<std::string>(const char*)>& lookup) {
  std::vector<std::string> candidates;
  if (auto named = lookup("GPU_METRICS_CSV"); named && !named->empty()) candidates.push_back(*named);
  candidates.insert(candidates.end(), {"gpu_metrics.csv", "/workspace/gpu_metrics.csv"});
  for (const std::string& candidate : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  return candidates.front();
}

bool truthy(const std::optional<std::string>& value) {
  return value && (*value == "1" || ascii_iequals(*value, "true") || ascii_iequals(*value, "yes"));
}

// The power step process_result.py runs on a single-node record (aggregate_power.run): the fields
// in the record, power_validation_<RESULT_FILENAME>.json beside it.
int add_power(bj::object& record, const AggregateFlags& f, const metrics::AggregateInputs& inputs,
              const std::filesystem::path& raw_path, const std::filesystem::path& out_path,
              const std::function<std::optional<std::string>(const char*)>& lookup) {
  PowerStepOptions power;
  power.csv = f.power_csv.empty() ? telemetry_csv(lookup) : std::filesystem::path(f.power_csv);
  power.bench_result = raw_path;
  power.expected_num_gpus = metrics::aggregate_num_gpus(inputs);
  power.validation_result = out_path.parent_path() / ("power_validation_" + inputs.result_filename + ".json");
  power.require_power = f.require_power || truthy(lookup("REQUIRE_POWER"));
  power.command = "aggregate";
  auto evaluation = measure_power(power);
  record = *patch_record(evaluation, record);
  return finish_power_step(evaluation, power);
}

// The variables of --env-file (a JSON object of strings, as env.json of the shared example).
Result<std::map<std::string, std::string>> env_file(const std::string& path) {
  auto value = json::read_file(path);
  if (!value) return std::unexpected(value.error());
  if (!value->is_object()) return fail(ErrorCode::kInvalidArgument, path + ": expected a JSON object of variables");
  std::map<std::string, std::string> out;
  for (const auto& [key, v] : value->as_object()) {
    if (!v.is_string())
      return fail(
          ErrorCode::kInvalidArgument,
          fmt::format("{}: variable {} must be a string, as environment values are", path, std::string_view(key)));
    out[std::string(key)] = std::string(v.as_string());
  }
  return out;
}

// The variables the aggregation reads: the environment (or --env-file's instead), then the row's.
struct Variables {
  bool from_file = false;
  std::map<std::string, std::string> file;
  std::map<std::string, std::string> row;

  std::optional<std::string> explicit_value(const char* name) const {
    if (!from_file) return env(name);
    auto it = file.find(name);
    return it == file.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::optional<std::string> get(const char* name) const {
    if (auto value = explicit_value(name)) return value;
    auto it = row.find(name);
    return it == row.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
};

// --row: the row's variables under the explicit ones (each one that differs is logged), and
// RESULT_FILENAME as the workflow names the job's result unless it is given.
Result<void> add_row(const std::string& path, Variables& vars) {
  auto value = json::read_file(path, files::kMaxConfigFileBytes, "a matrix row (JSON object)");
  if (!value) return std::unexpected(value.error());
  if (!value->is_object())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--row {}: not a JSON object (one row of the matrix `ixbench sweep` prints)", path));
  auto row = sweep::row_environment(value->as_object());
  if (!row) return std::unexpected(row.error().with_context("--row " + path));
  const char* source = vars.from_file ? "--env-file" : "the environment";
  for (const auto& [name, text] : row->variables) {
    vars.row[name] = text;
    if (auto given = vars.explicit_value(name.c_str()); given && *given != text)
      log::info("aggregate: {}={} from {} replaces the row's {}", name, *given, source, text.empty() ? "\"\"" : text);
  }
  if (vars.explicit_value("RESULT_FILENAME")) return {};
  const auto name = sweep::row_result_filename(row->kind, [&vars](const char* n) { return vars.get(n); });
  if (name) vars.row["RESULT_FILENAME"] = *name;
  return {};
}

// The agentic path: --scenario, else the raw input's kind (a folder or .jsonl file), else the
// scenario the workflow exports (SCENARIO_TYPE=agentic-coding, IS_AGENTIC=1).
bool agentic_scenario(const AggregateFlags& f, const Variables& vars) {
  if (!f.scenario.empty()) return f.scenario != "fixed-seq-len";
  if (!f.raw.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(f.raw, ec) || f.raw.ends_with(".jsonl")) return true;
    if (std::filesystem::is_regular_file(f.raw, ec)) return false;
  }
  return vars.get("SCENARIO_TYPE") == "agentic-coding" || vars.get("IS_AGENTIC") == "1";
}

int run_fixed(const AggregateFlags& f, const Lookup& lookup);

}  // namespace

int run_aggregate(const AggregateFlags& f) {
  Variables vars;
  if (!f.env_file.empty()) {
    auto file = env_file(f.env_file);
    if (!file) return report_error(file.error());
    vars.from_file = true;
    vars.file = std::move(*file);
  }
  if (!f.row.empty())
    if (auto ok = add_row(f.row, vars); !ok) return report_error(ok.error());
  const Lookup lookup = [&vars](const char* name) { return vars.get(name); };
  if (agentic_scenario(f, vars))
    return run_agentic_aggregate({.raw = f.raw,
                                  .out = f.out,
                                  .power_csv = f.power_csv,
                                  .require_power = f.require_power,
                                  .quiet = f.quiet,
                                  .silent = f.silent},
                                 lookup);
  return run_fixed(f, lookup);
}

namespace {

// process_result.py and its power step.
int run_fixed(const AggregateFlags& f, const Lookup& lookup) {
  auto inputs = metrics::aggregate_inputs_from_env(lookup);
  if (!inputs) return report_error(inputs.error());
  const std::filesystem::path raw_path = f.raw.empty() ? inputs->result_filename + ".json" : f.raw;
  const std::filesystem::path out_path = f.out.empty() ? "agg_" + inputs->result_filename + ".json" : f.out;
  auto raw = json::read_file(raw_path);
  if (!raw) return report_error(raw.error());
  if (!raw->is_object())
    return report_error(Error(ErrorCode::kInvalidArgument, raw_path.string() + ": not a JSON object"));
  auto record = metrics::aggregate_record(raw->as_object(), *inputs);
  if (!record) return report_error(record.error().with_context(raw_path.string()));
  int power_status = kExitOk;
  if (inputs->multinode) {
    log::warn("aggregate: multi-node power (aggregate_power_multinode.py) is not implemented; power_valid is 0");
    metrics::add_power_unavailable(*record);
  } else {
    power_status = add_power(*record, f, *inputs, raw_path, out_path, lookup);
  }
  std::string text = json::to_pretty_string(*record);
  // json.dump(indent=2) ends the file without a newline: the same bytes as process_result.py's.
  if (auto ok = files::write_file(out_path, std::string_view(text).substr(0, text.size() - 1)); !ok)
    return report_error(ok.error());
  if (f.silent) return power_status;
  if (f.quiet) {
    fmt::print("{}\n", out_path.string());
  } else {
    fmt::print("{}", text);
  }
  return power_status;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* cmd = root.add_subcommand(
      "aggregate",
      "raw result -> its aggregated record: bench serve -> agg_<stem>.json (process_result.py), agentic replay "
      "artifacts -> <stem>.json (process_agentic_result.py); their environment, or a --row");
  auto flags = std::make_shared<AggregateFlags>();
  cmd->add_option("--env-file", flags->env_file,
                  "a JSON object of the aggregation's variables, read instead of the environment");
  cmd->add_option("--raw", flags->raw,
                  "the raw result (default: $RESULT_FILENAME.json); agentic: the result folder (holding "
                  "aiperf_artifacts/), the artifact folder or its profile_export.jsonl (default: $RESULT_DIR, else "
                  "results)");
  cmd->add_option(
      "--out", flags->out,
      "the record (default: agg_$RESULT_FILENAME.json; agentic: $AGENTIC_OUTPUT_DIR/$RESULT_FILENAME.json)");
  cmd->add_flag("--quiet", flags->quiet, "print the path written instead of the record");
  cmd->add_option("--power-csv", flags->power_csv,
                  "GPU telemetry CSV (default: $GPU_METRICS_CSV, gpu_metrics.csv, /workspace/gpu_metrics.csv; agentic: "
                  "<result folder>/gpu_metrics.csv)");
  cmd->add_flag("--require-power", flags->require_power,
                "exit 1 when the power measurement is invalid (also REQUIRE_POWER=1|true|yes)");
  cmd->add_option("--scenario", flags->scenario,
                  "fixed-seq-len (process_result.py) or agentic-coding / agentic (process_agentic_result.py); "
                  "default: a folder or .jsonl --raw is agentic, else SCENARIO_TYPE / IS_AGENTIC decide")
      ->check(CLI::IsMember({"fixed-seq-len", "agentic-coding", "agentic"}));
  cmd->add_option("--row", flags->row,
                  "a matrix row (JSON object, as `ixbench sweep` prints it) supplying the variables its workflow "
                  "exports; the environment or --env-file wins where both give one");
  registry.on_run(cmd, [flags] { return run_aggregate(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(aggregate, setup);
}  // namespace ix::cli
