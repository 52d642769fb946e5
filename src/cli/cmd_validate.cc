// `ixbench validate`: load master configs (and optionally runners.yaml) and apply every rule of
// SPEC §1, reporting all problems of all files, one per line, each with file:line:column.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "config/master_config.h"

namespace ix::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> config_files;
  std::string runner_config;
};

int run_validate(const ValidateOptions& options) {
  std::vector<std::filesystem::path> files(options.config_files.begin(), options.config_files.end());
  // runners.yaml is optional here: the explicit flag, else configs/runners.yaml when present.
  std::filesystem::path runner_path = options.runner_config.empty() ? "configs/runners.yaml" : options.runner_config;
  std::error_code error;
  bool use_runners = !options.runner_config.empty() || std::filesystem::exists(runner_path, error);
  auto report = config::validate_files(files, use_runners ? &runner_path : nullptr);
  if (!report.ok()) {
    for (const auto& diagnostic : report.diagnostics) fmt::print(stderr, "{}\n", diagnostic.to_string());
    return report_error(Error(ErrorCode::kInvalidArgument,
                              fmt::format("{} problem(s) found in {} file(s); fix the lines above and run validate "
                                          "again",
                                          report.diagnostics.size(), files.size() + (use_runners ? 1 : 0))));
  }
  fmt::print("ok: {} config(s) in {} file(s){}\n", report.configs.configs.size(), files.size(),
             use_runners ? fmt::format(", runners from {}", runner_path.string()) : std::string());
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* cmd = root.add_subcommand("validate", "Validate master configs (and runners.yaml) against every config rule");
  auto options = std::make_shared<ValidateOptions>();
  cmd->add_option("--config-files", options->config_files, "Master config YAML files")->required()->expected(1, -1);
  cmd->add_option("--runner-config", options->runner_config,
                  "runners.yaml to check runner hardware facts against (default: configs/runners.yaml when it "
                  "exists)");
  registry.on_run(cmd, [options] { return run_validate(*options); });
}

}  // namespace

IX_REGISTER_COMMAND(validate, setup);

}  // namespace ix::cli
