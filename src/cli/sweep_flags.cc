#include "cli/sweep_flags.h"

namespace ix::cli {

Result<sweep::SweepOptions> sweep_options(const SweepFlags& flags, bool full_sweep) {
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
    if (!type) return fail(type.error());
    options.scenario_types.push_back(*type);
  }
  for (const auto& name : flags.seq_lens) {
    auto shape = sweep::parse_seq_len(name);
    if (!shape) return fail(shape.error());
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
  if (auto ok = sweep::check_options(options, full_sweep); !ok) return fail(ok.error());
  return options;
}

void add_sweep_common_flags(CLI::App* cmd, SweepFlags& flags, bool config_files_required) {
  cmd->add_option("--config-files", flags.config_files, "Master config YAML files")
      ->required(config_files_required)
      ->expected(1, -1);
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

void add_full_sweep_flags(CLI::App* full, SweepFlags& flags) {
  full->add_option("--model-prefix", flags.model_prefixes, "Prefixes of config keys")->expected(1, -1);
  full->add_option("--precision", flags.precisions, "Precisions (e.g. fp4 fp8)")->expected(1, -1);
  full->add_option("--framework", flags.frameworks, "Frameworks (e.g. vllm sglang)")->expected(1, -1);
  full->add_option("--runner-type", flags.runner_types, "Runner labels from runners.yaml")->expected(1, -1);
  full->add_option("--step-size", flags.step_size, "Geometric concurrency step (> 1)")->capture_default_str();
  flags.min_conc_option = full->add_option("--min-conc", flags.min_conc, "Drop concurrencies below");
  flags.max_conc_option = full->add_option("--max-conc", flags.max_conc, "Drop concurrencies above");
  flags.max_tp_option = full->add_option("--max-tp", flags.max_tp, "Skip single-node entries above tp");
  flags.max_ep_option = full->add_option("--max-ep", flags.max_ep, "Clamp single-node ep to this");
  full->add_flag("--single-node", flags.single_node, "Only single-node configs (default: both)");
  full->add_flag("--multi-node", flags.multi_node, "Only multi-node configs (default: both)");
}

void add_test_config_flags(CLI::App* test, SweepFlags& flags, bool keys_required) {
  test->add_option("--config-keys", flags.config_keys, "Config keys or globs (with * or ?; [..] classes inside a glob)")
      ->required(keys_required)
      ->expected(1, -1);
  test->add_option("--conc", flags.conc, "Keep only these concurrencies")->expected(1, -1);
}

}  // namespace ix::cli
