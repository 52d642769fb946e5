// `ixbench sweep full-sweep | test-config`: expand master configs into the job matrix (SPEC §2)
// and print it as one JSON array on stdout, byte-compatible with InferenceX's reference generator.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/sanitize.h"
#include "config/master_config.h"
#include "sweep/planner.h"

namespace ix::cli {
namespace {

struct SweepFlags {
  std::vector<std::string> config_files;
  std::string runner_config = "configs/runners.yaml";
  bool no_evals = false;
  bool evals_only = false;
  bool all_evals = false;
  std::string runner_node_filter;
  std::vector<std::string> scenario_types;
  std::vector<std::string> seq_lens;
  // full-sweep
  std::vector<std::string> model_prefixes;
  std::vector<std::string> precisions;
  std::vector<std::string> frameworks;
  std::vector<std::string> runner_types;
  int64_t step_size = 2;
  int64_t min_conc = 0;
  int64_t max_conc = 0;
  int64_t max_tp = 0;
  int64_t max_ep = 0;
  bool single_node = false;
  bool multi_node = false;
  // test-config
  std::vector<std::string> config_keys;
  std::vector<int64_t> conc;

  // Set when the optional integer flags were given.
  CLI::Option* runner_node_filter_option = nullptr;
  CLI::Option* min_conc_option = nullptr;
  CLI::Option* max_conc_option = nullptr;
  CLI::Option* max_tp_option = nullptr;
  CLI::Option* max_ep_option = nullptr;
};

int usage_error(const std::string& message) {
  fmt::print(stderr, "ixbench: error: {}\n", printable(message));
  return kExitUsage;
}

int run_sweep(const SweepFlags& flags, bool full_sweep) {
  sweep::SweepOptions options;
  options.no_evals = flags.no_evals;
  options.evals_only = flags.evals_only;
  options.all_evals = flags.all_evals;
  // An empty filter is no filter (CI workflows pass empty inputs), as the reference generator.
  if (flags.runner_node_filter_option && flags.runner_node_filter_option->count() > 0 &&
      !flags.runner_node_filter.empty()) {
    options.runner_node_filter = flags.runner_node_filter;
  }
  for (const auto& name : flags.scenario_types) {
    auto type = sweep::parse_scenario_type(name);
    if (!type) return usage_error(type.error().message());
    options.scenario_types.push_back(*type);
  }
  for (const auto& name : flags.seq_lens) {
    auto shape = sweep::parse_seq_len(name);
    if (!shape) return usage_error(shape.error().message());
    options.seq_lens.push_back(*shape);
  }
  if (full_sweep) {
    options.model_prefixes = flags.model_prefixes;
    options.precisions = flags.precisions;
    options.frameworks = flags.frameworks;
    options.runner_types = flags.runner_types;
    options.step_size = flags.step_size;
    if (flags.min_conc_option->count() > 0) options.min_conc = flags.min_conc;
    if (flags.max_conc_option->count() > 0) options.max_conc = flags.max_conc;
    if (flags.max_tp_option->count() > 0) options.max_tp = flags.max_tp;
    if (flags.max_ep_option->count() > 0) options.max_ep = flags.max_ep;
    options.single_node = flags.single_node;
    options.multi_node = flags.multi_node;
  } else {
    options.config_keys = flags.config_keys;
    options.conc = flags.conc;
  }
  // Flag combinations are usage errors, checked before any file is read.
  if (auto ok = sweep::check_options(options, full_sweep); !ok) return usage_error(ok.error().message());

  std::vector<std::filesystem::path> files(flags.config_files.begin(), flags.config_files.end());
  auto loaded = config::load_configs(files, flags.runner_config);
  if (!loaded) return report_error(loaded.error());
  auto rows = full_sweep ? sweep::plan_full_sweep(loaded->configs, loaded->runners, options)
                         : sweep::plan_test_config(loaded->configs, loaded->runners, options);
  if (!rows) return report_error(rows.error());
  std::string text = sweep::render_matrix(*rows);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

void add_common(CLI::App* cmd, SweepFlags& flags) {
  cmd->add_option("--config-files", flags.config_files, "Master config YAML files")->required()->expected(1, -1);
  cmd->add_option("--runner-config", flags.runner_config,
                  "runners.yaml (labels and hardware facts; the default is where InferenceX keeps it, relative to "
                  "the current directory)")
      ->capture_default_str();
  auto* no_evals = cmd->add_flag("--no-evals", flags.no_evals, "Skip eval marking (throughput rows only)");
  auto* evals_only = cmd->add_flag("--evals-only", flags.evals_only, "Print only eval rows, marked eval-only");
  auto* all_evals =
      cmd->add_flag("--all-evals", flags.all_evals, "Every 8k1k fixed row (and agentic row) becomes an eval row");
  no_evals->excludes(evals_only);
  no_evals->excludes(all_evals);
  flags.runner_node_filter_option = cmd->add_option("--runner-node-filter", flags.runner_node_filter,
                                                    "Substring of concrete runner names; one row per matching runner");
  cmd->add_option("--scenario-type", flags.scenario_types, "Scenario types to include (default: all)")
      ->expected(1, -1)
      ->check(CLI::IsMember({"fixed-seq-len", "agentic-coding"}));
  cmd->add_option("--seq-lens", flags.seq_lens, "Sequence lengths to include (default: all)")
      ->expected(1, -1)
      ->check(CLI::IsMember({"1k1k", "8k1k"}));
}

void setup(CLI::App& root, CommandRegistry& registry) {
  auto* group = find_or_add_group(root, "sweep", "Expand master configs into the benchmark job matrix (JSON)");

  auto* full = group->add_subcommand("full-sweep", "Every config passing the filters, as a JSON job matrix");
  auto full_flags = std::make_shared<SweepFlags>();
  add_common(full, *full_flags);
  full->add_option("--model-prefix", full_flags->model_prefixes, "Prefixes of config keys")->expected(1, -1);
  full->add_option("--precision", full_flags->precisions, "Precisions (e.g. fp4 fp8)")->expected(1, -1);
  full->add_option("--framework", full_flags->frameworks, "Frameworks (e.g. vllm sglang)")->expected(1, -1);
  full->add_option("--runner-type", full_flags->runner_types, "Runner labels from runners.yaml")->expected(1, -1);
  full->add_option("--step-size", full_flags->step_size, "Geometric concurrency step (> 1)")->capture_default_str();
  full_flags->min_conc_option = full->add_option("--min-conc", full_flags->min_conc, "Drop concurrencies below");
  full_flags->max_conc_option = full->add_option("--max-conc", full_flags->max_conc, "Drop concurrencies above");
  full_flags->max_tp_option = full->add_option("--max-tp", full_flags->max_tp, "Skip single-node entries above tp");
  full_flags->max_ep_option = full->add_option("--max-ep", full_flags->max_ep, "Clamp single-node ep to this");
  full->add_flag("--single-node", full_flags->single_node, "Only single-node configs (default: both)");
  full->add_flag("--multi-node", full_flags->multi_node, "Only multi-node configs (default: both)");
  registry.on_run(full, [full_flags] { return run_sweep(*full_flags, true); });

  auto* test = group->add_subcommand("test-config", "The configs named by --config-keys, as a JSON job matrix");
  auto test_flags = std::make_shared<SweepFlags>();
  add_common(test, *test_flags);
  test->add_option("--config-keys", test_flags->config_keys,
                   "Config keys or globs (with * or ?; [..] classes inside a glob)")
      ->required()
      ->expected(1, -1);
  test->add_option("--conc", test_flags->conc, "Keep only these concurrencies")->expected(1, -1);
  registry.on_run(test, [test_flags] { return run_sweep(*test_flags, false); });
}

}  // namespace

IX_REGISTER_COMMAND(sweep, setup);

}  // namespace ix::cli
