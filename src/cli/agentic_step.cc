#include "cli/agentic_step.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <filesystem>
#include <system_error>

#include "cli/command.h"
#include "cli/power_step.h"
#include "common/file_io.h"
#include "common/json_io.h"
#include "common/log.h"
#include "common/strings.h"
#include "metrics/power.h"

namespace ix::cli {
namespace {

namespace fs = std::filesystem;
namespace bj = boost::json;
namespace agentic = metrics::agentic;

struct Locations {
  fs::path result_dir;    // RESULT_DIR: server logs, power telemetry and sidecars
  fs::path artifact_dir;  // where profile_export.jsonl is
};

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The result folder of an artifact folder: above aiperf_artifacts/ (or aiperf_artifacts/<run>/).
fs::path result_dir_of(const fs::path& artifact_dir) {
  const fs::path parent = artifact_dir.parent_path().empty() ? fs::path(".") : artifact_dir.parent_path();
  if (artifact_dir.filename() == "aiperf_artifacts") return parent;
  if (parent.filename() == "aiperf_artifacts")
    return parent.parent_path().empty() ? fs::path(".") : parent.parent_path();
  return artifact_dir;
}

Result<Locations> locate(const std::string& raw, const agentic::EnvLookup& get) {
  if (raw.empty()) {
    const fs::path result_dir = get("RESULT_DIR").value_or("results");
    return Locations{result_dir, agentic::resolve_artifact_dir(result_dir)};
  }
  const fs::path path = fs::path(raw).lexically_normal();
  std::error_code ec;
  if (is_dir(path) && is_dir(path / "aiperf_artifacts")) return Locations{path, agentic::resolve_artifact_dir(path)};
  if (is_dir(path) && fs::is_regular_file(path / "profile_export.jsonl", ec))
    return Locations{result_dir_of(path), path};
  if (fs::is_regular_file(path, ec) && path.filename() == "profile_export.jsonl") {
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    return Locations{result_dir_of(dir), dir};
  }
  return fail(ErrorCode::kInvalidArgument,
              fmt::format("--raw {}: not an agentic replay's output (a result folder holding aiperf_artifacts/, an "
                          "aiperf artifact folder holding profile_export.jsonl, or that file)",
                          raw));
}

bool truthy_text(const std::optional<std::string>& value) {
  return value && (*value == "1" || ascii_iequals(*value, "true") || ascii_iequals(*value, "yes"));
}

// benchmark_lib.sh: `case "${ENABLE_AGENTX_POWER:-1}" in 1|true|TRUE|yes|YES)` and single node.
bool power_enabled(const agentic::EnvLookup& get) {
  const auto enabled = get("ENABLE_AGENTX_POWER");
  const bool on = !enabled || enabled->empty() || truthy_text(enabled);
  return on && get("IS_MULTINODE").value_or("") != "true";
}

Result<void> write_json(const fs::path& path, const bj::object& value) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  return files::write_file(path, json::to_python_json(value));
}

// _record_adapter_failure(): the record invalid, the sidecar with the adapter's reasons.
int adapter_failure(bj::object& record, const PowerStepOptions& power, const fs::path& window_path,
                    const std::vector<std::string>& reasons) {
  metrics::power::PowerEvaluation evaluation;
  evaluation.integration = metrics::power::empty_integration(power.expected_num_gpus, reasons);
  evaluation.reasons = reasons;
  record = *metrics::power::patch_power_record(record, false, {});
  bj::object payload =
      metrics::power::validation_payload(evaluation, metrics::power::python_path_string(power.csv.string()),
                                         metrics::power::python_path_string(window_path.string()), std::nullopt);
  payload["window_source"] = "aiperf_profile_lifecycle";
  if (auto ok = write_json(power.validation_result, payload); !ok)
    log::error("aggregate: failed to record the power adapter's failure: {}", ok.error().message());
  log::warn("aggregate: power-window adaptation failed: {}", fmt::join(reasons, ", "));
  return power.require_power ? kExitFailure : kExitOk;
}

// The AgentX power adapter on the record (in memory; the caller writes it). Returns the status.
int add_agentic_power(bj::object& record, const AgenticStepOptions& options, const Locations& where,
                      const agentic::Artifacts& artifacts, const agentic::Inputs& inputs,
                      const agentic::EnvLookup& get) {
  PowerStepOptions power;
  power.csv = options.power_csv.empty() ? where.result_dir / "gpu_metrics.csv" : fs::path(options.power_csv);
  power.expected_num_gpus = inputs.num_gpus;
  power.validation_result = where.result_dir / "power_validation.json";
  power.require_power = options.require_power || truthy_text(get("REQUIRE_POWER"));
  power.command = "aggregate";
  const fs::path window_path = where.result_dir / "agentic_power_window.json";
  const auto window = agentic::power_window(where.result_dir, where.artifact_dir, artifacts);
  if (!window.window) return adapter_failure(record, power, window_path, window.reasons);
  if (auto ok = write_json(window_path, *window.window); !ok) {
    log::warn("aggregate: {}", ok.error().message());
    return adapter_failure(record, power, window_path, {"power_window_unwritable"});
  }
  power.bench_result = window_path;
  auto evaluation = measure_power(power);
  record = *patch_record(evaluation, record);
  return finish_power_step(evaluation, power);
}

fs::path output_path(const AgenticStepOptions& options, const std::string& result_filename,
                     const agentic::EnvLookup& get) {
  if (!options.out.empty()) return options.out;
  // pathlib's Path(dir) / name: "./x.json" is "x.json".
  return metrics::power::python_path_string(get("AGENTIC_OUTPUT_DIR").value_or(".") + "/" + result_filename + ".json");
}

}  // namespace

int run_agentic_aggregate(const AgenticStepOptions& options, const agentic::EnvLookup& get) {
  const std::string result_filename = get("RESULT_FILENAME").value_or("");
  if (result_filename.empty() && options.out.empty())
    return report_error(
        Error(ErrorCode::kInvalidArgument,
              "RESULT_FILENAME env var not set (the record is $AGENTIC_OUTPUT_DIR/$RESULT_FILENAME.json; "
              "set it, or give --out FILE)"));
  auto where = locate(options.raw, get);
  if (!where) return report_error(where.error());
  auto inputs = agentic::inputs_from_env(get);
  if (!inputs) return report_error(inputs.error());
  auto artifacts = agentic::read_artifacts(where->result_dir, where->artifact_dir, get);
  if (!artifacts) return report_error(artifacts.error());
  for (const std::string& note : artifacts->notes) log::warn("aggregate: {}", note);
  auto record = agentic::build_record(*artifacts, *inputs);
  if (!record) return report_error(record.error());
  const fs::path out = output_path(options, result_filename, get);
  int status = kExitOk;
  if (power_enabled(get)) {
    status = add_agentic_power(*record, options, *where, *artifacts, *inputs, get);
  } else {
    log::info("aggregate: no power step (ENABLE_AGENTX_POWER off, or IS_MULTINODE=true)");
  }
  if (auto ok = write_json(out, *record); !ok) return report_error(ok.error());
  for (const std::string& line : agentic::summary_lines(*record, artifacts->accounting))
    log::info("aggregate: {}", line);
  if (!options.silent) fmt::print("{}\n", options.quiet ? out.string() : json::to_python_json(*record));
  return status;
}

}  // namespace ix::cli
