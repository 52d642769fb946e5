// `ixbench sweep full-sweep | test-config`: expand master configs into the job matrix (SPEC §2)
// and print it as one JSON array on stdout, byte-compatible with InferenceX's reference generator.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/sweep_flags.h"
#include "common/sanitize.h"
#include "config/master_config.h"
#include "sweep/planner.h"

namespace ix::cli {
namespace {

int usage_error(const std::string& message) {
  fmt::print(stderr, "ixbench: error: {}\n", printable(message));
  return kExitUsage;
}

int run_sweep(const SweepFlags& flags, bool full_sweep) {
  // Flag values and combinations are usage errors, checked before any file is read.
  auto options = sweep_options(flags, full_sweep);
  if (!options) return usage_error(options.error().message());

  std::vector<std::filesystem::path> files(flags.config_files.begin(), flags.config_files.end());
  auto loaded = config::load_configs(files, flags.runner_config);
  if (!loaded) return report_error(loaded.error());
  auto rows = full_sweep ? sweep::plan_full_sweep(loaded->configs, loaded->runners, *options)
                         : sweep::plan_test_config(loaded->configs, loaded->runners, *options);
  if (!rows) return report_error(rows.error());
  std::string text = sweep::render_matrix(*rows);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "sweep", "Expand master configs into the benchmark job matrix (JSON)");

  auto* full = group->add_subcommand("full-sweep", "Every config passing the filters, as a JSON job matrix");
  auto full_flags = std::make_shared<SweepFlags>();
  add_sweep_common_flags(full, *full_flags);
  add_full_sweep_flags(full, *full_flags);
  registry.on_run(full, [full_flags] { return run_sweep(*full_flags, true); });

  auto* test = group->add_subcommand("test-config", "The configs named by --config-keys, as a JSON job matrix");
  auto test_flags = std::make_shared<SweepFlags>();
  add_sweep_common_flags(test, *test_flags);
  add_test_config_flags(test, *test_flags);
  registry.on_run(test, [test_flags] { return run_sweep(*test_flags, false); });
}

}  // namespace

IX_REGISTER_COMMAND(sweep, setup);

}  // namespace ix::cli
