// `ixbench aggregate`: a raw `bench serve` result -> its aggregated record (agg_<stem>.json, SPEC §5),
// as InferenceX's utils/process_result.py makes it. Run bare in the folder of the raw result with
// process_result.py's environment (RUNNER_TYPE, FRAMEWORK, ..., RESULT_FILENAME), it reads
// <RESULT_FILENAME>.json and writes agg_<RESULT_FILENAME>.json there, printing the record. A
// single-node record first goes through the power step the script runs (cli/power_step.h).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/power_step.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/strings.h"
#include "metrics/aggregate.h"

namespace ix::cli {
namespace {

namespace bj = boost::json;

struct Flags {
  std::string env_file;  // a JSON object of the variables instead of the environment
  std::string raw;       // default: <RESULT_FILENAME>.json
  std::string out;       // default: agg_<RESULT_FILENAME>.json
  bool quiet = false;
  std::string power_csv;  // default: process_result.py's candidates
  bool require_power = false;
};

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
int add_power(bj::object& record, const Flags& f, const metrics::AggregateInputs& inputs,
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

int run(const Flags& f) {
  std::map<std::string, std::string> file_vars;
  if (!f.env_file.empty()) {
    auto vars = env_file(f.env_file);
    if (!vars) return report_error(vars.error());
    file_vars = std::move(*vars);
  }
  auto lookup = [&](const char* name) -> std::optional<std::string> {
    if (f.env_file.empty()) return env(name);
    auto it = file_vars.find(name);
    return it == file_vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
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
  if (f.quiet) {
    fmt::print("{}\n", out_path.string());
  } else {
    fmt::print("{}", text);
  }
  return power_status;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  CLI::App* cmd = root.add_subcommand(
      "aggregate", "raw bench serve result -> agg_<stem>.json (process_result.py's environment and rules)");
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--env-file", flags->env_file,
                  "a JSON object of process_result.py's variables, read instead of the environment");
  cmd->add_option("--raw", flags->raw, "the raw result (default: $RESULT_FILENAME.json)");
  cmd->add_option("--out", flags->out, "the record (default: agg_$RESULT_FILENAME.json)");
  cmd->add_flag("--quiet", flags->quiet, "print the path written instead of the record");
  cmd->add_option("--power-csv", flags->power_csv,
                  "GPU telemetry CSV (default: $GPU_METRICS_CSV, gpu_metrics.csv, /workspace/gpu_metrics.csv)");
  cmd->add_flag("--require-power", flags->require_power,
                "exit 1 when the power measurement is invalid (also REQUIRE_POWER=1|true|yes)");
  registry.on_run(cmd, [flags] { return run(*flags); });
}

}  // namespace
IX_REGISTER_COMMAND(aggregate, setup);
}  // namespace ix::cli
